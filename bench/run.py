"""``make bench``: medians of repeated runs, each against a baseline measured in
the same run on the same machine. Never part of the test suite.

    python -m bench.run            # the 10,000-memory store
    BENCH_SIZES=10000,100000 python -m bench.run
"""
from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

OUT = Path(__file__).parent / "out"
REPS = int(os.environ.get("BENCH_REPS", "5"))
# Embedding runs at tens of chunks/s on 2 cores: a full 10k store would take most of
# an hour, so the bench embeds a budget of chunks (curated ones first) and says so.
EMBED_CHUNKS = int(os.environ.get("BENCH_EMBED_CHUNKS", "2000"))
# Above this size the BM25 rebuild comparison and embedding are skipped (tens of
# minutes each on 2 cores); the app is measured while it is still indexing.
LIGHT_ABOVE = int(os.environ.get("BENCH_LIGHT_ABOVE", "20000"))


@dataclass
class Result:
    name: str
    size: int
    ours: float
    baseline: float | None
    unit: str
    goal: str
    ratio: float | None = None
    met: bool | None = None
    note: str = ""


def median_time(fn: Callable[[], object], reps: int = REPS, setup: Callable[[], object] | None = None) -> float:
    times = []
    for _ in range(reps):
        if setup:
            setup()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ratio_result(name, size, ours, base, goal_ratio: float | None, unit="s", higher_is_better=False,
                 note="") -> Result:
    """A ratio against the same-run baseline; ``goal_ratio`` None reports it without a goal."""
    ratio = ours / base if base else None
    if goal_ratio is None:
        return Result(name, size, ours, base, unit, "—", ratio, None, note)
    met = None if ratio is None else (ratio >= goal_ratio if higher_is_better else ratio <= goal_ratio)
    goal = f"{'≥' if higher_is_better else '≤'} {goal_ratio}"
    return Result(name, size, ours, base, unit, goal, ratio, met, note)


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# -- individual benchmarks ---------------------------------------------------------
def bench_open(store_root: Path, size: int, cache: Path) -> list[Result]:
    from palinode_core.storage.store import Store
    paths = [p for p in store_root.rglob("*.md") if ".git" not in p.parts]
    read_all = lambda: [p.read_bytes() for p in paths]  # noqa: E731
    read_all()  # warm the page cache
    base = median_time(read_all)
    # the very first open parses every file's YAML; it also fills the scan cache
    # the app uses later (cache / "full"), so the app's first frame is a reopen
    first = median_time(lambda: Store(store_root, cache_dir=cache / "full").scan(), reps=1,
                        setup=lambda: shutil.rmtree(cache / "full", ignore_errors=True))
    reopen = median_time(lambda: Store(store_root, cache_dir=cache / "full").scan())  # a new process's open
    store = Store(store_root, cache_dir=cache / "full")
    scan = store.scan()
    incremental = median_time(lambda: store.refresh(scan))
    return [ratio_result("first open: parse every memory vs reading every file's bytes", size, first, base, None,
                         note="once per store (YAML parse, hash, scan cache write); one run"),
            ratio_result("reopen: scan from the stat-keyed cache vs reading every file's bytes", size, reopen, base,
                         1.0, note="what each later open costs"),
            ratio_result("in-app refresh: stat every file, re-read none vs reading every file's bytes", size,
                         incremental, base, 1.0)]


def bench_bm25(store_root: Path, size: int, cache: Path) -> list[Result]:
    import sqlite3

    from palinode_core.search.chunks import chunk_memory
    from palinode_core.search.index import SearchIndex
    from palinode_core.storage.store import Store
    store = Store(store_root)
    memories = store.scan().memories
    chunks = [(c.chunk_id, m.rel, m.status.lower(), c.text) for m in memories.values() for c in chunk_memory(m)]

    def bare() -> None:  # the chunks and their FTS5 terms only, as Palinode's own index keeps them
        folder = cache / "bare-fts5"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        db = sqlite3.connect(folder / "bare.sqlite3")
        db.execute("CREATE TABLE chunks (chunk_id TEXT PRIMARY KEY, path TEXT, status TEXT, text TEXT)")
        db.execute("CREATE VIRTUAL TABLE terms USING fts5(text, content='chunks', content_rowid='rowid')")
        db.executemany("INSERT INTO chunks VALUES (?,?,?,?)", chunks)
        db.execute("INSERT INTO terms(terms) VALUES ('rebuild')")
        db.commit()
        db.close()

    def ours() -> None:
        folder = cache / "ours"
        shutil.rmtree(folder, ignore_errors=True)
        index = SearchIndex(store, cache_dir=folder)
        index.update_lexical(memories=memories)
        index.close()

    reps = 2 if len(chunks) > 5000 else REPS
    base = median_time(bare, reps)
    mine = median_time(ours, reps)
    return [ratio_result("first lexical index (chunks, BM25 terms, every unit) vs a bare FTS5 build of the chunks",
                         size, mine, base, None, note=f"{len(chunks)} chunks; ours also segments every sentence")]


