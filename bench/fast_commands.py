"""Issue 15's acceptance bench: whole processes, each against a baseline
measured in the same run on the same machine. Not part of ``make test``.

    python -m bench.fast_commands

1. Warm hybrid ``plan`` of one forget request on an indexed ~300-memory store
   vs palinode 0.23 resolving the same preference on its own warm index, FTS
   only (goal <= 1.5x), and the plan's peak memory (goal <= 150 MiB).
2. Warm ``scan --json`` of 10,000 memories vs a process that only reads every
   file's bytes (goal <= 2.0x).
3. First embedding: chunks/s of the index's pipeline vs today's (before issue
   15: path order, encode calls of 256 at batch 32) on the same chunks, and the
   top-10 neighbour agreement of a fixed query set (goals >= 1.5x, >= 0.98).

Environment:
  BENCH_WORK             stores and caches, reused between runs (default bench/out/fast-work)
  PALINODE_COMPAT_VENV   a virtualenv with palinode==0.23.0 and its dependencies (default
                         .venv-compat; if that one cannot resolve, e.g. the compatibility suite's
                         --no-deps install, .venv-compat-full is used or created with pip)
  PALINODE_COMPAT_BASE_PYTHON  the Python to create it from (its sqlite3 must load extensions)
  BENCH_REPS             runs per timing, median reported (default 5)
  BENCH_EMBED_CHUNKS     chunks each embedding arm embeds (default 600; the 10k store has ~26,000)
  BENCH_SCAN_SIZE        memories in the scan store (default 10000)
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORK = Path(os.environ.get("BENCH_WORK", REPO / "bench" / "out" / "fast-work")).resolve()
VENV = Path(os.environ.get("PALINODE_COMPAT_VENV", REPO / ".venv-compat")).resolve()
REPS = int(os.environ.get("BENCH_REPS", "5"))
EMBED_CHUNKS = int(os.environ.get("BENCH_EMBED_CHUNKS", "600"))
SCAN_SIZE = int(os.environ.get("BENCH_SCAN_SIZE", "10000"))
REQUEST = "insights/forget-berlin.md"  # a pending request of the demo store
ENV = {**os.environ, "XDG_CACHE_HOME": str(WORK / "xdg"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1"),
       "PYTHONPATH": os.pathsep.join([str(REPO / "core"), str(REPO), os.environ.get("PYTHONPATH", "")])}
AUDIT = [sys.executable, "-m", "palinode_core", "--json"]
# Runs a command in this interpreter and prints its peak RSS (VmHWM) on stderr:
# a fresh process's own high-water mark, not the bench's carried across fork.
_PEAK = ("import runpy, sys\nsys.argv = sys.argv[1:]\ntry:\n    runpy.run_module(sys.argv[0], run_name='__main__')"
         "\nexcept SystemExit:\n    pass\nfinally:\n    print('VmHWM', [l.split()[1] for l in open('/proc/self/status')"
         " if l.startswith('VmHWM')][0], file=sys.stderr)\n")
_READ_BYTES = ("import os, sys\nn = 0\nfor d, dirs, files in os.walk(sys.argv[1]):\n"
               "    dirs[:] = [x for x in dirs if not x.startswith('.')]\n    for f in files:\n"
               "        if f.endswith('.md'):\n            with open(os.path.join(d, f), 'rb') as fh:\n"
               "                n += len(fh.read())\nprint(n)\n")


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, check=False, **kw)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return proc


CPU: dict[str, float] = {}  # median CPU seconds (user + sys) of the last timing of each command


def median_wall(cmd: list[str], reps: int = REPS) -> float:
    """Median wall seconds of whole runs; the median CPU seconds go to ``CPU``
    (on a shared machine CPU time is the steadier of the two)."""
    times, cpus = [], []
    for _ in range(reps):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        run(cmd)
        times.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    CPU[" ".join(cmd)] = statistics.median(cpus)
    return statistics.median(times)


def cpu_of(cmd: list[str]) -> float:
    return CPU[" ".join(cmd)]


def demo_store(name: str, size: int) -> Path:
    root = WORK / name
    if not (root / ".git").is_dir():
        shutil.rmtree(root, ignore_errors=True)
        run(AUDIT + ["demo-store", str(root), "--size", str(size)])
    return root


def _probe(python: str, code: str) -> bool:
    return subprocess.run([python, "-c", code], capture_output=True, check=False).returncode == 0


# palinode 0.23 opens its index with the sqlite-vec extension, so its Python's sqlite3
# must load extensions (pyenv builds often cannot; Debian's can), and its search needs
# the package's full dependencies (the compatibility suite installs it without them).
_LOADS_EXTENSIONS = "import sqlite3; raise SystemExit(not hasattr(sqlite3.Connection, 'enable_load_extension'))"
_RESOLVES = _LOADS_EXTENSIONS + "\nimport httpx, palinode.core.store, palinode.consolidation.forget"


def compat_python() -> Path:
    """A Python with palinode==0.23.0 that can resolve: ``PALINODE_COMPAT_VENV``
    if it can, else ``<it>-full`` (created with pip when missing)."""
    python = VENV / "bin" / "python"
    if python.exists() and _probe(str(python), _RESOLVES):
        return python
    venv = VENV.with_name(VENV.name + "-full")
    python = venv / "bin" / "python"
    if python.exists() and _probe(str(python), _RESOLVES):
        return python
    base = next((p for p in (os.environ.get("PALINODE_COMPAT_BASE_PYTHON"), sys.executable, "/usr/bin/python3")
                 if p and shutil.which(p) and _probe(p, _LOADS_EXTENSIONS)), None)
    if base is None:
        raise SystemExit("no Python with loadable sqlite extensions for palinode 0.23; "
                         "set PALINODE_COMPAT_BASE_PYTHON")
    print(f"creating {venv} from {base} with palinode==0.23.0 (pip)", file=sys.stderr)
    subprocess.run([base, "-m", "venv", "--clear", str(venv)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", "palinode==0.23.0"], check=True)
    return python


def report(name: str, ours: float, base: float, unit: str, goal: str, met: bool, note: str = "") -> dict:
    ratio = ours / base if base else float("nan")
    print(f"{name}: ours {ours:.3f} {unit}, baseline {base:.3f} {unit}, ratio {ratio:.2f} (goal {goal}: "
          f"{'met' if met else 'NOT met'}){'; ' + note if note else ''}", flush=True)
    return {"name": name, "ours": ours, "baseline": base, "ratio": ratio, "unit": unit, "goal": goal, "met": met,
            "note": note}


def bench_plan() -> list[dict]:
    store = demo_store("store300", 300)
    run(AUDIT + ["index", str(store)])  # embeds chunks and requests' preferences (once)
    theirs = WORK / "store300-palinode023"
    if not (theirs / ".palinode.db").exists():
        shutil.rmtree(theirs, ignore_errors=True)
        shutil.copytree(store, theirs, ignore=shutil.ignore_patterns(".git"))
    py023 = str(compat_python())
    script = str(REPO / "bench" / "palinode023_resolve.py")
    if not (theirs / ".palinode.db").exists():
        run([py023, script, "index", str(theirs)])
    plan = AUDIT + ["plan", str(store), REQUEST]
    out = run(plan)
    result = json.loads(out.stdout)
    if result["search_mode"] != "hybrid" or "loading the embedding model" in out.stderr:
        raise SystemExit(f"plan was not a warm hybrid plan: {result['search_mode']}, {out.stderr.strip()}")
    base_out = json.loads(run([py023, script, "resolve", str(theirs), REQUEST]).stdout)
    resolve023 = [py023, script, "resolve", str(theirs), REQUEST]
    ours_t = median_wall(plan)
    base_t = median_wall(resolve023)
    lexical_t = median_wall(plan + ["--lexical"])
    peak = run([sys.executable, "-c", _PEAK, "palinode_core", "--json", "plan", str(store), REQUEST])
    peak_mib = int(peak.stderr.rsplit("VmHWM", 1)[1].strip()) / 1024  # kB
    targets = [c["path"] for c in result["candidates"] if c["route"] in ("archive", "strike", "unforgotten")]
    print(f"peak memory of a warm hybrid plan: {peak_mib:.1f} MiB (goal <= 150: "
          f"{'met' if peak_mib <= 150 else 'NOT met'})", flush=True)
    return [
        report("warm hybrid plan vs palinode 0.23 FTS-only resolve (~300 memories)", ours_t, base_t, "s", "<= 1.5",
               ours_t / base_t <= 1.5, f"CPU {cpu_of(plan):.3f} s vs {cpu_of(resolve023):.3f} s "
               f"(ratio {cpu_of(plan) / cpu_of(resolve023):.2f}); ours --lexical {lexical_t:.3f} s; "
               f"targets ours {targets}, 0.23 {base_out['targets']}"),
        {"name": "peak memory of a warm hybrid plan", "ours": peak_mib, "unit": "MiB", "goal": "<= 150",
         "met": peak_mib <= 150},
    ]


def bench_scan() -> list[dict]:
    store = demo_store(f"store{SCAN_SIZE}", SCAN_SIZE)
    scan = AUDIT + ["scan", str(store)]
    run(scan)  # warm the scan cache
    read = [sys.executable, "-c", _READ_BYTES, str(store)]
    run(read)  # warm the page cache
    ours_t, base_t = median_wall(scan), median_wall(read)
    return [report(f"warm scan --json of {SCAN_SIZE} memories vs reading every file's bytes", ours_t, base_t, "s",
                   "<= 2.0", ours_t / base_t <= 2.0, f"CPU {cpu_of(scan):.3f} s vs {cpu_of(read):.3f} s "
                   f"(ratio {cpu_of(scan) / cpu_of(read):.2f})")]


def bench_embedding() -> list[dict]:
    proc = run([sys.executable, "-m", "bench.embed_compare", str(demo_store(f"store{SCAN_SIZE}", SCAN_SIZE)),
                str(EMBED_CHUNKS)], cwd=REPO)
    data = json.loads(proc.stdout.strip().splitlines()[-1])
    row = report(f"first embedding chunks/s vs today's pipeline ({data['chunks']} chunks)", data["ours"],
                 data["today"], "chunks/s", ">= 1.5", data["ours"] / data["today"] >= 1.5 and data["agree"] >= 0.98,
                 f"top-10 agreement {data['agree']:.4f} over {data['queries']} queries (goal >= 0.98); per CPU-second "
                 f"{data['ours_per_cpu_s']:.2f} vs {data['today_per_cpu_s']:.2f} "
                 f"(ratio {data['ours_per_cpu_s'] / data['today_per_cpu_s']:.2f})")
    return [row]


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    print(f"work dir {WORK}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}", flush=True)
    rows = bench_plan() + bench_scan() + bench_embedding()
    out = REPO / "bench" / "out" / "fast_commands.json"
    out.write_text(json.dumps(rows, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
