"""Which memories the thorough resolver reads, and the evidence of each of
their units. Store-wide up to ``STOREWIDE`` active memories; above that the
index narrows the reading to memories that hold one of the preference's stems
(any inflection, by term prefix) or whose chunk vectors are nearest to it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from ..search.index import SearchIndex
from ..storage.memory import Memory
from ..text.units import Unit, memory_units
from .evidence import Evidence, fuse, lexical_evidence, memory_is_other, subject_of
from .sentvec import vector_source

STOREWIDE = 3000  # read every active memory up to this many
PREFIX_LIMIT = 400  # chunks from the stem-prefix query
VECTOR_LIMIT = 40  # files from the vector arm


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


def candidate_paths(index: SearchIndex, pref: str, stems: frozenset[str], memories: Mapping[str, Memory],
                    lexical: bool) -> dict[str, str]:
    active = [rel for rel, m in memories.items() if eligible(m)]
    if len(active) <= STOREWIDE:
        return {rel: "scan" for rel in active}
    found: dict[str, set[str]] = {}
    ix = getattr(index, "_ix", None)
    if ix is not None and stems:
        from whoosh.query import Or, Prefix, Term
        excluded = sorted({s.lower() for s in index.store.config.exclude_status})
        with index._lock, ix.searcher() as searcher:
            mask = Or([Term("status", s) for s in excluded]) if excluded else None
            for hit in searcher.search(Or([Prefix("content", p) for p in _prefixes(stems)]),
                                       limit=PREFIX_LIMIT, mask=mask):
                found.setdefault(hit["path"], set()).add("bm25")
    if not lexical:
        for hit in index.search(pref, limit=VECTOR_LIMIT, per_file=1).hits:
            if hit.vector_rank is not None:
                found.setdefault(hit.path, set()).add("vector")
    return {rel: "+".join(sorted(arms)) for rel, arms in found.items()
            if rel in memories and eligible(memories[rel])}


def read_memories(index: SearchIndex, pref: str, stems: frozenset[str], paths: Mapping[str, str],
                  memories: Mapping[str, Memory], skip: set[str], lexical: bool) -> tuple[list[Read], str | None]:
    """Every candidate's units with lexical and (when available) semantic evidence."""
    staged: list[tuple[Memory, list[Unit], str, bool]] = []
    texts: list[str] = []
    for rel in sorted(paths):
        if rel in skip:
            continue
        memory = memories[rel]
        try:
            units = memory_units(memory.body, memory.meta)
        except Exception:  # an unreadable memory is never a target; it is not read either
            continue
        if not units:
            continue
        other = memory_is_other(memory.meta, memory.title, memory.category)
        staged.append((memory, units, paths[rel], other))
        texts.extend(u.text for u in units)
    sims, notice = _similarities(index, pref, texts, lexical)
    reads: list[Read] = []
    cursor = 0
    for memory, units, via, other in staged:
        evidence = []
        for unit in units:
            shared, names, lex = lexical_evidence(unit.text, stems, pref)
            sim = None if sims is None else float(sims[cursor])
            cursor += 1
            evidence.append(Evidence(unit.kind, unit.line, unit.text, shared, names, lex, sim,
                                     subject_of(unit.text, other), fuse(lex, sim), unit.field))
        reads.append(Read(memory, tuple(units), tuple(evidence), via))
    return reads, notice


def _similarities(index: SearchIndex, pref: str, texts: list[str], lexical: bool) -> tuple[Any, str | None]:
    if lexical or not texts:
        return None, "lexical only: no sentence vectors" if lexical else None
    source = vector_source(index)
    every = [pref, *texts]
    try:
        vecs, missing = source.vectors_for(every)
        if missing:
            source.embed_missing([every[i] for i in missing])
            vecs, missing = source.vectors_for(every)
    except Exception as exc:  # no model: lexical evidence only, said out loud
        return None, f"lexical only: {exc}"
    return np.asarray(vecs[1:] @ vecs[0]), None
