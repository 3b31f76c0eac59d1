"""Lifecycle commit subjects (docs/format.md), read back: which operation a
commit is, on which file, and who made it (Palinode, this tool, or a hand)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, cast

from ..storage.paths import SUBJECT_PATH_PATTERN, parse_subject_path
from ..storage.records import OPERATION_KINDS, OperationKind, OpKind

Actor = Literal["palinode", "palinode-audit", "other"]

_P = SUBJECT_PATH_PATTERN  # a plain word, or a JSON-quoted path (spaces, newlines, quotes)
_KINDS = "|".join(map(re.escape, OPERATION_KINDS))
SUBJECT_RE = re.compile(
    rf"^(?P<prefix>\S+) (?P<op>{_KINDS}): (?P<path>{_P})"
    rf"(?: \((?P<n>\d+) mentions\))?(?: -> (?P<succ>{_P}))?(?: <- (?P<src>{_P}))?(?: \(actor: [^)]*\))?$"
)
AUDIT_PREFIX = "palinode-audit"
# Our reviewed applies, withdrawals, undos and redos carry these; Palinode's own commits carry none.
OUR_TRAILERS = ("Forget-Request", "Retraction-Id", "Undoes", "Redoes")
# Every commit this tool makes carries an id of its operation; an undo and a redo name the
# operation they take back by id as well as by sha, since a rebase changes the sha.
OP_ID_TRAILER = "Operation-Id"
UNDOES_OP_TRAILER = "Undoes-Operation"
REDOES_OP_TRAILER = "Redoes-Operation"


@dataclass(frozen=True)
class SubjectOp:
    op: OpKind
    path: str
    counterpart: str | None  # the successor, the forget request, or the restored-from

    @property
    def kind(self) -> OperationKind:
        return OPERATION_KINDS[self.op]


def parse_subject(subject: str, prefix: str) -> SubjectOp | None:
    match = SUBJECT_RE.match(subject)
    if not match or match.group("prefix") != prefix:
        return None
    counterpart = match.group("succ") or match.group("src")
    return SubjectOp(
        cast(OpKind, match.group("op")),  # the pattern admits only the kinds' names
        parse_subject_path(match.group("path")),
        parse_subject_path(counterpart) if counterpart else None,
    )


def actor_of(subject: str, trailers: dict[str, str], prefix: str) -> Actor:
    """This tool when the subject is our ledger's or the commit carries our
    trailers; Palinode when it uses the store's commit prefix (a single op run
    from this tool's CLI looks the same); anyone else is a hand edit."""
    if subject.startswith(AUDIT_PREFIX + " ") or any(k in trailers for k in OUR_TRAILERS):
        return "palinode-audit"
    if subject.startswith((prefix + " ", prefix + ":")):
        return "palinode"
    return "other"
