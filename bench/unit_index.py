"""Issue 21's acceptance bench for the unit index: what a new user meets on a
fresh store, whole processes, each against a baseline measured in the same run
(Palinode 0.23 in its own virtualenv, FTS only). Not part of ``make test``.

    python -m bench.unit_index            # BENCH_SIZES=1000,10000 by default

Per store size (``palinode-audit demo-store --size N --seed 7``):

1. first default ``plan`` with no cache and no index vs Palinode's reindex +
   resolve of the same preference (goal <= 2x CPU), and its peak RSS (<= 200 MiB);
2. warm ``plan --lexical`` vs Palinode's warm resolve (goal <= 1.2x);
3. first default ``plan`` after ``palinode-audit index`` finished vs Palinode's
   warm resolve (goal <= 1.5x), reporting full semantic coverage: the median
   of BENCH_REPS first plans, each on a copy of the cache as ``index`` left it;
4. (sizes up to BENCH_EMBED_MAX, default 1000) ``index`` throughput: texts
   embedded per CPU-second vs a process that loads the model and encodes the
   very same texts (goal >= 0.95x);
5. (same sizes) ``apply --plan`` of the request's saved plan vs the CLI's own
   start-up plus two bare ``git commit``s in the same repository (goal <= 1.5x).

Environment: BENCH_WORK (default bench/out/unit-work), BENCH_REPS (default 3),
BENCH_SIZES, BENCH_EMBED_MAX, and the Palinode venv variables of bench.fast_commands.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.fast_commands import _PEAK, REPO, compat_python

WORK = Path(os.environ.get("BENCH_WORK", REPO / "bench" / "out" / "unit-work")).resolve()
REPS = int(os.environ.get("BENCH_REPS", "3"))
SIZES = [int(s) for s in os.environ.get("BENCH_SIZES", "1000,10000").split(",") if s]
EMBED_MAX = int(os.environ.get("BENCH_EMBED_MAX", "1000"))
REQUEST = "insights/forget-berlin.md"
# Bytecode is written and reused, as on a user's machine (CI's PYTHONDONTWRITEBYTECODE would add ~0.3 s per start).
BASE_ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1"),
    "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO), os.environ.get("PYTHONPATH", "")]),
}
AUDIT = [sys.executable, "-m", "palinode_core", "--json"]
# Loads the model and encodes the texts of a file (one JSON list), with no vector cache around it.
_RAW_ENCODE = (
    "import json, sys\nfrom palinode_core.search.embed import Embedder\n"
    "Embedder().encode(json.load(open(sys.argv[1])))\n"
)


def run(cmd: list[str], cache: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    """One whole process; its CPU seconds (user + sys)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**BASE_ENV, "XDG_CACHE_HOME": str(cache)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return proc, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def median_cpu(cmd: list[str], cache: Path, reps: int = REPS) -> float:
    return statistics.median(run(cmd, cache)[1] for _ in range(reps))


def peak_mib(proc: subprocess.CompletedProcess[str]) -> float:
    return int(proc.stderr.rsplit("VmHWM", 1)[1].split()[0]) / 1024


def row(name: str, size: int, ours: float, base: float, goal: float, higher: bool = False, note: str = "") -> dict:
    ratio = ours / base if base else float("nan")
    met = ratio >= goal if higher else ratio <= goal
    sign = ">=" if higher else "<="
    print(f"{size:>6} {name}: {ours:.3f} vs {base:.3f} -> {ratio:.2f} (goal {sign} {goal}: "
          f"{'met' if met else 'NOT met'}){'; ' + note if note else ''}", flush=True)
    return {"name": name, "size": size, "ours": ours, "baseline": base, "ratio": ratio, "goal": f"{sign} {goal}",
            "met": met, "note": note}


def store_of(size: int) -> Path:
    root = WORK / f"store{size}"
    if not (root / ".git").is_dir():
        shutil.rmtree(root, ignore_errors=True)
        run([*AUDIT, "demo-store", str(root), "--size", str(size), "--seed", "7"], WORK / "xdg-gen")
    return root


