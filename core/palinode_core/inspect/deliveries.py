"""Was it delivered after it was forgotten? Palinode's retrieval log joined
with git history: for each delivered row, the exact version delivered (its
receipt's ``file_sha256`` found among every version of the path, renames
followed), else the version current at the row's time (``inferred``), else
``unknown`` (named, never guessed); then, for each forget request, whether
that version carried the preference (forget.judgment, through the leak
check's evidence, forget/leak.py), judged against the request's state at the
row's own time (inspect.request_timeline):

- ``before_request``: a live mention delivered before the request was filed,
- ``exposure_window``: filed and not applied then (pending, every operation
  undone, or this memory left by a partial apply),
- ``leak``: while an apply of the request stood,
- ``withdrawn`` / ``dismissed``: the request was withdrawn or dismissed then (no leak),
- ``delivered_retracted``: a struck or archived mention (what the apply left on purpose),
- ``unrelated``: nothing of any request in scope (or the version is unknown).

A row is counted for every request whose preference it carries; the gravest
class is its headline, the others are listed beside it. A resolve envelope
counts as the records it supplied. Each distinct delivered version is parsed
and judged once, however many rows deliver it; rows are streamed, so memory
grows with the store, not the log."""

from __future__ import annotations

import functools
import math
import os
import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import UsageError
from ..forget.judgment import Judge, StoreFacts, user_names
from ..forget.leak import memory_leaks
from ..forget.requests import Request, find_requests
from ..storage.memory import Memory
from ..storage.snapshot import memory_from_bytes
from ..storage.store import Store
from ..text.letters import LETTER, fold
from ..text.stem import stem
from .delivery_records import (
    CLASSES,
    KEPT,
    MAX_LISTED,
    WITHHELD,
    Explained,
    JsonCodes,
    Mention,
    Part,
    Timeline,
    Window,
    record,
    record_json,
)
from .delivery_versions import Version, Versions
from .judgments import JudgmentCache, window_key
from .report import _parse_when
from .request_timeline import request_lives
from .retrieval_log import LOG_REL, LogReport, Row, read_rows

_BUNDLE_RE = re.compile(r"^[0-9a-f]{8,64}$")  # Palinode's bundle ids: an opaque hex digest (explain.validate_bundle_id)
INSTRUMENTATION_ENV = "PALINODE_INSTRUMENTATION_DISABLED"


def request_windows(store: Store, memories: Mapping[str, Memory], requests: list[Request]) -> list[Window]:
    """Each request's life: when it was filed and each state it was in since."""
    lives = request_lives(store, memories, requests)
    facts = StoreFacts(user_names(memories))  # history's versions: the user's names, every word at its role
    out = []
    for request in requests:
        stages = tuple(lives.get(request.path, ()))
        filed = stages[0] if stages and stages[0].event == "filed" else None
        filed_date = filed.at if filed is not None else request.memory.created_at
        out.append(
            Window(
                request,
                filed.start if filed is not None else _epoch(filed_date),
                filed_date,
                stages,
                Judge(request.pref, facts),
            )
        )
    return out


