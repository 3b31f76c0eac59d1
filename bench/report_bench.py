"""The audit report on a big store with a long history (not part of `make test`).

    python -m bench.report_bench            # 10,000 memories, a year of daily commits

Builds the demo store with ``size`` generated memories, then a year of dated
daily commits editing a few memories each (Palinode's auto-saves), then times
``report --pref`` over all time (in-process: open the store with a warm scan
cache, build the report) against ONE ``git log -p`` of the same paths (the
requests in scope, their targets and the targets' history siblings), each the
median of repeated runs on the same machine. Goal: ratio <= 5.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path

SIZE = int(os.environ.get("BENCH_REPORT_SIZE", "10000"))
DAYS = int(os.environ.get("BENCH_REPORT_DAYS", "365"))
REPS = int(os.environ.get("BENCH_REPS", "5"))
PREF = "I play poker on Fridays"
GOAL = 5.0


def _git(root: Path, *args: str, when=None) -> str:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    if when is not None:
        stamp = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
        env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


def build(root: Path) -> int:
    """The demo store with SIZE memories, then DAYS daily commits after it."""
    from palinode_core.demo import EPOCH, build_demo_store
    build_demo_store(root, size=SIZE)
    rng = random.Random(11)
    generated = sorted(p.relative_to(root).as_posix() for p in root.glob("*/gen-*.md"))
    start = EPOCH + timedelta(days=60)
    for day in range(DAYS):
        when = start + timedelta(days=day, hours=rng.randint(8, 20))
        for rel in rng.sample(generated, 3):
            with open(root / rel, "a", encoding="utf-8") as handle:
                handle.write(f"\nFollow-up on day {day}: reviewed the {rng.choice(['ledger', 'harbor', 'garden'])}.\n")
        _git(root, "commit", "-qam", f"palinode auto-save: day {day}", when=when)
    return int(_git(root, "rev-list", "--count", "HEAD").strip())


def median(fn, reps: int = REPS) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    from palinode_core.session import Session
    tmp = Path(tempfile.mkdtemp(prefix="report-bench-"))
    os.environ.setdefault("XDG_CACHE_HOME", str(tmp / "xdg-cache"))
    for key, value in {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
                       "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}.items():
        os.environ.setdefault(key, value)
    keep = os.environ.get("BENCH_REPORT_STORE")  # build once into this folder, reuse on later runs
    root = Path(keep) if keep else tmp / "store"
    try:
        started = time.perf_counter()
        if keep and (root / ".git").is_dir():
            commits = int(_git(root, "rev-list", "--count", "HEAD").strip())
        else:
            commits = build(root)
        built = time.perf_counter() - started
        Session.open(root, vectors=False).rescan()  # the first open parses and caches; a report is a reopen

        def report() -> dict:
            return Session.open(root, vectors=False).report(pref=PREF)

        data = report()
        paths = sorted({p for r in data["requests"] for p in
                        [r["path"], *(t["path"] for t in r["targets"])]})
        from palinode_core.storage.paths import history_rel_for
        paths += sorted({history_rel_for(p) for p in paths})

        def git_log() -> None:
            subprocess.run(["git", "-C", str(root), "log", "-p", "--format=%H %an %aI %s", "--", *paths],
                           check=True, capture_output=True)

        ours = median(report)
        base = median(git_log)
        cli = median(lambda: subprocess.run([sys.executable, "-m", "palinode_core", "report", str(root), "--pref",
                                             PREF, "--format", "html", "-o", str(tmp / "r.html")],
                                            check=True, capture_output=True), reps=3)
        result = {"memories": SIZE, "commits": commits, "days": DAYS, "build_s": round(built, 1),
                  "requests": len(data["requests"]), "targets": sum(len(r["targets"]) for r in data["requests"]),
                  "paths": len(paths), "report_ms": round(ours * 1000, 1), "git_log_ms": round(base * 1000, 1),
                  "ratio": round(ours / base, 2), "goal": GOAL, "met": ours / base <= GOAL,
                  "cli_html_ms_incl_python_startup": round(cli * 1000, 1)}
        print(json.dumps(result, indent=2))
        out = Path(__file__).parent / "out"
        out.mkdir(exist_ok=True)
        (out / "report_bench.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        return 0 if result["met"] else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
