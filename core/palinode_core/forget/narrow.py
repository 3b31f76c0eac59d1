"""Narrowing a unit to what carries the preference: a sentence cut to its
leading or closing clauses when the rest is about something else, a list item
holding other sentences cut to the sentences (and clauses) that carry it, each
in a form every reader restores byte for byte (docs/format.md); where no such
form exists, the whole unit, with what it would also remove, for a person."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ..storage.memory import Memory
from ..text.markdown import Span
from ..text.stem import stems
from ..text.units import (
    Clause,
    Unit,
    clause_span,
    clause_tail_span,
    clauses,
    inner_spans,
    item_sentences,
    may_close_a_list,
)
from .evidence import Evidence
from .judgment import Judge
from .requests import Request
from .whose import NOT_NAMES


@dataclass(frozen=True)
class Cut:
    span: Span
    note: str | None
    clean: bool  # False: it would also remove something unrelated; the reviewer chooses
    evidence: Evidence  # what pre-approves it (the unit's, or a sentence's own inside a list item)


def narrowest(
    judge: Judge,
    unit: Unit,
    ev: Evidence,
    request: Request,
    index: int,
    memory: Memory,
    sentence_sims: Mapping[str, float] | None = None,
) -> list[Cut]:
    """The strikes that take the preference out of ``unit`` and as little else as possible.
    ``sentence_sims``: a list item's sentences' own similarity to the preference, where known."""
    span = unit.span
    assert span is not None
    if span.kind == "list_item" and ev.shared:
        sentences = item_sentences(span.text)
        carrying = [judge.words(span.text[a:b]).lexical > 0 for a, b in sentences]
        if not all(carrying):  # it holds other sentences: striking it whole would take them too
            cuts = _item_sentences(judge, unit, request, index, memory, sentences, carrying, sentence_sims or {})
            if cuts:
                return cuts
            gone = " ".join(span.text[a:b] for (a, b), c in zip(sentences, carrying, strict=True) if not c)
            note = f"line {span.line + memory.body_line_offset}: the list item holds other sentences, struck with it: {gone!r}; the reviewer chooses"
            return [Cut(replace(span, index=index, collateral=gone), note, False, ev)]
    return [_clauses(judge, span, ev, request, index, memory.body, memory.body_line_offset, sims=sentence_sims)]


def _item_sentences(
    judge: Judge,
    unit: Unit,
    request: Request,
    index: int,
    memory: Memory,
    sentences: list[tuple[int, int]],
    carrying: list[bool],
    sentence_sims: Mapping[str, float],
) -> list[Cut]:
    """Each sentence of a list item that carries the preference, struck on its
    own (and cut to its clauses), judged by its own words; none when they
    cannot be struck restorably (a ``~~`` before them in the paragraph, a
    fact comment on the item: text/units.py inner_spans). A sentence is
    judged by its own meaning where its vector is cached, as any sentence is."""
    span = unit.span
    assert span is not None
    body = memory.body
    pieces = inner_spans(body, span, [cut for cut, c in zip(sentences, carrying, strict=True) if c], index)
    if pieces is None:
        return []
    about = judge.memory_about(memory)
    cuts: list[Cut] = []
    for piece in pieces:
        text = piece.text
        sentence = Unit("sentence", text, piece.line, span=piece)
        evidence = judge.judge(sentence, about, sentence_sims.get(text))
        if not evidence.carries:
            continue
        at = index + len(cuts)
        cut = _clauses(
            judge,
            replace(piece, kind="sentence", index=at),
            evidence,
            request,
            at,
            body,
            memory.body_line_offset,
            True,
            sentence_sims,
        )
        if cut.span.kind == "sentence":  # the whole sentence: still a part of its unit
            cut = replace(cut, span=replace(cut.span, kind="clause"))
        notes = [
            f"line {span.line + memory.body_line_offset}: a sentence of a list item struck on its own, the rest of the item kept"
        ]
        if not _opens_a_sentence(text):  # "30, loves coffee.": where this sentence begins is unsure
            notes.append("it does not begin like a sentence: the reviewer chooses")
            cut = replace(cut, clean=False)
        cuts.append(replace(cut, note="; ".join(n for n in (*notes, cut.note) if n)))
    return cuts


def _opens_a_sentence(text: str) -> bool:
    """Begins with a capital, maybe after a dash or an opening quote ("- The
    bins moved.", a list flattened onto one line)."""
    return text.lstrip("-\u2013\u2014*\u2022\"'\u201c\u2018( ")[:1].isupper()


# Words by which a clause points back at what came before it ("and love it", "so do they").
_BACK_REFERENCES = frozenset(
    [
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "then",
        "them",
        "they",
        "so",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "too",
        "he",
        "him",
        "his",
        "she",
        "her",
        "hers",
        "also",
        "both",
    ]
)
_CLAUSE_WORD_RE = re.compile(r"[A-Za-z]+")


def related_clauses(judge: Judge, parts: list[str], sims: Mapping[str, float] | None = None) -> list[bool]:
    """Which clauses of a sentence carry the preference: by its words, by pointing
    back at nothing of their own ("and love it"), by its own meaning where its
    vector is known ("I have type 1 diabetes and wear a glucose sensor"), or,
    after one naming the preference's person or thing, by a pronoun for it ("Met
    Wilhelmina Cragg at the fair; she judges the Moonrise panel": both are about her)."""
    out: list[bool] = []
    for i, part in enumerate(parts):
        named_before = i > 0 and out[i - 1] and bool(judge.pref.entities & judge.names_in(parts[i - 1]))
        # near in meaning, and naming nothing the preference does not ("and work at Harwick" names its own fact)
        near = (
            sims is not None
            and sims.get(part.strip(), 0.0) >= CLAUSE_SIM
            and not (judge.names_in(part) - judge.pref.entities - judge.facts.user_names - NOT_NAMES)
        )
        out.append(
            judge.words(part).lexical > 0 or leans_back(part) or near or (named_before and opens_with_pronoun(part))
        )
    return out


CLAUSE_SIM = 0.4  # a clause this near the preference in meaning is part of it, though it shares no word


_PRONOUN_OPENING_RE = re.compile(r"\s*(?i:and\s+|but\s+)?(?i:she|he|they|her|his|their|hers|him|it|its)\b")


def opens_with_pronoun(clause: str) -> bool:
    return _PRONOUN_OPENING_RE.match(clause) is not None


def leans_back(clause: str) -> bool:
    """A clause that cannot be told apart from the preference by its words:
    one with two content words or more states something of its own; with
    one, only when it points back at nothing ("and I am a carpenter", not
    "and I love it")."""
    own = len(stems(clause))
    if own >= 2:
        return False
    return own == 0 or any(w.lower() in _BACK_REFERENCES for w in _CLAUSE_WORD_RE.findall(clause))


def _unless_a_list(cut: Cut, sentence: str, before: Clause, kept: str) -> Cut:
    """A cut at a ", and" that may close a list ("I love hiking, camping, and fishing")
    could part its items, and one at a bare " and " keeping a single word ("I cook
    and dance") may part one activity: never pre-approved, the reviewer chooses."""
    if before.unsure or (before.bare and len(stems(kept)) < 2):
        return replace(cut, clean=False, note=f"{cut.note}; the ' and ' may join one thing: the reviewer chooses")
    if not may_close_a_list(sentence, before):
        return cut
    return replace(cut, clean=False, note=f"{cut.note}; the ', and' may close a list: the reviewer chooses")


def _clauses(
    judge: Judge,
    span: Span,
    ev: Evidence,
    request: Request,
    index: int,
    body: str,
    offset: int,
    checked: bool = False,
    sims: Mapping[str, float] | None = None,
) -> Cut:
    """The span, cut to its leading or closing clauses when the rest of the
    sentence is about something else. Not clean when an unrelated clause
    cannot be kept (it sits between, or the tail cannot be struck
    restorably): the reviewer chooses. ``offset``: the body's first line in
    the file, so a note names the line as the file numbers it."""
    parts = clauses(span.text)
    whole = replace(span, index=index, collateral=None)
    if len(parts) < 2 or not ev.shared:
        return Cut(whole, None, True, ev)  # one clause, or a paraphrase: no words to tell the clauses apart by
    related = related_clauses(judge, [p.text for p in parts], sims)
    if all(related):
        return Cut(whole, None, True, ev)
    keep = len(related) - related[::-1].index(True)  # clauses up to the last related one
    unrelated = "; ".join(p.text.strip() for p, r in zip(parts, related, strict=True) if not r)
    if all(related[:keep]) and not any(related[keep:]):
        cut = clause_span(span, parts[keep - 1].sep_end, index)
        note = f"line {span.line + offset}: clause strike keeps {parts[keep].text.strip()!r}"
        return _unless_a_list(Cut(cut, note, True, ev), span.text, parts[keep - 1], unrelated)
    opens = related.index(True)  # the related clauses close the sentence: strike its tail
    tail = clause_tail_span(body, span, parts[opens].start, index, checked) if all(related[opens:]) else None
    if tail is not None:
        cut_tail = Cut(tail, f"line {span.line + offset}: clause strike keeps {unrelated!r}", True, ev)
        return _unless_a_list(cut_tail, span.text, parts[opens - 1], unrelated) if opens else cut_tail
    return Cut(
        replace(whole, collateral=unrelated),
        f"line {span.line + offset}: the clause cannot be separated cleanly (it sits between others, spans a line "
        f"break or shares its paragraph with another strike); striking the sentence would also remove "
        f"{unrelated!r}: the reviewer chooses",
        False,
        ev,
    )
