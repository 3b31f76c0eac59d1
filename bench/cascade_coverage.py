"""Issue 43's acceptance for semantic coverage by the cascade (search.cascade, wired
into `palinode-audit index`): from a fresh store, whole processes,

1. `index` (the cascade: the sentences plans need) vs `index --full` (every chunk and
   sentence embedded exactly): CPU seconds, wall, peak RSS, sentences embedded;
2. how much of the exact model's nearest 20 per open request's preference, over every
   sentence of the store (from the full index's vectors), the cascade embedded (goal >= 0.98);
3. the first `plan` of each open request after each: CPU seconds, and whether both
   plans propose the same targets (path and route) and read the same semantic floor.

    python -m bench.cascade_coverage          # BENCH_SIZES=1000 by default
    BENCH_DEVMIX=1 python -m bench.cascade_coverage   # our own dev set inside the 1k demo store

With the full reference, the cascade's screening is rebuilt in-process exactly as `index` ran
it (the same texts judged far; the exact model runs on its sample again), to report what each
preference's own nearest keep (without the other requests' picks or the plans `index` makes),
each exact neighbour its own nearest left with its rank by the cheap vectors, and what the
screening alone would keep taking BENCH_BUDGETS (default 250,500,1000,2000) a preference.

Our own dev set (bench/voices, ``--set dev``, seed 1) is 300 files, under the cascade's BELOW:
alone, `index` embeds it whole. With BENCH_DEVMIX=1 its memories and requests are placed
inside the 1k demo store instead (each file as ``<category>/dev-<name>``, its id
``dev-<id>``, committed on top), so the cascade runs with the 20 dev requests open beside the
demo's 5; every figure is reported for the dev and the demo requests apart (results to
bench/out/cascade_coverage_devmix.json).

Sizes above BENCH_FULL_MAX (default 1000) run the cascade only (no exact reference:
`index --full` of the 10k store takes about 25 CPU minutes). Stores and caches go to
BENCH_WORK (default bench/out/cascade-work); results to bench/out/cascade_coverage.json.
"""

from __future__ import annotations

import json
import os
import re
import shutil
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
DEVMIX = os.environ.get("BENCH_DEVMIX") == "1"
TOP = 20
DEV = "dev-"  # the prefix of every file of the dev set inside the demo store
GOAL = 0.98
# per-preference shares of the cheap pass to report besides the one `index` took (BENCH_BUDGETS)
BUDGETS = [int(k) for k in os.environ.get("BENCH_BUDGETS", "250,500,1000,2000").split(",") if k]


def run(args: list[str], cache: Path) -> tuple[dict, float, float, float]:
    """One whole process under the peak-RSS wrapper: (its JSON, CPU s, wall s, peak MiB)."""
    start = time.monotonic()
    proc, cpu = unit_index.run([sys.executable, "-c", _PEAK, "palinode_core", "--json", *args], cache)
    return json.loads(proc.stdout), cpu, time.monotonic() - start, unit_index.peak_mib(proc)


def store_of(size: int, name: str = "") -> Path:
    root = WORK / (name or f"demo{size}")
    if not (root / ".git").is_dir():
        subprocess.run(
            [*AUDIT, "-q", "demo-store", str(root), "--size", str(size), "--seed", "7"],
            check=True,
            capture_output=True,
            env={**BASE_ENV, "XDG_CACHE_HOME": str(WORK / "xdg-gen")},
        )
    return root


def devmix_store(size: int = 1000) -> Path:
    """The voices dev set (seed 1) inside the demo store of ``size``: each of its files as
    ``<category>/dev-<name>`` (no demo path has that prefix), its id ``dev-<id>``, one commit."""
    from bench.voices.planted import build

    root, part = WORK / f"devmix{size}", WORK / f"devmix{size}-part"  # renamed once whole
    if (root / ".git").is_dir():
        return root
    shutil.rmtree(part, ignore_errors=True)
    store_of(size, part.name)
    src = WORK / "devset-src"
    shutil.rmtree(src, ignore_errors=True)
    build(src, 1, "dev")
    for path in sorted(src.rglob("*.md")):
        rel = path.relative_to(src)
        if ".git" in rel.parts:
            continue
        dest = part / rel.parent / f"{DEV}{rel.name}"
        if dest.exists():
            raise SystemExit(f"devmix: {dest} exists in the demo store")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(re.sub(r"^id: ", f"id: {DEV}", path.read_text("utf-8"), count=1, flags=re.M), "utf-8")
    shutil.rmtree(src)
    who = {f"GIT_{r}_{k}": v for r in ("AUTHOR", "COMMITTER") for k, v in (("NAME", "b"), ("EMAIL", "b@b.invalid"))}
    for args in (["add", "-A"], ["commit", "-q", "-m", "the voices dev set"]):
        subprocess.run(["git", "-C", str(part), *args], check=True, capture_output=True, env={**BASE_ENV, **who})
    part.rename(root)
    return root