def bench_embed(store_root: Path, size: int, cache: Path, embedder) -> tuple[list[Result], object]:
    from palinode_core.search.index import SearchIndex
    from palinode_core.storage.store import Store
    index = SearchIndex(Store(store_root), embedder, cache_dir=cache / "full")
    index.update_lexical()
    embedder.load()
    sample = min(600, EMBED_CHUNKS or 600)
    texts = [text for _, text in index.missing_vectors(sample)]  # exactly the chunks ours embeds next
    embedder.encode(texts[:32])  # warm up both arms alike
    start = time.perf_counter()
    embedder.encode(texts)
    raw_rate = len(texts) / (time.perf_counter() - start)
    before = embedder.encoded
    start = time.perf_counter()
    index.update_vectors(limit=sample)
    elapsed = time.perf_counter() - start
    ours_rate = (embedder.encoded - before) / elapsed
    index.update_vectors(limit=max(0, EMBED_CHUNKS - sample) or None)  # the rest of the budget, untimed
    return [ratio_result("embedding throughput vs the embedder's own encode on the same chunks", size, ours_rate,
                         raw_rate, 0.9, unit="chunks/s", higher_is_better=True,
                         note=f"{len(texts)} chunks each; {index.stats.vectors} of {index.stats.chunks} "
                              "chunks embedded in all")], index


def bench_plan(store_root: Path, size: int, index) -> list[Result]:
    from palinode_core.forget import resolve
    from palinode_core.storage.store import Store
    store = index.store
    memories = store.scan().memories
    query = lambda: index.search("I know Wilhelmina Cragg", 10)  # noqa: E731
    query()
    base = median_time(query)
    plan = lambda: resolve.plan_forget(store, index, "insights/forget-w.md", memories)  # noqa: E731
    plan()
    ours = median_time(plan)
    mode = index.search("x", 1).mode
    return [ratio_result("plan one forget request vs one hybrid query", size, ours, base, 3.0,
                         note=f"search mode: {mode}; vectors for {index.stats.vectors} chunks")]


def bench_apply(store_root: Path, size: int) -> list[Result]:
    from palinode_core.ops import lifecycle
    from palinode_core.ops.apply import apply
    from palinode_core.storage.store import Store
    store = Store(store_root)
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "bench",
           "GIT_COMMITTER_EMAIL": "b@b"}
    scratch = store_root / "insights" / "bench-scratch.md"
    counter = [0]

    def bare_commit() -> None:
        counter[0] += 1
        scratch.write_text(f"---\nid: scratch\n---\nline {counter[0]}\n")
        subprocess.run(["git", "-C", str(store_root), "add", "--", str(scratch)], check=True, env=env)
        subprocess.run(["git", "-C", str(store_root), "commit", "-q", "-m", "bench", "--", str(scratch)],
                       check=True, env=env)

    reps = max(REPS, 9)  # a ~60 ms operation: more runs steady the median
    base = median_time(bare_commit, reps)
    os.environ.update({k: v for k, v in env.items() if k.startswith("GIT_")})
    rel = "insights/pref-tea.md"
    archive = lambda: (apply(store, lifecycle.plan_archive(store, rel)),  # noqa: E731
                       apply(store, lifecycle.plan_restore(store, rel)))
    both_archive = median_time(archive, reps) / 2
    strike_rel, pref = "projects/moonrise-closeout.md", "I know Wilhelmina Cragg"
    strike = lambda: (apply(store, lifecycle.plan_retract(store, strike_rel, pref)),  # noqa: E731
                      apply(store, lifecycle.plan_unretract(store, strike_rel, pref)))
    both_strike = median_time(strike, reps) / 2
    return [ratio_result("apply one archive incl. commit vs a bare git commit", size, both_archive, base, 1.5),
            ratio_result("apply one strike incl. commit vs a bare git commit", size, both_strike, base, 1.5)]


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


async def _key_latencies(pilot, count: int) -> tuple[list[float], list[float]]:
    cpu, wall = [], []
    for i in range(count):
        c0, w0 = time.process_time(), time.perf_counter()
        await pilot.press("down" if i % 40 < 30 else "up")
        await pilot.pause()
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return cpu, wall


