"""The thorough resolver: every unit of the store that carries the
preference, and nothing that does not, decided per memory from sentence-level
evidence (gather, evidence), set beside what Palinode's own resolution would
do (resolve) so the reviewer sees what it would have done and what it missed.

Per memory: a memory most of whose sentences carry the preference, or whose
own subject (name, title, first heading) does, is archived whole (pre-approved
when a unit carries every word of it); otherwise the sentences and list items
that carry it are struck, a clause at a time where the rest of the sentence is
about something else and a restorable form exists (a leading clause, or a
closing one on its own line: docs/format.md); mentions striking cannot reach
are listed as unforgotten (narrow.py). A partial mention, a paraphrase and an
uncuttable compound wait for a person. Facts about a
named other person and words inside a name never count; guards say why."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ..ops import backing, lifecycle
from ..ops.plan import Plan
from ..search.embed import VECTORS_EXTRA_NOTICE
from ..search.index import SearchIndex
from ..search.vectors import Progress
from ..storage.config import ForgetKnobs
from ..storage.memory import Memory
from ..storage.store import Store
from ..text.markdown import Region, Span
from ..text.units import Unit, clauses, item_sentences
from ..text.words import normalize_pref
from .evidence import Evidence
from .gather import Read, candidate_paths, embed_first, read_memories
from .judgment import Judge, judge_for
from .narrow import narrowest, opens_with_pronoun, related_clauses
from .requests import Request
from .resolve import Candidate, ForgetPlan, checked, coverage, plan_forget

# A memory is about the preference, and archived whole, when more than this share of its
# clauses carry it ("I live in Leeds and work at Harwick." is not about Leeds: the employer
# would retire with it), or when its own subject (name, title, first heading) carries it and
# at least SUBJECT_SHARE of its clauses do.
ARCHIVE_SHARE = 0.5
SUBJECT_SHARE = 0.25
ABOUT_SIM = 0.35  # a sentence this near the preference in meaning is about it, though not a mention of it
_SUBJECT_FIELDS = ("name", "title")


def _aboutness(judge: Judge, read: Read) -> tuple[int, int]:
    """(clauses carrying the preference, clauses) over a memory's strikeable
    units: a sentence carrying it by its words counts the clauses its words
    (or a pointer back: "and love it") are in; one carrying it by meaning
    alone, or near it in meaning (ABOUT_SIM), counts whole, as does one whose
    pronoun stands for the preference's person named just before ("Lunch with
    Wilhelmina Cragg was fun. She ordered the soup."). A sentence sharing a
    specific word is about it even when too weak to be a mention ("Bought the
    Vespa second-hand"); a weak proposal (meaning as near as noise) is not."""
    carried = total = 0
    named_before = False
    for unit, ev in zip(read.units, read.evidence, strict=True):
        if not unit.strikeable:
            continue
        pieces = [unit.text[a:b] for a, b in item_sentences(unit.text)] if unit.kind == "list_item" else [unit.text]
        parts = [c.text for piece in pieces for c in clauses(piece, unsure=False)] or [unit.text]
        total += len(parts)
        names = bool(judge.pref.entities & judge.names_in(unit.text))
        if ev.subject == "other" or ev.weak:
            named_before = False
            continue
        if ev.shared:  # by its words, a mention or not ("The tattoo artist works above a bakery")
            carried += sum(related_clauses(judge, parts, read.sentence_sims))
        elif ev.carries or (ev.similarity or 0.0) >= ABOUT_SIM or (named_before and opens_with_pronoun(unit.text)):
            carried += len(parts)
        named_before = names and ev.carries
    return carried, total


@backing.one_listing
def plan_thorough(
    store: Store,
    index: SearchIndex,
    request_path: str,
    memories: Mapping[str, Memory],
    knobs: ForgetKnobs | None = None,
    lexical: bool = False,
    embed: Progress | bool = False,
) -> ForgetPlan:
    """The thorough plan. ``embed`` (True or a progress callback): embed the
    sentences its judgment reads first, so the plan is the same whether or not
    ``index`` has run (the model loads once, for those sentences only)."""
    knobs = knobs or store.config.forget
    if not lexical and index.units.coverage()[0]:  # the sentences' vectors need numpy: the chunk search
        import numpy  # noqa: F401  # uses it too (5,000 dot products in plain Python took 60 ms at 1k)

    # Palinode's own plan, for comparison only: its uncommitted-file check is this plan's
    palinode = plan_forget(store, index, request_path, memories, knobs, lexical, check=False)
    # Palinode's archive of a memory is the very plan thorough makes: reused (each costs a git grep)
    archives = {c.path: c.plan for c in palinode.candidates if c.route == "archive" and c.plan is not None}
    request = palinode.request
    judge = judge_for(index, request.pref, memories)
    others = tuple(
        sorted(
            {
                m.forget_pref
                for m in memories.values()
                if m.forget_pref and normalize_pref(m.forget_pref) != request.norm
            }
        )
    )
    if embed and not lexical:  # the preferences first: the store's own vectors are then searched by meaning
        embed_first(index, [request.pref, *others], embed)
    paths, semantic = candidate_paths(index, judge, memories, lexical)
    skip, records = _not_targets(request, palinode.resolution.boundary, paths, memories)
    floor = semantic.rank_floor if semantic is not None else 0.0
    reads, notice = read_memories(index, judge, paths, memories, skip, lexical, others, floor, embed)
    if semantic is not None:  # read whole, not in the index yet: no coverage count saw their sentences
        waiting = sum(1 for r in reads if "unindexed" in r.found_via.split("+") and r.unembedded)
        semantic = replace(semantic, waiting=waiting)
    notice = "; ".join(n for n in (index.units.take_notice(), notice) if n) or None
    trailers = {"Forget-Request": request.path, "Retraction-Id": request.rid}
    by_path: dict[str, Candidate] = {}
    for read in reads:
        cand = _decide(store, request, read, trailers, archives, judge)
        if cand is not None:
            by_path[cand.path] = cand
    ordered = sorted(by_path.values(), key=lambda c: (-_best(c), c.path))
    out: list[Candidate] = []
    for rank, cand in enumerate(ordered, start=1):
        out.append(_compare(_with_rank(cand, rank), palinode))
    seen = {c.path for c in out}
    for pc in palinode.candidates:  # what Palinode would take and thorough does not
        if pc.path in seen or pc.route not in ("archive", "strike", "unforgotten"):
            continue
        why = records.get(pc.path) or _why_not(request, reads, pc.path)
        out.append(
            Candidate(
                pc.path,
                len(out) + 1,
                pc.arms,
                pc.shared_words,
                pc.coverage,
                "skipped",
                f"Palinode would {_verb(pc.route)} it; thorough does not: {why}",
                None,
                ("palinode",),
                (),
                False,
            )
        )
        seen.add(pc.path)
    # the guards that held a memory back, said in the plan (issue 22)
    guarded = [(r.memory.rel, _guard(r)) for r in reads if r.memory.rel not in seen]
    guarded += [(rel, why) for rel, why in sorted(records.items()) if rel not in seen and rel != request.path]
    provisional: tuple[str, ...] = ()
    if semantic is not None and not semantic.complete:
        # a lean install has no model: the way to semantic evidence is the vectors extra, not `index`
        notice = notice or (semantic.describe() if index.embedder.installed else VECTORS_EXTRA_NOTICE)
        unembedded = {r.memory.rel for r in reads if r.unembedded}
        provisional = tuple(c.path for c in out if c.path in unembedded and c.route != "skipped")
    return checked(
        store,
        ForgetPlan(
            request,
            knobs,
            tuple(out),
            palinode.resolution,
            resolver="thorough",
            notice=notice,
            semantic=semantic,
            provisional=provisional,
            guarded=tuple((rel, why) for rel, why in guarded if why),
        ),
    )


def _not_targets(
    request: Request, boundary: str | None, paths: Mapping[str, str], memories: Mapping[str, Memory]
) -> tuple[set[str], dict[str, str]]:
    """Paths never targeted, with why: the request itself, every request's
    record, memories written after the request, memories already retracted."""
    skip: set[str] = {request.path}
    records: dict[str, str] = {}
    for rel in paths:
        memory = memories[rel]
        if memory.forget_pref:
            skip.add(rel)
            records[rel] = f'a forget request ("{memory.forget_pref}"): a retraction record is never a target'
        elif request.norm in memory.retracted_prefs:
            skip.add(rel)
            records[rel] = "already retracted for this pref"
        elif boundary and memory.effective_created_at and memory.effective_created_at > boundary:
            skip.add(rel)
            made = "restored" if memory.summary.restored_at else "created"  # restored_at counts, as for Palinode
            records[rel] = f"{made} {memory.effective_created_at}, after the request ({boundary})"
    return skip, records


def _best(cand: Candidate) -> float:
    return max((e.score for e in cand.evidence if e.carries), default=0.0)


def _with_rank(cand: Candidate, rank: int) -> Candidate:
    return Candidate(
        cand.path,
        rank,
        cand.arms,
        cand.shared_words,
        cand.coverage,
        cand.route,
        cand.reason,
        cand.plan,
        cand.found_by,
        cand.evidence,
        cand.preapproved,
    )


def _verb(route_name: str) -> str:
    return {"archive": "archive", "strike": "strike", "unforgotten": "report"}.get(route_name, route_name)


def _decide(
    store: Store,
    request: Request,
    read: Read,
    trailers: dict[str, str],
    archives: Mapping[str, Plan],
    judge: Judge,
) -> Candidate | None:
    memory = read.memory
    carrying = [(u, e) for u, e in zip(read.units, read.evidence, strict=True) if e.carries]
    if not carrying:
        return None
    strikeable = [u for u in read.units if u.strikeable]
    struck_units = [(u, e) for u, e in carrying if u.strikeable]
    # a partial mention (the entity alone) or a weak one (as near as noise) never makes a
    # memory about the preference: it is only ever a strike of its own, left unselected
    stating = [(u, e) for u, e in struck_units if not e.partial and not e.weak]
    carried, clauses_in_all = _aboutness(judge, read)
    share = carried / clauses_in_all if clauses_in_all else 0.0
    subject = [
        e
        for u, e in carrying
        if not e.partial
        and not e.weak
        and (
            (u.kind == "frontmatter" and u.field in _SUBJECT_FIELDS)
            or (u.kind == "heading" and u.text.lstrip().startswith("# "))
        )
    ]
    evidence = tuple(e for _, e in carrying)
    shared = tuple(sorted({w.lower() for e in evidence for w in e.shared}))
    cov = coverage(request.pref, memory.body)
    lead = max(evidence, key=lambda e: e.score)
    if memory.is_replace_doc:
        regions = tuple(Region("replace_doc", u.line, u.text) for u, _ in carrying)
        plan = lifecycle.plan_retract(
            store, memory.rel, request.pref, superseded_by=request.path, trailers=trailers, spans=(), regions=regions
        )
        return Candidate(
            memory.rel,
            0,
            read.found_via,
            shared,
            cov,
            "unforgotten",
            "a living update_policy: replace document is never struck; reported",
            plan,
            ("thorough",),
            evidence,
            False,
        )
    # a memory with nothing to strike, whose heading or labels carry it ("# Beşiktaş" under
    # summary: supports Beşiktaş), is about it whole
    labelled = not strikeable and any(
        not e.partial and not e.weak and (u.kind == "heading" or u.kind == "frontmatter") for u, e in carrying
    )
    if share > ARCHIVE_SHARE or (subject and stating and share >= SUBJECT_SHARE) or labelled:
        why = (
            f"{carried} of its {clauses_in_all} clause(s) carry it ({len(stating)} of {len(strikeable)} sentence(s))"
            if share > ARCHIVE_SHARE
            else f"its own subject carries it ({subject[0].kind}: {subject[0].text!r})"
            if subject
            else "it holds no sentence, and its heading or labels carry it"
        )
        plan = archives.get(memory.rel) or lifecycle.plan_archive(
            store, memory.rel, superseded_by=request.path, reason=f'forget request: "{request.pref}"', trailers=trailers
        )
        if plan.status == "already_archived":
            return None
        # the memory that establishes it (a unit carrying every word) is pre-approved
        # whatever its other sentences; otherwise every sentence must be strong (a weak
        # proposal neither helps nor hinders)
        pre = any(e.complete and e.preapproved for e in evidence) or (
            bool(struck_units) and all(e.preapproved for _, e in struck_units if not e.weak)
        )
        return Candidate(
            memory.rel,
            0,
            read.found_via,
            shared,
            cov,
            "archive",
            f"archive whole: {why}; best evidence {_describe(lead, memory)}"
            + ("" if pre else "; proposed, not pre-approved (a paraphrase or weak match)"),
            plan,
            ("thorough",),
            evidence,
            pre,
        )
    return _strike(judge, store, request, memory, read, carrying, shared, cov, trailers, evidence)


def _strike(
    judge: Judge,
    store: Store,
    request: Request,
    memory: Memory,
    read: Read,
    carrying: list[tuple[Unit, Evidence]],
    shared: tuple[str, ...],
    cov: float,
    trailers: dict[str, str],
    evidence: tuple[Evidence, ...],
) -> Candidate:
    spans: list[Span] = []
    chosen: set[int] = set()
    notes: list[str] = []
    regions: list[Region] = []
    for unit, ev in carrying:
        if not unit.strikeable:
            regions.append(_region(memory, unit))
            continue
        assert unit.span is not None
        if ev.partial:
            notes.append(
                f"line {unit.line + memory.body_line_offset}: a partial mention (names {', '.join(ev.partial)} without the rest): "
                "proposed, a person decides"
            )
        if ev.weak:
            notes.append(
                f"line {unit.line + memory.body_line_offset}: weak: {_ORDINAL.get(ev.weak, f'number {ev.weak}')} "
                "nearest in meaning of the sentences read, below the usual cut: proposed, a person decides"
            )
        for cut in narrowest(judge, unit, ev, request, len(spans), memory, read.sentence_sims):
            spans.append(cut.span)
            if cut.note:
                notes.append(cut.note)
            if cut.clean and cut.evidence.preapproved:
                chosen.add(cut.span.index)
    if not spans:
        plan = lifecycle.plan_retract(
            store,
            memory.rel,
            request.pref,
            superseded_by=request.path,
            trailers=trailers,
            spans=(),
            regions=tuple(regions),
        )
        kinds = ", ".join(sorted({r.kind for r in regions}))
        return Candidate(
            memory.rel,
            0,
            read.found_via,
            shared,
            cov,
            "unforgotten",
            f"no strikeable sentence carries it; it sits in {kinds}",
            plan,
            ("thorough",),
            evidence,
            False,
        )
    # nothing pre-approved: the plan strikes every proposal, and apply --yes defers it to the reviewer
    selected = chosen or {s.index for s in spans}
    plan = lifecycle.plan_retract(
        store,
        memory.rel,
        request.pref,
        superseded_by=request.path,
        selected=selected,
        trailers=trailers,
        spans=tuple(spans),
        regions=tuple(regions),
    )
    if plan.status != "would_retract":
        return Candidate(
            memory.rel, 0, read.found_via, shared, cov, "skipped", plan.status, plan, ("thorough",), evidence, False
        )
    reason = (
        f"strike {len(chosen)} of {len(spans)} proposed unit(s) "
        f"({sum(1 for s in spans if s.kind == 'clause')} clause(s)); "
        f"{len(read.evidence) - len(carrying)} other unit(s) kept"
    )
    if regions:
        reason += f"; {len(regions)} mention(s) striking cannot reach"
    if notes:
        reason += "; " + "; ".join(notes)
    return Candidate(
        memory.rel, 0, read.found_via, shared, cov, "strike", reason, plan, ("thorough",), evidence, bool(chosen)
    )


def _region(memory: Memory, unit: Unit) -> Region:
    if unit.kind != "frontmatter":
        return Region(unit.kind, unit.line, unit.text)
    line = 0
    for no, text in enumerate(memory.text.splitlines()[: memory.body_line_offset], start=1):
        if text.startswith(f"{unit.field}:"):
            line = no
            break
    return Region("frontmatter", line - memory.body_line_offset, f"{unit.field}: {unit.text}")


def _describe(ev: Evidence, memory: Memory) -> str:
    """The evidence where the file has it (a body line as the file numbers it)."""
    sim = "no vector" if ev.similarity is None else f"similarity {ev.similarity:.2f}"
    words = ", ".join(ev.shared) or "no shared word"
    where = (
        f"frontmatter {ev.field}" if ev.kind == "frontmatter" else f"{ev.kind} line {ev.line + memory.body_line_offset}"
    )
    weak = (
        f"; weak: {_ORDINAL.get(ev.weak, f'number {ev.weak}')} nearest in meaning of the sentences read, below the usual cut"
        if ev.weak
        else ""
    )
    named = "; names someone else: a person decides" if ev.someone_named else ""
    return f"{where} ({words}; {sim}; score {ev.score:.2f}{weak}{named})"


_ORDINAL = {1: "the", 2: "the second", 3: "the third"}


def _why_not(request: Request, reads: list[Read], path: str) -> str:
    for read in reads:
        if read.memory.rel != path:
            continue
        best = max(read.evidence, key=lambda e: e.score, default=None)
        if best is None:
            return "nothing in it to match"
        if best.subject == "other" and best.score >= 0.5:
            return f"it is about someone else: {_describe(best, read.memory)}"
        if best.name_use and not best.shared:
            return f"it shares {', '.join(best.name_use)} only inside a name: {_describe(best, read.memory)}"
        return f"no unit carries the preference: best {_describe(best, read.memory)}"
    return "not an eligible memory"


def _guard(read: Read) -> str | None:
    """Why a memory that shares the preference's words is not a target, when
    a guard (not mere distance) held it back; None otherwise."""
    held = [e for e in read.evidence if e.shared or e.name_use]
    other = [e for e in held if e.subject == "other" and e.lexical >= 0.5]
    if other:
        return f"a fact about someone else: {_describe(other[0], read.memory)}"
    named = [e for e in held if e.name_use and not e.shared]
    if named:
        return f"shares {', '.join(named[0].name_use)} only inside a name: {_describe(named[0], read.memory)}"
    fragments = [e for e in held if e.lexical > 0 and not e.carries]
    if fragments:
        return f"shares words but is about another topic: {_describe(fragments[0], read.memory)}"
    return None


def _compare(cand: Candidate, palinode: ForgetPlan) -> Candidate:
    """Mark what Palinode would have done with the same memory."""
    mine = next((c for c in palinode.candidates if c.path == cand.path), None)
    if mine is not None and mine.route in ("archive", "strike", "unforgotten"):
        found_by: tuple[str, ...] = ("palinode", "thorough")
        same = mine.route == cand.route
        note = f"Palinode would also {_verb(mine.route)} it" if same else f"Palinode would {_verb(mine.route)} it"
    else:
        found_by = ("thorough",)
        note = (
            ("Palinode misses it: " + mine.reason)
            if mine is not None
            else "Palinode misses it: not in its top search_k hits"
        )
    return Candidate(
        cand.path,
        cand.rank,
        cand.arms,
        cand.shared_words,
        cand.coverage,
        cand.route,
        f"{cand.reason}. {note}",
        cand.plan,
        found_by,
        cand.evidence,
        cand.preapproved,
    )