def database(cache: Path, name: str) -> sqlite3.Connection:
    return sqlite3.connect(next(cache.glob(f"palinode-tui/{name}-*/index.sqlite3")))


def exact_nearest(full: sqlite3.Connection, prefs: list[str]) -> dict[str, list[tuple[str, float]]]:
    """Per preference: the exact model's nearest TOP unit texts (hash, similarity), nearest first."""
    from palinode_core.search.chunks import text_hash

    rows = full.execute("SELECT t.hash, v.vec FROM unit_texts t JOIN vectors v ON v.hash = t.hash").fetchall()
    hashes = [h for h, _ in rows]
    matrix = np.frombuffer(b"".join(v for _, v in rows), np.float32).reshape(len(rows), -1)
    out = {}
    for pref in prefs:
        (blob,) = full.execute("SELECT vec FROM vectors WHERE hash = ?", (text_hash(pref),)).fetchone()
        sims = matrix @ np.frombuffer(blob, np.float32)
        out[pref] = [(hashes[i], float(sims[i])) for i in np.argsort(-sims, kind="stable")[:TOP]]
    return out


def kept(nearest: list[tuple[str, float]], embedded: set[str]) -> float:
    """The share of a preference's exact nearest TOP the cascade embedded."""
    return sum(h in embedded for h, _ in nearest) / TOP


class CheapPass:
    """search.cascade.cover's screening rebuilt as `index` ran it on a fresh cache, for the
    open requests' ``prefs``: the texts sharing a stem with one (``likely``) and the SAMPLE
    smallest hashes of the rest (``sample``, the table's) embedded first; ``pool`` the texts
    screened, ``scores`` their cheap similarity to each preference (pool x prefs). The exact
    model runs on the sample again (about 10 CPU s)."""

    def __init__(self, prefs: list[str], quick_db: Path, full: sqlite3.Connection) -> None:
        import threading

        from palinode_core.search import cascade
        from palinode_core.search.chunks import text_hash
        from palinode_core.search.embed import Embedder
        from palinode_core.search.minilm import VOCAB
        from palinode_core.search.unit_index import UnitIndex
        from palinode_core.text.stem import stems

        copy = WORK / "cheap-pass.sqlite3"
        shutil.copyfile(quick_db, copy)
        db = sqlite3.connect(copy, check_same_thread=False)
        db.execute("UPDATE unit_texts SET embedded = 0, screened = 0")
        db.commit()
        self.prefs = prefs
        likely, rest = UnitIndex(db, threading.RLock(), threading.Event()).texts_missing_vectors(
            {s for pref in self.prefs for s in stems(pref)}
        )
        db.close()
        copy.unlink()
        first = {text_hash(p) for p in self.prefs}
        self.likely = {h for h, _ in likely}
        pool = [pair for pair in rest if pair[0] not in first]
        embedder = Embedder()
        table = cascade.PieceTable(VOCAB)
        sample = sorted(pool)[: cascade.SAMPLE]
        embedder.encode([t for _, t in sample], table)
        self.sample = {h for h, _ in sample}
        pool = [pair for pair in pool if pair[0] not in self.sample]
        model = cascade.CheapModel(table, embedder)
        cheap = np.vstack(
            [
                model.vectors(embedder.tokens([t for _, t in pool[start : start + cascade.SCREEN_CALL]]))
                for start in range(0, len(pool), cascade.SCREEN_CALL)
            ]
        )
        blobs = [
            full.execute("SELECT vec FROM vectors WHERE hash = ?", (text_hash(p),)).fetchone()[0] for p in self.prefs
        ]
        self.scores = cheap @ np.vstack([np.frombuffer(b, np.float32) for b in blobs]).T
        self.pool = [h for h, _ in pool]
        self.per_query = cascade.per_query(len(pool))

    def rank(self, pref: str, hashes: list[str]) -> dict[str, int | None]:
        """Each hash's rank from 1 by the cheap vectors among the pool for ``pref`` (None: not screened)."""
        order = np.argsort(-self.scores[:, self.prefs.index(pref)], kind="stable")
        rank_of = np.empty(len(order), np.int64)
        rank_of[order] = np.arange(1, len(order) + 1)
        at = {h: i for i, h in enumerate(self.pool)}
        return {h: int(rank_of[at[h]]) if h in at else None for h in hashes}

    def embedded_at(self, k: int, pref: str | None = None) -> set[str]:
        """What the cascade embeds when it takes the nearest ``k`` by the cheap vectors per
        preference (only ``pref``'s own nearest, given one: its cover with no other request open)."""
        from palinode_core.search.cascade import nearest

        scores = self.scores if pref is None else self.scores[:, [self.prefs.index(pref)]]
        return self.likely | self.sample | {self.pool[i] for i in nearest(scores, k)}


