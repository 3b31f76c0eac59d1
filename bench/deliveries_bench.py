"""Issue 40's acceptance bench (issue 26's, tightened): ``palinode-audit
deliveries`` over a retrieval log of 1,000,000 rows on the 1,000-memory demo
store, whole processes, against a baseline measured in the same run: a process
that reads the log's bytes and parses each JSON line once. Goals, in CPU time
(user + system; wall is printed beside it): ``--json`` <= 2.5x, text <= 2.5x,
a first run with an empty cache folder <= 3.5x; peak RSS <= 150 MiB in every
case, a log no row's receipt hash matches included. Not part of ``make test``.

    python -m bench.deliveries_bench

Rows are shaped exactly as Palinode 0.23's ``RetrievalLogger`` writes them
(every field of ``RetrievalEvent``; a third with a ``file_sha256`` receipt of
the file as committed, a third with an index-section receipt, a third with
none; half the paths absolute), spread over the store's history, with the
demo's forget requests' targets among them so rows are classified.

Environment: BENCH_WORK (default bench/out/deliveries-work), BENCH_REPS (default 3),
BENCH_ROWS (default 1000000), BENCH_SIZE (default 1000).
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
SIZE = int(os.environ.get("BENCH_SIZE", "1000"))
GOALS = {"--json": 2.5, "text": 2.5, "first run (--json)": 3.5}
PEAK_GOAL_MIB = 150
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


def median_wall(cmd: list[str], fresh: bool = False) -> tuple[float, float]:
    """(median wall seconds, median CPU seconds) of whole runs; ``fresh``: each with an empty cache folder."""
    walls, cpus = [], []
    for _ in range(REPS):
        if fresh:
            shutil.rmtree(WORK / "xdg", ignore_errors=True)
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


def write_log(root: Path, rows: int, name: str, unmatched: bool = False) -> Path:
    """A log as Palinode writes it, kept aside and copied into the store per run
    (``unmatched``: every row a file_sha256 receipt no version hashes to)."""
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
                **({"revision": f"{rng.getrandbits(256):064x}", "revision_basis": "file_sha256"} if unmatched else {}),
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
    unmatched = write_log(root, ROWS, f"retrievals-{ROWS}-unmatched.jsonl", unmatched=True)
    place(root, big)
    target = root / ".audit" / "retrievals.jsonl"
    json_args, text_args = ["--json", "deliveries", str(root)], ["deliveries", str(root)]
    base_wall, base_cpu = median_wall([sys.executable, "-c", _BASELINE, str(target)])
    results = [("first run (--json)", *median_wall(AUDIT + json_args, fresh=True))]
    for label, args in (("--json", json_args), ("text", text_args)):
        results.append((label, *median_wall(AUDIT + args)))
    peaks = {"--json": peak_kib(json_args), "text": peak_kib(text_args)}
    shutil.rmtree(WORK / "xdg", ignore_errors=True)
    peaks["first run (--json)"] = peak_kib(json_args)
    place(root, unmatched)
    peaks["no receipt matching, --json"] = peak_kib(json_args)
    peaks["no receipt matching, text"] = peak_kib(text_args)
    place(root, big)
    print(f"log: {ROWS:,} rows, {target.stat().st_size / 2**20:.0f} MiB; store: {SIZE:,} memories; median of {REPS}")
    print(f"baseline (read bytes + json.loads each line): {base_wall:.2f} s wall, {base_cpu:.2f} s CPU")
    for label, wall, cpu in results:
        ratio = cpu / base_cpu
        print(
            f"deliveries {label}: {cpu:.2f} s CPU ({ratio:.2f}x), {wall:.2f} s wall ({wall / base_wall:.2f}x); "
            f"goal <= {GOALS[label]}x CPU: {'met' if ratio <= GOALS[label] else 'NOT met'}"
        )
    for label, kib in peaks.items():
        mib = kib / 1024
        print(
            f"peak RSS, {label}: {mib:.1f} MiB; goal <= {PEAK_GOAL_MIB} MiB: {'met' if mib <= PEAK_GOAL_MIB else 'NOT met'}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
