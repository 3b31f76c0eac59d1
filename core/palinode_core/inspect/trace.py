"""Why a memory is the way it is: its ``superseded_by`` chain both ways (cycles
and dangling links named), the request that retired or struck it, its
history lines and its commits."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..forget.requests import find_requests
from ..forget.resolve import coverage
from ..storage.commits import Commit
from ..storage.memory import Memory
from ..storage.paths import history_rel_for
from ..storage.store import Store
from ..text.history import HistoryEntry, parse_entries
from ..text.markdown import struck_spans
from ..text.words import normalize_pref, retraction_id


@dataclass(frozen=True)
class Pointer:
    """A memory whose ``superseded_by`` names the node above it."""

    path: str
    cycle: bool
    pointers: tuple[Pointer, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "cycle": self.cycle, "from": [p.to_dict() for p in self.pointers]}


@dataclass(frozen=True)
class Retirement:
    """A forget request that archived (route archive) or struck (route strike) this memory."""

    request: str | None
    pref: str
    rid: str
    coverage: float
    route: Literal["archive", "strike"]
    markers: int | None = None  # strike markers still in the body (strikes only)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "request": self.request,
            "pref": self.pref,
            "rid": self.rid,
            "coverage": self.coverage,
            "route": self.route,
        }
        if self.route == "strike":
            data["markers"] = self.markers
        return data


@dataclass(frozen=True)
class Trace:
    path: str
    status: str
    retired: str | None
    chain_forward: tuple[str, ...]
    chain_note: str | None  # "cycle: …" or "dangling: …" when the forward chain breaks
    chain_backward: tuple[Pointer, ...]
    retired_by: Retirement | None
    retractions: tuple[Retirement, ...]
    history_file: str | None
    history: tuple[HistoryEntry, ...]
    commits: tuple[Commit, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "status": self.status,
            "retired": self.retired,
            "chain_forward": list(self.chain_forward),
            "chain_note": self.chain_note,
            "chain_backward": [p.to_dict() for p in self.chain_backward],
            "retired_by": self.retired_by.to_dict() if self.retired_by else None,
            "retractions": [r.to_dict() for r in self.retractions],
            "history_file": self.history_file,
            "history": [{"when": e.when, "text": e.text, "fact_id": e.fact_id, "rid": e.rid} for e in self.history],
            "commits": [
                {"sha": c.sha, "subject": c.subject, "author": c.author, "date": c.date, "trailers": c.trailers}
                for c in self.commits
            ],
        }


def _forward(memory: Memory, memories: Mapping[str, Memory]) -> tuple[list[str], str | None]:
    forward: list[str] = []
    current, visited = memory, {memory.rel}
    while current.superseded_by:
        nxt = current.superseded_by
        forward.append(nxt)
        if nxt in visited:
            return forward, f"cycle: {nxt} is already in the chain"
        visited.add(nxt)
        if nxt not in memories:
            return forward, f"dangling: {nxt} does not exist"
        current = memories[nxt]
    return forward, None


def _backward(rel: str, memories: Mapping[str, Memory]) -> tuple[Pointer, ...]:
    pointing: dict[str, list[str]] = {}
    for other_rel, other in memories.items():
        if other.superseded_by:
            pointing.setdefault(other.superseded_by, []).append(other_rel)

    def walk(node: str, seen: frozenset[str]) -> tuple[Pointer, ...]:
        return tuple(
            Pointer(child, True, ()) if child in seen else Pointer(child, False, walk(child, seen | {child}))
            for child in sorted(pointing.get(node, []))
        )

    return walk(rel, frozenset({rel}))


def trace(store: Store, ref: str, memories: Mapping[str, Memory]) -> Trace:
    memory = store.load(ref)
    rel = memory.rel
    forward, note = _forward(memory, memories)
    retired_by = None
    if memory.superseded_by and memory.superseded_by in memories:
        successor = memories[memory.superseded_by]
        pref = successor.forget_pref or successor.palinode_pref  # it retired this file: Palinode took it
        if pref:
            retired_by = Retirement(
                memory.superseded_by, pref, retraction_id(pref), round(coverage(pref, memory.body), 4), "archive"
            )
    by_norm = {r.norm: r for r in find_requests(memories)}
    retractions = []
    for pref in memory.retracted_prefs:
        rid = retraction_id(pref)
        req = by_norm.get(normalize_pref(pref))
        retractions.append(
            Retirement(
                req.path if req else None,
                pref,
                rid,
                round(coverage(pref, memory.body), 4),
                "strike",
                markers=len(struck_spans(memory.body, rid)),
            )
        )
    sibling = history_rel_for(rel)
    text, _ = store.read_optional(sibling)
    return Trace(
        rel,
        memory.status,
        memory.retired_reason,
        tuple(forward),
        note,
        _backward(rel, memories),
        retired_by,
        tuple(retractions),
        sibling if text is not None else None,
        tuple(parse_entries(text or "")),
        tuple(store.git.log(rel)),
    )
