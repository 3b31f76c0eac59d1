"""A delivery audit's records: each request's life (inspect.request_timeline),
what a delivered version carries, the class of a row by its time (the
version's timeline), and the record's fields, as a dict and as JSON made fast
for a million rows."""

from __future__ import annotations

import bisect
import functools
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _ascii
from typing import Any

from ..forget.judgment import Judge, lookup_stems
from ..forget.requests import Request
from .delivery_versions import Version
from .request_timeline import Stage
from .retrieval_log import Row

CLASSES = (
    "before_request",
    "exposure_window",
    "leak",
    "delivered_retracted",
    "withdrawn",
    "dismissed",
    "unrelated",
)
# The headline of a row carrying several requests' preferences: the gravest (the others are listed beside it).
GRAVITY = {
    "leak": 7,
    "exposure_window": 6,
    "dismissed": 5,
    "withdrawn": 4,
    "delivered_retracted": 3,
    "before_request": 2,
}
MAX_LISTED = 50  # rows per class a summary lists (the counts are complete)
KEPT = 100_000  # judged parts kept encoded at once (memory stays bounded)
WITHHELD = (
    "the query and session of each delivery are withheld (they are the asker's, not the memory's, as "
    "Palinode's explain withholds them); --show-queries shows them"
)


@dataclass(frozen=True)
class Window:
    """A request's life: filed, then each change of state (``stages``)."""

    request: Request
    filed: float | None
    filed_date: str | None
    stages: tuple[Stage, ...]
    judge: Judge  # what carries the preference (forget.judgment), as plans and leaks judge it

    @property
    def stems(self) -> frozenset[str]:
        return self.judge.pref.stems

    @functools.cached_property  # asked once per unit of every version judged
    def carrying(self) -> frozenset[str]:
        """The stems one of which a unit must hold to carry the preference by
        its words (the specific ones, and their practitioners': "swimmer")."""
        return lookup_stems(self.judge.pref.specific)

    @functools.cached_property
    def starts(self) -> list[float]:
        return [s.start for s in self.stages]

    def stage_at(self, epoch: float) -> Stage | None:
        i = bisect.bisect_right(self.starts, epoch)
        return self.stages[i - 1] if i else None

    @functools.cached_property
    def first_apply(self) -> Stage | None:
        """When the exposure window closed: the request first applied (whole or in part)."""
        return next((s for s in self.stages if s.state in ("applied", "partial")), None)

    @property
    def state(self) -> str | None:
        return self.stages[-1].state if self.stages else None

    def to_dict(self) -> dict[str, Any]:
        applied = self.first_apply
        return {
            "request": self.request.path,
            "rid": self.request.rid,
            "from": self.filed_date,
            "to": applied.at if applied else None,
            "applied_commit": applied.commit if applied else None,
            "state": self.state,
            "timeline": [s.to_dict() for s in self.stages],
        }


class Part:
    """What a row delivered and its class, as a record's last fields, and how
    many rows it was made for (counted here, summed at the end: the hot path
    adds one to an attribute)."""

    __slots__ = ("delivered", "head", "judged", "listing", "rows", "tail", "tallies", "views")

    def __init__(
        self,
        judged: dict[str, Any],
        delivered: dict[str, Any],
        head: str,
        tail: str,
        tallies: tuple[tuple[int, str], ...],
        views: tuple[dict[str, Any], ...] = (),
    ) -> None:
        self.judged = judged  # class, revision_match, then what it delivered (path … also)
        self.delivered = delivered  # the same without class and revision_match
        self.head = head  # `,"class":…,"revision_match":…` as JSON
        self.tail = tail  # `,"path":…,"also":[…]}` as JSON: the object's end
        self.tallies = tallies  # (window, class) for each request it concerns, the headline first
        self.views = views  # for each of them, its request's own class, state and sentence
        self.rows = 0
        self.listing = bool(tallies)  # some (window, class) still lists its first rows


@dataclass(frozen=True)
class Mention:
    kind: str  # live | retracted
    sentence: str
    line: int


def class_of(found: Mention, epoch: float, w: Window, left: Callable[[Stage], bool]) -> tuple[str, str | None]:
    """(the class of a delivery of ``found`` at ``epoch`` for ``w``'s request, the request's state then).
    A leak only while an apply stands and covers the memory (``left``: the apply left it as it was)."""
    stage = w.stage_at(epoch)
    state = stage.state if stage is not None else None
    if found.kind == "retracted":
        return "delivered_retracted", state
    if w.filed is not None and epoch < w.filed:
        return "before_request", state
    if stage is None:  # no filing time known, and nothing done yet
        return "exposure_window", "pending"
    if state in ("withdrawn", "dismissed"):
        return state, state
    # conflicted (a dismissal and an apply made apart): a leak while the apply's operations stand
    if state == "pending" or (state == "conflicted" and not stage.forgotten) or left(stage):
        return "exposure_window", state
    return "leak", state


