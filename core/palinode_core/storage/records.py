"""The formats clones merge and recovery reads back, each defined once:
operation kinds, request states, ledger records (``.palinode-audit/ledger.jsonl``)
and journal entries (``.git/palinode-audit/journal/*.json``, never committed). Every other module
reads and writes these through the types here; docs/records.md and
docs/ledger-record.schema.json are generated from them (``schema()``), and a
test keeps the two in step."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, get_args, get_origin, get_type_hints

# The version written into every ledger record (``v``). A record without one predates it;
# a reader keeps records of a newer version it does not know (it only reads their keys).
RECORD_VERSION = 1

# What a lifecycle commit does to a memory (its subject's verb, docs/format.md); a plan is
# one of the four (an archive with a successor is committed as ``supersede``).
OpKind = Literal["archive", "supersede", "retract", "unretract", "restore"]
PlanOp = Literal["archive", "restore", "retract", "unretract"]
# forward: what a forget applies; backward: what takes a forget back
Direction = Literal["forward", "backward"]
# how a forget's target is forgotten: archived whole, or its mentions struck
TargetRoute = Literal["archive", "strike"]


@dataclass(frozen=True)
class OperationKind:
    """One operation kind and what follows from it. Every other place reads it
    from ``OPERATION_KINDS``: the commit subject pattern, planning by name, what
    takes an operation back (undo, redo, a rolled-back transaction), which way a
    commit goes (an audit's applied and undone), and the app's colours."""

    name: OpKind  # the word its commit subject carries: ``<prefix> <name>: <path>``
    plans_as: PlanOp  # the planner that makes it (a supersede is an archive with a successor)
    inverse: PlanOp  # the planner that takes it back
    direction: Direction
    route: TargetRoute | None  # a forward kind: the route its target is shown on
    changes: Literal["status", "strikes"]  # what of a memory it changes: its status, or its strikes
    colour: str  # a colour name, as the app shows the kind


OPERATION_KINDS: dict[str, OperationKind] = {
    kind.name: kind
    for kind in (
        OperationKind("archive", "archive", "restore", "forward", "archive", "status", "yellow"),
        OperationKind("supersede", "archive", "restore", "forward", "archive", "status", "yellow"),
        OperationKind("retract", "retract", "unretract", "forward", "strike", "strikes", "magenta"),
        OperationKind("unretract", "unretract", "retract", "backward", None, "strikes", "green"),
        OperationKind("restore", "restore", "archive", "backward", None, "status", "green"),
    )
}
# Where a forget request stands.
# conflicted: a dismissal and an apply made apart (in clones that had not synced), until someone decides again
RequestStateName = Literal["pending", "applied", "partial", "withdrawn", "dismissed", "conflicted"]
# What a ledger record records: a decision (apply, dismiss, withdraw), a sentence a reviewer
# struck by hand (strike), a residue line marked for later (flag), a leak check (residue), or a
# person's decision on a possible request (a request in other words): confirmed (its request
# memory written in the same commit) or dismissed.
LedgerAction = Literal[
    "apply", "dismiss", "withdraw", "strike", "flag", "residue", "confirm_possible", "dismiss_possible"
]
DECIDING_ACTIONS: tuple[LedgerAction, ...] = ("apply", "dismiss", "withdraw", "strike")
# The kinds of crash-journal entry: one commit, or a whole forget, withdraw or hand-strike transaction.
JournalKind = Literal["apply", "ledger", "forget", "withdraw", "strike"]


class CommitRef(TypedDict, total=False):
    """One commit a decision made, named by sha and by Operation-Id (a rebase keeps the id)."""

    commit: str | None
    op_id: str
    path: str
    op: str
    subject: str
    route: str | None  # apply: archive or strike
    spans: list[int]  # apply: the units struck


class LedgerRecord(TypedDict, total=False):
    """One line of the ledger. ``at``, ``v``, ``decided_by`` and ``action`` are
    on every record this version writes; the rest depends on the action."""

    action: LedgerAction
    at: str  # ISO 8601, the clock of the clone that decided
    v: int  # RECORD_VERSION
    decided_by: str  # the git identity the ledger commit is authored by: Name <email>
    request: str | None  # the forget request's path (a flag may have none)
    pref: str
    rid: str  # the retraction id, r:<rid> in strike markers
    note: str | None
    txn: str  # the journal transaction that wrote it
    # apply, dismiss, withdraw: the ids of the request's decisions the deciding clone held
    # (sha256 of each one's line, 16 hex digits), less those another of them names
    after: list[str]
    # apply
    approved: list[CommitRef]  # also strike: the one commit
    rejected: list[str]
    deferred: list[str]
    failed: list[dict[str, Any]]
    targets: list[dict[str, Any]]  # every target as resolved: path, rank, route, coverage, shared words, reason
    knobs: dict[str, Any]
    search_mode: str
    complete: bool
    # withdraw
    commits: list[CommitRef]
    broad: bool
    # residue (a leak check), flag and strike (path, line, text)
    counts: dict[str, int]
    mentions: list[dict[str, Any]]
    path: str  # flag, confirm_possible, dismiss_possible: the memory the line is in
    line: int
    kind: str
    text: str
    # confirm_possible, dismiss_possible: the possible request's id (its memory and sentence), and,
    # when confirmed, what it pointed at (where, path, text, line)
    candidate: str
    referent: dict[str, Any]


class JournalEntry(TypedDict, total=False):
    """An intent written before anything changes, removed once it is committed."""

    id: str
    kind: JournalKind
    started_at: str
    # one commit (kind apply or ledger)
    op: str
    op_id: str  # the Operation-Id the commit carries
    target: str
    history_rel: str
    subject: str
    trailers: dict[str, str]
    parent: str | None  # the transaction it is a step of
    step: int | None
    files: list[dict[str, Any]]  # rel, before, after
    index_before: dict[str, list[str]]
    # a transaction (kind forget or withdraw)
    request: str
    pref: str
    rid: str
    steps: list[dict[str, Any]]
    done: list[dict[str, Any]]
    failed: list[dict[str, Any]]
    ledger: dict[str, Any]
    ledger_rel: str
    also_records: list[LedgerRecord]
    broad: bool


# JSON keeps these raw with ensure_ascii=False, and str.splitlines (an editor, a reader)
# breaks a line on them: escaped, a record stays one line for every reader
_LINE_BREAKS = str.maketrans({"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"})


def to_line(record: LedgerRecord) -> str:
    """The one serialisation of a record: JSON, keys sorted, UTF-8 kept, one line."""
    return json.dumps(record, ensure_ascii=False, sort_keys=True).translate(_LINE_BREAKS)


def record_lines(text: str) -> list[str]:
    """A JSONL file's lines, broken at newlines only (a record written before its
    U+2028 was escaped is still one line)."""
    return [line.removesuffix("\r") for line in text.split("\n")]


def from_line(line: str) -> LedgerRecord | None:
    """A record, or None for a line that is not one (hand-damaged: skipped, never fatal)."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):  # JSONDecodeError, an over-long number, deep nesting
        return None
    return value if isinstance(value, dict) else None  # type: ignore[return-value]  # keys read with .get


