"""Which memories the thorough resolver reads, and the evidence of each of
their units. The unit index decides what is read, from every unit of the
store: memories holding one of the preference's stems (any inflection, by term
prefix) and memories with a unit whose cached vector is near the preference.
Planning reads cached vectors only and never loads the model: a unit with no
vector yet has lexical evidence only, and the plan says how many had one."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import EmbeddingUnavailable
from ..search.chunks import text_hash
from ..search.index import SearchIndex
from ..search.rank import similarities
from ..search.unit_index import indexable
from ..search.vectors import Progress
from ..storage import safeio
from ..storage.grep import files_containing, files_with_words_starting
from ..storage.memory import Memory
from ..storage.store import Store
from ..storage.textio import MAX_MEMORY_BYTES, fingerprint
from ..text.markdown import MARKER_RE
from ..text.stem import counted_stems, stem
from ..text.units import Unit, clauses, item_sentence_texts, memory_units, unit_source, vector_pieces
from .evidence import P_FLOOR, PROPOSE, WEAK_NEAR, WEAK_TOP, Evidence
from .judgment import NO_WORDS, Judge, Words, lookup_stems
from .resolve import SemanticCoverage
from .whose import Whose

ANCHOR_SIM = 0.5  # a neighbour (anchor) sentence is at least this near the preference
SEMANTIC_NEAR = 0.4  # a unit this near the preference or an anchor is read (below P_ZERO nothing is proposed)
RANK_TOP = 20  # below the cut, a unit must be among the store's RANK_TOP nearest to the preference to be proposed
WEAK_READ = RANK_TOP  # ... so these nearest below it are read, of which guards leave the WEAK_TOP nearest to propose


@dataclass(frozen=True)
class Read:
    """One memory's units and their evidence."""

    memory: Memory
    units: tuple[Unit, ...]
    evidence: tuple[Evidence, ...]
    found_via: str  # lexical | semantic | unindexed (read whole: the index lacks its version), joined by +
    # the own similarity of a list item's sentences and of a sentence's clauses (text.units.vector_pieces)
    sentence_sims: Mapping[str, float] = field(default_factory=dict)

    @property
    def unembedded(self) -> bool:
        """Some of its evidence has no vector yet (a unit, or a list item's sentence)."""
        return any(e.similarity is None for e in self.evidence) or any(
            p not in self.sentence_sims
            for u in self.units
            if u.kind == "list_item"
            for p in item_sentence_texts(u.text)
        )


def eligible(memory: Memory) -> bool:
    return not memory.archived and not memory.is_history and memory.retired_reason is None


# Snowball's exceptional forms a word's start does not show ("skies": sky; "dying": die)
_SPECIAL_STARTS = {"sky": ("ski",), "die": ("dy",), "lie": ("ly",), "tie": ("ty",)}
# letters whose case folding spells ASCII ("Straße": strasse): a word holding one is no ASCII start's
FOLDING_LETTERS = ("ß", "ẞ", "ſ", "ﬀ", "ﬁ", "ﬂ", "ﬃ", "ﬄ", "ﬅ", "ﬆ", "\u212a")
_FOLDING_BYTES = tuple(letter.encode("utf-8") for letter in FOLDING_LETTERS)


def _prefixes(stems: frozenset[str]) -> list[str]:
    """The fewest word starts that find every word of ``stems``: one a shorter one
    starts ("liver" after "liv") finds nothing more, and each costs a pass over the store.
    A start in another script is always kept (bytes fold ASCII letters only: it is read)."""
    # a Snowball stem is its words' prefix but for a last "i" or "e" ("poni": ponies, pony; "live": living),
    # a short one's y or -ing form ("fli": fly; "use": using; a two-letter start would read most files)
    # and its exceptional forms
    starts = {s[:-1] if s.endswith(("i", "e")) and len(s) > 3 else s for s in stems}
    for s in stems:
        if s in _SPECIAL_STARTS:
            starts.update(_SPECIAL_STARTS[s])
        elif len(s) == 3 and s.endswith("i"):
            starts.add(s[:-1] + "y")
        elif len(s) == 3 and s.endswith("e") and not s.endswith("ee"):
            starts.add(s[:-1] + "ing")
    kept: list[str] = []
    for start in sorted(starts):
        # sorted: what an ASCII start begins follows it at once
        if start.isascii() and kept and kept[-1].isascii() and start.startswith(kept[-1]):
            continue
        kept.append(start)
    return kept