class Timeline:
    """One delivered version (or one unknown): the times at which its class
    can change (each stage of each request in whose scope it carries a
    mention), and its record part in each interval, made when a row first
    falls in it; a row is then placed by its time alone."""

    __slots__ = ("_edges", "_family", "_judged", "_match", "_note", "_parts", "_rel", "_version", "_windows", "match")

    def __init__(
        self,
        windows: list[Window],
        judged: dict[int, Mention],
        version: Version | None,
        match: str,
        note: str | None,
        rel: str | None,
        family: Callable[[str], str],
    ) -> None:
        self._windows, self._judged, self._family = windows, judged, family
        self._version, self._match, self._note, self._rel = version, match, note, rel
        self.match = match
        edges = set()
        for i in judged:
            w = windows[i]
            edges.update(w.starts)
            if w.filed is not None:
                edges.add(w.filed)
        self._edges = sorted(edges)
        self._parts: list[Part | None] = [None] * (len(self._edges) + 1)

    def part(self, epoch: float) -> Part:
        k = bisect.bisect_right(self._edges, epoch) if self._edges else 0
        found = self._parts[k]
        if found is None:
            found = self._parts[k] = self._make(self._edges[k - 1] if k else -math.inf)
        return found

    def parts(self) -> list[Part]:
        return [p for p in self._parts if p is not None]

    def placed(self) -> Part | Timeline:
        """What a row of this version is placed by: its one part when its class never changes, else itself."""
        return self if self._edges else self.part(0.0)

    def _left(self, stage: Stage) -> bool:
        """Did the request's apply leave this memory as it was (undone, deferred or failed)?"""
        if not stage.left or self._version is None:
            return False
        mine = self._family(self._version.path)
        return any(self._family(p) == mine for p in stage.left)

    def _make(self, at: float) -> Part:
        """The part for the interval beginning at ``at`` (the class is the same anywhere in it)."""
        found: list[tuple[int, str, int, str | None, Mention]] = []  # (gravity, class, window, state, mention)
        for i, mention in self._judged.items():
            cls, state = class_of(mention, at, self._windows[i], self._left)
            found.append((GRAVITY[cls], cls, i, state, mention))
        found.sort(key=lambda f: (-f[0], f[2]))  # the gravest first; then in the order requests are listed
        head = found[0] if found else None
        window = self._windows[head[2]] if head else None
        said = head[4] if head else None
        version = self._version
        judged = {
            "class": head[1] if head else "unrelated",
            "revision_match": self._match,
            "path": version.path if version else self._rel,
            "commit": version.commit if version else None,
            "blob": version.blob if version else None,
            "request": window.request.path if window else None,
            "rid": window.request.rid if window else None,
            "state": head[3] if head else None,
            "sentence": said.sentence if said else None,
            "sentence_line": said.line if said else None,
            "sentence_sha256": hashlib.sha256(said.sentence.encode()).hexdigest() if said else None,
            "note": self._note,
            "also": [
                {
                    "request": self._windows[i].request.path,
                    "rid": self._windows[i].request.rid,
                    "class": cls,
                    "state": state,
                    "sentence": m.sentence,
                }
                for _g, cls, i, state, m in found[1:]
            ],
        }
        encoded = json.dumps(judged, ensure_ascii=True, separators=(",", ":"))
        cut = encoded.index(',"path":')
        delivered = {k: v for k, v in judged.items() if k not in _HEAD}
        tallies = tuple((i, cls) for _g, cls, i, _s, _m in found)
        views = tuple(
            {
                "class": cls,
                "request": self._windows[i].request.path,
                "rid": self._windows[i].request.rid,
                "state": state,
                "sentence": m.sentence,
                "sentence_line": m.line,
                "sentence_sha256": hashlib.sha256(m.sentence.encode()).hexdigest(),
            }
            for _g, cls, i, state, m in found
        )
        return Part(judged, delivered, "," + encoded[1:cut], encoded[cut:], tallies, views)


_HEAD = ("class", "revision_match")


