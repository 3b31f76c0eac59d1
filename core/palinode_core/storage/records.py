"""The formats clones merge and recovery reads back, each defined once:
operation kinds, request states, ledger records (``.palinode-audit/ledger.jsonl``)
and journal entries (``.git/palinode-audit/journal/*.json``, never committed). Every other module
reads and writes these through the types here; docs/records.md and
docs/ledger-record.schema.json are generated from them (``schema()``), and a
test keeps the two in step."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal, TypedDict, cast, get_args, get_origin, get_type_hints

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


_INDEX_ENTRY = re.compile(r"[0-7]{6}\Z"), re.compile(r"(?:[0-9a-f]{40}|[0-9a-f]{64})\Z"), re.compile(r"[0-3]\Z")


def is_index_entry(entry: object) -> bool:
    """Whether ``entry`` has the shape ``git ls-files -s`` gives one: [mode, blob id, stage]."""
    return (
        isinstance(entry, list)
        and len(entry) == 3
        and all(isinstance(x, str) and pattern.match(x) for x, pattern in zip(entry, _INDEX_ENTRY, strict=True))
    )


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
# The kinds of crash-journal entry: one commit (a plan's, a ledger record's, or the flags a
# plan's dependents get), or a whole forget, withdraw or hand-strike transaction.
JournalKind = Literal["apply", "ledger", "flags", "forget", "withdraw", "strike"]


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
    # one commit (kind apply, ledger or flags)
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
    # a transaction (kind forget, withdraw or strike)
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
    # strike: the sentence a reviewer struck by hand (where it is, its words) and why
    path: str
    line: int
    text: str
    note: str | None


# -- the crash journal: what ``recover`` reads after a kill --------------------------------------
# Written and read through the types below only; JournalEntry above documents the JSON they
# make (docs/journal-entry.schema.json). Each record writes its keys in one order, and only
# those its kind carries, so an entry's bytes (and a transaction's id, hashed from them) are
# what they always were.

Json = dict[str, object]


class Malformed(ValueError):
    """A journal entry this tool cannot have written; its words say why."""


def _record(value: object, what: str) -> Json:
    if not isinstance(value, dict):
        raise Malformed(what)
    return value


def _text(raw: Json, key: str, what: str) -> str:
    value = raw.get(key)
    if not isinstance(value, str):
        raise Malformed(what)
    return value


def _optional_text(raw: Json, key: str, what: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise Malformed(what)
    return value


def _index(value: object, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise Malformed(what)
    return value


def _texts(value: object, what: str) -> dict[str, str]:
    """A mapping of text to text (trailers); absent or empty is none."""
    if not value:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise Malformed(what)
    return dict(value)


def _numbers(value: object, what: str) -> list[int]:
    if not isinstance(value, list) or not all(isinstance(n, int) for n in value):
        raise Malformed(what)
    return list(value)


@dataclass(frozen=True)
class FileIntent:
    """One file a commit writes: its whole text before and after (None: no file)."""

    rel: str
    before: str | None
    after: str | None

    def to_json(self) -> Json:
        return {"rel": self.rel, "before": self.before, "after": self.after}

    @classmethod
    def from_json(cls, value: object) -> FileIntent:
        what = "a file it writes is not a recorded write"
        raw = _record(value, what)
        return cls(_text(raw, "rel", what), _optional_text(raw, "before", what), _optional_text(raw, "after", what))


# The keys a commit's entry carries, by kind, in the order they are written.
_COMMIT_KEYS = {
    "apply": ("kind", "op", "target", "history_rel", "subject", "trailers", "parent", "step", "op_id"),
    "ledger": ("kind", "target", "subject", "trailers", "parent", "op_id"),
    "flags": ("kind", "op", "target", "subject", "trailers", "op_id"),
}
_INTENT_KEYS = ("files", "index_before", "started_at", "id")


@dataclass(frozen=True)
class CommitIntent:
    """One commit, journaled before its first byte is written: ``apply`` (a
    plan's file and history sibling), ``ledger`` (a ledger record) or ``flags``
    (a plan's dependents). Complete when HEAD holds every file's ``after``."""

    kind: str
    target: str | None
    subject: str
    trailers: dict[str, str] = field(default_factory=dict)
    op: str | None = None  # apply, flags: the operation's name
    history_rel: str | None = None  # apply
    parent: str | None = None  # apply, ledger: the transaction it is a step of
    step: int | None = None  # apply: which step of it
    op_id: str | None = None  # the Operation-Id the commit carries
    files: tuple[FileIntent, ...] = ()
    index_before: dict[str, list[str]] = field(default_factory=dict)  # each path's index entry before staging
    started_at: str = ""
    id: str = ""

    @property
    def name(self) -> str:
        """What messages call it: its target, else its first file."""
        return self.target or self.files[0].rel

    def to_json(self) -> Json:
        values: Json = {
            "kind": self.kind,
            "op": self.op,
            "target": self.target,
            "history_rel": self.history_rel,
            "subject": self.subject,
            "trailers": self.trailers,
            "parent": self.parent,
            "step": self.step,
            "op_id": self.op_id,
            "files": [f.to_json() for f in self.files],
            "index_before": self.index_before,
            "started_at": self.started_at,
            "id": self.id,
        }
        return {k: values[k] for k in (*_COMMIT_KEYS[self.kind], *_INTENT_KEYS) if k != "id" or self.id}

    @classmethod
    def from_json(cls, raw: Json) -> CommitIntent:
        files = raw.get("files")
        if not isinstance(files, list) or not files:
            raise Malformed("it names no file it writes")
        index = raw.get("index_before") or {}
        named = {f.get("rel") for f in files if isinstance(f, dict)}
        if not isinstance(index, dict) or not all(k in named and is_index_entry(v) for k, v in index.items()):
            raise Malformed("its index entries are not ones git wrote for the files it names")
        kind = raw.get("kind")
        if kind not in _COMMIT_KEYS:  # a commit this tool journals is one of these (it could not write another)
            raise Malformed(f"its kind is none of {', '.join(_COMMIT_KEYS)}")
        step = raw.get("step")
        return cls(
            kind=_text(raw, "kind", "its kind is not a name"),
            target=_optional_text(raw, "target", "its target is not a path"),
            subject=_optional_text(raw, "subject", "its subject is not text") or "",
            trailers=_texts(raw.get("trailers"), "its trailers are not a mapping"),
            op=_optional_text(raw, "op", "its operation is not a name"),
            history_rel=_optional_text(raw, "history_rel", "its history file is not a path"),
            parent=_optional_text(raw, "parent", "its transaction is not an id"),
            step=None if step is None else _index(step, "its step is not a number"),
            op_id=_optional_text(raw, "op_id", "its operation id is not text"),
            files=tuple(FileIntent.from_json(f) for f in files),
            index_before={k: list(v) for k, v in index.items()},
            started_at=_optional_text(raw, "started_at", "its start is not a time") or "",
            id=_optional_text(raw, "id", "its id is not text") or "",
        )


@dataclass(frozen=True)
class StepIntent:
    """One step of a transaction as it was planned: the plan's file before and
    after, its history line and commit (``route`` and ``spans``: a forget's)."""

    op: str
    target: str
    history_rel: str
    old_text: str
    new_text: str
    history_line: str | None
    subject: str | None
    trailers: dict[str, str]
    pref: str | None
    superseded_by: str | None
    reason: str | None
    status: str
    rid: str | None
    route: str | None = None  # forget: the route the target was approved on
    spans: tuple[int, ...] | None = None  # forget: the units it strikes

    def to_json(self) -> Json:
        out: Json = {
            "op": self.op,
            "target": self.target,
            "history_rel": self.history_rel,
            "old_text": self.old_text,
            "new_text": self.new_text,
            "history_line": self.history_line,
            "subject": self.subject,
            "trailers": self.trailers,
            "pref": self.pref,
            "superseded_by": self.superseded_by,
            "reason": self.reason,
            "status": self.status,
            "rid": self.rid,
        }
        if self.route is not None:
            out["route"] = self.route
        if self.spans is not None:
            out["spans"] = list(self.spans)
        return out

    @classmethod
    def from_json(cls, value: object) -> StepIntent:
        what = "a step is not a recorded operation"
        raw = _record(value, what)
        spans = raw.get("spans")
        return cls(
            op=_text(raw, "op", what),
            target=_text(raw, "target", what),
            history_rel=_text(raw, "history_rel", what),
            old_text=_text(raw, "old_text", what),
            new_text=_text(raw, "new_text", what),
            history_line=_optional_text(raw, "history_line", what),
            subject=_optional_text(raw, "subject", what),
            trailers=_texts(raw.get("trailers"), "a step's trailers are not a mapping"),
            pref=_optional_text(raw, "pref", what),
            superseded_by=_optional_text(raw, "superseded_by", what),
            reason=_optional_text(raw, "reason", what),
            status=_text(raw, "status", what),
            rid=_optional_text(raw, "rid", what),
            route=_optional_text(raw, "route", what),
            spans=None if spans is None else tuple(_numbers(spans, what)),
        )


@dataclass(frozen=True)
class DoneStep:
    """A step of a transaction that is committed, and the commit that holds it."""

    index: int
    commit: str | None  # None: the change was already in HEAD (someone committed our bytes)
    op_id: str | None
    path: str
    op: str
    subject: str | None
    superseded_by: str | None
    spans: tuple[int, ...]

    @classmethod
    def of(cls, txn: TxnIntent, index: int, commit: str | None, step: StepIntent) -> DoneStep:
        """Step ``index`` of ``txn`` (as ``step`` was committed), in ``commit``;
        its Operation-Id is known before the commit, from the transaction's."""
        return cls(
            index,
            commit,
            step_op_id(txn.id, index),
            step.target,
            step.op,
            step.subject,
            step.superseded_by,
            step.spans or (),
        )

    def to_json(self) -> Json:
        return {
            "index": self.index,
            "commit": self.commit,
            "op_id": self.op_id,
            "path": self.path,
            "op": self.op,
            "subject": self.subject,
            "superseded_by": self.superseded_by,
            "spans": list(self.spans),
        }

    @classmethod
    def from_json(cls, value: object, steps: tuple[StepIntent, ...]) -> DoneStep:
        raw = _record(value, "a done step has no index")
        index = _index(raw.get("index"), "a done step has no index")
        if not 0 <= index < len(steps):
            raise Malformed("a done step names no recorded step")
        what = "a done step is not a recorded commit"
        spans = raw.get("spans")
        return cls(
            index,
            _optional_text(raw, "commit", what),
            _optional_text(raw, "op_id", what),
            _optional_text(raw, "path", what) or steps[index].target,
            _optional_text(raw, "op", what) or steps[index].op,
            _optional_text(raw, "subject", what),
            _optional_text(raw, "superseded_by", what),
            () if spans is None else tuple(_numbers(spans, what)),
        )


@dataclass(frozen=True)
class FailedStep:
    """A step that was refused, and why."""

    index: int
    path: str
    op: str
    reason: str

    def to_json(self) -> Json:
        return {"index": self.index, "path": self.path, "op": self.op, "reason": self.reason}

    @classmethod
    def from_json(cls, value: object) -> FailedStep:
        what = "a failed step is not a recorded refusal"
        raw = _record(value, what)
        return cls(
            _index(raw.get("index"), what), _text(raw, "path", what), _text(raw, "op", what), _text(raw, "reason", what)
        )


@dataclass(frozen=True)
class StruckSentence:
    """The sentence a reviewer struck by hand (a strike transaction's): the
    memory and line it is on, its words, and the reviewer's note."""

    path: str
    line: int
    text: str
    note: str | None

    def to_json(self) -> Json:
        return {"path": self.path, "line": self.line, "text": self.text, "note": self.note}

    @classmethod
    def from_json(cls, raw: Json) -> StruckSentence:
        what = "the sentence it strikes is not a recorded one"
        return cls(
            _text(raw, "path", what),
            _index(raw.get("line"), what),
            _text(raw, "text", what),
            _optional_text(raw, "note", what),
        )


TXN_KINDS = ("forget", "withdraw", "strike")


@dataclass
class TxnIntent:
    """A forget apply, a withdraw or a strike by hand as one transaction: every
    step and the ledger record, journaled before the first write; ``done`` and
    ``failed`` grow as its commits land or are refused (the entry is written again each time)."""

    kind: str  # forget, withdraw or strike
    request: str
    pref: str
    rid: str
    steps: tuple[StepIntent, ...]
    ledger_rel: str
    started_at: str
    ledger: LedgerRecord | None = None  # forget: the decision's own fields
    broad: bool | None = None  # withdraw: Palinode's broad withdrawal
    struck: StruckSentence | None = None  # strike: the sentence struck by hand
    done: list[DoneStep] = field(default_factory=list)
    failed: list[FailedStep] = field(default_factory=list)
    id: str = ""
    also_records: list[LedgerRecord] = field(default_factory=list)  # committed with its ledger record

    def committed(self) -> list[DoneStep]:
        """The committed steps, in step order."""
        return sorted(self.done, key=lambda d: d.index)

    def to_json(self) -> Json:
        out: Json = {"kind": self.kind, "request": self.request, "pref": self.pref, "rid": self.rid}
        if self.ledger is not None:
            out["ledger"] = self.ledger
        if self.broad is not None:
            out["broad"] = self.broad
        if self.struck is not None:
            out.update(self.struck.to_json())
        out.update(
            steps=[s.to_json() for s in self.steps],
            done=[d.to_json() for d in self.done],
            failed=[f.to_json() for f in self.failed],
            ledger_rel=self.ledger_rel,
            started_at=self.started_at,
        )
        if self.id:
            out["id"] = self.id
        if self.also_records:
            out["also_records"] = self.also_records
        return out

    @classmethod
    def from_json(cls, raw: Json) -> TxnIntent:
        for key, kind in (("steps", list), ("done", list), ("failed", list), ("kind", str)):
            if not isinstance(raw.get(key), kind):
                raise Malformed(f"its {key!r} is missing or not a {kind.__name__}")
        steps = tuple(StepIntent.from_json(s) for s in _list(raw, "steps"))
        ledger, broad, also = raw.get("ledger"), raw.get("broad"), raw.get("also_records") or []
        if ledger is not None and not isinstance(ledger, dict):
            raise Malformed("its ledger record is not a record")
        if broad is not None and not isinstance(broad, bool):
            raise Malformed("its 'broad' is not true or false")
        if not isinstance(also, list) or not all(isinstance(r, dict) for r in also):
            raise Malformed("a record it commits with its own is not a record")
        txn_kind = _text(raw, "kind", "its kind is not a name")
        return cls(
            kind=txn_kind,
            request=_text(raw, "request", "it names no forget request"),
            pref=_text(raw, "pref", "it names no preference"),
            rid=_text(raw, "rid", "it names no retraction id"),
            steps=steps,
            ledger_rel=_optional_text(raw, "ledger_rel", "its ledger is not a path") or "",
            started_at=_optional_text(raw, "started_at", "its start is not a time") or "",
            ledger=cast(LedgerRecord, ledger),  # its keys are read with .get, as every ledger record's
            broad=broad,
            struck=StruckSentence.from_json(raw) if txn_kind == "strike" else None,
            done=[DoneStep.from_json(d, steps) for d in _list(raw, "done")],
            failed=[FailedStep.from_json(f) for f in _list(raw, "failed")],
            id=_optional_text(raw, "id", "its id is not text") or "",
            also_records=[cast(LedgerRecord, r) for r in also],
        )


def _list(raw: Json, key: str) -> list[object]:
    value = raw.get(key)
    return value if isinstance(value, list) else []


def parse_entry(raw: Json) -> CommitIntent | TxnIntent | None:
    """A journal entry as its record; None for an older version's (it names no
    file it writes), or Malformed saying why it is none this tool wrote."""
    if raw.get("kind") in TXN_KINDS:
        return TxnIntent.from_json(raw)
    if "files" in raw:
        return CommitIntent.from_json(raw)
    return None


def step_op_id(txn_id: str, step: int | str) -> str:
    """The id of one step of a transaction (or its ``ledger`` record): known
    before the commit exists, so the transaction's journal names it too."""
    return f"{txn_id}.{step}"


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