def candidate_paths(
    index: SearchIndex,
    judge: Judge,
    memories: Mapping[str, Memory],
    lexical: bool,
    *,
    eligible_only: bool = True,
) -> tuple[dict[str, str], SemanticCoverage | None]:
    """Every eligible memory with a unit that shares a stem with the
    preference (any inflection: they stem alike) or, from every unit vector the
    cache holds, is near it or near one of the store's own sentences stating it;
    and any the index does not hold. A lookup: nothing is read or embedded here."""
    pref, stems = (
        judge.pref.text,
        lookup_stems(judge.pref.specific),
    )  # a unit sharing no specific word is found by meaning or not at all

    def wanted(rel: str) -> bool:  # asked only of the memories found: a few, not every one of a big store
        return eligible(memories[rel]) or not (eligible_only or memories[rel].is_history)

    by_fp: dict[str, list[str]] = {}
    for rel, memory in memories.items():
        by_fp.setdefault(memory.fingerprint, []).append(rel)
    found: dict[str, set[str]] = {}
    # a version the index does not hold (written after the sync, changed under it, or not segmented yet
    # while a first sync runs) is read whole: the lookup cannot vouch that it carries nothing. With no
    # semantic arm, one whose text holds none of the preference's stems at all cannot carry it either.
    indexed = index.units.known()
    words_only = lexical or not index.has_vector(pref)
    for fp, rels in by_fp.items():
        if fp not in indexed and any(indexable(memories[rel]) for rel in rels):
            rels = [rel for rel in rels if wanted(rel)]
            if not rels or (words_only and not _holds(memories[rels[0]], stems, index.store)):
                continue
            for rel in rels:
                found.setdefault(rel, set()).add("unindexed")
    hits = index.units.lexical_hits(stems) if stems else []
    for fp, _text in hits:
        for rel in by_fp.get(fp, ()):
            found.setdefault(rel, set()).add("lexical")
    unlisted = [rel for rel, m in memories.items() if rel not in found and m.fingerprint in indexed]
    for rel, arm in _unlisted_mentions(index, stems, memories, unlisted, wanted).items():
        found.setdefault(rel, set()).add(arm)
    coverage = None
    if not lexical:
        coverage, near = _semantic_candidates(index, judge, hits)
        for fp in near:
            for rel in by_fp.get(fp, ()):
                found.setdefault(rel, set()).add("semantic")
    return {rel: "+".join(sorted(arms)) for rel, arms in found.items() if wanted(rel)}, coverage


def _unlisted_mentions(
    index: SearchIndex,
    stems: frozenset[str],
    memories: Mapping[str, Memory],
    unlisted: list[str],
    wanted: Callable[[str], bool],
) -> dict[str, str]:
    """Of the memories the lookup left out, each whose file, as read now,
    spells one of ``stems`` where the index would list it: the cache's rows
    are never trusted to say a memory is clean. One whose bytes are the
    version the scan saw has rows that do not match them (damaged or altered):
    they are rebuilt and it is read ('lexical'); one changed since the scan is
    read whole ('unindexed'). One ``git grep`` first names the files whose bytes
    could (a superset: any stem's prefix, a backslash, a strike); those are read."""
    if not stems:
        return {}
    if not _spelling(stems)[1]:  # no YAML word to fear: the bytes say it
        prefixes, marks = set(_prefixes(stems)), {"\\", "[RETRACTED ", *FOLDING_LETTERS}
        could = files_with_words_starting(index.store, prefixes, marks)
        if could is None:
            could = files_containing(index.store, prefixes | marks)
        if could is not None:
            unlisted = [rel for rel in unlisted if rel in could]
    unlisted = [rel for rel in unlisted if wanted(rel)]  # after the grep: asked of a few, not of every memory
    out: dict[str, str] = {}
    damaged: list[Memory] = []
    for rel, data in safeio.read_files(index.store.root, unlisted, MAX_MEMORY_BYTES):
        if data is None or not _may_spell(data, stems):  # unreadable now: no plan reads it either
            continue
        memory = memories[rel]
        if fingerprint(data) != memory.fingerprint:
            out[rel] = "unindexed"
        elif _holds(memory, stems, index.store):
            out[rel] = "lexical"
            damaged.append(memory)
    if damaged:
        index.units.rebuild(damaged)
    return out


