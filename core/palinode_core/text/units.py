"""Every unit of a memory a preference can sit in, segmented exactly as
Palinode's strike walker segments (text.markdown.find_mentions): strikeable
sentences and list items, unstrikeable lines (headings, tables, code, the
auto-footer), and the frontmatter's text fields. Plus clause splitting for
strikes narrower than a sentence."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .markdown import MARKER_RE, Matcher, Span, find_mentions

FRONTMATTER_FIELDS = ("name", "title", "summary", "description", "tags", "entities")
# A clause boundary a strike may end on: "; " or ", and/but/while/whereas/although/so/yet ".
# A separator is r"\s*;\s+" or the comma form; the whitespace before a ";" is added
# by walking back (a leading \s* retried from every position of a long run was quadratic).
_CLAUSE_SEP_RE = re.compile(
    r";\s+|,\s+(?:and|but|while|whereas|although|so|yet|though)\s+|(?P<splice>,\s+)(?=[Ii](?:'m|'ve|'d|'ll)?\s)"
    r"|(?P<bare> and )(?=(?P<next>[^\W\d_]+))"
)
_OBJECT_PRONOUNS = frozenset(["me", "him", "us", "them", "myself", "himself", "herself", "themselves"])
_DETERMINER_AFTER_RE = re.compile(
    r"\s+(?i:a|an|the|my|his|her|their|our|your|its|some|every|each|this|that|these|those|two|three|several)\s"
)
# A bare " and " joins two clauses only before a subject or a verb of its own ("I live in Berlin
# and work at Stripe", "... and I cook"); "cats and dogs" or "music and dance" are one clause.
_CLAUSE_VERBS = frozenset(
    (base + ending)
    for base in """work live play keep run own teach ride drive cook bake read write grow collect volunteer train
    walk sing paint draw learn spend visit attend support follow prefer enjoy avoid need want care help speak watch
    listen travel commute rent share sell buy eat drink go take make use have love like hate moved started stopped
    joined quit left lend borrow owe pay send call email text meet clean wash fix mend book order pick drop feed
    return renew check sort print sign post cancel deliver repair bring file back save spend visit host hire
    manage lead run organise organize coach mentor answer reply plan fly sleep wake shop bike cycle row sail
    hike climb knit sew brew grow plant water mow weed tidy cover keep""".split()
    for ending in ("", "s", "es", "ed", "d")
) | frozenset(
    """studies studied swims swam swim goes went takes took makes made has had does did ran runs is was are were
    i we they he she""".split()
)
# A comma splice ("I'm a teacher, I like to cook, I am married") separates clauses only
# between first-person clauses: "Yesterday, I went" is one.
_FIRST_PERSON_START_RE = re.compile(r"[Ii](?:'m|'ve|'d|'ll)?\s")
# A ", and" may close a serial list ("hiking, camping, and fishing") rather than join two
# clauses: when the item before it is short and opens no clause, a cut there is the
# reviewer's to make (narrow.py); it is never read as either silently.
_SUBJECT_START_RE = re.compile(r"(?:[Ii]|[Ww]e|[Yy]ou|[Hh]e|[Ss]he|[Tt]hey|[Ii]t|[Tt]here)(?:'\w+)?\s")
_LIST_ITEM_WORDS = 3


class _Everything(Matcher):
    """Matches every unstruck span: find_mentions then lists the whole body."""

    relates_everything = True

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


def unit_source(body: str, meta: Mapping[str, Any]) -> str:
    """All the text memory_units reads (the body, then the label fields), to
    search before segmenting: a word absent here is in no unit."""
    fields = (_field_text(meta.get(key)) for key in FRONTMATTER_FIELDS)
    return "\n".join([body, *(t for t in fields if t)])


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
    bare: bool = False  # the separator after it is a bare " and "
    unsure: bool = False  # ... before a word that may not open a clause ("cats and dogs"): a person decides


def clauses(sentence: str, unsure: bool = True) -> list[Clause]:
    """The sentence cut at clause boundaries; one clause when there are none. A bare
    " and " before a subject or a verb of its own separates surely ("I live in Berlin
    and work at Stripe", "... and Çağla practises"); before any other word it may
    ("I go to the sauna and lend the ladder", or "cats and dogs"): cut too, marked
    ``unsure``, unless ``unsure`` is False."""
    out: list[Clause] = []
    cursor = 0
    done = 0  # where the previous separator ended: a separator never starts before it
    for m in _CLAUSE_SEP_RE.finditer(sentence):
        start = m.start()
        if m.group("splice") and not _FIRST_PERSON_START_RE.match(sentence, cursor):
            continue
        doubt = False
        if m.group("bare"):
            nxt = m.group("next")
            if nxt.lower() in _OBJECT_PRONOUNS:
                continue  # "Ingrid and me goes to court": one subject, no second clause
            # a verb of its own: a known one, or any word a determiner follows ("and wear a glucose sensor")
            verb = nxt.lower() in _CLAUSE_VERBS or _DETERMINER_AFTER_RE.match(sentence, m.end() + len(nxt)) is not None
            doubt = not verb and not nxt[:1].isupper()
            if doubt and not unsure:
                continue
        if sentence[start] == ";":
            while start > done and sentence[start - 1].isspace():
                start -= 1
        done = m.end()
        if start > cursor:
            out.append(Clause(cursor, start, m.end(), sentence[cursor:start], bool(m.group("bare")), doubt))
            cursor = m.end()
    out.append(Clause(cursor, len(sentence), len(sentence), sentence[cursor:]))
    return out


def may_close_a_list(sentence: str, clause: Clause) -> bool:
    """The separator after ``clause`` is a ", and" that may close a serial list: a
    comma inside the clause, a short item after it that opens no clause, and no
    subject after the "and"."""
    separator = sentence[clause.end : clause.sep_end]
    if not separator.startswith(",") or separator.split()[-1:] != ["and"]:
        return False
    if _SUBJECT_START_RE.match(sentence, clause.sep_end):
        return False  # "..., and I clean the flat": no list goes on with a subject of its own
    comma = clause.text.rfind(",")
    item = clause.text[comma + 1 :]
    return comma >= 0 and len(item.split()) <= _LIST_ITEM_WORDS and not _SUBJECT_START_RE.match(item.lstrip() + " ")


# A list item's sentence ends at a terminator (and any closing quotes or brackets)
# before a blank, but not after a title, a common abbreviation or an initial.
_ITEM_END_RE = re.compile(r"[.!?]+[\"')\]\u201d\u2019]*(?=\s|$)")
_NOT_AN_END_RE = re.compile(
    r"(?:\b(?:Mr|Mrs|Ms|Mx|Dr|Prof|Sr|Jr|St|Mt|vs|etc|approx|ca|cf|No|Nos|Fig|Vol|Inc|Ltd|Co)"
    r"|\b[A-Za-z]|\be\.g|\bi\.e)\.$"
)


def item_sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence of a list item's text."""
    out: list[tuple[int, int]] = []
    start = _next_word(text, 0)
    for m in _ITEM_END_RE.finditer(text):
        if m.end() <= start or _NOT_AN_END_RE.search(text, max(start, m.start() - 8), m.start() + 1):
            continue
        out.append((start, m.end()))
        start = _next_word(text, m.end())
    if start < len(text):
        out.append((start, len(text.rstrip())))
    return [(a, b) for a, b in out if b > a]


def item_sentence_texts(text: str) -> list[str]:
    """The sentences of a list item holding several; none for an item of one."""
    pieces = item_sentences(text)
    return [text[a:b] for a, b in pieces] if len(pieces) > 1 else []


# what a list item of several sentences or a sentence of several clauses must hold
_MAY_SEPARATE_RE = re.compile(r"[.!?;]\s|, | and ")


def vector_pieces(kind: str, text: str) -> list[str]:
    """The parts of a unit judged by their own meaning besides the unit itself: the
    sentences of a list item holding several, and the clauses of a sentence (or of
    such an item sentence) holding several ("I have type 1 diabetes and wear a
    glucose sensor": is the second clause the preference's too?)."""
    if kind not in ("sentence", "list_item") or not _MAY_SEPARATE_RE.search(text):
        return []
    sentences = item_sentence_texts(text) if kind == "list_item" else []
    out = list(sentences)
    for sentence in sentences or [text]:
        parts = clauses(sentence)
        if len(parts) > 1:
            out += [c.text.strip() for c in parts if c.text.strip()]
    return list(dict.fromkeys(p for p in out if p != text))


def _next_word(text: str, at: int) -> int:
    while at < len(text) and text[at].isspace():
        at += 1
    return at


def _tilde_in_paragraph(body: str, at: int, end: int) -> bool:
    """Is there a ``~~`` between the start of the paragraph holding ``at`` and ``end``?"""
    tildes, blanks = _marks(body)
    i = bisect.bisect_left(blanks, at)
    start = blanks[i - 1] + 1 if i else 0
    j = bisect.bisect_left(tildes, start)
    return j < len(tildes) and tildes[j] < end


@functools.lru_cache(maxsize=8)
def _marks(body: str) -> tuple[list[int], list[int]]:
    """Where each ``~~`` and each blank line (``\\n\\n``) of a body is, found once per
    body: asked per unit, a search back to the paragraph's start was quadratic."""
    return [m.start() for m in re.finditer("~~", body)], [m.start() for m in re.finditer("\n\n", body)]


def clause_tail_span(body: str, span: Span, offset: int, index: int, checked: bool = False) -> Span | None:
    """A strike of a sentence's closing clauses, from ``offset`` (where a
    clause opens) to the sentence end: "X, and ~~I ...~~ [RETRACTED d r:id]."
    (see inner_spans: None when no reader would restore it)."""
    found = inner_spans(body, span, [(offset, len(span.text))], index, checked)
    return found[0] if found else None


def inner_span(body: str, span: Span, start: int, end: int, index: int) -> Span | None:
    """One strike of ``span.text[start:end]`` (see inner_spans)."""
    found = inner_spans(body, span, [(start, end)], index)
    return found[0] if found else None


def inner_spans(
    body: str, span: Span, cuts: list[tuple[int, int]], index: int, checked: bool = False
) -> list[Span] | None:
    """Strikes of parts of one sentence or list item (``span.text[start:end]``
    for each cut, in order): closing clauses, or sentences inside a list
    item. Palinode 0.23's unretract (the leftmost ``~~`` of the line,
    non-greedy to the marker) and our reader (the nearest ``~~`` on the
    marker's line) restore them byte for byte only when each sits on one
    line and nothing before it in its paragraph holds a ``~~`` (``checked``:
    the caller has made sure): otherwise None (offer the whole). The strike
    opens inside a list item, not after its bullet, so every reader takes the
    same ``~~``; never so in an item with a fact comment, which Palinode's own
    fact supersede wraps whole, pairing its tildes with ours."""
    if span.kind not in ("sentence", "list_item") or not cuts:
        return None
    if span.kind == "list_item" and span.fact_comment and any(start > 0 for start, _end in cuts):
        return None
    if not checked and _tilde_in_paragraph(body, span.start + cuts[0][0], span.end):
        return None
    out: list[Span] = []
    line, counted, last_end = span.line, 0, 0
    for start, end in cuts:
        text = span.text[start:end]
        at = span.start + start
        if not text or "\n" in text or not body.startswith(text, at) or start < last_end:
            return None  # across a line, moved, or overlapping the cut before
        line += span.text.count("\n", counted, start)
        counted, last_end = start, end
        out.append(Span(index + len(out), "clause", at, at + len(text), at + len(text), text, "", line, False, None))
    return out


def clause_span(span: Span, through: int, index: int) -> Span:
    """A strike of ``span``'s opening text up to ``through`` (a sentence offset
    just past a clause separator). The opening ``~~`` stays where Palinode's
    reader looks for it (the sentence or list item start) and the clause text is
    kept byte for byte, so ``unstrike`` restores the sentence exactly."""
    text = span.text[:through].rstrip()
    end = span.start + len(text)
    return Span(index, "clause", span.start, end, end, text, "", span.line, "\n" in text, None)