async def _until(pilot, app, predicate: Callable[[], bool], what: str, timeout: float = 300.0) -> None:
    """Wait for the app; a bench that hangs says what it was waiting for."""
    deadline = time.perf_counter() + timeout
    while not predicate():
        if time.perf_counter() > deadline:
            raise RuntimeError(f"bench timed out waiting for {what}: status {app.status_note!r}, progress "
                               f"{app.progress}, screen {type(app.screen).__name__}, workers "
                               f"{[w.description for w in app.workers]}")
        await pilot.pause(0.005)


async def _cold_first_frame(store_root: Path, size: int, cache: Path, embedder) -> list[Result]:
    """A user's very first open: no scan cache, no index."""
    from palinode_tui.app import PalinodeApp
    cold = cache / "cold"
    shutil.rmtree(cold, ignore_errors=True)
    start = time.perf_counter()
    app = PalinodeApp(store_root, embedder=embedder, vectors=False, cache_dir=cold, watch=False)
    async with app.run_test(size=(120, 36)) as pilot:
        await _until(pilot, app, lambda: app.scan is not None and bool(app.screen.rows), "the first frame",
                     timeout=600)
        first_frame = time.perf_counter() - start
    shutil.rmtree(cold, ignore_errors=True)
    return [Result("open to first frame (app, nothing cached: a first open)", size, first_frame, None, "s", "—",
                   note="parsing in a child above 2,000 files; progress in the status line")]