def record(row: Row, part: Part, shown: bool = True) -> dict[str, Any]:
    """A row's record, fields in their documented order: the row as logged and
    where, its class, the receipt it carried and what Palinode's explain reads
    of it, what it delivered (``shown``: the query and session, else None)."""
    out = own_fields(row, shown)
    out["class"] = part.judged["class"]
    out["revision_match"] = part.judged["revision_match"]
    out["revision_basis"] = row.revision_basis
    out["revision"] = row.revision
    out["policy_version"] = row.policy_version
    out["scope"] = row.scope
    out["disposition"] = row.disposition
    out["coverage"] = row.coverage
    out["next_transition"] = row.next_transition
    out.update(part.delivered)
    return out


class JsonCodes(dict[str, str]):
    """Values a log repeats (paths, sessions, modes), each JSON-encoded once;
    bounded, so a log of unique values costs memory only up to the bound."""

    def __missing__(self, text: str) -> str:
        if len(self) >= KEPT:
            self.clear()
        code = self[text] = _ascii(text)
        return code


class Explained(dict[Any, str]):
    """What Palinode's explain reads of a row (its receipt's policy, scope,
    disposition, coverage and next transition) as JSON, encoded once per
    distinct value (a log repeats a few: every row of a delivery carries the
    same); bounded like JsonCodes."""

    def code(self, row: Row) -> str:
        scope, coverage = row.scope, row.coverage
        if coverage is None:
            covered: Any = None
        elif (
            tuple(coverage) == _PALINODE_COVERAGE
            and coverage["status"].__class__ is not list
            and coverage["reasons"].__class__ is list
        ):
            covered = (coverage["status"], tuple(coverage["reasons"]))  # its shape, in its order: the key says all
        else:
            return self._encode(row)  # another shape: encoded every time, never kept
        key = (
            row.policy_version,
            row.disposition,
            row.next_transition,
            None if scope is None else tuple(scope),
            covered,
        )
        code = self.get(key)
        if code is None:
            if len(self) >= KEPT:
                self.clear()
            code = self[key] = self._encode(row)
        return code

    @staticmethod
    def _encode(row: Row) -> str:
        return "".join(
            (
                ',"policy_version":',
                _dumps(row.policy_version),
                ',"scope":',
                _dumps(row.scope),
                ',"disposition":',
                _dumps(row.disposition),
                ',"coverage":',
                _dumps(row.coverage),
                ',"next_transition":',
                _dumps(row.next_transition),
            )
        )


_dumps = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
_PALINODE_COVERAGE = ("status", "reasons")  # a receipt's coverage as Palinode writes it


def record_json(row: Row, part: Part, codes: JsonCodes, said: Explained, shown: bool) -> str:
    """``json.dumps(record(row, part, shown), ensure_ascii=True, separators=(",", ":"))``,
    three times faster: the C encoder's per-value cost was a fifth of a row's
    whole audit, what a version delivered is encoded once per interval, and
    what the receipt says once per change."""
    explained = said.code(row)
    basis, revision, session, query = row.revision_basis, row.revision, row.session_id, row.query
    return (
        f'{{"log":{codes[row.log]},"line":{row.line},"entry":{"null" if row.entry is None else row.entry}'
        f',"timestamp":{_ascii(row.timestamp)},"file_path":{codes[row.file_path]}'
        f',"session_id":{codes[session] if shown and session is not None else "null"}'
        f',"bundle_id":{"null" if row.bundle_id is None else _ascii(row.bundle_id)}'
        f',"chunk_id":{"null" if row.chunk_id is None else _ascii(row.chunk_id)}'
        f',"mode":{"null" if row.mode is None else codes[row.mode]}'
        f',"source":{"null" if row.source is None else codes[row.source]}'
        f',"query":{_ascii(query) if shown and query is not None else "null"}{part.head}'
        f',"revision_basis":{"null" if basis is None else codes[basis]}'
        f',"revision":{"null" if revision is None else _ascii(revision)}{explained}{part.tail}'
    )


def own_fields(row: Row, shown: bool = True) -> dict[str, Any]:
    """A record's first fields: the row as logged, and where."""
    return {
        "log": row.log,
        "line": row.line,
        "entry": row.entry,
        "timestamp": row.timestamp,
        "file_path": row.file_path,
        "session_id": row.session_id if shown else None,
        "bundle_id": row.bundle_id,
        "chunk_id": row.chunk_id,
        "mode": row.mode,
        "source": row.source,
        "query": row.query if shown else None,
    }