def targets(plan: dict) -> list[tuple[str, str]]:
    return sorted((c["path"], c["route"]) for c in plan["candidates"] if c["route"] in ("archive", "strike"))


def group_of(path: str) -> str:
    return "dev" if Path(path).name.startswith(DEV) else "demo"


def bench_size(size: int) -> dict:
    return measure(f"demo{size}", store_of(size), full=size <= FULL_MAX)


def measure(name: str, store: Path, full: bool) -> dict:
    """`index` vs `index --full` of ``store`` from a fresh cache, then what the module's
    docstring lists, the requests' figures per group (the dev set's and the demo's)."""
    from palinode_core.session import Session

    session = Session.open(store, vectors=False)
    requests = sorted(
        (s.path, s.pref) for s in session.request_states() if s.state in ("pending", "partial", "conflicted")
    )
    session.close()
    result: dict = {"store": name, "requests": len(requests)}
    arms = ["cascade", "full"] if full else ["cascade"]
    plans: dict[str, dict[str, dict]] = {}
    for arm in arms:
        cache = WORK / f"xdg-{name}-{arm}"
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
            f"{name} {arm}: index {cpu:.1f} CPU s, {wall:.0f} s wall, peak {peak:.0f} MiB; "
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
        print(f"{name} {arm}: first plans {', '.join(f'{c:.2f}' for c in firsts)} CPU s", flush=True)
    return compare(name, requests, plans, result) if full else result


