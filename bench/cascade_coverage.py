"""Issue 43's acceptance for semantic coverage by the cascade (search.cascade, wired
into `palinode-audit index`): from a fresh store, whole processes,

1. `index` (the cascade: the sentences plans need) vs `index --full` (every chunk and
   sentence embedded exactly): CPU seconds, wall, peak RSS, sentences embedded;
2. how much of the exact model's nearest 20 per open request's preference, over every
   sentence of the store (from the full index's vectors), the cascade embedded (goal >= 0.98);
3. the first `plan` of each open request after each: CPU seconds, and whether both
   plans propose the same targets (path and route) and read the same semantic floor.

    python -m bench.cascade_coverage          # BENCH_SIZES=1000 by default

Sizes above BENCH_FULL_MAX (default 1000) run the cascade only (no exact reference:
`index --full` of the 10k store takes about 25 CPU minutes). Stores and caches go to
BENCH_WORK (default bench/out/cascade-work); results to bench/out/cascade_coverage.json.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from bench import unit_index
from bench.fast_commands import _PEAK, REPO
from bench.unit_index import AUDIT, BASE_ENV

WORK = Path(os.environ.get("BENCH_WORK", REPO / "bench" / "out" / "cascade-work")).resolve()
SIZES = [int(s) for s in os.environ.get("BENCH_SIZES", "1000").split(",") if s]
FULL_MAX = int(os.environ.get("BENCH_FULL_MAX", "1000"))
TOP = 20


def run(args: list[str], cache: Path) -> tuple[dict, float, float, float]:
    """One whole process under the peak-RSS wrapper: (its JSON, CPU s, wall s, peak MiB)."""
    start = time.monotonic()
    proc, cpu = unit_index.run([sys.executable, "-c", _PEAK, "palinode_core", "--json", *args], cache)
    return json.loads(proc.stdout), cpu, time.monotonic() - start, unit_index.peak_mib(proc)


def store_of(size: int) -> Path:
    root = WORK / f"demo{size}"
    if not (root / ".git").is_dir():
        subprocess.run(
            [*AUDIT, "-q", "demo-store", str(root), "--size", str(size), "--seed", "7"],
            check=True,
            capture_output=True,
            env={**BASE_ENV, "XDG_CACHE_HOME": str(WORK / "xdg-gen")},
        )
    return root


def database(cache: Path, size: int) -> sqlite3.Connection:
    return sqlite3.connect(next(cache.glob(f"palinode-tui/demo{size}-*/index.sqlite3")))


def kept_of_exact(full: sqlite3.Connection, quick: sqlite3.Connection, prefs: list[str]) -> list[float]:
    """Per preference: the share of the exact nearest TOP unit texts the cascade embedded."""
    from palinode_core.search.chunks import text_hash

    rows = full.execute("SELECT t.hash, v.vec FROM unit_texts t JOIN vectors v ON v.hash = t.hash").fetchall()
    hashes = [h for h, _ in rows]
    matrix = np.frombuffer(b"".join(v for _, v in rows), np.float32).reshape(len(rows), -1)
    embedded = {h for (h,) in quick.execute("SELECT hash FROM unit_texts WHERE embedded")}
    shares = []
    for pref in prefs:
        (blob,) = full.execute("SELECT vec FROM vectors WHERE hash = ?", (text_hash(pref),)).fetchone()
        sims = matrix @ np.frombuffer(blob, np.float32)
        top = np.argpartition(-sims, TOP)[:TOP]
        shares.append(sum(hashes[i] in embedded for i in top) / TOP)
    return shares


def targets(plan: dict) -> list[tuple[str, str]]:
    return sorted((c["path"], c["route"]) for c in plan["candidates"] if c["route"] in ("archive", "strike"))


def bench_size(size: int) -> dict:
    from palinode_core.session import Session

    store = store_of(size)
    session = Session.open(store, vectors=False)
    requests = sorted(
        (s.path, s.pref) for s in session.request_states() if s.state in ("pending", "partial", "conflicted")
    )
    prefs = sorted({p for _, p in requests})
    result: dict = {"size": size, "requests": len(requests)}
    arms = ["cascade", "full"] if size <= FULL_MAX else ["cascade"]
    plans: dict[str, dict[str, dict]] = {}
    for arm in arms:
        cache = WORK / f"xdg-{size}-{arm}"
        subprocess.run(["rm", "-rf", str(cache)], check=True)
        out, cpu, wall, peak = run(["index", str(store), *(["--full"] if arm == "full" else [])], cache)
        result[arm] = {
            "index_cpu_s": round(cpu, 1),
            "index_wall_s": round(wall, 1),
            "peak_mib": round(peak),
            "sentences_embedded": out["sentences_embedded"],
            "sentences": out["sentences"],
            "requests_covered": out.get("requests_covered"),
        }
        print(
            f"{size} {arm}: index {cpu:.1f} CPU s, {wall:.0f} s wall, peak {peak:.0f} MiB; "
            f"{out['sentences_embedded']:,} of {out['sentences']:,} sentences embedded",
            flush=True,
        )
        plans[arm] = {}
        firsts = []
        for path, _pref in requests:
            plan, cpu, _wall, _peak = run(["plan", str(store), path], cache)
            plans[arm][path] = plan
            firsts.append(cpu)
        result[arm]["first_plans_cpu_s"] = [round(c, 3) for c in firsts]
        print(f"{size} {arm}: first plans {', '.join(f'{c:.2f}' for c in firsts)} CPU s", flush=True)
    if "full" in arms:
        shares = kept_of_exact(
            database(WORK / f"xdg-{size}-full", size), database(WORK / f"xdg-{size}-cascade", size), prefs
        )
        same = [targets(plans["cascade"][p]) == targets(plans["full"][p]) for p, _ in requests]
        result.update(
            kept_of_exact_top20=round(float(np.mean(shares)), 4),
            kept_min=min(shares),
            kept_per_pref=dict(zip(prefs, shares, strict=True)),
            same_targets=f"{sum(same)} of {len(same)}",
            cpu_ratio=round(result["cascade"]["index_cpu_s"] / result["full"]["index_cpu_s"], 3),
        )
        print(
            f"{size}: kept of the exact nearest {TOP}: mean {np.mean(shares):.3f}, min {min(shares):.2f} "
            f"(goal >= 0.98); same targets in {sum(same)} of {len(same)} plans; cascade/full CPU "
            f"{result['cpu_ratio']:.2f}",
            flush=True,
        )
    return result


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    print(f"work dir {WORK}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}", flush=True)
    results = [bench_size(size) for size in SIZES]
    out = REPO / "bench" / "out" / "cascade_coverage.json"
    out.write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M"), "results": results}, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