def _epoch(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return _parse_when(str(text)).timestamp()
    except ValueError:
        return None


class _PathVersions:
    """A path's versions over time, for rows that name no receipt of the file:
    the version current at the row's time (inferred). ``placed[i]`` places a
    row whose time is after ``times[i - 1]`` (``placed[0]``: before the first)."""

    __slots__ = ("placed", "times")

    def __init__(self, times: list[int], placed: list[Part | Timeline]) -> None:
        self.times, self.placed = times, placed


@dataclass
class DeliveryAudit:
    """One pass over the log: ``rows()`` streams each row's record and fills
    the per-request ``summary()``."""

    store: Store
    windows: list[Window]
    since: float | None = None
    until: float | None = None  # as of a past instant: rows after its second are not considered
    show_queries: bool = False  # the query and session of each row (the asker's, withheld unless asked)
    bundle: str | None = None  # only the rows of this delivery (Palinode's bundle id)
    log: LogReport = field(default_factory=LogReport)
    matches: dict[str, int] = field(default_factory=dict)
    bundle_rows: int = 0  # rows of ``bundle`` found
    without_bundle: int = 0  # rows read carrying no bundle id (written before receipts)
    _tally: dict[tuple[int, str], int] = field(default_factory=dict)  # (window, class) -> rows
    _listed: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)  # the first MAX_LISTED
    _judged: dict[tuple[str, str], dict[int, Mention]] = field(default_factory=dict)  # blob, path -> window
    _pattern: re.Pattern[str] | None = None
    _cache: JudgmentCache = field(default_factory=lambda: JudgmentCache(None))
    _window_keys: list[str] = field(default_factory=list)
    _timelines: dict[Any, Timeline] = field(default_factory=dict)  # a version (or an unknown) -> its timeline
    # a logged path (and receipt hash) -> what places its rows: a part, a timeline, or the path's versions
    _located: dict[Any, Part | Timeline | _PathVersions] = field(default_factory=dict)

    def rows(self, unrelated: bool = True) -> Iterator[dict[str, Any]]:
        """Each log row's record: the row's own fields, then what it delivered
        and its class (``unrelated=False``: only rows carrying a preference;
        every row is still read, counted and summarised)."""
        shown = self.show_queries
        for row, part in self._parts():
            if unrelated or part.tallies:
                yield record(row, part, shown)

    def carrying(self) -> Iterator[tuple[Row, Part]]:
        """(the row as logged, what it delivered and its class) for each row
        carrying a preference, without building the whole record (text output)."""
        for row, part in self._parts():
            if part.tallies:
                yield row, part

    def json_rows(self) -> Iterator[list[str]]:
        """The records of ``rows()`` in batches, each one line of ASCII JSON
        (every character outside ASCII a ``\\u`` escape, inert in a terminal).
        What a delivered version was judged to carry is encoded once per
        version and class, and each value logged again and again (a path, a
        session) once."""
        codes, said, shown = JsonCodes(), Explained(), self.show_queries
        batch: list[str] = []
        for row, part in self._parts():
            batch.append(record_json(row, part, codes, said, shown))
            if len(batch) >= 256:
                yield batch
                batch = []
        if batch:
            yield batch

    def _parts(self) -> Iterator[tuple[Row, Part]]:
        self._cache = JudgmentCache(getattr(self.store, "cache_dir", None))
        versions = Versions(self.store, self._rev(), self._cache)
        if versions.note:
            self.log.problem("git", versions.note)
        self._window_keys = [
            window_key(w.request.path, w.request.norm, w.request.rid, w.stems, w.carrying, w.judge.facts.user_names)
            for w in self.windows
        ]
        self.log.relocate = functools.partial(_relocate, versions)
        until = math.floor(self.until) + 1 if self.until is not None else math.inf  # to the second asked
        bundle = self.bundle
        located = self._located
        try:
            for row in read_rows(self.store.root, self.log, self.since):
                epoch = row.epoch
                if epoch >= until:
                    self.log.skip("after the point shown")
                    continue
                if bundle is not None:
                    if row.bundle_id != bundle:
                        if row.bundle_id is None:
                            self.without_bundle += 1
                        continue
                    self.bundle_rows += 1
                # a row placed by its receipt's hash, else by its path and time
                key: Any = (row.rel, row.revision) if row.revision_basis == "file_sha256" else row.rel
                found = located.get(key)
                if found is None:
                    found = self._locate(row, key, versions)
                if found.__class__ is not Part:
                    if found.__class__ is _PathVersions:
                        found = found.placed[bisect_right(found.times, epoch)]
                    if found.__class__ is Timeline:
                        found = found.part(epoch)
                part: Part = found  # type: ignore[assignment]
                part.rows += 1
                if part.listing:
                    self._list(row, part)
                yield row, part
        finally:
            versions.close()
            self._cache.close()
            if self._cache.notice:
                self.log.problem("cache", self._cache.notice)
            self._flush()

    def _rev(self) -> str:
        as_of = getattr(self.store, "as_of", None)
        return as_of.commit if as_of else "HEAD"

    def _locate(self, row: Row, key: Any, versions: Versions) -> Part | Timeline | _PathVersions:
        """What places a row of this path (and receipt): the version it
        delivered (exact) or an unknown, or the path's versions over time (inferred)."""
        if len(self._located) >= KEPT:
            self._flush()
            self._located.clear()
            self._timelines.clear()
        rel = row.rel
        found: Part | Timeline | _PathVersions
        if rel is None:
            found = self._placed(None, "unknown", "file_path names nothing inside the store", None, versions)
        else:
            path = rel if versions.known(rel) or not versions.known(rel + ".md") else rel + ".md"
            if key.__class__ is tuple:
                version = versions.exact(path, key[1])
                if version is None:  # the hash is in the record's "revision": one unknown per path
                    note = f"no version of {path} in history hashes to the receipt's file_sha256"
                    found = self._placed(None, "unknown", note, path, versions)
                else:
                    found = self._placed(version, "exact", None, path, versions)
            else:
                times, entries = versions.history(path)
                if not times:
                    found = self._placed(None, "unknown", f"{path}: never committed", path, versions)
                else:
                    gone = self._placed(
                        None, "unknown", f"{path}: not committed yet, or deleted, at that time", path, versions
                    )
                    found = _PathVersions(
                        times,
                        [gone] + [self._placed(v, "inferred", None, path, versions) if v else gone for v in entries],
                    )
        self._located[key] = found
        return found

    def _placed(
        self, version: Version | None, match: str, note: str | None, rel: str | None, versions: Versions
    ) -> Part | Timeline:
        """A version's (or an unknown's) timeline, made once; its one part when its class never changes."""
        key = (id(version), match, version.blob if version else rel, note)  # a version is one object for the run
        timeline = self._timelines.get(key)
        if timeline is None:
            judged = self._judge(version, versions) if version is not None else {}
            timeline = self._timelines[key] = Timeline(self.windows, judged, version, match, note, rel, versions.family)
        return timeline.placed()

    def _list(self, row: Row, part: Part) -> None:
        """The first MAX_LISTED rows of each request and class, as that request sees them."""
        rec = record(row, part, self.show_queries)
        for k, tally in enumerate(part.tallies):
            listed = self._listed.setdefault(tally, [])
            if len(listed) < MAX_LISTED:
                listed.append(rec if k == 0 else {**rec, **part.views[k]})
        part.listing = any(len(self._listed[t]) < MAX_LISTED for t in part.tallies)

    def _flush(self) -> None:
        """Each part's rows into the counts (parts count their own rows: the hot path adds one)."""
        for timeline in self._timelines.values():
            for part in timeline.parts():
                if part.rows:
                    for tally in part.tallies:
                        self._tally[tally] = self._tally.get(tally, 0) + part.rows
                    self.matches[timeline.match] = self.matches.get(timeline.match, 0) + part.rows
                    part.rows = 0

    def _judge(self, version: Version, versions: Versions) -> dict[int, Mention]:
        """For each request (by index), the first mention of its preference in
        this version; judged once per blob and path."""
        key = (version.blob, version.path)
        found = self._judged.get(key)
        if found is not None:
            return found
        kept = self._cache.get(version.blob, version.path, self._window_keys) if version.blob else None
        if kept is not None:
            judged = {i: Mention(*j) for i, wk in enumerate(self._window_keys) if (j := kept[wk]) is not None}
        else:
            judged, read = self._judge_now(version, versions)
            if version.blob and read:  # a blob git could not give is judged again next time
                self._cache.put(
                    version.blob,
                    version.path,
                    {
                        wk: (m.kind, m.sentence, m.line) if (m := judged.get(i)) is not None else None
                        for i, wk in enumerate(self._window_keys)
                    },
                )
        if len(self._judged) >= KEPT:
            self._judged.clear()
        self._judged[key] = judged
        return judged

    def _judge_now(self, version: Version, versions: Versions) -> tuple[dict[int, Mention], bool]:
        """(the judgments, whether the version's bytes were read)."""
        judged: dict[int, Mention] = {}
        data = versions.read(version.blob)
        lowered = fold((data or b"").decode("utf-8", "replace"))
        words = self._words()
        present = {stem(m.group()) for m in words.finditer(lowered)}
        relevant = [i for i, w in enumerate(self.windows) if w.carrying & present or f"r:{w.request.rid}" in lowered]
        memory = None
        if data is not None and relevant:
            try:
                memory = memory_from_bytes(version.path, data)
            except Exception:  # a version that does not parse carries nothing we can show
                memory = None
        if memory is not None:
            for i in relevant:
                w = self.windows[i]
                leaks = memory_leaks(
                    version.path,
                    memory,
                    w.request,
                    w.judge,
                    may_share=functools.partial(_shares, words, w=w),
                )
                live = [lk for lk in leaks if lk.kind in ("live", "unforgettable")]
                chosen = live or [lk for lk in leaks if lk.kind in ("struck", "archived")]
                if chosen:
                    first = chosen[0]
                    judged[i] = Mention("live" if live else "retracted", first.text, first.line)
        return judged, data is not None

    def _words(self) -> re.Pattern[str]:
        """The words that could stem to a stem of a request in scope: one scan
        per version finds them (a version sharing no stem carries no mention,
        lexically, so it is never segmented). A stem is a prefix of its word
        except for a last "i" or "e" (parties -> parti, living -> live)."""
        if self._pattern is None:
            prefixes = {
                st[:-1] if st.endswith(("i", "e")) and len(st) > 3 else st for w in self.windows for st in w.carrying
            }
            alternatives = "|".join(sorted((re.escape(p) for p in prefixes if p), key=len, reverse=True))
            self._pattern = re.compile(f"(?<!{LETTER})(?:{alternatives}){LETTER}*" if alternatives else r"(?!)")
        return self._pattern

    def summary(self) -> dict[str, Any]:
        """Per request: its life (window and timeline), counts per class of
        every row that concerns it, and the first rows of each class."""
        self._flush()
        out: dict[str, Any] = {}
        for i, w in enumerate(self.windows):
            listed = {c: rows for (j, c), rows in self._listed.items() if j == i}
            out[w.request.path] = {
                "window": w.to_dict(),
                "counts": {c: self._tally.get((i, c), 0) for c in CLASSES if c != "unrelated"},
                "leaks": listed.get("leak", []),
                "exposure": listed.get("exposure_window", []),
                "before_request": listed.get("before_request", []),
                "delivered_retracted": listed.get("delivered_retracted", []),
                "withdrawn": listed.get("withdrawn", []),
                "dismissed": listed.get("dismissed", []),
            }
        return out

    def withheld(self) -> dict[str, Any] | None:
        """What each record leaves out unless asked (``show_queries``), and why."""
        return None if self.show_queries else {"fields": ["session_id", "query"], "why": WITHHELD}

    def bundle_causes(self) -> list[dict[str, Any]]:
        """Why no row of ``bundle`` was found: each cause Palinode's explain
        names, whether it holds here, and what was seen."""
        log = self.log
        disabled = os.environ.get(INSTRUMENTATION_ENV, "").strip() in ("1", "true", "yes")
        off = disabled or not self.store.config.capture_retrievals
        rows = log.rows
        return [
            {
                "reason": "log_absent",
                "holds": log.missing and not log.files,
                "detail": f"{LOG_REL} does not exist: never written, or removed since",
            },
            {
                "reason": "instrumentation_disabled",
                "holds": off,
                "detail": (
                    f"capture is off here ({INSTRUMENTATION_ENV} in this environment, or "
                    "instrumentation.capture_retrievals: false in palinode.config.yaml); Palinode's own server "
                    "may run with another environment"
                ),
            },
            {
                "reason": "predates_receipts",
                "holds": self.without_bundle > 0,
                "detail": (
                    f"{self.without_bundle} of {rows} row(s) carry no bundle_id: written before delivery receipts, "
                    "or by a read, which carries none; no id addresses them"
                ),
            },
            {
                "reason": "older_than_the_log",
                "holds": None if log.first is None else True,
                "detail": (
                    f"the log begins at {log.first}: a delivery before that was rotated or trimmed away"
                    if log.first
                    else "the log holds no row to date it by"
                ),
            },
            {
                "reason": "surface_writes_no_rows",
                "holds": None,
                "detail": (
                    "cannot be checked from the id: POST /context/prime (the session-start digest) and "
                    "POST /search with an empty query build a receipt and log no row"
                ),
            },
        ]


