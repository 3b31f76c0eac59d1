"""Segmenting a memory body the way Palinode's strike walker does (spec §4.7):
which spans carry a pref, which regions cannot be struck, how to strike a
chosen subset of spans, how to undo a strike exactly, and the projection that
keeps struck text out of the search index (§7.2)."""

from __future__ import annotations

import bisect
import re
from collections.abc import Container
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from ..errors import PalinodeError
from .words import content_words, entity_tokens, span_words

MARKER_RE = re.compile(r"\[RETRACTED (\d{4}-\d{2}-\d{2}) r:([0-9a-f]{8})\]\.")
_CLOSER_RE = re.compile(r"~~ \[RETRACTED (\d{4}-\d{2}-\d{2}) r:([0-9a-f]{8})\]\.")
_SENTENCE_SPLIT_RE = re.compile(r"(?<=[.!?])(\s+)")
_LIST_ITEM_RE = re.compile(r"^(\s*[-*]\s+)(.*?)(\s*<!-- fact:[^>]+ -->)?\s*$")
_BULLET_OPENER_RE = re.compile(r"([^\S\n]*[-*][^\S\n]+)~~")  # matched at a line start (pos), so no ^
_FENCE_RE = re.compile(r"^(?:`{3,}|~{3,})")
_TOMBSTONE_LINE_RE = re.compile(r"^~~.*~~\s*\[(?:superseded|RETRACTED)\s+\d{4}-\d{2}-\d{2}\b")
_CLAUSE_SPLIT_RE = re.compile(r"\s*;\s*|,?\s+(?:and|but|while|whereas|although)\s+|,\s+(?=[a-z]+\s)")
AUTO_FOOTER = "<!-- palinode-auto-footer -->"


@dataclass(frozen=True)
class Span:
    """One strikeable sentence or list item that carries the pref.

    ``start:end`` is the exact text the strike wraps; for a list item
    ``replace_end`` also covers the trailing spaces Palinode drops."""

    index: int
    kind: str  # "sentence" | "list_item"
    start: int
    end: int
    replace_end: int
    text: str
    fact_comment: str
    line: int  # 1-based, within the body
    multiline: bool
    collateral: str | None  # an unrelated clause the strike would also remove


@dataclass(frozen=True)
class Region:
    """A mention that striking cannot reach, reported instead of mangled."""

    kind: str  # heading | fence | table | footer | replace_doc | struck_list_item (the rest of a list item struck in part)
    line: int
    text: str


@dataclass(frozen=True)
class Matcher:
    """The pref's matching terms: entity tokens, content words, min shared."""

    pref_words: frozenset[str]
    entities: frozenset[str]
    min_shared: int
    relates_everything: ClassVar[bool] = False

    @classmethod
    def for_pref(cls, pref: str) -> Matcher:
        words = content_words(pref)
        return cls(frozenset(words), frozenset(entity_tokens(pref)), min(2, len(words)) or 1)

    def matches(self, span: str) -> bool:
        if MARKER_RE.search(span):
            return False  # never wrap a span twice
        words = span_words(span)
        if self.entities & words:
            return True
        return len(words & self.pref_words) >= self.min_shared

    @cached_property
    def _probe(self) -> re.Pattern[str]:
        terms = sorted(self.entities | self.pref_words)
        return (
            re.compile(r"(?<![A-Za-z])(?:" + "|".join(map(re.escape, terms)) + r")(?![A-Za-z])", re.IGNORECASE)
            if terms
            else re.compile(r"(?!)")
        )

    def could_match(self, text: str) -> bool:
        """False only when no span of ``text`` can match: none of the pref's
        words occurs. One regex pass, so a residue sweep of 100,000 memories
        segments only the few that mention the pref."""
        return bool(self._probe.search(text))

    def related(self, text: str) -> bool:
        words = span_words(text)
        return bool(self.entities & words or words & self.pref_words)


