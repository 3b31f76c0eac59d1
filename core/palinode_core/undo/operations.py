"""Every lifecycle commit in the store's history, ours or Palinode's own,
read from commit subjects (docs/format.md), and the undo of any one of them."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

from ..errors import PalinodeError, UsageError
from ..ops import lifecycle
from ..ops.plan import Plan
from ..ops.subjects import OP_ID_TRAILER, REDOES_OP_TRAILER, SUBJECT_RE, UNDOES_OP_TRAILER
from ..storage.memory import Memory
from ..storage.paths import history_rel_for, parse_subject_path
from ..storage.records import OPERATION_KINDS, OperationKind, OpKind
from ..storage.snapshot import GitObjects, memory_from_bytes
from ..storage.store import Store
from ..text.history import parse_entries
from ..text.markdown import struck_spans
from ..text.words import retraction_id
from .restrike import restrike, struck_by

OperationName = OpKind  # docs/records.md

_SUBJECT_RE = SUBJECT_RE  # parsed in ops.subjects, shared with the audit views
_RETRACT_ENTRY_RE = re.compile(
    r'^(?:Retracted|Unretracted) \d+ mention\(s\) \[r:(?P<rid>[0-9a-f]{8})\]: "(?P<pref>.*?)"'
    r"(?: \u2014 superseded by \S+| \(reason: .*\))?$"
)


@dataclass(frozen=True)
class Operation:
    """One lifecycle commit in the store's history (ours or Palinode's own)."""

    commit: str
    date: str
    op: OperationName
    path: str
    counterpart: str | None  # the successor, the forget request, or the restored-from
    subject: str
    trailers: dict[str, str]
    # the commit that undid it and its date, and the commit that redid it since
    # (read from the ``Undoes:`` and ``Redoes:`` trailers of later commits)
    undone_by: str | None = None
    undone_at: str | None = None
    redone_by: str | None = None
    undone_by_op: str | None = None  # the undo's Operation-Id, for a redo to name

    @property
    def op_id(self) -> str | None:
        """The id the commit carries (``Operation-Id:``); None on Palinode's own and older commits."""
        return self.trailers.get(OP_ID_TRAILER) or None

    @property
    def kind(self) -> OperationKind:
        return OPERATION_KINDS[self.op]

    @property
    def undone(self) -> bool:
        """Undone and not redone since: its change is no longer in force."""
        return self.undone_by is not None and self.redone_by is None

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "date": self.date,
            "op": self.op,
            "path": self.path,
            "counterpart": self.counterpart,
            "subject": self.subject,
            "trailers": self.trailers,
            "undone_by": self.undone_by,
            "undone_at": self.undone_at,
            "redone_by": self.redone_by,
        }


def operations(store: Store, limit: int = 500) -> list[Operation]:
    """Every lifecycle commit, newest first, each marked with what undid or
    redid it. A trailer counts only on a commit of the inverse operation on
    the same file (the redo of an operation is the inverse of its undo) that
    made that change to it: a subject and trailers are words, the change is
    what happened."""
    found = _read(store, limit)
    by_sha = {o.commit: o for o in found}
    by_id = {o.op_id: o for o in reversed(found) if o.op_id}  # an id seen twice: the newest commit

    def named(o: Operation, sha_key: str, id_key: str) -> Operation | None:
        # by sha first; by id when a rebase rewrote the sha the trailer names
        return by_sha.get(o.trailers.get(sha_key, "")) or by_id.get(o.trailers.get(id_key, ""))

    undone: dict[str, Operation] = {}
    redone: dict[str, str] = {}
    changes = _Changes(store)
    try:
        for o in found:
            target = named(o, "Undoes", UNDOES_OP_TRAILER)
            if (
                target is not None
                and target.commit not in undone  # newest first: the latest undo wins
                and target.path == o.path
                and target.kind.inverse == o.kind.plans_as
                and changes.made(o)
            ):
                undone[target.commit] = o
            original = named(o, "Redoes", REDOES_OP_TRAILER)
            if (
                original is not None
                and original.commit not in redone
                and original.path == o.path
                and original.kind.plans_as == o.kind.plans_as
                and changes.made(o)
            ):
                redone[original.commit] = o.commit
    finally:
        changes.close()
    return [
        replace(
            o,
            undone_by=undone[o.commit].commit if o.commit in undone else None,
            undone_at=undone[o.commit].date if o.commit in undone else None,
            redone_by=redone.get(o.commit),
            undone_by_op=undone[o.commit].op_id if o.commit in undone else None,
        )
        for o in found
    ]