def _shares(words: re.Pattern[str], text: str, w: Window) -> bool:
    """Can this unit carry the window's preference by its words (one of its specific stems)?"""
    return bool({stem(m.group()) for m in words.finditer(fold(text))} & w.carrying)


def _relocate(versions: Versions, file_path: str) -> tuple[str, str] | None:
    """(the store path, the folder the store was in) an absolute path outside
    the store names: its longest tail that history holds (a store moved since
    Palinode logged it), or None."""
    return versions.tail(file_path)


def delivery_audit(
    store: Store,
    memories: Mapping[str, Memory],
    *,
    request: str | None = None,
    since: float | None = None,
    until: float | None = None,
    show_queries: bool = False,
    bundle: str | None = None,
) -> DeliveryAudit:
    """The audit of every request (or one, by path), not yet run: iterate ``rows()``."""
    requests = find_requests(memories)
    if request is not None:
        from ..errors import NotAForgetRequest

        rel, _ = store.resolve(request)
        requests = [r for r in requests if r.path == rel]
        if not requests:
            raise NotAForgetRequest(f"{rel} is not a forget request in this store")
    if bundle is not None:
        bundle = bundle.strip().lower()
        if not _BUNDLE_RE.match(bundle):
            raise UsageError("a bundle id is a hex digest of 8 to 64 characters (as Palinode prints it)")
    return DeliveryAudit(
        store,
        request_windows(store, memories, requests),
        since=since,
        until=until if until is not None else as_of_instant(store),
        show_queries=show_queries,
        bundle=bundle,
    )


