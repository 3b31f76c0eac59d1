"""Verified by recall: what the store's own hybrid search would still hand an
agent after a plan is applied as it stands (its pre-approved targets, the
default of ``apply --yes``). Recall queries: the preference, its topic words,
and each paraphrase the plan found. Each hit is judged as it would read after
the plan: a memory the plan archives is out of recall; one it strikes is read
in its struck form; any other keeps every live mention (frontmatter included).

A lookup like the plan itself: queries use cached vectors (or the model when
it is already loaded) and otherwise search lexically; nothing is embedded."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..search.index import SearchIndex
from ..storage.memory import Memory, Summary
from ..text.document import parse_document
from ..text.words import content_words
from .judgment import judge_for
from .leak import memory_leaks
from .resolve import ForgetPlan

RECALL_TOP = 10  # what an agent is handed: the top of a recall query
DEPTH = 3 * RECALL_TOP  # hits read, so that archived ones leave room for the next
PARAPHRASES = 3  # paraphrase queries per plan, nearest first


@dataclass(frozen=True)
class Surfacing:
    """A live mention recall would still hand over after the plan."""

    query: str
    query_kind: str  # preference | topic | paraphrase
    rank: int  # among the results after the plan (1-based)
    path: str
    line: int
    where: str  # sentence | list_item | frontmatter | heading | ...
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "query_kind": self.query_kind,
            "rank": self.rank,
            "path": self.path,
            "line": self.line,
            "where": self.where,
            "text": self.text,
        }


def recall_queries(fplan: ForgetPlan) -> list[tuple[str, str]]:
    """The preference, its topic words and the paraphrases the plan found."""
    pref = fplan.request.pref
    queries = [("preference", pref)]
    words = content_words(pref)
    topic = " ".join(w for w in pref.split() if w.strip(".,;:!?").lower() in words)
    if topic and topic.lower() != pref.lower():
        queries.append(("topic", topic))
    paraphrases = sorted(
        # a weak proposal (below the usual cut, as near as noise) is no query of its own
        ((e.score, e.text) for c in fplan.candidates for e in c.evidence if e.carries and not e.shared and not e.weak),
        reverse=True,
    )
    for _score, text in paraphrases[:PARAPHRASES]:
        if text not in {q for _, q in queries}:
            queries.append(("paraphrase", text))
    return queries


def would_surface(
    index: SearchIndex, fplan: ForgetPlan, memories: Mapping[str, Memory], lexical: bool = False
) -> tuple[Surfacing, ...]:
    """Every live mention in the top ``RECALL_TOP`` of each recall query, the
    store read as it would be after the plan's pre-approved targets."""
    archived, struck = set(), {}
    for cand in fplan.actionable:
        if not cand.preapproved or cand.plan is None or not cand.plan.changes:
            continue
        if cand.route == "archive":
            archived.add(cand.path)
        elif cand.route == "strike":
            struck[cand.path] = cand.plan.new_text
    request = fplan.request
    judge = judge_for(index, request.pref, memories)
    # mentions by meaning for the thorough resolver's plan, whose evidence has them; Palinode's
    # plan is checked by its words, as its own resolver judges
    vectors = index if not lexical and fplan.resolver == "thorough" else None
    out: list[Surfacing] = []
    seen: set[tuple[str, int]] = set()
    for kind, query in recall_queries(fplan):
        unembedded = lexical or not (index.embedder.ready or index.has_vector(query))
        hits = index.search(query, limit=DEPTH, per_file=1, lexical_only=unembedded).hits
        rank = 0
        for hit in hits:
            memory = memories.get(hit.path)
            if hit.path in archived or memory is None or memory.forget_pref:
                continue  # out of recall after the plan, or a retraction record (kept on purpose)
            rank += 1
            if rank > RECALL_TOP:
                break
            after = _after(memory, struck.get(hit.path))
            for leak in memory_leaks(hit.path, after, request, judge, vectors):
                if leak.kind in ("live", "unforgettable") and (hit.path, leak.line) not in seen:
                    seen.add((hit.path, leak.line))
                    out.append(Surfacing(query, kind, rank, hit.path, leak.line, leak.where, leak.text))
    return tuple(out)


def _after(memory: Memory, new_text: str | None) -> Memory:
    if new_text is None:
        return memory
    doc = parse_document(new_text)
    return Memory(memory.rel, memory.fingerprint, Summary.of(memory.rel, doc), loaded=doc)