def _collateral(sentence: str, matcher: Matcher) -> str | None:
    if matcher.relates_everything:
        return None  # every clause is related: nothing to split (memory_units segments 46k sentences at 1k)
    # whitespace runs collapsed first: the clause pattern would otherwise rescan a
    # long run of spaces from each of its positions (quadratic on hostile text)
    sentence = " ".join(sentence.split())
    clauses = [c.strip(" .!?") for c in _CLAUSE_SPLIT_RE.split(sentence) if c and c.strip(" .!?")]
    if len(clauses) < 2:
        return None
    unrelated = [c for c in clauses if len(content_words(c)) >= 2 and not matcher.related(c)]
    return "; ".join(unrelated) if unrelated else None


def _line_kind(stripped: str, in_fence: bool) -> str | None:
    if in_fence:
        return "fence"
    if stripped.startswith("#"):
        return "heading"
    if stripped.startswith("|"):
        return "table"
    return None


def find_mentions(body: str, matcher: Matcher) -> tuple[list[Span], list[Region]]:
    """Every span the walker would strike, and every mention it cannot strike."""
    spans: list[Span] = []
    regions: list[Region] = []
    paragraph: list[tuple[int, str]] = []  # (offset, line)
    paragraph_line = 0
    in_fence = False
    in_footer = False

    def flush() -> None:
        if not paragraph:
            return
        start = paragraph[0][0]
        text = "".join(line for _, line in paragraph)
        offset = start
        breaks = 0  # newlines before this part: counted as it goes (a count from the start per sentence was quadratic)
        for i, part in enumerate(_SENTENCE_SPLIT_RE.split(text)):
            if i % 2 == 0 and part.strip():
                sentence = part.strip()
                if matcher.matches(sentence):
                    lead = len(part) - len(part.lstrip())
                    s = offset + lead
                    e = s + len(sentence)
                    line_no = paragraph_line + breaks + part.count("\n", 0, lead)
                    spans.append(
                        Span(
                            len(spans),
                            "sentence",
                            s,
                            e,
                            e,
                            sentence,
                            "",
                            line_no,
                            "\n" in sentence,
                            _collateral(sentence, matcher),
                        )
                    )
            offset += len(part)
            breaks += part.count("\n")
        paragraph.clear()

    offset = 0
    for line_no, line in enumerate(body.splitlines(keepends=True), start=1):
        stripped = line.strip()
        content = line.rstrip("\r\n")
        if not in_footer and stripped.startswith(AUTO_FOOTER):
            in_footer = True
        if (
            in_footer
            or _FENCE_RE.match(stripped)
            or in_fence
            or not stripped
            or stripped.startswith("#")
            or stripped.startswith("|")
        ):
            flush()
            if in_footer:
                kind: str | None = "footer"
            elif _FENCE_RE.match(stripped):
                in_fence = not in_fence
                kind = "fence"
            else:
                kind = _line_kind(stripped, in_fence)
            if kind and stripped and matcher.matches(stripped):
                regions.append(Region(kind, line_no, content))
            offset += len(line)
            continue
        item = _LIST_ITEM_RE.match(content)
        if item:
            flush()
            text = item.group(2)
            if text and MARKER_RE.search(text):  # struck in part: what is left is still read, never struck again
                rest = _unstruck_rest(text)
                if rest and matcher.matches(rest):
                    regions.append(Region("struck_list_item", line_no, rest))
            elif text and matcher.matches(text):
                s = offset + item.start(2)
                fact = item.group(3) or ""
                spans.append(
                    Span(
                        len(spans),
                        "list_item",
                        s,
                        s + len(text),
                        offset + len(content),
                        text,
                        fact,
                        line_no,
                        False,
                        _collateral(text, matcher),
                    )
                )
            offset += len(line)
            continue
        if not paragraph:
            paragraph_line = line_no
        paragraph.append((offset, line))
        offset += len(line)
    flush()
    return spans, regions


def _unstruck_rest(text: str) -> str:
    """A list item's text without its struck sentences (each from its ``~~`` to its marker)."""
    kept, cursor = [], 0
    for struck in struck_spans(text):
        kept.append(text[cursor : struck.start])
        cursor = struck.end
    kept.append(text[cursor:])
    return " ".join(" ".join(kept).split())