def bench_size(size: int, py023: str) -> list[dict]:
    store = store_of(size)
    script = str(REPO / "bench" / "palinode023_resolve.py")
    theirs = WORK / f"store{size}-palinode023"
    shutil.rmtree(theirs, ignore_errors=True)
    shutil.copytree(store, theirs, ignore=shutil.ignore_patterns(".git"))
    # Palinode's first: index every memory, then resolve
    _, index023 = run([py023, script, "index", str(theirs)], WORK)
    resolve023 = [py023, script, "resolve", str(theirs), REQUEST]
    _, first023 = run(resolve023, WORK)
    warm023 = median_cpu(resolve023, WORK)
    rows = []
    # ours, first: nothing cached
    fresh = WORK / f"xdg-{size}-fresh"
    shutil.rmtree(fresh, ignore_errors=True)
    proc, first = run([sys.executable, "-c", _PEAK, "palinode_core", "--json", "plan", str(store), REQUEST], fresh)
    plan = json.loads(proc.stdout)
    rows.append(row("first plan, no cache vs Palinode reindex + resolve (CPU)", size, first, index023 + first023, 2.0,
                    note=f"peak {peak_mib(proc):.0f} MiB (goal <= 200); {plan['resolver_notice']}"))
    rows.append({"name": "first plan peak RSS", "size": size, "ours": peak_mib(proc), "unit": "MiB",
                 "goal": "<= 200", "met": peak_mib(proc) <= 200})
    lexical = median_cpu([*AUDIT, "plan", str(store), REQUEST, "--lexical"], fresh)
    rows.append(row("warm plan --lexical vs Palinode warm resolve (CPU)", size, lexical, warm023, 1.2))
    if size <= EMBED_MAX:
        indexed = WORK / f"xdg-{size}-indexed"
        shutil.rmtree(indexed, ignore_errors=True)
        run([*AUDIT, "index", str(store), "--lexical"], indexed)
        proc, index_cpu = run([*AUDIT, "index", str(store)], indexed)
        db = next(indexed.glob("palinode-tui/*/index.sqlite3"))
        texts = [r[0] for r in sqlite3.connect(db).execute(
            "SELECT text FROM chunks GROUP BY hash UNION SELECT text FROM units GROUP BY hash")]
        embedded = json.loads(proc.stdout)["embedded"]
        texts_file = WORK / f"texts-{size}.json"
        texts_file.write_text(json.dumps(texts))
        _, raw = run([sys.executable, "-c", _RAW_ENCODE, str(texts_file)], WORK)
        rows.append(row("index: texts embedded per CPU-second vs raw encode of the same texts", size,
                        embedded / index_cpu, len(texts) / raw, 0.95, higher=True,
                        note=f"{embedded} embedded in {index_cpu:.0f} CPU s; raw {len(texts)} in {raw:.0f} CPU s"))
        # each a genuine first plan after `index`: on a copy of the cache as `index` left it (one run is noisy)
        snapshot = WORK / f"xdg-{size}-indexed-snapshot"
        shutil.rmtree(snapshot, ignore_errors=True)
        shutil.copytree(indexed, snapshot)
        firsts = []
        for _ in range(REPS):
            shutil.rmtree(indexed)
            shutil.copytree(snapshot, indexed)
            firsts.append(run([sys.executable, "-c", _PEAK, "palinode_core", "--json", "plan", str(store), REQUEST],
                              indexed))
        shutil.rmtree(snapshot)
        after = statistics.median(cpu for _proc, cpu in firsts)
        proc = firsts[-1][0]
        semantic = json.loads(proc.stdout)["semantic"]
        warm = median_cpu([*AUDIT, "plan", str(store), REQUEST], indexed)
        rows.append(row("first plan after index vs Palinode warm resolve (CPU)", size, after, warm023, 1.5,
                        note=f"semantic {semantic}; warm again {warm:.3f} s; peak {peak_mib(proc):.0f} MiB"))
        rows.append(bench_apply(size, store, indexed))
    return rows


def _git(store: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(store), *args], capture_output=True, text=True, check=True).stdout


def bench_apply(size: int, store: Path, cache: Path) -> dict:
    """``apply --plan`` of the saved plan of one request vs the CLI's own start-up plus two bare
    ``git commit``s of a file in the same repository; the store is put back after each run."""
    base = _git(store, "rev-parse", "HEAD").strip()
    plan_file = WORK / f"plan-{size}.json"
    run([*AUDIT, "plan", str(store), REQUEST, "--out", str(plan_file)], cache)
    applies, commits = [], []
    kept = WORK / f"xdg-{size}-apply-snapshot"  # each apply meets the cache as the plan left it
    shutil.rmtree(kept, ignore_errors=True)
    shutil.copytree(cache, kept)
    try:
        for _ in range(REPS):
            shutil.rmtree(cache)
            shutil.copytree(kept, cache)
            _git(store, "reset", "-q", "--hard", base)
            time.sleep(2.1)  # past the scan cache's racy window: the files reset rewrote are cached again
            run([*AUDIT, "scan", str(store)], cache)  # as after the plan that saved the file
            applies.append(run([*AUDIT, "apply", str(store), "--plan", str(plan_file), "--yes"], cache)[1])
            _git(store, "reset", "-q", "--hard", base)
            for n in range(2):
                with open(store / "people" / "me-profile.md", "a") as f:
                    f.write(f"\nbench line {n}\n")
                commits.append(run(["git", "-C", str(store), "commit", "-q", "-m", "bench", "--",
                                    "people/me-profile.md"], cache)[1])
    finally:
        _git(store, "reset", "-q", "--hard", base)
        shutil.rmtree(cache)
        shutil.copytree(kept, cache)
        shutil.rmtree(kept)
    startup = median_cpu([*AUDIT, "--version"], cache)
    baseline = startup + 2 * statistics.median(commits)
    return row("apply --plan of one request vs CLI start-up + two bare git commits (CPU)", size,
               statistics.median(applies), baseline, 1.5,
               note=f"start-up {startup:.3f} s, a bare commit {statistics.median(commits) * 1000:.1f} ms")


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(REPO / "core" / "palinode_core")], check=False)
    print(f"work dir {WORK}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}", flush=True)
    py023 = str(compat_python())
    rows = [r for size in SIZES for r in bench_size(size, py023)]
    out = REPO / "bench" / "out" / "unit_index.json"
    out.write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M"), "rows": rows}, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