def schema(kind: type = LedgerRecord) -> dict[str, Any]:
    """The JSON Schema of a record type, from its annotations (docs/ledger-record.schema.json)."""
    hints = get_type_hints(kind)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": kind.__name__,
        "description": " ".join((kind.__doc__ or "").split()),
        "type": "object",
        "properties": {name: _json_type(hint) for name, hint in hints.items()},
        "additionalProperties": True,  # a newer version may add keys; readers ignore them
    }


def _json_type(hint: Any) -> dict[str, Any]:
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        return {"enum": list(args)}
    if hint is type(None):
        return {"type": "null"}
    if origin in (list, tuple):
        return {"type": "array", "items": _json_type(args[0]) if args else {}}
    if origin is dict or hint is dict:
        return {"type": "object"}
    if args and type(None) in args:  # X | None
        rest = [a for a in args if a is not type(None)]
        return {"anyOf": [_json_type(rest[0]) if len(rest) == 1 else {}, {"type": "null"}]}
    if isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__annotations__"):
        return {"type": "object", "properties": {k: _json_type(v) for k, v in get_type_hints(hint).items()}}
    simple = {str: "string", int: "integer", bool: "boolean", float: "number"}
    return {"type": simple[hint]} if hint in simple else {}


if __name__ == "__main__":  # python -m palinode_core.storage.records [journal] > docs/<name>.schema.json
    import sys

    print(json.dumps(schema(JournalEntry if sys.argv[1:] == ["journal"] else LedgerRecord), indent=2))