def _semantic_candidates(
    index: SearchIndex, judge: Judge, hits: list[tuple[str, str]]
) -> tuple[SemanticCoverage, set[str]]:
    pref = judge.pref.text
    embedded, units = index.units.coverage()
    qvec = index.cached_blobs([pref])[0]
    if not embedded or qvec is None:  # nothing to compare
        return SemanticCoverage(embedded, units, qvec is not None), set()
    # anchors: the store's sentences carrying every stem of the preference, nearest first
    full = list(dict.fromkeys(t for _fp, t in hits if judge.words(t).lexical >= 1.0))
    have = [v for v in index.cached_blobs(full) if v is not None]
    sims = [row[0] for row in similarities(have, [qvec])]
    near_enough = [j for j in range(len(have)) if sims[j] >= ANCHOR_SIM]  # a NaN is never near: filtered first
    anchors = [have[j] for j in sorted(near_enough, key=lambda j: -sims[j])][:ANCHORS]
    # units near the preference itself (a lookup), kept when they or an anchor are near enough;
    # numpy only for a first scan or many comparisons (a leak check after an apply has neither)
    near = index.units.near(pref, qvec)
    keep = {h for h, sim in near.items() if sim >= SEMANTIC_NEAR}
    nearness = {h: sim for h, sim in near.items() if sim < SEMANTIC_NEAR}
    if nearness and anchors:
        hashes, vecs = index.units.vectors_of(list(nearness))
        for h, row in zip(hashes, similarities(vecs, anchors), strict=True):
            nearness[h] = max(nearness[h], *row)
        keep |= {h for h, v in nearness.items() if v >= SEMANTIC_NEAR}
    # the store's nearest units by rank, of those sharing no specific word (what meaning alone must find):
    # below the cut, only these may be proposed (weak), so they are read
    worded = {text_hash(t) for _fp, t in hits}
    ranked = sorted((v for h, v in near.items() if h not in worded), reverse=True)
    rank_floor = ranked[RANK_TOP - 1] if len(ranked) >= RANK_TOP else 0.0
    weak = sorted(((v, h) for h, v in nearness.items() if WEAK_NEAR <= v < SEMANTIC_NEAR), reverse=True)
    picked: list[str] = []  # a unit's text: a list item's sentence is never proposed on its own
    for i in range(0, len(weak), 8 * WEAK_READ):
        part = [h for _v, h in weak[i : i + 8 * WEAK_READ]]
        whole = index.units.unit_hashes(part)
        picked += [h for h in part if h in whole]
        if len(picked) >= WEAK_READ:
            break
    keep |= set(picked[:WEAK_READ])
    covered = embedded < units and index.units.covered(pref)
    return SemanticCoverage(embedded, units, True, rank_floor, covered), index.units.fingerprints_of(keep)


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
    judge: Judge,
    paths: Mapping[str, str],
    memories: Mapping[str, Memory],
    skip: set[str],
    lexical: bool,
    others: tuple[str, ...] = (),
    rank_floor: float = 0.0,
    embed: Progress | bool = False,
) -> tuple[list[Read], str | None]:
    """Every candidate's units with lexical and (when available) semantic
    evidence, as the judgment finds it. Below the cut for meaning, the WEAK_TOP
    nearest units read that are also among the store's RANK_TOP nearest
    (``rank_floor``: the RANK_TOP-th nearness) are proposed, labelled weak.
    ``embed`` (True, or a progress callback): embed what the judgment of these
    memories needs first (the preferences and every unit read), so a plan is the
    same whether or not ``index`` has run; otherwise only cached vectors are read. ``others`` are the store's other
    requests' preferences: a paraphrase must be nearer this preference than any of them."""
    pref, stems = judge.pref.text, judge.pref.stems
    staged: list[tuple[Memory, list[Unit], str, str | None]] = []
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
        staged.append((memory, units, paths[rel], judge.memory_about(memory)))
        texts.extend(u.text for u in units)
    # the sentences of a list item holding several, each with a vector of its own (search.unit_index)
    pieces = sorted({p for _m, units, _v, _o in staged for u in units for p in vector_pieces(u.kind, u.text)})
    vecs, have, notice = _vectors(index, [pref, *others, *texts, *pieces], lexical, embed)
    sims = near = contrast = None
    base = 1 + len(others)
    sentence_sims: dict[str, float] = {}
    if vecs is not None:
        import numpy as np

        units_v = vecs[base : base + len(texts)]
        unit_have = have[base : base + len(texts)]
        sims = np.where(unit_have, units_v @ vecs[0], np.nan)
        at = base + len(texts)
        sentence_sims = {p: float(vecs[at + i] @ vecs[0]) for i, p in enumerate(pieces) if have[at + i]}
    probe = _probe(lookup_stems(stems))
    rows: list[tuple[Words, Whose | None]] = []
    cursor = 0
    for _memory, units, _via, about in staged:
        owner = judge.owners(units, about)
        for k, unit in enumerate(units):
            near_enough = sims is not None and sims[cursor] >= P_FLOOR
            words = judge.words(unit.text) if probe.search(unit.text) else NO_WORDS
            if words.shared or words.loose or words.name_use or near_enough:
                rows.append((words, owner(k)))
            else:  # none of the preference's words and far in meaning: scores 0 whoever states it
                rows.append((NO_WORDS, None))
            cursor += 1
    anchor_texts: list[str] = []
    if vecs is not None:
        assert sims is not None  # set with the vectors above
        other_rows = [i for i in range(1, base) if have[i]]
        contrast = (units_v @ vecs[other_rows].T).max(axis=1) if other_rows else None
        # neighbours: the store's own sentences that carry every stem of the preference
        # (one clause only: a compound's other half must not pull its neighbours in)
        strong = [
            i
            for i, (words, owned) in enumerate(rows)
            if words.lexical >= 1.0
            and owned is not None
            and owned.who == "user"
            and sims[i] >= ANCHOR_SIM
            and len(clauses(texts[i], unsure=False)) == 1
        ]
        strong = sorted(strong, key=lambda i: -sims[i])[:ANCHORS]
        if strong:
            near_m = units_v @ units_v[strong].T
            near = np.where(unit_have, near_m.max(axis=1), np.nan)
            which = near_m.argmax(axis=1)
            anchor_texts = [texts[strong[j]] for j in which]
    evidence_of: list[list[Evidence]] = []
    weak: list[tuple[float, int, int]] = []  # (nearness, memory, unit): below P_ZERO, past every guard
    cursor = 0
    for memory, units, _via, _about in staged:
        evidence: list[Evidence] = []
        for unit in units:
            words, owned = rows[cursor]
            sim = _value(sims, cursor)
            nsim = _value(near, cursor)
            con = None if contrast is None else float(contrast[cursor])
            ev = judge.evidence(unit, words, owned, sim, nsim, con)
            # a sentence one could strike: a weak heading or living document would read as "unforgotten"
            if (
                words.lexical == 0
                and 0 < ev.score < PROPOSE
                and ev.subject != "other"
                and unit.strikeable
                and not memory.is_replace_doc
            ):
                weak.append((max(sim or 0.0, nsim or 0.0), len(evidence_of), len(evidence)))
            shown = (
                anchor_texts[cursor]
                if anchor_texts and words.lexical == 0 and anchor_texts[cursor] != unit.text
                else None
            )
            if shown:
                ev = replace(ev, neighbour=shown, neighbour_similarity=nsim)
            evidence.append(ev)
            cursor += 1
        evidence_of.append(evidence)
    # the nearest few in meaning, however weak: proposed so a person sees them (never pre-approved)
    nearest = sorted((w for w in weak if w[0] >= max(WEAK_NEAR, rank_floor)), key=lambda w: -w[0])[:WEAK_TOP]
    for rank, (_v, m, u) in enumerate(nearest, start=1):
        evidence_of[m][u] = replace(evidence_of[m][u], score=PROPOSE, weak=rank)
    reads = [
        Read(memory, tuple(units), tuple(evidence), via, sentence_sims)
        for (memory, units, via, _about), evidence in zip(staged, evidence_of, strict=True)
    ]
    return reads, notice