async def _app_benches(store_root: Path, size: int, cache: Path, embedder) -> list[Result]:
    from textual.widgets import DataTable

    from palinode_tui.app import PalinodeApp
    results = []
    start = time.perf_counter()
    app = PalinodeApp(store_root, embedder=embedder, vectors=False, cache_dir=cache / "full", watch=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await _until(pilot, app, lambda: app.scan is not None and bool(app.screen.rows), "the first frame")
        first_frame = time.perf_counter() - start
        results.append(Result("open to first frame (app, warm cache)", size, first_frame, None, "s", "—"))
        if size <= LIGHT_ABOVE:
            await _until(pilot, app, lambda: app.index is not None and app.progress is None, "the index")
        else:  # measure while the first index is being built, as a user of a huge store first meets it
            await _until(pilot, app, lambda: app.progress_phase == "lexical", "the first index to start")
        indexing = " (measured while the index was still being built)" if app.progress is not None else ""
        screen = app.screen
        table = screen.query_one("#memories", DataTable)
        table.focus()
        # key press to repaint: the CPU the app spends handling the key and
        # repainting (process time, so Pilot's own idle waits are not counted)
        latencies, walls = await _key_latencies(pilot, 120)
        p95 = _p95(latencies)
        results.append(Result("key press to repaint in the browse list (p95, CPU)", size, p95, None, "s", "≤ 0.050",
                              met=p95 <= 0.050, note=f"median {statistics.median(latencies) * 1000:.1f} ms; "
                                                    f"wall p95 under Pilot {_p95(walls) * 1000:.0f} ms{indexing}"))
        # external write to UI refreshed
        target = store_root / "insights" / "pref-sneakers.md"
        original = target.read_text()
        delays = []
        for i in range(10):
            marker = f"bench-marker-{i}"
            scan_before = app.scan
            t0 = time.perf_counter()
            target.write_text(original.replace("every week", f"every week {marker}"))
            await _until(pilot, app, lambda seen=scan_before, m=marker: app.scan is not seen and m in app.scan.memories[
                "insights/pref-sneakers.md"].body, f"write {i} to show", timeout=60)
            delays.append(time.perf_counter() - t0)
        target.write_text(original)
        med = statistics.median(delays)
        results.append(Result("external file write to UI refreshed (median)", size, med, None, "s", "≤ 0.300",
                              met=med <= 0.300, note=f"watcher debounce {app.watcher.debounce * 1000:.0f} ms"))
        # a burst of 1,000 external writes while keys are pressed
        burst_dir = store_root / "burst"
        burst_dir.mkdir(exist_ok=True)
        for i in range(1000):
            (burst_dir / f"b{i:04d}.md").write_text(f"---\nid: b{i}\n---\nburst {i}\n")
        scans_before = app.scan
        lat, _walls = await _key_latencies(pilot, 60)
        deadline = time.perf_counter() + 30
        scans_seen = 0 if app.scan is scans_before else 1  # refresh batches, as far as polling can tell
        while sum(1 for r in app.scan.memories if r.startswith("burst/")) < 1000 and time.perf_counter() < deadline:
            seen = app.scan
            await pilot.pause(0.05)
            scans_seen += app.scan is not seen
        p95 = _p95(lat)
        ok = sum(1 for r in app.scan.memories if r.startswith("burst/")) == 1000
        results.append(Result("key press to repaint during a 1,000-file burst (p95)", size, p95, None, "s",
                              "≤ 0.100", met=p95 <= 0.100 and ok,
                              note=f"final state {'matches' if ok else 'DOES NOT match'} the files; "
                                   f"at least {scans_seen} refresh(es) after the keys"))
    return results


def bench_memory(store_root: Path, size: int) -> list[Result]:
    code = """
import sys
from palinode_core.storage.store import Store
from palinode_core.search.index import SearchIndex
from palinode_core.search.embed import Embedder
store = Store(sys.argv[1]); scan = store.scan()
if sys.argv[2] == "model":
    e = Embedder(); e.load(); e.encode(["warm up the model with one sentence"] * 32)
# VmHWM, not ru_maxrss: Linux carries ru_maxrss over from the parent across fork/exec
print(next(l.split()[1] for l in open("/proc/self/status") if l.startswith("VmHWM")))
"""
    out = {}
    for mode in ("plain", "model"):
        proc = subprocess.run([sys.executable, "-c", code, str(store_root), mode], capture_output=True, text=True,
                              check=True)
        out[mode] = int(proc.stdout.strip().splitlines()[-1]) / 1024
    return [Result("peak memory: open + scan, no model", size, out["plain"], None, "MiB", "—"),
            Result("peak memory: open + scan + model loaded", size, out["model"], None, "MiB", "—")]


# -- driver ------------------------------------------------------------------------------
def run(size: int) -> list[Result]:
    from palinode_core.demo import build_demo_store
    from palinode_core.search.embed import Embedder
    work = Path(tempfile.mkdtemp(prefix=f"palinode-bench-{size}-"))
    os.environ["XDG_CACHE_HOME"] = str(work / "xdg-cache")
    store_root = work / "store"
    log(f"generating a {size}-memory store in {store_root}")
    t0 = time.perf_counter()
    build_demo_store(store_root, size=size)
    log(f"generated in {time.perf_counter() - t0:.0f} s")
    cache = work / "cache"
    embedder = Embedder()
    results: list[Result] = []
    log("open")
    results += bench_open(store_root, size, cache)
    if size <= LIGHT_ABOVE:
        log("bm25")
        results += bench_bm25(store_root, size, cache)
    if size <= LIGHT_ABOVE:
        log("embedding (the first full index)")
        embed_results, index = bench_embed(store_root, size, cache, embedder)
        results += embed_results
        log("plan vs query")
        results += bench_plan(store_root, size, index)
        index.close()
    log("apply vs git commit")
    results += bench_apply(store_root, size)
    log("app: first frame, keys, refresh, burst")
    results += asyncio.run(_cold_first_frame(store_root, size, cache, embedder))
    results += asyncio.run(_app_benches(store_root, size, cache, embedder))
    log("peak memory")
    results += bench_memory(store_root, size)
    return results


def render(results: list[Result]) -> str:
    lines = ["| benchmark | memories | ours | baseline | ratio | goal | met | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in results:
        fmt = (lambda v: f"{v * 1000:.1f} ms") if r.unit == "s" else (lambda v: f"{v:.1f} {r.unit}")
        lines.append(f"| {r.name} | {r.size:,} | {fmt(r.ours)} | {fmt(r.baseline) if r.baseline else '—'} | "
                     f"{f'{r.ratio:.2f}' if r.ratio is not None else '—'} | {r.goal} | "
                     f"{'yes' if r.met else 'no' if r.met is False else '—'} | {r.note} |")
    return "\n".join(lines)


def main() -> int:
    sizes = [int(s) for s in os.environ.get("BENCH_SIZES", "10000").split(",") if s.strip()]
    started = time.perf_counter()
    results: list[Result] = []
    for size in sizes:
        results += run(size)
    table = render(results)
    print()
    print(table)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, {platform.platform()}"
    print(f"\nmachine: {machine}; total {time.perf_counter() - started:.0f} s")
    OUT.mkdir(exist_ok=True)
    (OUT / "latest.json").write_text(json.dumps({"machine": machine, "results": [asdict(r) for r in results]},
                                                indent=2))
    (OUT / "latest.md").write_text(table + f"\n\nmachine: {machine}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
