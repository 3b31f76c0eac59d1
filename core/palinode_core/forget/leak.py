"""Residue as a leak check: after an apply (and on demand) every surviving
mention of a preference, lexical, inflected or semantic, in the body, the
frontmatter, headings, tables, code or living documents, classified as

- live: an unstruck sentence or list item of an active memory (recall would surface it),
- struck: struck in place for this request (kept in the file, out of search),
- archived: inside an archived memory (out of default recall),
- unforgettable: where striking cannot reach (heading, table, code, footer,
  frontmatter, a living update_policy: replace document) in an active memory,

and recorded durably in the ledger (``action: residue``), so what was left
unforgotten survives a clone. Retraction records themselves are not residue."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..search.index import SearchIndex
from ..search.rank import similarities
from ..storage.memory import Memory
from ..storage.records import LedgerRecord
from ..storage.store import Store
from ..text.letters import fold
from ..text.markdown import struck_spans
from ..text.units import memory_units
from .evidence import P_FLOOR, WEAK_NEAR, Evidence
from .gather import candidate_paths
from .judgment import Judge, judge_for
from .ledger import record
from .requests import Request

# possible: a unit the judgment read as maybe carrying it and did not take (someone else's, only
# words that say nothing alone, a word inside a name, too far in meaning), with why
LeakKind = Literal["live", "struck", "archived", "unforgettable", "possible"]


@dataclass(frozen=True)
class Leak:
    path: str
    line: int  # file line (frontmatter fields: the key's line)
    kind: LeakKind
    where: str  # sentence | list_item | heading | table | fence | footer | frontmatter | replace_doc | struck
    text: str
    match: str  # lexical | semantic
    score: float
    why: str = ""  # whose it is, or (possible) why it is not taken for a mention

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "kind": self.kind,
            "where": self.where,
            "text": self.text,
            "match": self.match,
            "score": round(self.score, 3),
            "why": self.why,
        }


def leak_check(request: Request, memories: Mapping[str, Memory], index: SearchIndex | None = None) -> list[Leak]:
    """Every surviving mention of the request's preference (semantic evidence
    only from sentence vectors already cached: a check never loads the model),
    and every unit read as possibly one and not taken (kind ``possible``, with why)."""
    judge = judge_for(index, request.pref, memories)
    readable = _worth_reading(request, judge, memories, index)
    out: list[Leak] = []
    for rel, memory in sorted(memories.items()):
        if rel in readable:
            out += memory_leaks(rel, memory, request, judge, index, possibles=True)
    return out


def memory_leaks(
    rel: str,
    memory: Memory,
    request: Request,
    judge: Judge,
    source: Any = None,
    may_share: Callable[[str], bool] | None = None,
    possibles: bool = False,
) -> list[Leak]:
    """Every mention of the request's preference in one memory (or one version
    of it from history): the evidence the leak check and the delivery audit share.
    ``may_share`` (without vectors only): a cheap test that a unit has a word of
    the preference's stems; a unit failing it has no lexical evidence, so none at all.
    ``possibles``: also every unit read as maybe carrying it and not taken, with why."""
    if memory.is_history or memory.forget_pref:
        return []
    rid = request.rid
    out: list[Leak] = []
    try:
        body, meta = memory.body, memory.meta
    except Exception:
        return []
    for struck in struck_spans(body, rid):
        out.append(Leak(rel, struck.line + memory.body_line_offset, "struck", "struck", struck.text, "marker", 1.0))
    units = memory_units(body, meta)
    if not units:
        return out
    sims = _cached_similarities(source, request.pref, [u.text for u in units])
    about = judge.memory_about(memory)
    owner = judge.owners(units, about)
    for i, unit in enumerate(units):
        if sims is None and may_share is not None and not may_share(unit.text):
            continue
        words = judge.words(unit.text)
        sim = None if sims is None else sims[i]
        labels = _labels_it(unit.field, words.shared, judge, about)
        worded = bool(words.shared or words.loose or words.name_use)
        if not (worded or labels) and (sim is None or sim < PROPOSE_FLOOR):
            continue  # no word and far in meaning: whose fact it is need not be asked
        ev = judge.evidence(unit, words, owner(i), sim)
        if not (ev.carries or labels):
            near = sim is not None and sim >= WEAK_NEAR
            if possibles and (worded or near) and not memory.archived and not memory.retired_reason:
                out.append(
                    Leak(
                        rel,
                        _file_line(memory, unit.line, unit.field),
                        "possible",
                        unit.kind,
                        f"{unit.field}: {unit.text}" if unit.field else unit.text,
                        "lexical" if worded else "semantic",
                        ev.score,
                        _not_taken(ev),
                    )
                )
            continue
        out.append(
            Leak(
                rel,
                _file_line(memory, unit.line, unit.field),
                _kind(memory, unit.strikeable),
                "replace_doc" if memory.is_replace_doc else unit.kind,
                f"{unit.field}: {unit.text}" if unit.field else unit.text,
                "lexical" if words.shared else "semantic",
                ev.score,
                ev.why,
            )
        )
    return out


def _not_taken(ev: Evidence) -> str:
    """Why a unit the judgment read is not taken for a mention."""
    if ev.subject == "other":
        return f"someone else's: {ev.why}"
    if ev.name_use and not ev.shared:
        return f"its shared words sit inside a name ({', '.join(ev.name_use)})"
    if ev.loose and not ev.shared:
        return f"shares only words that say nothing alone ({', '.join(ev.loose)})"
    sim = "no vector" if ev.similarity is None else f"similarity {ev.similarity:.2f}"
    words = ", ".join(ev.shared) or "no word"
    return f"too weak to be a mention: {words}; {sim}; score {ev.score:.2f}"


PROPOSE_FLOOR = P_FLOOR  # below it a unit sharing no word scores 0 (evidence.fuse)
LABEL_FIELDS = ("name", "title", "summary")  # frontmatter that says what a memory is about


def _labels_it(field: str | None, shared: tuple[str, ...], judge: Judge, about: str | None) -> bool:
    """A label field naming the preference by Palinode's own span rule (an
    entity of the pref, or min(2, n) of its words), in a memory not about
    someone else: a mention whatever its similarity, since a label lists
    topics and reads far from any sentence (and its first word is no subject)."""
    if field not in LABEL_FIELDS or about or not shared:
        return False
    return len(shared) >= min(2, len(judge.pref.specific)) or any(fold(w) in judge.pref.entities for w in shared)


def _worth_reading(
    request: Request, judge: Judge, memories: Mapping[str, Memory], index: SearchIndex | None
) -> set[str]:
    """The memories the unit index finds by stem prefix or cached vector (any
    status: an archived mention is residue too), those with strike markers, and
    those archived for this request; every memory when there is no index."""
    if index is None:
        return set(memories)
    index.units.sync(memories)  # only versions written since (the apply's own, say)
    found = set(candidate_paths(index, judge, memories, False, eligible_only=False)[0])
    found |= {rel for rel, m in memories.items() if m.struck or m.superseded_by == request.path}
    return found


def _kind(memory: Memory, strikeable: bool) -> LeakKind:
    if memory.archived or memory.retired_reason:
        return "archived"
    if memory.is_replace_doc or not strikeable:
        return "unforgettable"
    return "live"


def _file_line(memory: Memory, body_line: int, key: str | None) -> int:
    if key is None:
        return body_line + memory.body_line_offset
    for no, text in enumerate(memory.text.splitlines()[: memory.body_line_offset], start=1):
        if text.startswith(f"{key}:"):
            return no
    return 1


def _cached_similarities(source: Any, pref: str, texts: list[str]) -> list[float | None] | None:
    """Each text's similarity to the preference from cached vectors (None: no
    vector); None when the preference has none. A check never loads the model."""
    if source is None:
        return None
    try:
        qvec, *vecs = source.cached_blobs([pref, *texts])
    except Exception:
        return None
    if qvec is None:
        return None
    present = [v for v in vecs if v is not None]
    sims = iter(similarities(present, [qvec]))
    return [None if v is None else next(sims)[0] for v in vecs]


def mentions(leaks: list[Leak]) -> list[Leak]:
    """The leaks that are mentions (live, struck, archived, unforgettable), not merely possible ones."""
    return [leak for leak in leaks if leak.kind != "possible"]


def leak_counts(leaks: list[Leak]) -> dict[str, int]:
    """How many surviving mentions of each kind (live, struck, archived, unforgettable)."""
    counts: dict[str, int] = {}
    for leak in leaks:
        counts[leak.kind] = counts.get(leak.kind, 0) + 1
    return counts


def residue_record(request: Request, leaks: list[Leak], note: str | None = None) -> LedgerRecord:
    """The leak check as a ledger record."""
    return {
        "action": "residue",
        "request": request.path,
        "pref": request.pref,
        "rid": request.rid,
        "counts": leak_counts(leaks),
        "mentions": [leak.to_dict() for leak in leaks],
        "note": note,
    }


def record_residue(store: Store, request: Request, leaks: list[Leak], note: str | None = None) -> str | None:
    """A leak check run on demand, as one ledger record in its own commit."""
    return record(store, residue_record(request, leaks, note))
