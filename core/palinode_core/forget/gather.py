"""Which memories the thorough resolver reads, and the evidence of each of
their units. Store-wide up to ``STOREWIDE`` active memories; above that the
index narrows the reading to memories that hold one of the preference's stems
(any inflection, by term prefix) or whose chunk vectors are nearest to it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..search.index import SearchIndex
from ..storage.memory import Memory
from ..text.units import Unit, clauses, memory_units
from .evidence import P_FLOOR, Evidence, fuse, lexical_evidence
from .sentvec import vector_source
from .subject import memory_is_other, subject_of

STOREWIDE = 3000  # read every active memory of a store up to this many memories
PREFIX_LIMIT = 400  # chunks from the stem-prefix query
VECTOR_LIMIT = 20  # files from the vector arm


@dataclass(frozen=True)
class Read:
    """One memory's units and their evidence."""

    memory: Memory
    units: tuple[Unit, ...]
    evidence: tuple[Evidence, ...]
    found_via: str  # scan | bm25 | vector | bm25+vector


def eligible(memory: Memory) -> bool:
    return not memory.archived and not memory.is_history and memory.retired_reason is None


def _prefixes(stems: frozenset[str]) -> list[str]:
    # "study" is not a prefix of "studies": search its shorter root
    return sorted({s[:-1] if s.endswith("y") and len(s) > 4 else s for s in stems})


def candidate_paths(
    index: SearchIndex, pref: str, stems: frozenset[str], memories: Mapping[str, Memory], lexical: bool
) -> dict[str, str]:
    if len(memories) <= STOREWIDE:  # eligibility is checked per memory only on this path and for what is found
        return {rel: "scan" for rel, m in memories.items() if eligible(m)}
    found: dict[str, set[str]] = {}
    ix = getattr(index, "_ix", None)
    if ix is not None and stems:
        from whoosh.query import Or, Prefix, Term

        excluded = sorted({s.lower() for s in index.store.config.exclude_status})
        with index._lock, ix.searcher() as searcher:
            mask = Or([Term("status", s) for s in excluded]) if excluded else None
            for hit in searcher.search(
                Or([Prefix("content", p) for p in _prefixes(stems)]), limit=PREFIX_LIMIT, mask=mask
            ):
                found.setdefault(hit["path"], set()).add("bm25")
    if not lexical:
        for rel in _nearest_files(index, pref, VECTOR_LIMIT):
            found.setdefault(rel, set()).add("vector")
    return {rel: "+".join(sorted(arms)) for rel, arms in found.items() if rel in memories and eligible(memories[rel])}


def _nearest_files(index: SearchIndex, pref: str, limit: int) -> list[str]:
    """Files of the chunks nearest the preference (its vector from the cache:
    no second query embedding), active ones only, best first."""
    table = getattr(index, "_vector_table", None)
    if table is None:
        return [h.path for h in index.search(pref, limit=limit, per_file=1).hits if h.vector_rank is not None]
    try:
        matrix, rows = table()
        if not len(rows):
            return []
        qvec = vector_source(index).vectors_for([pref])[0][0]
        if not qvec.any():
            vector_source(index).embed_missing([pref])
            qvec = vector_source(index).vectors_for([pref])[0][0]
    except Exception:
        return []
    excluded = {s.lower() for s in index.store.config.exclude_status}
    out: list[str] = []
    for i in np.argsort(-(matrix @ qvec), kind="stable"):
        path, status = rows[i][1], rows[i][3]
        if status in excluded or path in out:
            continue
        out.append(path)
        if len(out) >= limit:
            break
    return out


_UNITS: dict[tuple[str, str], list[Unit]] = {}  # (path, fingerprint) -> units: warm plans do not re-segment
_UNITS_MAX = 20000


def _units_of(memory: Memory) -> list[Unit]:
    key = (memory.rel, memory.fingerprint)
    units = _UNITS.get(key)
    if units is None:
        units = memory_units(memory.body, memory.meta)
        if len(_UNITS) >= _UNITS_MAX:
            _UNITS.clear()
        _UNITS[key] = units
    return units


ANCHORS = 24  # neighbour sentences a paraphrase is compared with


