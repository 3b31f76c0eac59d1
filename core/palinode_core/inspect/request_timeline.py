"""A forget request's whole life, from history and the ledger: when it was
filed, applied (whole or in part), undone, redone, withdrawn, dismissed and
reopened, and the state it was in between (``forget.requests``' states:
pending, applied, partial, withdrawn, dismissed, conflicted), so a delivery is
judged against the state at its own moment, not the state now.

Read in a fixed number of passes however many requests: one log of every
commit's subject and trailers, one log of when each request file was added,
and the ledger read with its history (forget.ledger.read: the commit, and so
the time, that recorded each decision). The state after each commit is worked out exactly as
``forget.requests._state`` works out the state now, from the operations of
the request then in force and the decisions recorded by then; the last stage
is the state ``requests`` reports."""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..forget.ledger import Ledger, Line, conflict_in, read
from ..forget.requests import Request, request_states
from ..ops.subjects import OP_ID_TRAILER, REDOES_OP_TRAILER, UNDOES_OP_TRAILER, parse_subject
from ..storage.commits import Commit
from ..storage.memory import Memory
from ..storage.records import DECIDING_ACTIONS, LedgerRecord
from ..storage.store import Store
from .report import _all_commits, _first_added, _parse_when

# What moved a request into a stage, most telling first (several things can happen in one second).
EVENTS = ("withdrawn", "reopened", "dismissed", "undone", "redone", "partly applied", "applied", "restored", "filed")


@dataclass(frozen=True)
class Stage:
    """From ``start`` on (until the next stage), the request was in ``state``."""

    start: float  # epoch seconds of the commit (or filing) that began it
    at: str  # that time as history records it
    state: str  # pending | applied | partial | withdrawn | dismissed
    event: str  # one of EVENTS: what began it
    commit: str | None
    forgotten: frozenset[str] = frozenset()  # memories an operation of the request then in force changed
    left: frozenset[str] = frozenset()  # memories its apply left as they were: undone, deferred or failed

    def to_dict(self) -> dict[str, Any]:
        return {
            "at": self.at,
            "event": self.event,
            "state": self.state,
            "commit": self.commit,
            "forgotten": sorted(self.forgotten),
            "left": sorted(self.left),
        }


@dataclass
class _Life:
    """One request's state while history is read, oldest commit first."""

    request: Request
    archived: bool = False
    standing: dict[str, str] = field(default_factory=dict)  # memory -> the commit whose change is in force
    undone: set[str] = field(default_factory=set)  # memories an operation of it was undone in
    by_hand: set[str] = field(default_factory=set)  # memories we struck for it outside any apply
    decisions: list[LedgerRecord] = field(default_factory=list)
    heads: dict[str, Line] = field(default_factory=dict)  # the decisions no later one was made knowing of
    stages: list[Stage] = field(default_factory=list)

    def decide(self, line: Line) -> None:
        """A believed decision, in history's order (forget.ledger.Ledger's current decisions)."""
        self.decisions.append(line.entry)
        after = line.entry.get("after")
        if isinstance(after, list):
            for named in after:
                if isinstance(named, str):
                    self.heads.pop(named, None)
        else:  # written before decisions named what they knew: made knowing of every earlier one
            self.heads.clear()
        self.heads[line.id] = line

    def state(self) -> tuple[str, frozenset[str]]:
        """(the state, the memories its apply left), as ``forget.requests._state`` reads them now."""
        if self.archived:
            return "withdrawn", frozenset()
        if conflict_in(self.heads.values()) is not None:
            return "conflicted", frozenset(self.undone - set(self.standing))
        if self.decisions and self.decisions[-1].get("action") == "dismiss":
            return "dismissed", frozenset()
        live = set(self.standing)
        left = self.undone - live
        if not live:
            return "pending", frozenset(left)
        since = next(
            (i + 1 for i in range(len(self.decisions) - 1, -1, -1) if self.decisions[i].get("action") == "withdraw"),
            0,
        )
        applies = [d for d in self.decisions[since:] if d.get("action") == "apply"]
        if not applies:
            partial = bool(self.by_hand & live or left)
            return ("partial" if partial else "applied"), frozenset(left)
        latest = applies[-1]
        for key in ("deferred", "failed"):
            items: Any = latest.get(key) or ()
            left |= {p for item in items if isinstance(p := _path_of(item), str)}
        approved = {a.get("path") for d in applies for a in d.get("approved") or () if isinstance(a, dict)}
        left |= {p for p in approved - live if isinstance(p, str)}
        partial = bool(latest.get("deferred")) or not latest.get("complete", True) or bool(left)
        return ("partial" if partial else "applied"), frozenset(left - live)

    def enter(self, start: float, at: str, event: str, commit: str | None) -> None:
        state, left = self.state()
        last = self.stages[-1] if self.stages else None
        forgotten = frozenset(self.standing)
        if last is not None and last.start == start:  # the same second: one stage, its most telling event
            event = min(event, last.event, key=EVENTS.index)
        if event in ("applied", "partly applied"):  # as the request stands after it
            event = "partly applied" if state == "partial" else "applied"
        if last is not None and last.start == start:
            self.stages[-1] = Stage(start, last.at, state, event, commit or last.commit, forgotten, left)
        elif last is None or (last.state, last.forgotten, last.left) != (state, forgotten, left):
            self.stages.append(Stage(start, at, state, event, commit, forgotten, left))


