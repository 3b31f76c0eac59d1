"""Issue 26's acceptance bench: ``palinode-audit deliveries`` over a retrieval
log of 1,000,000 rows on a 10,000-memory store, whole processes, against a
baseline measured in the same run: a process that reads the log's bytes and
parses each JSON line once (goal: <= 3x). Memory: the peak RSS of the same
command on a log a tenth the size (flat: ratio near 1). Not part of ``make test``.

    python -m bench.deliveries_bench

Rows are shaped exactly as Palinode 0.23's ``RetrievalLogger`` writes them
(every field of ``RetrievalEvent``; a third with a ``file_sha256`` receipt of
the file as committed, a third with an index-section receipt, a third with
none; half the paths absolute), spread over the store's history, with the
demo's forget requests' targets among them so rows are classified.

Environment: BENCH_WORK (default bench/out/deliveries-work), BENCH_REPS (default 3),
BENCH_ROWS (default 1000000), BENCH_SIZE (default 10000).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = Path(os.environ.get("BENCH_WORK", REPO / "bench" / "out" / "deliveries-work")).resolve()
REPS = int(os.environ.get("BENCH_REPS", "3"))
ROWS = int(os.environ.get("BENCH_ROWS", "1000000"))
SIZE = int(os.environ.get("BENCH_SIZE", "10000"))
GOAL = 3.0
ENV = {
    **os.environ,
    "XDG_CACHE_HOME": str(WORK / "xdg"),
    "OPENBLAS_NUM_THREADS": "1",
    "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO), os.environ.get("PYTHONPATH", "")]),
}
AUDIT = [sys.executable, "-m", "palinode_core"]
_BASELINE = (
    "import json, sys\nloads = json.loads\nn = 0\nwith open(sys.argv[1], 'rb') as fh:\n"
    "    for line in fh:\n        loads(line)\n        n += 1\nprint(n)\n"
)
_PEAK = (
    "import runpy, sys\nsys.argv = sys.argv[1:]\ntry:\n    runpy.run_module(sys.argv[0], run_name='__main__')"
    "\nexcept SystemExit:\n    pass\nfinally:\n    print('VmHWM', [l.split()[1] for l in open('/proc/self/status')"
    " if l.startswith('VmHWM')][0], file=sys.stderr)\n"
)


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=ENV, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return proc


def median_wall(cmd: list[str]) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of whole runs."""
    walls, cpus = [], []
    for _ in range(REPS):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        run(cmd)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)


def peak_kib(args: list[str]) -> int:
    proc = run([sys.executable, "-c", _PEAK, "palinode_core", *args])
    return int(next(line.split()[1] for line in proc.stderr.splitlines() if line.startswith("VmHWM")).strip("[]'"))


def store() -> Path:
    root = WORK / f"store-{SIZE}"
    if not (root / ".git").is_dir():
        shutil.rmtree(root, ignore_errors=True)
        WORK.mkdir(parents=True, exist_ok=True)
        run([*AUDIT, "demo-store", str(root), "--size", str(SIZE)])
    return root


def write_log(root: Path, rows: int, name: str) -> Path:
    """A log as Palinode writes it, kept aside and copied into the store per run."""
    out = WORK / name
    if out.exists():
        return out
    paths = subprocess.run(
        ["git", "-C", str(root), "ls-files", "*.md"], capture_output=True, text=True, check=True
    ).stdout.split()
    paths = [p for p in paths if not p.endswith("-history.md")]
    hot = ["projects/weekly-plan.md", "insights/pref-poker.md", "insights/pref-gym.md"]
    sha = {p: hashlib.sha256((root / p).read_bytes()).hexdigest() for p in paths}
    rng = random.Random(26)
    start = datetime(2031, 4, 1, tzinfo=UTC)
    with out.open("w", encoding="utf-8") as fh:
        for i in range(rows):
            rel = hot[i % 3] if i % 50 == 0 else rng.choice(paths)
            when = start + timedelta(seconds=i * 7_000_000 // rows)
            kind = i % 3
            event = {
                "timestamp": when.isoformat(),
                "file_path": str(root / rel) if i % 2 else rel,
                "chunk_id": f"{rel}#{i % 4}" if kind else None,
                "mode": "passive" if i % 5 == 0 else "explicit",
                "source": "palinode_search",
                "query": f"what about item {i % 977}",
                "rank": i % 10,
                "score": 0.5,
                "session_id": f"s{i % 1000}",
                "bundle_id": f"{i:016x}" if kind != 2 else None,
                "policy_version": "palinode/0.23.0+projection/2+config/bd38b7be" if kind != 2 else None,
                "scope": [] if kind != 2 else None,
                "revision": sha[rel] if kind == 0 else ("0" * 64 if kind == 1 else None),
                "revision_basis": "file_sha256" if kind == 0 else ("index_section_sha256" if kind == 1 else None),
                "disposition": "selected" if kind != 2 else None,
                "lineage_group": None,
                "coverage": {"status": "not_requested", "reasons": []} if kind != 2 else None,
                "next_transition": None,
                "confidence": None,
            }
            fh.write(json.dumps(event, separators=(",", ":")) + "\n")
    return out


def place(root: Path, log: Path) -> None:
    (root / ".audit").mkdir(exist_ok=True)
    shutil.copyfile(log, root / ".audit" / "retrievals.jsonl")


def main() -> int:
    root = store()
    big = write_log(root, ROWS, f"retrievals-{ROWS}.jsonl")
    small = write_log(root, ROWS // 10, f"retrievals-{ROWS // 10}.jsonl")
    place(root, big)
    target = root / ".audit" / "retrievals.jsonl"
    results = []
    base_wall, base_cpu = median_wall([sys.executable, "-c", _BASELINE, str(target)])
    for label, args in (("--json", ["--json", "deliveries", str(root)]), ("text", ["deliveries", str(root)])):
        wall, cpu = median_wall(AUDIT + args)
        results.append((label, wall, cpu))
    peak_big = peak_kib(["--json", "deliveries", str(root)])
    place(root, small)
    peak_small = peak_kib(["--json", "deliveries", str(root)])
    place(root, big)
    print(f"log: {ROWS:,} rows, {target.stat().st_size / 2**20:.0f} MiB; store: {SIZE:,} memories; median of {REPS}")
    print(f"baseline (read bytes + json.loads each line): {base_wall:.2f} s wall, {base_cpu:.2f} s CPU")
    for label, wall, cpu in results:
        ratio = wall / base_wall
        print(
            f"deliveries {label}: {wall:.2f} s wall ({ratio:.2f}x), {cpu:.2f} s CPU ({cpu / base_cpu:.2f}x); "
            f"goal <= {GOAL}x: {'met' if ratio <= GOAL else 'NOT met'}"
        )
    print(
        f"peak RSS: {peak_big / 1024:.1f} MiB at {ROWS:,} rows, {peak_small / 1024:.1f} MiB at {ROWS // 10:,} "
        f"rows (ratio {peak_big / peak_small:.2f}; flat is ~1)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
