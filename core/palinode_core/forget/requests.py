"""Forget requests in a store (detected when each file is parsed) and the
state each one is in, from the files and the ledger."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import NotAForgetRequest, PalinodeError
from ..ops.subjects import OP_ID_TRAILER, UNDOES_OP_TRAILER, parse_subject
from ..storage import records
from ..storage.memory import Memory
from ..storage.store import Store
from ..text.detect import detect_blanket, detect_forget_request
from ..text.words import normalize_pref, retraction_id
from .ledger import Ledger, conflict_in, decisions_for, read

RequestStateName = records.RequestStateName  # docs/records.md


@dataclass(frozen=True)
class Request:
    path: str
    pref: str
    memory: Memory
    # applied by Palinode (another memory's superseded_by or retracted_prefs
    # points at it) although our detector declines it
    palinode_only: bool = False

    # computed once: the delivery audit asks for them on every one of a million rows
    @functools.cached_property
    def norm(self) -> str:
        return normalize_pref(self.pref)

    @functools.cached_property
    def rid(self) -> str:
        return retraction_id(self.pref)

    @functools.cached_property
    def blanket(self) -> str | None:
        """The scope, when the request is a blanket one ("my work stuff", "everything
        about my health"): a person chooses what it covers; it is never planned."""
        return detect_blanket(self.memory.body)


def refuse_blanket(request: Request) -> None:
    """A blanket request is never planned on the whole store (issue 44)."""
    if request.blanket:
        raise PalinodeError(
            f"{request.path} is a blanket request ({request.blanket!r}): its scope is a person's to choose, "
            "so it is never planned on the whole store; name the facts it covers as requests of their own "
            "(requests --possible lists it; confirm it with --pref), or dismiss it"
        )


PALINODE_ONLY_NOTE = "applied by Palinode; not a request by our rules"
BLANKET_NOTE = "a blanket request: its scope is yours to choose (requests --possible); never planned"


def find_requests(memories: Mapping[str, Memory]) -> list[Request]:
    out = []
    applied: set[str] | None = None
    retracted: set[str] = set()
    for rel, memory in sorted(memories.items()):
        pref = memory.forget_pref  # detected when the file was parsed
        if pref:
            out.append(Request(rel, pref, memory))
        elif memory.palinode_pref:
            if applied is None:  # built once, only when some file needs it
                applied = {m.superseded_by for m in memories.values() if m.superseded_by}
                retracted = {p for m in memories.values() for p in m.retracted_prefs}
            if rel in applied or normalize_pref(memory.palinode_pref) in retracted:
                out.append(Request(rel, memory.palinode_pref, memory, palinode_only=True))
    return out


def request_at(store: Store, request_path: str, memories: Mapping[str, Memory] | None = None) -> Request:
    """The forget request a memory holds, or NotAForgetRequest. With the
    scan's ``memories``, a request only Palinode's detector takes counts too
    when Palinode applied it (so what it forgot can be audited and undone)."""
    memory = store.load(request_path)
    pref = detect_forget_request(memory.body)
    if pref:
        return Request(memory.rel, pref, memory)
    if memories is not None:
        for request in find_requests(memories):
            if request.path == memory.rel and request.palinode_only:
                return Request(memory.rel, request.pref, memory, palinode_only=True)
    raise NotAForgetRequest(f"{memory.rel} contains no forget request")


@dataclass(frozen=True)
class RequestState:
    path: str
    pref: str
    rid: str
    state: RequestStateName
    archived_targets: tuple[str, ...]
    struck_targets: tuple[str, ...]
    created_at: str | None
    last_decision: records.LedgerRecord | None
    note: str | None = None  # PALINODE_ONLY_NOTE for a request only Palinode's detector takes

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "pref": self.pref,
            "rid": self.rid,
            "state": self.state,
            "archived_targets": list(self.archived_targets),
            "struck_targets": list(self.struck_targets),
            "created_at": self.created_at,
            "last_decision": self.last_decision,
            "note": self.note,
        }


