"""Lifecycle commit subjects (docs/format.md), read back: which operation a
commit is, on which file, and who made it (Palinode, this tool, or a hand)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Actor = Literal["palinode", "palinode-audit", "other"]

SUBJECT_RE = re.compile(
    r"^(?P<prefix>\S+) (?P<op>archive|supersede|retract|unretract|restore): (?P<path>\S+)"
    r"(?: \((?P<n>\d+) mentions\))?(?: -> (?P<succ>\S+))?(?: <- (?P<src>\S+))?(?: \(actor: [^)]*\))?$")
AUDIT_PREFIX = "palinode-audit"
# Our reviewed applies and withdrawals carry these; Palinode's own commits carry none.
OUR_TRAILERS = ("Forget-Request", "Retraction-Id")


@dataclass(frozen=True)
class SubjectOp:
    op: str
    path: str
    counterpart: str | None  # the successor, the forget request, or the restored-from


def parse_subject(subject: str, prefix: str) -> SubjectOp | None:
    match = SUBJECT_RE.match(subject)
    if not match or match.group("prefix") != prefix:
        return None
    return SubjectOp(match.group("op"), match.group("path"), match.group("succ") or match.group("src"))


def actor_of(subject: str, trailers: dict[str, str], prefix: str) -> Actor:
    """This tool when the subject is our ledger's or the commit carries our
    trailers; Palinode when it uses the store's commit prefix (a single op run
    from this tool's CLI looks the same); anyone else is a hand edit."""
    if subject.startswith(AUDIT_PREFIX + " ") or any(k in trailers for k in OUR_TRAILERS):
        return "palinode-audit"
    if subject.startswith((prefix + " ", prefix + ":")):
        return "palinode"
    return "other"
