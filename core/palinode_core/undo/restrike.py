"""Strikes one commit made or took back, read from history and struck again
exactly: the redo of a retract and the undo of an unretract (never every
mention of the preference, never another commit's strikes under the id)."""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import replace

from ..errors import PalinodeError, StalePlan
from ..ops import lifecycle
from ..ops.plan import Plan
from ..storage.store import Store
from ..text.document import parse_document
from ..text.markdown import Span, StruckSpan, struck_spans, unstrike
from ..text.units import clause_span, clauses, inner_span, item_sentences, memory_units
from ..text.words import retraction_id


def body_at(store: Store, rev: str, path: str) -> str:
    text = store.git.blob_at(rev, path)
    return "" if text is None else parse_document(text).body


def struck_by(store: Store, path: str, rid: str, struck: str, base: str) -> list[StruckSpan]:
    """The strikes under ``rid`` that ``path`` holds at revision ``struck`` and
    not at ``base`` (in file order): what a retract commit struck (``struck``
    the commit, ``base`` its parent) or an unretract unstruck (the other way)."""
    before = Counter(s.text for s in struck_spans(body_at(store, base, path), rid))
    own = []
    for span in struck_spans(body_at(store, struck, path), rid):
        if before[span.text]:
            before[span.text] -= 1
        else:
            own.append(span)
    return own


def restrike(
    store: Store,
    path: str,
    commit: str,
    counterpart: str | None,
    trailers: dict[str, str],
    pref: str,
    struck: str,
    base: str,
) -> Plan:
    """Strike again, for ``pref``, exactly the sentences ``path`` held struck
    at revision ``struck`` and not at ``base`` (the redo of a retract, the undo
    of an unretract); ``commit`` is the operation's, for messages."""
    short = commit[:7]
    rid = retraction_id(pref)
    after = body_at(store, struck, path)
    own = struck_by(store, path, rid, struck, base)  # not the strikes of another commit under the id
    texts = [s.text for s in own]
    # where each strike opened in the text it was made on (unstrike's exact inverse)
    original, _ = unstrike(after, rid, {s.start for s in own})
    starts, shift = [], 0
    for s in struck_spans(after, rid):
        if s in own:
            starts.append(s.start - shift)
        shift += (s.end - s.start) - len(s.text) if s in own else 0
    body = store.load(path).body
    earlier = Counter(s.text for s in struck_spans(body, rid))
    units = [u.span for u in memory_units(body, {}) if u.span is not None]
    inner = _inner_places(units)
    spans: list[Span] = []
    for index, (text, start) in enumerate(zip(texts, starts, strict=True)):
        # (unit, where the strike opened in it): the whole unit or its leading clauses (0), else one
        # of the places the resolver cuts at (a closing clause, a sentence of a list item), never elsewhere
        fits = [(u, 0) for u in units if u.text.startswith(text)] + inner.get(text, [])
        if body == original:  # unchanged since: the very places it struck
            fits = [(u, at) for u, at in fits if u.start + at == start]
        cut = None
        if len(fits) == 1 and fits[0][1]:
            cut = inner_span(body, fits[0][0], fits[0][1], fits[0][1] + len(text), index)
        if len(fits) != 1 or (fits[0][1] and cut is None):
            raise StalePlan(
                f"{path} changed since {short}: cannot find exactly the sentence it struck "
                f"({text[:60]!r}); re-plan the request instead"
            )
        unit = fits[0][0]
        if cut is not None:
            spans.append(cut)
        elif unit.text == text:
            spans.append(replace(unit, index=index, collateral=None))
        else:
            spans.append(clause_span(unit, len(text), index))
    ordered = sorted(spans, key=lambda sp: sp.start)
    if any(b.start < a.end for a, b in itertools.pairwise(ordered)):
        raise StalePlan(f"{path} changed since {short}: what it struck now overlaps; re-plan the request instead")
    plan = lifecycle.plan_retract(
        store,
        path,
        pref,
        superseded_by=counterpart,
        trailers=trailers,
        spans=tuple(spans),
        regions=(),
        again=True,
    )
    struck_now = (
        Counter(s.text for s in struck_spans(parse_document(plan.new_text).body, rid)) if plan.changes else None
    )
    if struck_now is not None and struck_now - earlier != Counter(texts):
        raise PalinodeError(f"cannot strike exactly what {short} struck in {path}; re-plan the request instead")
    return plan


def _inner_places(units: list[Span]) -> dict[str, list[tuple[Span, int]]]:
    """Text -> (unit, offset) of every place the thorough resolver strikes
    inside a unit: a list item's sentences, and any sentence's closing clauses."""
    places: dict[str, list[tuple[Span, int]]] = {}
    for unit in units:
        bounds = item_sentences(unit.text) if unit.kind == "list_item" else [(0, len(unit.text))]
        for a, b in bounds:
            starts = [a] if a else []
            starts += [a + c.start for c in clauses(unit.text[a:b])[1:]]
            for at in starts:
                places.setdefault(unit.text[at:b], []).append((unit, at))
    return places
