"""Was it delivered after it was forgotten? Palinode's retrieval log joined
with git history: for each delivered row, the exact version delivered (its
receipt's ``file_sha256`` found among every version of the path, renames
followed), else the version current at the row's time (``inferred``), else
``unknown`` (named, never guessed); then, for each forget request, whether
that version carried the preference, by the evidence the leak check uses
(forget/leak.py), and when:

- ``before_request``: a live mention delivered before the request was filed,
- ``exposure_window``: after it was filed, before its apply (or it is not applied),
- ``leak``: after the apply,
- ``delivered_retracted``: a struck or archived mention (what the apply left on purpose),
- ``unrelated``: nothing of any request in scope (or the version is unknown).

A row carrying several requests' preferences takes the gravest class. Each
distinct delivered version is parsed and judged once, however many rows
deliver it; rows are streamed, so memory grows with the store, not the log."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..forget.judgment import Judge, StoreFacts, user_names
from ..forget.leak import memory_leaks
from ..forget.requests import Request, find_requests, request_states
from ..ops.subjects import parse_subject
from ..storage.memory import Memory
from ..storage.snapshot import memory_from_bytes
from ..storage.store import Store
from ..text.letters import LETTER, fold
from ..text.stem import stem
from .delivery_records import (
    CLASSES,
    KEPT,
    MAX_LISTED,
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
from .report import FORWARD_OPS, _all_commits, _first_added, _parse_when
from .retrieval_log import LogReport, Row, read_rows


def request_windows(store: Store, memories: Mapping[str, Memory], requests: list[Request]) -> list[Window]:
    """When each request was filed (its first commit, else its created_at) and
    applied (its first forward operation: one naming it, else one on a memory
    now archived under it or struck for it, after it was filed)."""
    as_of = getattr(store, "as_of", None)
    rev = as_of.commit if as_of else "HEAD"
    history = list(reversed(_all_commits(store, rev)))  # oldest first
    added = _first_added(store, rev, [r.path for r in requests]) if history else {}
    states = {s.path: s for s in request_states(store, memories)}
    prefix = store.config.commit_prefix
    facts = StoreFacts(user_names(memories))  # history's versions: the user's names, every word at its role
    out = []
    for request in requests:
        filed_date = added[request.path].date if request.path in added else request.memory.created_at
        filed = _epoch(filed_date)
        state = states.get(request.path)
        targets = set(state.archived_targets + state.struck_targets) if state else set()
        applied: tuple[float, str, str] | None = None
        for commit in history:
            op = parse_subject(commit.subject, prefix)
            if op is None or op.op not in FORWARD_OPS or op.path == request.path:
                continue
            names = commit.trailers.get("Forget-Request") == request.path or op.counterpart == request.path
            when = _epoch(commit.date)
            if when is None or (filed is not None and when < filed):
                continue
            if names or op.path in targets:
                applied = (when, commit.date, commit.sha)
                break
        out.append(
            Window(
                request,
                filed,
                filed_date,
                applied[0] if applied else None,
                applied[1] if applied else None,
                applied[2] if applied else None,
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


@dataclass
class DeliveryAudit:
    """One pass over the log: ``rows()`` streams each row's record and fills
    the per-request ``summary()``."""

    store: Store
    windows: list[Window]
    since: float | None = None
    until: float | None = None  # as of a past point: rows after it are not considered
    log: LogReport = field(default_factory=LogReport)
    _tally: dict[tuple[int, str], int] = field(default_factory=dict)  # (window, class) -> rows
    _listed: dict[tuple[int, str], list[dict[str, Any]]] = field(default_factory=dict)  # the first MAX_LISTED
    matches: dict[str, int] = field(default_factory=dict)
    _judged: dict[tuple[str, str], dict[int, Mention]] = field(default_factory=dict)  # blob, path -> window
    _pattern: re.Pattern[str] | None = None
    _cache: JudgmentCache = field(default_factory=lambda: JudgmentCache(None))
    _window_keys: list[str] = field(default_factory=list)
    _timelines: dict[tuple[Any, ...], Timeline] = field(default_factory=dict)

    def rows(self, unrelated: bool = True) -> Iterator[dict[str, Any]]:
        """Each log row's record: the row's own fields, then what it delivered
        and its class (``unrelated=False``: only rows carrying a preference;
        every row is still read, counted and summarised)."""
        for row, part in self._parts():
            if unrelated or part.tally is not None:
                yield record(row, part)

    def carrying(self) -> Iterator[tuple[Row, dict[str, Any]]]:
        """(the row as logged, what it delivered and its class) for each row
        carrying a preference, without building the whole record (text output)."""
        for row, part in self._parts():
            if part.tally is not None:
                yield row, part.judged

    def json_rows(self) -> Iterator[str]:
        """Each record of ``rows()`` as one line of ASCII JSON (every character
        outside ASCII a ``\\u`` escape, inert in a terminal). What a delivered
        version was judged to carry is encoded once per version and class, and
        each value logged again and again (a path, a session) once."""
        codes = JsonCodes()
        for row, part in self._parts():
            yield record_json(row, part, codes)

    def _parts(self) -> Iterator[tuple[Row, Part]]:
        self._cache = JudgmentCache(getattr(self.store, "cache_dir", None))
        versions = Versions(self.store, self._rev(), self._cache)
        if versions.note:
            self.log.problem("git", versions.note)
        self._window_keys = [
            window_key(w.request.path, w.request.norm, w.request.rid, w.stems, w.carrying) for w in self.windows
        ]
        try:
            for row in read_rows(self.store.root, self.log, self.since):
                if self.until is not None and row.epoch > self.until:
                    self.log.skip("after the point shown")
                    continue
                yield row, self._record(row, versions)
        finally:
            versions.close()
            self._cache.close()
            if self._cache.notice:
                self.log.problem("cache", self._cache.notice)

    def _rev(self) -> str:
        as_of = getattr(self.store, "as_of", None)
        return as_of.commit if as_of else "HEAD"

    def _record(self, row: Row, versions: Versions) -> Part:
        """What the row delivered and its class."""
        version, match, note = _locate(row, versions)
        self.matches[match] = self.matches.get(match, 0) + 1
        # by identity: a version is one object for the whole run, and hashing its fields costs more
        key = (id(version), None if version else row.rel, match, note)
        timeline = self._timelines.get(key)
        if timeline is None:
            if len(self._timelines) >= KEPT:
                self._timelines.clear()
            timeline = self._timelines[key] = Timeline(
                self.windows,
                self._judge(version, versions) if version is not None else {},
                version,
                match,
                note,
                row.rel,
            )
        part = timeline.part(row.epoch)
        if part.tally is not None:
            n = self._tally.get(part.tally, 0)
            self._tally[part.tally] = n + 1
            if n < MAX_LISTED:
                self._listed.setdefault(part.tally, []).append(record(row, part))
        return part

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
        """Per request: counts per class, the exposure window, and the first rows of each class."""
        out: dict[str, Any] = {}
        for w in self.windows:
            counts = {c: n for (i, c), n in self._tally.items() if self.windows[i] is w}
            listed = {c: rows for (i, c), rows in self._listed.items() if self.windows[i] is w}
            out[w.request.path] = {
                "window": w.to_dict(),
                "counts": {c: counts.get(c, 0) for c in CLASSES if c != "unrelated"},
                "leaks": listed.get("leak", []),
                "exposure": listed.get("exposure_window", []),
                "before_request": listed.get("before_request", []),
                "delivered_retracted": listed.get("delivered_retracted", []),
            }
        return out


def _shares(words: re.Pattern[str], text: str, w: Window) -> bool:
    """Can this unit carry the window's preference by its words (one of its specific stems)?"""
    return bool({stem(m.group()) for m in words.finditer(fold(text))} & w.carrying)