def _read(store: Store, limit: int) -> list[Operation]:
    out = []
    for commit in store.git.log(limit=limit):
        match = _SUBJECT_RE.match(commit.subject)
        if not match or match.group("prefix") != store.config.commit_prefix:
            continue
        path = parse_subject_path(match.group("path"))
        if path not in commit.files:
            continue  # a commit that left the file it names as it was operated on nothing
        op = cast(OperationName, match.group("op"))  # the pattern admits only these names
        counterpart = match.group("succ") or match.group("src")
        out.append(
            Operation(
                commit.sha,
                commit.date,
                op,
                path,
                parse_subject_path(counterpart) if counterpart else None,
                commit.subject,
                commit.trailers,
            )
        )
    return out


class _Changes:
    """Did an undo or redo commit change its file as its operation does (strike
    more, strike less, archive, restore)? Read from the file before and after
    it, through one ``git cat-file`` process, started only when asked."""

    def __init__(self, store: Store):
        self.store = store
        self.objects: GitObjects | None = None
        self.seen: dict[str, bool] = {}

    def made(self, operation: Operation) -> bool:
        if operation.commit not in self.seen:  # a redo is asked twice: as a redo and as an undo's undo
            self.seen[operation.commit] = self._made(operation)
        return self.seen[operation.commit]

    def _made(self, operation: Operation) -> bool:
        if self.objects is None:
            self.objects = GitObjects(self.store.git)
        before = self._memory(f"{operation.commit}^", operation.path)
        after = self._memory(operation.commit, operation.path)
        if after is None:
            return False
        forward = operation.kind.direction == "forward"  # archives, or strikes more
        if operation.kind.changes == "status":
            return after.archived == forward and (before is None or before.archived != after.archived)
        rid = operation.trailers.get("Retraction-Id") or None
        struck = len(struck_spans(after.body, rid))
        was = len(struck_spans(before.body, rid)) if before is not None else 0
        return struck > was if forward else struck < was

    def _memory(self, rev: str, path: str) -> Memory | None:
        assert self.objects is not None
        data = self.objects.read(f"{rev}:{path}")
        if data is None:
            return None
        try:
            return memory_from_bytes(path, data)
        except PalinodeError:  # unreadable there: no change of a memory to speak of
            return None

    def close(self) -> None:
        if self.objects is not None:
            self.objects.close()


def pref_for(store: Store, path: str, rid: str | None = None, op: str = "retract") -> str | None:
    """The pref as its request stated it, from the history sibling: by rid when
    the commit names it, else the newest entry of this kind that fits the file
    (a retraction still recorded, or an unretraction no longer recorded)."""
    memory = store.load(path)
    recorded = {retraction_id(p) for p in memory.retracted_prefs}
    verb = "Retracted" if op == "retract" else "Unretracted"
    text, _ = store.read_optional(history_rel_for(memory.rel))
    for entry in reversed(parse_entries(text or "")):
        match = _RETRACT_ENTRY_RE.match(entry.text)
        if not match or not entry.text.startswith(verb):
            continue
        if rid is not None:
            if match.group("rid") == rid:
                return match.group("pref")
        elif (match.group("rid") in recorded) == (op == "retract"):
            return match.group("pref")
    return None


def _own_strikes(store: Store, operation: Operation, rid: str) -> frozenset[int] | None:
    """Where the strikes the retract ``operation`` made open in the file now;
    None when they are all its strikes there (the whole retraction is undone)."""
    own = Counter(s.text for s in struck_by(store, operation.path, rid, operation.commit, f"{operation.commit}^"))
    now = struck_spans(store.load(operation.path).body, rid)
    if not Counter(s.text for s in now) - own:
        return None
    if any(sum(s.text == text for s in now) > count for text, count in own.items()):
        raise PalinodeError(
            f"{operation.path} holds the same struck sentence from another commit as well: "
            f"cannot tell which one {operation.commit[:7]} struck; unretract by hand"
        )
    return frozenset(s.start for s in now if s.text in own)