def read_memories(
    index: SearchIndex,
    pref: str,
    stems: frozenset[str],
    paths: Mapping[str, str],
    memories: Mapping[str, Memory],
    skip: set[str],
    lexical: bool,
    others: tuple[str, ...] = (),
) -> tuple[list[Read], str | None]:
    """Every candidate's units with lexical and (when available) semantic
    evidence. ``others`` are the store's other requests' preferences: a
    paraphrase must be nearer this preference than any of them."""
    staged: list[tuple[Memory, list[Unit], str, bool]] = []
    texts: list[str] = []
    for rel in sorted(paths):
        if rel in skip:
            continue
        memory = memories[rel]
        try:
            units = _units_of(memory)
        except Exception:  # an unreadable memory is never a target; it is not read either
            continue
        if not units:
            continue
        other = memory_is_other(memory.meta, memory.title, memory.category)
        staged.append((memory, units, paths[rel], other))
        texts.extend(u.text for u in units)
    vecs, notice = _vectors(index, [pref, *others, *texts], lexical)
    sims = near = contrast = None
    base = 1 + len(others)
    if vecs is not None:
        units_v = vecs[base:]
        sims = units_v @ vecs[0]
    probe = _probe(stems)
    lex_rows = []
    cursor = 0
    for _memory, units, _via, other in staged:
        for unit in units:
            if probe.search(unit.text) or (sims is not None and sims[cursor] >= P_FLOOR):
                shared, names, lex = lexical_evidence(unit.text, stems, pref)
                lex_rows.append((shared, names, lex, subject_of(unit.text, other, stems)))
            else:  # none of the preference's stems and far in meaning: scores 0 whatever its subject
                lex_rows.append(((), (), 0.0, "none"))
            cursor += 1
    anchor_texts: list[str] = []
    if vecs is not None:
        assert sims is not None  # set with the vectors above
        contrast = (units_v @ vecs[1:base].T).max(axis=1) if others else None
        # neighbours: the store's own sentences that carry every stem of the preference
        # (one clause only: a compound's other half must not pull its neighbours in)
        strong = [
            i
            for i, (sh, _n, lex, subj) in enumerate(lex_rows)
            if lex >= 1.0 and subj == "user" and sims[i] >= 0.5 and len(clauses(texts[i])) == 1
        ]
        strong = sorted(strong, key=lambda i: -sims[i])[:ANCHORS]
        if strong:
            near_m = units_v @ units_v[strong].T
            near = near_m.max(axis=1)
            which = near_m.argmax(axis=1)
            anchor_texts = [texts[strong[j]] for j in which]
    reads: list[Read] = []
    cursor = 0
    for memory, units, via, _other in staged:
        evidence = []
        for unit in units:
            shared, names, lex, subj = lex_rows[cursor]
            sim = None if sims is None else float(sims[cursor])
            nsim = None if near is None else float(near[cursor])
            con = None if contrast is None else float(contrast[cursor])
            score = fuse(lex, sim, bool(names), nsim, con)
            shown = anchor_texts[cursor] if anchor_texts and lex == 0 and anchor_texts[cursor] != unit.text else None
            evidence.append(
                Evidence(
                    unit.kind,
                    unit.line,
                    unit.text,
                    shared,
                    names,
                    lex,
                    sim,
                    subj,
                    score,
                    unit.field,
                    shown,
                    nsim if shown else None,
                )
            )
            cursor += 1
        reads.append(Read(memory, tuple(units), tuple(evidence), via))
    return reads, notice


def _probe(stems: frozenset[str]) -> re.Pattern[str]:
    if not stems:
        return re.compile(r"(?!)")
    return re.compile(r"(?<![A-Za-z])(?:" + "|".join(map(re.escape, _prefixes(stems))) + ")", re.IGNORECASE)


def _vectors(index: SearchIndex, every: list[str], lexical: bool) -> tuple[Any, str | None]:
    if lexical:
        return None, "lexical only: no sentence vectors"
    source = vector_source(index)
    try:
        vecs, missing = source.vectors_for(every)
        if missing:
            source.embed_missing([every[i] for i in missing])
            vecs, missing = source.vectors_for(every)
    except Exception as exc:  # no model: lexical evidence only, said out loud
        return None, f"lexical only: {exc}"
    return np.asarray(vecs), None
