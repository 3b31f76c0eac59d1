"""Every unit of a memory a preference can sit in, segmented exactly as
Palinode's strike walker segments (text.markdown.find_mentions): strikeable
sentences and list items, unstrikeable lines (headings, tables, code, the
auto-footer), and the frontmatter's text fields. Plus clause splitting for
strikes narrower than a sentence."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .markdown import MARKER_RE, Matcher, Span, find_mentions

FRONTMATTER_FIELDS = ("name", "title", "summary", "description", "tags", "entities")
# A clause boundary a strike may end on: "; " or ", and/but/while/whereas/although/so/yet ".
# A separator is r"\s*;\s+" or the comma form; the whitespace before a ";" is added
# by walking back (a leading \s* retried from every position of a long run was quadratic).
_CLAUSE_SEP_RE = re.compile(r";\s+|,\s+(?:and|but|while|whereas|although|so|yet|though)\s+")


class _Everything(Matcher):
    """Matches every unstruck span: find_mentions then lists the whole body."""

    def matches(self, span: str) -> bool:
        return not MARKER_RE.search(span) and any(c.isalpha() for c in span)

    def related(self, text: str) -> bool:
        return True


_ALL = _Everything(frozenset(), frozenset(), 1)


@dataclass(frozen=True)
class Unit:
    kind: str  # sentence | list_item | heading | table | fence | footer | frontmatter
    text: str
    line: int  # 1-based within the body (0 for frontmatter)
    span: Span | None = None  # the strikeable span, for sentences and list items
    field: str | None = None  # the frontmatter key

    @property
    def strikeable(self) -> bool:
        return self.span is not None


def _field_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, (list, tuple)):
        parts = [str(v).strip() for v in value if isinstance(v, (str, int, float)) and str(v).strip()]
        return ", ".join(parts) or None
    return None


def memory_units(body: str, meta: Mapping[str, Any]) -> list[Unit]:
    """The body's spans and unstrikeable lines in body order, then frontmatter fields."""
    spans, regions = find_mentions(body, _ALL)
    units = [Unit(s.kind, s.text, s.line, span=s) for s in spans]
    units += [Unit(r.kind, r.text, r.line) for r in regions]
    units.sort(key=lambda u: (u.line, u.span.start if u.span else -1))
    for key in FRONTMATTER_FIELDS:
        text = _field_text(meta.get(key))
        if text:
            units.append(Unit("frontmatter", text, 0, field=key))
    return units


@dataclass(frozen=True)
class Clause:
    start: int  # offsets within the sentence
    end: int  # end of the clause's own text
    sep_end: int  # end of the separator after it (== end for the last clause)
    text: str


def clauses(sentence: str) -> list[Clause]:
    """The sentence cut at clause boundaries; one clause when there are none."""
    out: list[Clause] = []
    cursor = 0
    done = 0  # where the previous separator ended: a separator never starts before it
    for m in _CLAUSE_SEP_RE.finditer(sentence):
        start = m.start()
        if sentence[start] == ";":
            while start > done and sentence[start - 1].isspace():
                start -= 1
        done = m.end()
        if start > cursor:
            out.append(Clause(cursor, start, m.end(), sentence[cursor:start]))
            cursor = m.end()
    out.append(Clause(cursor, len(sentence), len(sentence), sentence[cursor:]))
    return out


_ITEM_SENTENCE_RE = re.compile(r"\S.*?(?:[.!?](?=\s|$)|$)", re.S)  # its end kept


def item_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a list item's text (a terminator then a blank ends one)."""
    return [(m.start(), m.end()) for m in _ITEM_SENTENCE_RE.finditer(text)]


def clause_tail_span(body: str, span: Span, offset: int, index: int) -> Span | None:
    """A strike of a sentence's closing clauses, from ``offset`` (where a
    clause opens) to the sentence end: "X, and ~~I ...~~ [RETRACTED d r:id]."
    (see inner_span: None when no reader would restore it)."""
    return inner_span(body, span, offset, len(span.text), index)


def inner_span(body: str, span: Span, start: int, end: int, index: int) -> Span | None:
    """A strike of ``span.text[start:end]`` alone: a closing clause, or a
    sentence inside a list item. Palinode 0.23's unretract (the leftmost
    ``~~`` of the line, non-greedy to the marker) and our reader (the nearest
    ``~~`` on the marker's line) restore it byte for byte only when it sits
    on one line and nothing before it in its paragraph holds a ``~~``:
    otherwise None (offer the whole). The strike opens inside a list item,
    not after its bullet, so every reader takes the same ``~~`` (a fact
    comment after the item stays after the marker)."""
    text = span.text[start:end]
    at = span.start + start
    if span.kind not in ("sentence", "list_item") or not text or "\n" in text or body[at : at + len(text)] != text:
        return None
    if "~~" in body[body.rfind("\n\n", 0, at) + 1 : span.end]:
        return None
    line = span.line + span.text[:start].count("\n")
    return Span(index, "clause", at, at + len(text), at + len(text), text, "", line, False, None)


def clause_span(span: Span, through: int, index: int) -> Span:
    """A strike of ``span``'s opening text up to ``through`` (a sentence offset
    just past a clause separator). The opening ``~~`` stays where Palinode's
    reader looks for it (the sentence or list item start) and the clause text is
    kept byte for byte, so ``unstrike`` restores the sentence exactly."""
    text = span.text[:through].rstrip()
    end = span.start + len(text)
    return Span(index, "clause", span.start, end, end, text, "", span.line, "\n" in text, None)