def _holds(memory: Memory, stems: frozenset[str], store: Store) -> bool:
    """Whether the index, once it holds this version, would list it for these
    stems: a unit's stems are its words' (counted_stems, exactly as indexed),
    and units cover every word of the body and the label fields, but struck
    text (left out, and a struck item's unit joins what its strikes leave): a
    memory with a strike is segmented to tell."""
    if not stems:
        return False
    try:
        # the file's bytes first, nothing parsed: most memories spell none of the stems (10k: 3.5 s -> 0.6 s)
        data = (
            memory.text.encode() if memory.text_read else safeio.read_file(memory.rel, store.root, MAX_MEMORY_BYTES)[0]
        )
        if fingerprint(data) != memory.fingerprint:
            return True  # changed since the scan: read_memories decides
        if not _may_spell(data, stems):
            return False
        # read, not kept on the scan's memory (as the sync reads): the store's memories stay summaries
        fresh = memory if memory.text_read or memory.reload is None else memory.reload()
        if fresh.fingerprint != memory.fingerprint:
            return True
        doc = fresh.doc
        if MARKER_RE.search(doc.body) is None:
            return not stems.isdisjoint(counted_stems(unit_source(doc.body, doc.meta)))
        return any(not stems.isdisjoint(counted_stems(u.text)) for u in memory_units(doc.body, doc.meta))
    except Exception:  # unreadable now: read_memories decides, as for any candidate
        return True