def _path_of(item: Any) -> Any:
    return item.get("path") if isinstance(item, dict) else item


def request_lives(store: Store, memories: Mapping[str, Memory], requests: list[Request]) -> dict[str, list[Stage]]:
    """Each request's stages, oldest first; the first is its filing (pending).
    A request with no recorded filing starts at its first event."""
    if not requests:
        return {}
    as_of = getattr(store, "as_of", None)
    rev = as_of.commit if as_of else "HEAD"
    history = list(reversed(_all_commits(store, rev)))  # oldest first
    added = _first_added(store, rev, [r.path for r in requests]) if history else {}
    lives = {r.path: _Life(r) for r in requests}
    by_rid: dict[str, list[_Life]] = {}
    for life in lives.values():
        by_rid.setdefault(life.request.rid, []).append(life)
    events: list[tuple[float, int, str, Any]] = []  # (time, order, kind, what): commits and decisions, in time order
    for order, commit in enumerate(history):
        when = _epoch(commit.date)
        if when is not None:
            events.append((when, order, "commit", commit))
    ledger = read(store)  # once: the states now are read from it too
    for when, order, entry in _decisions(ledger, len(history)):
        events.append((when, order, "decision", entry))
    for life in lives.values():
        filed = added.get(life.request.path)
        date = filed.date if filed is not None else life.request.memory.created_at
        when = _epoch(date)
        if when is not None and date is not None:
            events.append((when, -1, "filed", (life, date, filed.sha if filed is not None else None)))
    events.sort(key=lambda e: (e[0], e[1]))
    ops: dict[str, tuple[_Life, str]] = {}  # a forward operation's commit (sha or Operation-Id) -> (request, memory)
    prefix = store.config.commit_prefix
    for when, _order, kind, what in events:
        if kind == "filed":
            life, date, sha = what
            if not life.stages:
                life.stages.append(Stage(when, date, "pending", "filed", sha))
            continue
        if kind == "decision":
            entry = what.entry
            decided = lives.get(str(entry.get("request")))
            if decided is not None and entry.get("action") in DECIDING_ACTIONS:
                reopened = bool(decided.decisions) and decided.decisions[-1].get("action") == "dismiss"
                decided.decide(what)
                action = entry["action"]
                event = "dismissed" if action == "dismiss" else "withdrawn" if action == "withdraw" else "applied"
                if action == "apply" and reopened:
                    event = "reopened"
                _enter(decided, when, what.source.date if what.source else entry.get("at"), event, None)
            continue
        _commit(commit=what, when=when, lives=lives, by_rid=by_rid, ops=ops, prefix=prefix)
    states = {s.path: s.state for s in request_states(store, memories, ledger)}
    out = {}
    for path, life in lives.items():
        stages = life.stages
        now = states.get(path)
        if stages and now is not None and stages[-1].state != now:  # what the files say now is the last word
            last = stages[-1]
            event = last.event
            if event in ("applied", "partly applied"):
                event = "partly applied" if now == "partial" else "applied"
            stages[-1] = Stage(last.start, last.at, now, event, last.commit, last.forgotten, last.left)
        out[path] = stages
    return out