def request_states(store: Store, memories: Mapping[str, Memory], ledger: Ledger | None = None) -> list[RequestState]:
    """``ledger``: the store's, when the caller has read it already (a record history does not back decides nothing)."""
    ledger = read(store) if ledger is None else ledger
    states = []
    requests = find_requests(memories)
    by_hand, undone = _from_history(store) if requests else ({}, {})
    for request in requests:
        archived = tuple(sorted(r for r, m in memories.items() if m.archived and m.superseded_by == request.path))
        struck = tuple(sorted(r for r, m in memories.items() if request.norm in m.retracted_prefs))
        decisions = [
            d for d in decisions_for(ledger.believed, request.path) if d.get("action") in records.DECIDING_ACTIONS
        ]
        live = set(archived) | set(struck)
        states.append(
            RequestState(
                request.path,
                request.pref,
                request.rid,
                _state(
                    request,
                    live,
                    decisions,
                    conflict_in(ledger.current(request.path)) is not None,
                    bool(by_hand.get(request.path, set()) & set(struck)),
                    bool((undone.get(request.path, set()) | undone.get(request.rid, set())) - live),
                ),
                archived,
                struck,
                request.memory.created_at,
                decisions[-1] if decisions else None,
                PALINODE_ONLY_NOTE if request.palinode_only else BLANKET_NOTE if _blanket(request) else None,
            )
        )
    return states


def _blanket(request: Request) -> bool:
    try:
        return request.blanket is not None
    except Exception:  # unreadable since the scan: its state is still the files' to say
        return False


def _from_history(store: Store) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Two readings of the last 500 commits.

    For each request, the memories a strike of ours was made in outside any
    apply: a retract commit naming the request that is no undo or redo
    (Palinode's own commits name none, and an apply's carry a ledger record
    besides).

    For each request (by path, or by retraction id), the memories an operation
    of it was undone in: an undo commit (``Undoes:``, no ``Redoes:``) of an
    archive or supersede pointing at the request, or of a strike under its id.
    Palinode's own apply records nothing in the ledger, so only this tells
    that part of it was taken back."""
    by_hand: dict[str, set[str]] = {}
    undone: dict[str, set[str]] = {}
    prefix = store.config.commit_prefix
    commits = store.git.log(limit=500)
    by_ref = {c.sha: c for c in commits}
    by_ref.update({c.trailers[OP_ID_TRAILER]: c for c in reversed(commits) if c.trailers.get(OP_ID_TRAILER)})
    for commit in commits:
        op = parse_subject(commit.subject, prefix)
        if op is None or op.path not in commit.files:
            continue  # a commit that left the file it names as it was operated on nothing
        undoes, redoes = commit.trailers.get("Undoes"), "Redoes" in commit.trailers
        # by sha, or by the operation's id when a rebase rewrote the sha
        undid = by_ref.get(undoes or "") or by_ref.get(commit.trailers.get(UNDOES_OP_TRAILER) or "")
        if op.kind.route == "strike" and not undoes and not redoes:
            # by path, so a commit only counts for a memory that is struck for the request now
            by_hand.setdefault(commit.trailers.get("Forget-Request", ""), set()).add(op.path)
        elif undoes and not redoes and undid is not None:
            original = parse_subject(undid.subject, prefix)
            if original is not None:
                for key in (original.counterpart, commit.trailers.get("Retraction-Id")):
                    if key:
                        undone.setdefault(key, set()).add(original.path)
    return by_hand, undone


# The ledger records that decide a state (a leak check or a flag decides nothing).


def _state(
    request: Request,
    live: set[str],
    decisions: list[records.LedgerRecord],
    conflicted: bool,
    by_hand: bool,
    undone: bool,
) -> RequestStateName:
    """What the files say now, read with the reviewer's decisions: ``live`` is
    every memory archived under the request or struck for its preference.

    Nothing live is pending, even after an apply whose operations were all
    undone (its record stays the last decision); an operation the reviewer
    approved that is no longer in force (undone), or targets left for later,
    make it partial. With no apply recorded, what is in force is Palinode's
    own apply of the whole request, or, partial, a sentence struck by hand
    (``by_hand``) or part of it undone since (``undone``: an operation of the
    request undone and not in force now).

    ``decisions`` are in the order history made them. A dismissal and an apply
    made apart (``conflicted``: neither knew of the other) are neither state
    until someone decides again."""
    if request.memory.archived:
        return "withdrawn"
    if conflicted:
        return "conflicted"
    if decisions and decisions[-1].get("action") == "dismiss":
        return "dismissed"
    if not live:
        return "pending"
    since = next((i + 1 for i in range(len(decisions) - 1, -1, -1) if decisions[i].get("action") == "withdraw"), 0)
    applies = [d for d in decisions[since:] if d.get("action") == "apply"]
    if not applies:
        return "partial" if by_hand or undone else "applied"  # else Palinode applied it: only the files tell
    latest = applies[-1]
    if latest.get("deferred") or not latest.get("complete", True):
        return "partial"
    approved: set[Any] = set()
    for d in applies:  # a later apply's rejection (a request closed) overrides an earlier approval
        approved |= {a.get("path") for a in d.get("approved") or () if isinstance(a, dict)}
        approved -= set(d.get("rejected") or ())
    return "partial" if approved - live else "applied"