def marker_for(date: str, rid: str) -> str:
    return f"[RETRACTED {date} r:{rid}]."


def strike(body: str, spans: list[Span], marker: str) -> str:
    """Wrap each given span as ``~~text~~ <marker>`` (list items keep their fact comment)."""
    out: list[str] = []
    cursor = 0
    for span in sorted(spans, key=lambda s: s.start):
        if span.start < cursor:  # one strike inside another would copy text: never written
            raise PalinodeError("two strikes overlap; nothing was changed (re-plan the request)")
        out.append(body[cursor : span.start])
        out.append(f"~~{span.text}~~ {marker}{span.fact_comment}")
        cursor = span.replace_end
    out.append(body[cursor:])
    return "".join(out)


def _prev_line_breaks_paragraph(body: str, line_start: int, floor: int = 0) -> bool:
    """True when the line before ``line_start`` ends a walker paragraph.

    A previous line inside the open strike (at or after ``floor``) that reads
    as a ``~~~`` fence only because the strike's own ``~~`` was put in front
    of the user's ``~~text~~`` was no fence to the walker."""
    if line_start == 0:
        return True
    prev_start = body.rfind("\n", 0, line_start - 1) + 1
    prev = body[prev_start : line_start - 1].rstrip("\r")
    stripped = prev.strip()
    fence = bool(_FENCE_RE.match(stripped))
    # only `~~~~…`, the strike's `~~` before the user's own `~~text`, can be a
    # non-fence; `~~~yaml` or `~~~` is a fence the walker toggled on
    if fence and prev_start >= floor and stripped.startswith("~~~~"):
        unstruck = stripped[2:]
        fence = bool(_FENCE_RE.match(unstruck)) or not unstruck.strip("~")
    return not stripped or stripped.startswith(("#", "|")) or fence or bool(_LIST_ITEM_RE.match(prev))


def _is_sentence_start(body: str, pos: int, floor: int = 0) -> bool:
    """Could the walker have opened a strike at ``pos``? Only at the start of a
    sentence: after a terminator and whitespace, or at the start of a paragraph."""
    j = pos - 1
    while j >= 0 and body[j].isspace():
        j -= 1
    if j < pos - 1 and j >= 0 and body[j] in ".!?":
        return True  # after a terminator and whitespace, however long the run
    line_start = body.rfind("\n", 0, pos) + 1
    return body[line_start:pos].strip() == "" and _prev_line_breaks_paragraph(body, line_start, floor)


@dataclass(frozen=True)
class StruckSpan:
    start: int  # offset of the opening ``~~``
    end: int  # offset just past the marker's period
    text: str  # the original text inside the strike
    date: str
    rid: str
    line: int


def struck_spans(body: str, rid: str | None = None) -> list[StruckSpan]:
    """Every ``~~text~~ [RETRACTED date r:id].`` the walker emitted, found by
    anchoring on the marker and walking back to the ``~~`` that opens the
    struck sentence, never to a user's own ``~~strikethrough~~`` (spec §5.3)."""
    found: list[StruckSpan] = []
    floor = 0
    # newline offsets once: every line start and line number is a bisect, so a
    # body of thousands of markers on one line stays linear
    newlines = [m.start() for m in _NEWLINE_RE.finditer(body)]
    bullets: dict[int, int] = {}  # line start -> where a list item's strike opens there (-1: not one)
    for closer in _CLOSER_RE.finditer(body):
        c = closer.start()
        before = bisect.bisect_left(newlines, c)
        line_start = newlines[before - 1] + 1 if before else 0
        if line_start not in bullets:
            bullet = _BULLET_OPENER_RE.match(body, line_start)
            bullets[line_start] = line_start + len(bullet.group(1)) if bullet else -1
        bullet_opener = bullets[line_start] if bullets[line_start] <= c else -1
        opener = _find_opener(body, floor, c, line_start, bullet_opener)
        floor = closer.end()
        if opener < 0 or (rid is not None and closer.group(2) != rid):
            continue
        found.append(
            StruckSpan(
                opener,
                closer.end(),
                body[opener + 2 : c],
                closer.group(1),
                closer.group(2),
                bisect.bisect_left(newlines, opener) + 1,
            )
        )
    return found


