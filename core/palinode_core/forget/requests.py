"""Forget requests in a store (detected when each file is parsed) and the
state each one is in, from the files and the ledger."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping

from ..errors import NotAForgetRequest
from ..storage.memory import Memory
from ..storage.store import Store
from ..text.detect import detect_forget_request
from ..text.words import normalize_pref, retraction_id
from .ledger import decisions_for, read_ledger

RequestStateName = Literal["pending", "applied", "partial", "withdrawn", "dismissed"]


@dataclass(frozen=True)
class Request:
    path: str
    pref: str
    memory: Memory

    @property
    def norm(self) -> str:
        return normalize_pref(self.pref)

    @property
    def rid(self) -> str:
        return retraction_id(self.pref)


def find_requests(memories: Mapping[str, Memory]) -> list[Request]:
    out = []
    for rel, memory in sorted(memories.items()):
        pref = memory.forget_pref  # detected when the file was parsed
        if pref:
            out.append(Request(rel, pref, memory))
    return out


def request_at(store: Store, request_path: str) -> Request:
    """The forget request a memory holds, or NotAForgetRequest."""
    memory = store.load(request_path)
    pref = detect_forget_request(memory.body)
    if not pref:
        raise NotAForgetRequest(f"{memory.rel} contains no forget request")
    return Request(memory.rel, pref, memory)


@dataclass(frozen=True)
class RequestState:
    path: str
    pref: str
    rid: str
    state: RequestStateName
    archived_targets: tuple[str, ...]
    struck_targets: tuple[str, ...]
    created_at: str | None
    last_decision: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "pref": self.pref, "rid": self.rid, "state": self.state,
                "archived_targets": list(self.archived_targets), "struck_targets": list(self.struck_targets),
                "created_at": self.created_at, "last_decision": self.last_decision}


def request_states(store: Store, memories: Mapping[str, Memory]) -> list[RequestState]:
    ledger = read_ledger(store)
    states = []
    for request in find_requests(memories):
        archived = tuple(sorted(r for r, m in memories.items() if m.archived and m.superseded_by == request.path))
        struck = tuple(sorted(r for r, m in memories.items() if request.norm in m.retracted_prefs))
        decisions = decisions_for(ledger, request.path)
        last = decisions[-1] if decisions else None
        applies = [d for d in decisions if d.get("action") == "apply"]
        state: RequestStateName
        if request.memory.archived:
            state = "withdrawn"
        elif last and last.get("action") == "dismiss":
            state = "dismissed"
        elif archived or struck or applies:
            incomplete = applies and (applies[-1].get("deferred") or not applies[-1].get("complete", True))
            state = "partial" if incomplete else "applied"
        else:
            state = "pending"
        states.append(RequestState(request.path, request.pref, request.rid, state, archived, struck,
                                   request.memory.created_at, last))
    return states
