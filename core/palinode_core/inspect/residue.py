"""Residue: every surviving mention of a preference, classified by whether
recall would still surface it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..forget.judgment import Judge, StoreFacts, user_names
from ..forget.leak import memory_leaks
from ..storage.grep import files_containing
from ..storage.memory import Memory
from ..storage.store import Store
from ..text.markdown import Matcher, find_mentions, struck_spans
from ..text.words import normalize_pref, retraction_id

MentionKind = Literal["live", "struck", "archived", "unforgettable", "request"]


@dataclass(frozen=True)
class Mention:
    path: str
    line: int  # file line number
    kind: MentionKind
    reason: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "kind": self.kind, "reason": self.reason, "text": self.text}


def residue(pref: str, memories: Mapping[str, Memory], candidates: set[str] | None = None) -> list[Mention]:
    """Every surviving mention of ``pref``, classified by whether recall would
    still surface it. ``candidates``, when given, holds every file that could
    contain one of the pref's words (storage.grep); other files are not read
    unless struck or read through a link."""
    matcher = Matcher.for_pref(pref)
    rid = retraction_id(pref)
    norm = normalize_pref(pref)
    judge = Judge(pref, StoreFacts(user_names(memories)))
    found: list[Mention] = []
    kind: MentionKind
    for rel, memory in sorted(memories.items()):
        request_pref = memory.forget_pref or memory.palinode_pref
        if (
            candidates is not None
            and rel not in candidates
            and not memory.struck
            and not memory.via_link
            and not request_pref
        ):
            continue  # none of the pref's words is in the file: nothing can match
        offset = memory.body_line_offset
        if request_pref and normalize_pref(request_pref) == norm:
            found.append(
                Mention(
                    rel,
                    offset + 1,
                    "request",
                    "the retraction record itself (kept on purpose)",
                    memory.body.strip().splitlines()[0] if memory.body.strip() else "",
                )
            )
            continue
        found += _frontmatter(rel, memory, pref, rid, judge)
        if not memory.struck and not matcher.could_match(memory.body):
            continue  # nothing to segment: none of the pref's words, no strike marker
        spans, regions = find_mentions(memory.body, matcher)
        for span in spans:
            if memory.archived:
                kind, reason = "archived", "in an archived memory (out of default recall)"
            elif memory.is_replace_doc:
                kind, reason = "unforgettable", "living update_policy: replace document"
            else:
                kind, reason = "live", "unstruck in an active memory: recall would surface it"
            found.append(Mention(rel, span.line + offset, kind, reason, span.text))
        for region in regions:
            kind = "archived" if memory.archived else "unforgettable"
            found.append(Mention(rel, region.line + offset, kind, f"inside a {region.kind}", region.text))
        for struck in struck_spans(memory.body, rid):
            found.append(
                Mention(
                    rel,
                    struck.line + offset,
                    "struck",
                    "struck in place: kept in the file, projected out of search",
                    struck.text,
                )
            )
    return found


@dataclass(frozen=True)
class _Asked:
    """What the leak check reads of a request: its preference and retraction id."""

    pref: str
    rid: str


def _frontmatter(rel: str, memory: Memory, pref: str, rid: str, judge: Judge) -> list[Mention]:
    """Mentions in the frontmatter's label fields (name:, summary:, …), found as the leak check finds
    them, so Residue and `leaks` agree; striking cannot reach them."""
    out = []
    for leak in memory_leaks(rel, memory, _Asked(pref, rid), judge):  # type: ignore[arg-type]
        if leak.kind == "possible":
            continue
        if leak.kind == "struck" or leak.line > memory.body_line_offset:
            continue  # the body is read below, by Palinode's own walker
        field = leak.text.split(":", 1)[0]
        kind: MentionKind = "archived" if leak.kind == "archived" else "unforgettable"
        out.append(Mention(rel, leak.line, kind, f"in the frontmatter ({field}): striking cannot reach it", leak.text))
    return out


def candidates_for(store: Store, pref: str) -> set[str] | None:
    """Files that could mention ``pref`` (any of its words, as a substring), or None."""
    matcher = Matcher.for_pref(pref)
    return files_containing(store, matcher.pref_words | matcher.entities)