# what YAML makes of a value in a label list, whatever the file spells: a boolean (yes: True), a float
# that overflows (1e400: inf)
_YAML_WORDS = ("true", "false", "inf", "nan")


def _may_spell(data: bytes, stems: frozenset[str]) -> bool:
    """Whether a memory's bytes (frontmatter and body, unparsed) could give a
    unit a word with one of ``stems``. Every word of the body and of a label
    field's value is spelled in the file at a word's start (ASCII letters: a
    word is a run of them, and UTF-8 spells them as themselves), except where
    YAML makes one (an escape, a boolean, an overflowing float) or a strike joins what it leaves:
    maybe. A word spelled there counts when it stems as one of them ('team' is no 'tea')."""
    needles, yaml_spells = _spelling(stems)
    if yaml_spells or b"\\" in data or b"[RETRACTED " in data or any(b in data for b in _FOLDING_BYTES):
        return True
    if any(not s.isascii() for s in stems):
        return True  # bytes fold only ASCII letters: a word in another script is read to tell
    low = data.lower()  # ASCII letters only, as a word's stem is taken
    for needle in needles:
        at = low.find(needle)
        while at >= 0:
            if at == 0 or not 97 <= low[at - 1] <= 122:  # a word starts here: its stem decides
                word = _LOWER_WORD.match(low, at)
                if word and len(word.group()) > 2 and stem(word.group().decode("ascii")) in stems:
                    return True
            at = low.find(needle, at + 1)
    return False


_LOWER_WORD = re.compile(rb"[a-z]+")


@functools.lru_cache(maxsize=64)
def _spelling(stems: frozenset[str]) -> tuple[tuple[bytes, ...], bool]:
    """(each stem's prefix as bytes, whether YAML may make such a word): asked once per file of a store."""
    prefixes = _prefixes(stems)
    return tuple(p.encode("utf-8") for p in prefixes), any(w.startswith(p) for w in _YAML_WORDS for p in prefixes)


def _probe(stems: frozenset[str]) -> re.Pattern[str]:
    if not stems:
        return re.compile(r"(?!)")
    starts = "|".join(map(re.escape, _prefixes(stems)))
    return re.compile(r"(?<![^\W\d_])(?:" + starts + ")|(?-i:[" + "".join(FOLDING_LETTERS) + "])", re.IGNORECASE)


def _value(values: Any, i: int) -> float | None:
    """One unit's similarity, None when it (or everything) has no vector."""
    if values is None or values[i] != values[i]:  # NaN: no vector
        return None
    return float(values[i])


def embed_first(index: SearchIndex, texts: list[str], embed: Progress | bool) -> str | None:
    """Embed the texts with no vector yet (the model loads if it must); why not, when it cannot."""
    if not index.embedder.installed:
        return None
    try:
        index.embed_missing(texts, embed if callable(embed) else None)
    except EmbeddingUnavailable as exc:  # the model would not load: the plan is what the cache allows
        return str(exc)
    return None


def _vectors(
    index: SearchIndex, every: list[str], lexical: bool, embed: Progress | bool = False
) -> tuple[Any, Any, str | None]:
    """The vectors of ``every`` text and which have one: embedded first when
    ``embed`` asks (the model loads then), else only those cached."""
    if lexical:
        return None, None, "lexical only: no sentence vectors"
    import numpy as np

    notice = embed_first(index, every, embed) if embed else None

    vecs, missing = index.vectors_for(every)
    if 0 in missing:  # the preference itself: no semantic arm at all
        return None, None, notice
    have = np.ones(len(every), dtype=bool)
    have[missing] = False
    return np.asarray(vecs), have, notice