def find_operation(found: list[Operation], ref: str) -> Operation:
    """The operation whose commit id starts with ``ref`` (at least 4 hex digits)."""
    if not re.fullmatch(r"[0-9a-f]{4,40}", ref):
        raise UsageError(f"not a commit id: {ref!r}")
    matches = [o for o in found if o.commit.startswith(ref)]
    if not matches:
        raise UsageError(f"no archive, restore, retract or unretract in commit {ref}")
    if len(matches) > 1:
        raise UsageError(f"{ref} names {len(matches)} operations; give more of the commit id")
    return matches[0]


def plan_undo(store: Store, operation: Operation, reason: str | None = None) -> Plan:
    """The inverse of one applied operation, planned against the file as it is
    now. Its commit names the undone one (``Undoes:``), so the operation shows
    as undone and can be redone exactly as it was approved."""
    short = operation.commit[:7]
    if "Undoes" in operation.trailers and "Redoes" not in operation.trailers:  # an undo is taken back by a redo
        undid = operation.trailers["Undoes"][:7]
        if operation.undone_by is not None:
            raise PalinodeError(f"{short} undid {undid}, which {operation.undone_by[:7]} redid; undo that commit")
        raise PalinodeError(f"{short} undid {undid}; redo {undid} instead")
    if operation.undone_by is not None:
        if operation.redone_by is None:
            raise PalinodeError(f"{short} was already undone in {operation.undone_by[:7]}; redo it instead")
        raise PalinodeError(f"{short} was undone and then redone in {operation.redone_by[:7]}; undo that commit")
    pref = None
    trailers = {"Undoes": operation.commit, **({UNDOES_OP_TRAILER: operation.op_id} if operation.op_id else {})}
    if operation.kind.changes == "strikes":
        pref = pref_for(store, operation.path, operation.trailers.get("Retraction-Id"), operation.op)
        if pref is None:
            raise PalinodeError(f"cannot tell which preference {operation.subject!r} struck; use unretract with --pref")
        trailers["Retraction-Id"] = retraction_id(pref)
    return plan_change(store, operation, back=True, pref=pref, reason=reason, trailers=trailers)


def plan_change(
    store: Store,
    operation: Operation,
    *,
    back: bool,
    pref: str | None,
    reason: str | None,
    trailers: dict[str, str],
) -> Plan:
    """``operation``'s change made again (a redo) or taken back (``back``: an
    undo), planned against the file as it is now: by the kind's row, exactly
    where ``_EXACT`` says how, else by name."""
    kind = operation.kind.inverse if back else operation.kind.plans_as
    exact = _EXACT.get((kind, back))
    if exact is not None:
        return exact(store, operation, pref or "", reason, trailers, back)
    return lifecycle.plan_op(
        store, kind, operation.path, pref=pref, superseded_by=operation.counterpart, reason=reason, trailers=trailers
    )


def _restrike(
    store: Store, operation: Operation, pref: str, _reason: str | None, trailers: dict[str, str], back: bool
) -> Plan:
    """Strike again exactly what ``operation`` struck (the redo of a retract)
    or unstruck (``back``: the undo of an unretract), not every mention."""
    commit, parent = operation.commit, f"{operation.commit}^"
    struck, base = (parent, commit) if back else (commit, parent)
    return restrike(store, operation.path, commit, operation.counterpart, trailers, pref, struck, base)


def _unstrike_own(
    store: Store, operation: Operation, pref: str, reason: str | None, trailers: dict[str, str], _back: bool
) -> Plan:
    """Unstrike only the strikes ``operation`` made (the undo of a retract):
    another commit may have struck more under the id."""
    own = _own_strikes(store, operation, retraction_id(pref))
    return lifecycle.plan_unretract(store, operation.path, pref, reason, trailers, own)


Exact = Callable[[Store, Operation, str, str | None, dict[str, str], bool], Plan]
# A kind that changes strikes, planned from one commit's change exactly: keyed by the kind
# planned and whether the change is taken back. A redo of an unretract unstrikes the
# preference's strikes by name, as the unretract did.
_EXACT: dict[tuple[str, bool], Exact] = {
    ("retract", False): _restrike,
    ("retract", True): _restrike,
    ("unretract", True): _unstrike_own,
}