def compare(name: str, requests: list[tuple[str, str]], plans: dict[str, dict[str, dict]], result: dict) -> dict:
    """The cascade's cache against the full one's: kept shares per group, same targets, why
    a preference's own nearest keep under the goal, and what fewer texts a preference would keep."""
    full_db = database(WORK / f"xdg-{name}-full", name)
    quick_db = database(WORK / f"xdg-{name}-cascade", name)
    result["cpu_ratio"] = round(result["cascade"]["index_cpu_s"] / result["full"]["index_cpu_s"], 3)
    near = exact_nearest(full_db, sorted({pref for _, pref in requests}))
    done = {h for (h,) in quick_db.execute("SELECT hash FROM unit_texts WHERE embedded")}
    (quick_file,) = [row[2] for row in quick_db.execute("PRAGMA database_list") if row[1] == "main"]
    cheap = CheapPass(sorted(near), Path(quick_file), full_db)
    rebuilt = cheap.embedded_at(cheap.per_query)
    result["cheap_pass"] = {
        "prefs_covered": len(cheap.prefs),
        "stem_sharing": len(cheap.likely),
        "screened": len(cheap.pool),
        "per_pref": cheap.per_query,
        "screening_embeds": len(rebuilt),
        "then_plans_embed": len(done - rebuilt),
        "rebuilt_not_in_run": len(rebuilt - done),
    }
    print(
        f"{name}: the cascade covered {len(cheap.prefs)} preferences: {len(cheap.likely):,} texts sharing a stem, "
        f"a sample of {len(cheap.sample):,}, {len(cheap.pool):,} screened, {cheap.per_query:,} a preference: "
        f"{len(rebuilt):,} unit texts (rebuilt here; {len(rebuilt - done)} of them not in the run's cache), "
        f"then the plans `index` makes embedded {len(done - rebuilt):,} more",
        flush=True,
    )
    groups = sorted({group_of(p) for p, _ in requests})
    for group in groups:
        mine = [(p, pref) for p, pref in requests if group_of(p) == group]
        prefs = sorted({pref for _, pref in mine})
        shares = [kept(near[pref], done) for pref in prefs]
        # by its own nearest alone: what the cheap pass found for it, not the other requests' picks or the plans
        own = {pref: kept(near[pref], cheap.embedded_at(cheap.per_query, pref)) for pref in prefs}
        same = [targets(plans["cascade"][p]) == targets(plans["full"][p]) for p, _ in mine]
        under = [pref for pref, share in zip(prefs, shares, strict=True) if share < GOAL]
        result[group] = {
            "requests": len(mine),
            "kept_of_exact_top20": round(float(np.mean(shares)), 4),
            "kept_min": min(shares),
            "kept_per_pref": dict(zip(prefs, shares, strict=True)),
            "own_nearest_kept": round(float(np.mean(list(own.values()))), 4),
            "own_nearest_min": min(own.values()),
            "under_goal": under,
            "same_targets": f"{sum(same)} of {len(same)}",
            "differing_plans": [p for (p, _), s in zip(mine, same, strict=True) if not s],
            "own_nearest_missed": {
                pref: explain(pref, near[pref], done, cheap, full_db) for pref, k in own.items() if k < GOAL
            },
        }
        print(
            f"{name} {group} ({len(mine)} requests): kept of the exact nearest {TOP}: mean {np.mean(shares):.3f}, "
            f"min {min(shares):.2f} (goal >= {GOAL}; under it: {len(under)}); by its own nearest "
            f"{cheap.per_query:,} alone: mean {np.mean(list(own.values())):.3f}, min {min(own.values()):.2f}; "
            f"same targets in "
            f"{sum(same)} of {len(same)} plans",
            flush=True,
        )
    # what fewer a preference would keep (the same cheap pass; the screening alone, before the plans `index` makes)
    result["per_pref_budgets"] = []
    for k in sorted({*BUDGETS, cheap.per_query}):
        embeds = cheap.embedded_at(k)
        row: dict = {"per_pref": k, "unit_texts_embedded": len(embeds)}
        for group in groups:
            shares = [kept(near[pref], embeds) for p, pref in requests if group_of(p) == group]
            row[group] = {"mean": round(float(np.mean(shares)), 4), "min": min(shares)}
        result["per_pref_budgets"].append(row)
        print(
            f"{name}: {k:,} a preference: {len(embeds):,} unit texts embedded; kept "
            + "; ".join(f"{g} mean {row[g]['mean']:.3f} min {row[g]['min']:.2f}" for g in groups),
            flush=True,
        )
    print(f"{name}: cascade/full CPU {result['cpu_ratio']:.2f}", flush=True)
    return result


def explain(
    pref: str, near: list[tuple[str, float]], done: set[str], cheap: CheapPass, full: sqlite3.Connection
) -> list[dict]:
    """Each exact neighbour of ``pref`` its own nearest cheap.per_query left: exact rank and
    similarity, its rank by the cheap vectors among those screened, and whether the run
    embedded it all the same (another request's pick, or a plan `index` made)."""
    own = cheap.embedded_at(cheap.per_query, pref)
    left = [(rank, h, sim) for rank, (h, sim) in enumerate(near, 1) if h not in own]
    ranks = cheap.rank(pref, [h for _, h, _ in left])
    print(f"  {pref!r}: its own nearest keep {TOP - len(left)} of {TOP}, the run {kept(near, done) * TOP:.0f}; left:")
    rows = []
    for rank, h, sim in left:
        (text,) = full.execute("SELECT text FROM units WHERE hash = ? LIMIT 1", (h,)).fetchone()
        rows.append(
            {"exact_rank": rank, "sim": round(sim, 3), "cheap_rank": ranks[h], "run": h in done, "text": text[:160]}
        )
        print(
            f"    exact #{rank} ({sim:.3f}), cheap #{ranks[h]}, {'embedded' if h in done else 'left'} by the run: "
            f"{text[:100]!r}",
            flush=True,
        )
    return rows


def main() -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    print(f"work dir {WORK}; {os.cpu_count()} cores; load {os.getloadavg()[0]:.1f}", flush=True)
    if DEVMIX:
        results = [measure("devmix1000", devmix_store(1000), full=True)]
        out = REPO / "bench" / "out" / "cascade_coverage_devmix.json"
    else:
        results = [bench_size(size) for size in SIZES]
        out = REPO / "bench" / "out" / "cascade_coverage.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"when": time.strftime("%Y-%m-%d %H:%M"), "results": results}, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