def _locate(row: Row, versions: Versions) -> tuple[Version | None, str, str | None]:
    """(the delivered version, exact | inferred | unknown, why when unknown)."""
    if row.rel is None:
        return None, "unknown", "file_path names nothing inside the store"
    path = row.rel if versions.known(row.rel) or not versions.known(row.rel + ".md") else row.rel + ".md"
    if row.revision_basis == "file_sha256" and row.revision:
        version = versions.exact(path, row.revision)
        if version is None:
            return None, "unknown", f"no version of {path} in history hashes to {row.revision[:16]}…"
        return version, "exact", None
    version = versions.at(path, row.epoch)
    if version is None:
        why = "never committed" if not versions.known(path) else "not committed yet, or deleted, at that time"
        return None, "unknown", f"{path}: {why}"
    return version, "inferred", None


def delivery_audit(
    store: Store,
    memories: Mapping[str, Memory],
    *,
    request: str | None = None,
    since: float | None = None,
) -> DeliveryAudit:
    """The audit of every request (or one, by path), not yet run: iterate ``rows()``."""
    requests = find_requests(memories)
    if request is not None:
        from ..errors import NotAForgetRequest

        rel, _ = store.resolve(request)
        requests = [r for r in requests if r.path == rel]
        if not requests:
            raise NotAForgetRequest(f"{rel} is not a forget request in this store")
    as_of = getattr(store, "as_of", None)
    return DeliveryAudit(
        store, request_windows(store, memories, requests), since=since, until=_epoch(as_of.date) if as_of else None
    )


def delivery_summaries(store: Store, memories: Mapping[str, Memory], requests: list[Request]) -> dict[str, Any]:
    """Each request's delivery record (for the report): one pass over the log."""
    as_of = getattr(store, "as_of", None)
    audit = DeliveryAudit(
        store, request_windows(store, memories, requests), until=_epoch(as_of.date) if as_of else None
    )
    for _ in audit.rows():
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
            "window": {k: entry["window"][k] for k in ("from", "to", "applied_commit")},
            "counts": entry["counts"],
            "leaks": rows("leaks"),
            "exposure": rows("exposure"),
            "log": entry["log"],
        }
    return out
