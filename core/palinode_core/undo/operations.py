"""Every lifecycle commit in the store's history, ours or Palinode's own,
read from commit subjects (docs/format.md), and the undo of any one of them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal, cast

from ..errors import PalinodeError
from ..ops import lifecycle
from ..ops.plan import Plan
from ..ops.subjects import SUBJECT_RE
from ..storage.paths import history_rel_for, parse_subject_path
from ..storage.store import Store
from ..text.history import parse_entries
from ..text.words import retraction_id

OperationName = Literal["archive", "supersede", "retract", "unretract", "restore"]

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

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "date": self.date,
            "op": self.op,
            "path": self.path,
            "counterpart": self.counterpart,
            "subject": self.subject,
            "trailers": self.trailers,
        }


def operations(store: Store, limit: int = 500) -> list[Operation]:
    out = []
    for commit in store.git.log(limit=limit):
        match = _SUBJECT_RE.match(commit.subject)
        if not match or match.group("prefix") != store.config.commit_prefix:
            continue
        op = cast(OperationName, match.group("op"))  # the pattern admits only these names
        counterpart = match.group("succ") or match.group("src")
        out.append(
            Operation(
                commit.sha,
                commit.date,
                op,
                parse_subject_path(match.group("path")),
                parse_subject_path(counterpart) if counterpart else None,
                commit.subject,
                commit.trailers,
            )
        )
    return out


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


def plan_undo(store: Store, operation: Operation, reason: str | None = None) -> Plan:
    """The inverse of one applied operation, planned against the file as it is now."""
    pref = None
    if operation.op in ("retract", "unretract"):
        pref = pref_for(store, operation.path, operation.trailers.get("Retraction-Id"), operation.op)
        if pref is None:
            raise PalinodeError(f"cannot tell which preference {operation.subject!r} struck; use unretract with --pref")
    return lifecycle.plan_inverse(
        store, operation.op, operation.path, pref=pref, counterpart=operation.counterpart, reason=reason
    )
