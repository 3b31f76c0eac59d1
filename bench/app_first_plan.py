"""How long a person waits for a semantic plan in the app (issue 43): a fresh
demo store, an empty cache, the real model; `2` (Review) is pressed as soon as
the app is up, and the clock stops when the plan on screen says
"meaning: complete" (every sentence near the preference has its vector).
Wall and CPU of this process (the app, its workers and the
embedder run in it), per run and the median.

    python -m bench.app_first_plan [runs]

With BENCH_STORE and BENCH_CACHE (the store's cache folder as `palinode-audit index`
left it, e.g. ~/.cache/palinode-tui/<store>-<hash>), each run opens that store on a fresh
copy of that folder instead: a big store a person has indexed (the 10k demo store).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from palinode_core.demo import build_demo_store
from palinode_tui.app import PalinodeApp


async def one_run() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        if os.environ.get("BENCH_STORE"):
            root = Path(os.environ["BENCH_STORE"])
            shutil.copytree(os.environ["BENCH_CACHE"], Path(tmp) / "cache")
        else:
            root = Path(tmp) / "demo"
            build_demo_store(root)
        app = PalinodeApp(root, watch=False, cache_dir=Path(tmp) / "cache")
        async with app.run_test(size=(120, 36)) as pilot:
            wall, cpu = time.perf_counter(), time.process_time()
            await pilot.press("2")
            for _ in range(1200):
                await pilot.pause(0.025)
                if type(app.screen).__name__ != "ReviewScreen":
                    continue
                header = app.screen.query("#plan-header")
                if header and "meaning: complete" in header.first().render().plain:
                    return time.perf_counter() - wall, time.process_time() - cpu
    raise SystemExit("no semantic plan within 30 s")


def main(argv: list[str]) -> None:
    runs = int(argv[0]) if argv else 5
    walls, cpus = [], []
    for i in range(runs):
        wall, cpu = asyncio.run(one_run())
        walls.append(wall)
        cpus.append(cpu)
        print(f"run {i + 1}: semantic plan on screen {wall:.2f} s after the keypress ({cpu:.2f} s CPU)")
    print(f"median: {statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU (goal: within 2 s)")


if __name__ == "__main__":
    main(sys.argv[1:])