def as_of_instant(store: Store) -> float | None:
    """The instant a store shown as of a point stands for: the time asked
    (``--as-of``), else the commit's (``--at``); None for the live store."""
    as_of = getattr(store, "as_of", None)
    if as_of is None:
        return None
    return _epoch(getattr(as_of, "bound", None) or as_of.date)


def delivery_summaries(store: Store, memories: Mapping[str, Memory], requests: list[Request]) -> dict[str, Any]:
    """Each request's delivery record (for the report): one pass over the log."""
    audit = DeliveryAudit(
        store, request_windows(store, memories, requests), until=as_of_instant(store), show_queries=True
    )
    for _ in audit.carrying():
        pass
    summary = audit.summary()
    log = audit.log.to_dict()
    return {
        path: {**entry, "log": {k: log[k] for k in ("missing", "rows", "notes")}} for path, entry in summary.items()
    }


_REPORT_KEYS = ("timestamp", "session_id", "mode", "source", "query", "path", "chunk_id", "bundle_id")


def report_deliveries(store: Store, memories: Mapping[str, Memory], paths: list[str]) -> dict[str, dict[str, Any]]:
    """For the report: each request's exposure window, counts per class and
    the leaks and exposure-window deliveries (the first MAX_LISTED of each)."""
    wanted = set(paths)
    requests = [r for r in find_requests(memories) if r.path in wanted]
    out = {}
    for path, entry in delivery_summaries(store, memories, requests).items():

        def rows(cls: str, entry: dict[str, Any] = entry) -> list[dict[str, Any]]:
            return [
                {
                    **{k: r[k] for k in _REPORT_KEYS},
                    "version": r["commit"],
                    "revision_match": r["revision_match"],
                    "sentence": r["sentence"],
                    "sentence_sha256": r["sentence_sha256"],
                }
                for r in entry[cls]
            ]

        out[path] = {
            "window": {k: entry["window"][k] for k in ("from", "to", "applied_commit", "state", "timeline")},
            "counts": entry["counts"],
            "leaks": rows("leaks"),
            "exposure": rows("exposure"),
            "log": entry["log"],
        }
    return out
