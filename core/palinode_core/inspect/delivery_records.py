"""A delivery audit's records: each request's window, what a delivered
version carries, the class of a row by its time (the version's timeline),
and the record's fields, as a dict and as JSON made fast for a million rows."""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import math
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _ascii
from typing import Any

from ..forget.judgment import Judge, lookup_stems
from ..forget.requests import Request
from .delivery_versions import Version
from .retrieval_log import Row

CLASSES = ("before_request", "exposure_window", "leak", "delivered_retracted", "unrelated")
GRAVITY = {"leak": 4, "exposure_window": 3, "delivered_retracted": 2, "before_request": 1}
MAX_LISTED = 50  # rows per class a summary lists (the counts are complete)
KEPT = 100_000  # judged parts kept encoded at once (memory stays bounded)


@dataclass(frozen=True)
class Window:
    """A request's timeline: filed, then applied (None: not yet)."""

    request: Request
    filed: float | None
    filed_date: str | None
    applied: float | None
    applied_date: str | None
    applied_commit: str | None
    judge: Judge  # what carries the preference (forget.judgment), as plans and leaks judge it

    @property
    def stems(self) -> frozenset[str]:
        return self.judge.pref.stems

    @functools.cached_property  # asked once per unit of every version judged
    def carrying(self) -> frozenset[str]:
        """The stems one of which a unit must hold to carry the preference by
        its words (the specific ones, and their practitioners': "swimmer")."""
        return lookup_stems(self.judge.pref.specific)

    def to_dict(self) -> dict[str, Any]:
        return {
            "request": self.request.path,
            "rid": self.request.rid,
            "from": self.filed_date,
            "to": self.applied_date,
            "applied_commit": self.applied_commit,
        }


@dataclass(frozen=True, slots=True)
class Part:
    """What a row delivered and its class, as a record's last fields."""

    judged: dict[str, Any]  # class, revision_match, then what it delivered (path … note)
    delivered: dict[str, Any]  # the same without class and revision_match
    head: str  # `,"class":…,"revision_match":…` as JSON
    tail: str  # `,"path":…,"note":…}` as JSON: the object's end
    tally: tuple[int, str] | None  # (window, class) it counts for; None: unrelated


@dataclass(frozen=True)
class Mention:
    kind: str  # live | retracted
    sentence: str
    line: int


class Timeline:
    """One delivered version (or one unknown): the times at which its class
    can change (each request's filing and apply in whose scope it carries a
    mention), and its record part in each interval, made when a row first
    falls in it; a row is then placed by its time alone."""

    __slots__ = ("_edges", "_judged", "_match", "_note", "_parts", "_rel", "_version", "_windows")

    def __init__(
        self,
        windows: list[Window],
        judged: dict[int, Mention],
        version: Version | None,
        match: str,
        note: str | None,
        rel: str | None,
    ) -> None:
        self._windows, self._judged = windows, judged
        self._version, self._match, self._note, self._rel = version, match, note, rel
        self._edges = sorted({t for i in judged for t in (windows[i].filed, windows[i].applied) if t is not None})
        self._parts: list[Part | None] = [None] * (len(self._edges) + 1)

    def part(self, epoch: float) -> Part:
        k = bisect.bisect_right(self._edges, epoch) if self._edges else 0
        found = self._parts[k]
        if found is None:
            found = self._parts[k] = self._make(self._edges[k - 1] if k else -math.inf)
        return found

    def _make(self, at: float) -> Part:
        """The part for the interval beginning at ``at`` (the class is the same anywhere in it)."""
        cls, index, mention = "unrelated", None, None
        for i, found in self._judged.items():
            c = class_of(found, at, self._windows[i])
            if GRAVITY[c] > GRAVITY.get(cls, 0):
                cls, index, mention = c, i, found
        window = self._windows[index] if index is not None else None
        version = self._version
        judged = {
            "class": cls,
            "revision_match": self._match,
            "path": version.path if version else self._rel,
            "commit": version.commit if version else None,
            "blob": version.blob if version else None,
            "request": window.request.path if window else None,
            "rid": window.request.rid if window else None,
            "sentence": mention.sentence if mention else None,
            "sentence_line": mention.line if mention else None,
            "sentence_sha256": hashlib.sha256(mention.sentence.encode()).hexdigest() if mention else None,
            "note": self._note,
        }
        encoded = json.dumps(judged, ensure_ascii=True, separators=(",", ":"))
        cut = encoded.index(',"path":')
        delivered = {k: v for k, v in judged.items() if k not in _HEAD}
        tally = (index, cls) if index is not None else None
        return Part(judged, delivered, "," + encoded[1:cut], encoded[cut:], tally)


_HEAD = ("class", "revision_match")


def record(row: Row, part: Part) -> dict[str, Any]:
    """A row's record, fields in their documented order: the row as logged and
    where, its class, the receipt it carried, what it delivered."""
    out = own_fields(row)
    out["class"] = part.judged["class"]
    out["revision_match"] = part.judged["revision_match"]
    out["revision_basis"] = row.revision_basis
    out["revision"] = row.revision
    out.update(part.delivered)
    return out


def record_json(row: Row, part: Part, codes: JsonCodes) -> str:
    """``json.dumps(record(row, part), ensure_ascii=True, separators=(",", ":"))``,
    three times faster: the C encoder's per-value cost was a fifth of a row's
    whole audit, and what a version delivered is encoded once per interval."""
    return "".join(
        (
            own_json(row, codes),
            part.head,
            ',"revision_basis":',
            "null" if row.revision_basis is None else codes[row.revision_basis],
            ',"revision":',
            "null" if row.revision is None else codes[row.revision],
            part.tail,
        )
    )


def own_fields(row: Row) -> dict[str, Any]:
    """A record's first fields: the row as logged, and where."""
    return {
        "log": row.log,
        "line": row.line,
        "timestamp": row.timestamp,
        "file_path": row.file_path,
        "session_id": row.session_id,
        "bundle_id": row.bundle_id,
        "chunk_id": row.chunk_id,
        "mode": row.mode,
        "source": row.source,
        "query": row.query,
    }


class JsonCodes(dict[str, str]):
    """Values a log repeats (paths, sessions, modes), each JSON-encoded once;
    bounded, so a log of unique values costs memory only up to the bound."""

    def __missing__(self, text: str) -> str:
        if len(self) >= KEPT:
            self.clear()
        code = self[text] = _ascii(text)
        return code


def own_json(row: Row, codes: JsonCodes) -> str:
    """``json.dumps(own_fields(row))`` without its closing brace (see record_json)."""
    return "".join(
        (
            '{"log":',
            codes[row.log],
            ',"line":',
            str(row.line),
            ',"timestamp":',
            _ascii(row.timestamp),
            ',"file_path":',
            codes[row.file_path],
            ',"session_id":',
            "null" if row.session_id is None else codes[row.session_id],
            ',"bundle_id":',
            "null" if row.bundle_id is None else _ascii(row.bundle_id),
            ',"chunk_id":',
            "null" if row.chunk_id is None else _ascii(row.chunk_id),
            ',"mode":',
            "null" if row.mode is None else codes[row.mode],
            ',"source":',
            "null" if row.source is None else codes[row.source],
            ',"query":',
            "null" if row.query is None else _ascii(row.query),
        )
    )


def class_of(found: Mention, epoch: float, w: Window) -> str:
    if found.kind == "retracted":
        return "delivered_retracted"
    if w.filed is not None and epoch < w.filed:
        return "before_request"
    if w.applied is None or epoch < w.applied:
        return "exposure_window"
    return "leak"