def _enter(life: _Life, when: float, at: Any, event: str, commit: str | None) -> None:
    life.enter(when, str(at) if at else "", event, commit)


def _commit(
    *,
    commit: Commit,
    when: float,
    lives: Mapping[str, _Life],
    by_rid: Mapping[str, list[_Life]],
    ops: dict[str, tuple[_Life, str]],
    prefix: str,
) -> None:
    """What one commit did to the requests it concerns."""
    op = parse_subject(commit.subject, prefix)
    if op is None:
        return
    trailers = commit.trailers
    named = lives.get(trailers.get("Forget-Request", "")) or lives.get(op.counterpart or "")
    if op.path in lives and op.kind.changes == "status":  # the request file itself archived or restored
        life = lives[op.path]
        life.archived = op.kind.direction == "forward"
        _enter(life, when, commit.date, "withdrawn" if life.archived else "restored", commit.sha)
        return
    original = ops.get(trailers.get("Redoes", "")) or ops.get(trailers.get(REDOES_OP_TRAILER, ""))
    undid = ops.get(trailers.get("Undoes", "")) or ops.get(trailers.get(UNDOES_OP_TRAILER, ""))
    if op.kind.direction == "forward":
        owner = named or (original[0] if original else None)
        if owner is None:
            candidates = by_rid.get(trailers.get("Retraction-Id") or "", [])
            owner = candidates[0] if len(candidates) == 1 else None
        if owner is None:
            return
        life = owner
        life.standing[op.path] = commit.sha
        for key in (commit.sha, trailers.get(OP_ID_TRAILER)):
            if key:
                ops[key] = (life, op.path)
        redo = original is not None or "Redoes" in trailers
        if redo:
            life.undone.discard(op.path)
        elif (
            op.kind.route == "strike"
            and trailers.get("Forget-Request") == life.request.path
            and "Undoes" not in trailers
        ):
            life.by_hand.add(op.path)
        _enter(life, when, commit.date, "redone" if redo else "applied", commit.sha)
        return
    if op.kind.direction != "backward":
        return
    if undid is not None and "Redoes" not in trailers:  # an undo of one of a request's operations
        life, path = undid
        if life.standing.get(path) is not None:
            life.standing.pop(path, None)
            life.undone.add(path)
            _enter(life, when, commit.date, "undone", commit.sha)
        return
    rid = trailers.get("Retraction-Id")
    for life in [named] if named is not None else list(lives.values()):
        if op.path not in life.standing or (rid and rid != life.request.rid):
            continue
        life.standing.pop(op.path, None)  # a withdrawal's step, or a hand's
        _enter(life, when, commit.date, "withdrawn" if named is life else "undone", commit.sha)


def _decisions(ledger: Ledger, after: int) -> Iterable[tuple[float, int, Line]]:
    """Each decision history backs, in history's order, with the time of the
    ledger commit that recorded it (its own ``at`` when none is found: a shallow clone)."""
    out = []
    for number, line in enumerate(ledger.lines):
        if line.doubt is not None:
            continue
        when = _epoch(line.source.date if line.source is not None else line.entry.get("at"))
        if when is not None:
            out.append((when, after + number, line))
    return out


def _epoch(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return _parse_when(text).timestamp()
    except ValueError:
        return None


def stage_at(stages: list[Stage], starts: list[float], epoch: float) -> Stage | None:
    """The stage in force at ``epoch`` (None before the first)."""
    i = bisect.bisect_right(starts, epoch)
    return stages[i - 1] if i else None