def _find_opener(body: str, floor: int, closer: int, line_start: int, bullet_opener: int) -> int:
    if bullet_opener >= floor:
        return bullet_opener  # list items are struck whole
    # the walker never strikes across a blank line: look no further back than
    # the paragraph's start, and when no `~~` there opens a sentence (a strike
    # made by hand), take the nearest `~~` on the closer's own line
    # A user's own ``~~old~~`` inside the struck sentence can sit at a line
    # start too: prefer the nearest opener whose struck text keeps the user's
    # ``~~`` pairs whole (an even count), else the nearest at all.
    para = max(floor, _paragraph_start(body, floor, closer))
    first = -1
    inside = 0  # `~~` starts in body[p + 2 : closer], kept as p walks back (linear)
    for p in range(closer - 2, para - 1, -1):
        if p + 2 <= closer - 2 and body.startswith("~~", p + 2):
            inside += 1
        if body.startswith("~~~~", p) and _is_sentence_start(body, p, floor):
            # the walker's opener right before a sentence that itself begins with the user's own
            # (perhaps unpaired) ``~~``: the outer pair is ours, whatever the parity inside
            return p
        if p >= 2 and body.startswith("~~~~", p - 2) and _is_sentence_start(body, p - 2, floor):
            continue  # the inner half of that ``~~~~``: the user's, never our opener
        if first >= 0 and body[p] in ".!?" and body[p + 1 : p + 2] in (" ", "\n", "\t"):
            break  # an earlier sentence: the walker strikes one, so the nearest opener stands
        if body.startswith("~~", p) and _is_sentence_start(body, p, floor):
            if inside % 2 == 0:
                return p
            if first < 0:
                first = p
    if first >= 0:
        return first
    nearest = body.rfind("~~", max(para, line_start), closer - 1)
    return nearest if nearest >= 0 and nearest + 2 <= closer else -1


_NEWLINE_RE = re.compile("\n")
_BLANK_LINE_RE = re.compile(r"\n[ \t\r]*\n")


def _paragraph_start(body: str, floor: int, closer: int) -> int:
    start = floor
    for match in _BLANK_LINE_RE.finditer(body, floor, closer):
        start = match.end()
    return start


def unstrike(body: str, rid: str, only: Container[int] | None = None) -> tuple[str, int]:
    """Undo every strike carrying ``rid`` (or those opening at ``only``):
    byte-exact inverse of ``strike`` (except the trailing spaces Palinode
    drops from struck list items)."""
    spans = [s for s in struck_spans(body, rid) if only is None or s.start in only]
    out: list[str] = []
    cursor = 0
    for span in spans:
        out.append(body[cursor : span.start])
        out.append(span.text)
        cursor = span.end
    out.append(body[cursor:])
    return "".join(out), len(spans)


def project(body: str) -> str:
    """The text Palinode indexes: struck spans (any rid, across line breaks),
    executor tombstone lines and the auto-footer removed."""
    spans = struck_spans(body)
    pieces: list[str] = []
    cursor = 0
    for span in spans:
        head = body[cursor : span.start]
        pieces.append(head.rstrip(" \t") if head.endswith((" ", "\t")) else head)
        cursor = span.end
    pieces.append(body[cursor:])
    text = "".join(pieces)
    kept: list[str] = []
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith(AUTO_FOOTER):
            if kept and kept[-1].strip().lower() == "## see also":
                kept.pop()
            break
        bare = re.sub(r"^\s*[-*]\s+", "", stripped)
        if _TOMBSTONE_LINE_RE.match(bare):
            continue
        kept.append(line)
    return "".join(kept)
