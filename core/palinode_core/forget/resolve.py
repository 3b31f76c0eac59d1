"""Resolve a forget request's targets by the store's own search, measure
coverage, and route each target into a plan a reviewer can read before
anything is written (Palinode's resolution; docs/format.md)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from ..ops import backing, lifecycle
from ..ops.apply import uncommitted_files
from ..ops.plan import Plan
from ..search.embed import VECTORS_EXTRA_NOTICE
from ..search.index import SearchIndex
from ..search.results import Hit
from ..storage.config import ForgetKnobs
from ..storage.memory import Memory
from ..storage.store import Store
from ..text.detect import detect_forget_request
from ..text.letters import words as letter_words
from ..text.markdown import MARKER_RE
from ..text.words import content_words, normalize_pref
from .requests import Request, request_at

Route = Literal["archive", "strike", "unforgotten", "skipped", "not_taken"]


def _as_written(pref: str, words: set[str]) -> tuple[str, ...]:
    """Palinode's shared words as the preference writes them: it reads only ASCII
    letters, so "Müller" is "ller" to it; a plan names the whole word it matched in."""
    whole: dict[str, str] = {}
    for m in letter_words(pref):
        for piece in content_words(m.group()):
            if piece != m.group().lower():
                whole.setdefault(piece, m.group())
    return tuple(sorted({whole.get(w, w) for w in words}))


def coverage(pref: str, body: str) -> float:
    """Share of the body's distinct content words that are the pref's (markers
    blanked first, struck text still counted, as Palinode measures)."""
    words = content_words(MARKER_RE.sub(" ", body))
    if not words:
        return 0.0
    return len(words & content_words(pref)) / len(words)


def _at_file_line(evidence: dict[str, Any], plan: Plan | None) -> dict[str, Any]:
    """A unit's line as the file numbers it (as spans, leaks and residue do), not the body's:
    a frontmatter field's is its key's line."""
    if plan is None:
        return evidence
    if evidence["kind"] != "frontmatter":
        return {**evidence, "line": evidence["line"] + plan.body_line_offset}
    head = (plan.old_text or "").splitlines()[: plan.body_line_offset]
    key = f"{evidence['field']}:"
    return {**evidence, "line": next((no for no, text in enumerate(head, 1) if text.startswith(key)), 1)}


@dataclass(frozen=True)
class Candidate:
    path: str
    rank: int  # 1-based position in the search hits
    arms: str
    shared_words: tuple[str, ...]
    coverage: float | None
    route: Route
    reason: str
    plan: Plan | None = None
    # which resolver(s) proposed it ("palinode", "thorough"), the unit-level
    # evidence (thorough only), and whether ``apply --yes`` applies it unasked
    found_by: tuple[str, ...] = ("palinode",)
    evidence: tuple[Any, ...] = ()
    preapproved: bool = True

    @property
    def actionable(self) -> bool:
        return self.plan is not None and self.plan.changes

    def to_dict(self, floor: float) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "rank": self.rank,
            "arms": self.arms,
            "shared_words": list(self.shared_words),
            "coverage": None if self.coverage is None else round(self.coverage, 4),
            "floor": floor,
            "route": self.route,
            "reason": self.reason,
            "found_by": list(self.found_by),
            "preapproved": self.preapproved,
        }
        if self.evidence:
            data["evidence"] = [_at_file_line(e.to_dict(), self.plan) for e in self.evidence]
        if self.plan is not None:
            plan = self.plan.to_dict()
            data.update(
                plan=plan,
                unforgotten=plan["unforgotten"],
                spans=plan["spans"],
                collateral=[s["text"] for s in plan["spans"] if s["collateral"]],
            )
        return data


@dataclass(frozen=True)
class Resolution:
    """The expensive part (search), kept so knobs other than search_k re-route cheaply."""

    request: Request
    hits: tuple[Hit, ...]
    search_k: int
    mode: str
    notice: str | None
    boundary: str | None
    prior_requests: tuple[str, ...]


@dataclass(frozen=True)
class SemanticCoverage:
    """How much of the store's text the semantic arm could read: distinct
    unit texts with a cached vector, of all the unit index holds."""

    embedded: int
    units: int
    query: bool  # the preference itself has a vector
    rank_floor: float = 0.0  # how near the store's RANK_TOP-th nearest unit is (forget.gather): weak proposals reach it
    covered: bool = False  # every sentence that may be near the preference has a vector (search.cascade)
    # memories the plan read whole, their version not in the unit index yet (written since it was brought up
    # to date), whose sentences have no vector: the counts above never saw them
    waiting: int = 0

    @property
    def share(self) -> float:
        return self.embedded / self.units if self.units else 1.0

    @property
    def complete(self) -> bool:
        return self.query and (self.embedded >= self.units or self.covered) and not self.waiting

    def describe(self) -> str:
        if not self.query:
            return "no semantic evidence yet (the preference is not embedded); `palinode-audit index` adds it"
        if self.waiting:
            return (
                f"{self.waiting:,} memor{'y' if self.waiting == 1 else 'ies'} written since the index was brought up"
                " to date, read without vectors (the next index update embeds them)"
            )
        if self.embedded >= self.units:
            return f"semantic evidence for every sentence ({self.units:,})"
        if self.complete:
            return (
                f"semantic evidence for every sentence near the preference ({self.embedded:,} of {self.units:,}"
                " embedded; the cheap pass found the rest far from it)"
            )
        return (
            f"semantic evidence for {self.share:.0%} of sentences ({self.embedded:,} of {self.units:,});"
            " `palinode-audit index` completes it"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "embedded": self.embedded,
            "units": self.units,
            "query": self.query,
            "covered": self.covered,
            "complete": self.complete,
            "waiting": self.waiting,
            "description": self.describe(),
        }


@dataclass(frozen=True)
class ForgetPlan:
    request: Request
    knobs: ForgetKnobs
    candidates: tuple[Candidate, ...]
    resolution: Resolution
    resolver: str = "palinode"
    notice: str | None = None  # the thorough resolver's own note (e.g. lexical only)
    uncommitted: tuple[str, ...] = ()  # files the apply would commit that hold the user's own edits
    semantic: SemanticCoverage | None = None  # the thorough resolver's vectors: how many units had one
    provisional: tuple[str, ...] = ()  # targets with units not embedded yet: the semantic arm may still change them
    # what recall would still hand over once the pre-approved targets are applied (forget.verify);
    # None: not checked
    surfacing: tuple[Any, ...] | None = None
    guarded: tuple[tuple[str, str], ...] = ()  # (path, why): memories a guard held back (thorough)

    @property
    def warnings(self) -> list[str]:
        """What would stop the apply, in words."""
        return [_uncommitted_warning(rel) for rel in self.uncommitted]

    def warnings_for(self, cand: Candidate) -> list[str]:
        files = {cand.path} | ({cand.plan.history_rel} if cand.plan is not None else set())
        return [_uncommitted_warning(rel) for rel in self.uncommitted if rel in files]

    @property
    def targets(self) -> list[Candidate]:
        return [c for c in self.candidates if c.route in ("archive", "strike", "unforgotten")]

    @property
    def actionable(self) -> list[Candidate]:
        return [c for c in self.candidates if c.actionable]

    def candidate(self, path: str) -> Candidate:
        for c in self.candidates:
            if c.path == path:
                return c
        raise KeyError(path)

    def to_dict(self) -> dict[str, Any]:
        return {
            "request": self.request.path,
            "pref": self.request.pref,
            "rid": self.request.rid,
            "resolver": self.resolver,
            "resolver_notice": self.notice,
            "knobs": {
                "search_k": self.knobs.search_k,
                "min_shared_words": self.knobs.min_shared_words,
                "max_targets": self.knobs.max_targets,
                "min_target_coverage": self.knobs.min_target_coverage,
            },
            "search_mode": self.resolution.mode,
            "search_notice": self.resolution.notice,
            "resolved_before": self.resolution.boundary,
            "prior_requests": list(self.resolution.prior_requests),
            "candidates": [c.to_dict(self.knobs.min_target_coverage) for c in self.candidates],
            "semantic": None if self.semantic is None else self.semantic.to_dict(),
            "provisional": list(self.provisional),
            "would_still_surface": None if self.surfacing is None else [s.to_dict() for s in self.surfacing],
            "guarded": [{"path": path, "reason": why} for path, why in self.guarded],
            "warnings": self.warnings,
        }


def _uncommitted_warning(rel: str) -> str:
    return f"{rel} has uncommitted edits: commit or stash them first; apply refuses"


def checked(store: Store, fplan: ForgetPlan) -> ForgetPlan:
    """The plan with the files its targets would commit that hold the user's own
    uncommitted edits (apply refuses to commit them under our subject)."""
    plans = [c.plan for c in fplan.actionable if c.plan is not None]
    return replace(fplan, uncommitted=tuple(uncommitted_files(store, plans)))


def resolve(
    index: SearchIndex, request: Request, search_k: int, memories: Mapping[str, Memory], lexical: bool = False
) -> Resolution:
    # never load the model to plan: a preference not embedded yet is searched lexically
    unembedded = not lexical and not (index.embedder.ready or index.has_vector(request.pref))
    result = index.search(request.pref, limit=search_k, per_file=1, lexical_only=lexical or unembedded)
    if unembedded:
        result = replace(
            result,
            notice="lexical search: the preference has no vector yet (`palinode-audit index`)"
            if index.embedder.installed
            else VECTORS_EXTRA_NOTICE,
        )
    boundary = request.memory.created_at
    priors: list[str] = []
    for hit in result.hits:
        other = memories.get(hit.path)
        if other is None or hit.path == request.path or other.archived:
            continue
        other_pref = other.forget_pref
        if other_pref and normalize_pref(other_pref) == request.norm:
            priors.append(hit.path)
            if other.created_at and (boundary is None or other.created_at < boundary):
                boundary = other.created_at
    return Resolution(request, tuple(result.hits), search_k, result.mode, result.notice, boundary, tuple(priors))


def route(
    store: Store, resolution: Resolution, knobs: ForgetKnobs, memories: Mapping[str, Memory], *, check: bool = True
) -> ForgetPlan:
    """Walk the hits in rank order through Palinode's guards, then route each
    survivor by coverage. Cheap: no search. ``check``: also name the targets'
    files that hold uncommitted edits (one git status)."""
    request = resolution.request
    pref_words = content_words(request.pref)
    seen: set[str] = set()
    candidates: list[Candidate] = []
    taken = 0
    trailers = {"Forget-Request": request.path, "Retraction-Id": request.rid}
    for rank, hit in enumerate(resolution.hits, start=1):
        if hit.path == request.path or hit.path in seen:
            continue
        seen.add(hit.path)
        shared = _as_written(request.pref, pref_words & content_words(hit.text))

        def skip(
            reason: str,
            route_name: Route = "skipped",
            hit: Hit = hit,
            rank: int = rank,
            shared: tuple[str, ...] = shared,
        ) -> None:
            candidates.append(Candidate(hit.path, rank, hit.arms, shared, None, route_name, reason))

        memory = memories.get(hit.path)
        if memory is None:
            try:
                memory = store.load(hit.path)
            except Exception as exc:  # fail closed: an unreadable file is never touched
                skip(f"unreadable: {exc}")
                continue
        if len(shared) < knobs.min_shared_words:
            skip(
                f"shares {len(shared)} content word(s) with the pref, fewer than min_shared_words={knobs.min_shared_words}"
            )
            continue
        other_pref = detect_forget_request(hit.text)
        if other_pref and normalize_pref(other_pref) == request.norm:
            skip("is itself a forget request for the same pref (a retraction record, never a target)")
            continue
        if request.norm in memory.retracted_prefs:
            skip("already retracted for this pref")
            continue
        created = memory.effective_created_at
        if resolution.boundary and created and created > resolution.boundary:
            made = "restored" if memory.summary.restored_at else "created"  # restored_at counts, as for Palinode
            skip(f"{made} {created}, after the request ({resolution.boundary})")
            continue
        if taken >= knobs.max_targets:
            candidates.append(
                Candidate(
                    hit.path,
                    rank,
                    hit.arms,
                    shared,
                    coverage(request.pref, memory.body),
                    "not_taken",
                    f"passed the guards but max_targets={knobs.max_targets} was reached",
                )
            )
            continue
        taken += 1
        if memory.forget_pref:
            # Palinode 0.23 would take another request's record here (it counts toward the cap,
            # so the rest of this plan stays Palinode's); a retraction record is never a target.
            skip(
                f'is a forget request ("{memory.forget_pref}"): a retraction record is never a target; '
                "Palinode 0.23 would have taken it here"
            )
            continue
        candidates.append(_route_one(store, request, hit, rank, shared, memory, knobs, trailers))
    fplan = ForgetPlan(request, knobs, tuple(candidates), resolution)
    return checked(store, fplan) if check else fplan


def _route_one(
    store: Store,
    request: Request,
    hit: Hit,
    rank: int,
    shared: tuple[str, ...],
    memory: Memory,
    knobs: ForgetKnobs,
    trailers: dict[str, str],
) -> Candidate:
    floor = knobs.min_target_coverage
    cov = coverage(request.pref, memory.body)
    if floor > 0 and cov < floor:
        plan = lifecycle.plan_retract(store, memory.rel, request.pref, superseded_by=request.path, trailers=trailers)
        if plan.status == "would_retract":
            return Candidate(
                memory.rel,
                rank,
                hit.arms,
                shared,
                cov,
                "strike",
                f"coverage {cov:.4f} < floor {floor}: strike {plan.mentions} mention(s)",
                plan,
            )
        if plan.status in ("no_mentions", "replace_doc"):
            why = (
                "a living update_policy: replace document is never struck"
                if plan.status == "replace_doc"
                else "no strikeable sentence carries it"
                + (f"; it sits in {', '.join(sorted({r.kind for r in plan.regions}))}" if plan.regions else "")
            )
            return Candidate(memory.rel, rank, hit.arms, shared, cov, "unforgotten", f"{plan.status}: {why}", plan)
        return Candidate(memory.rel, rank, hit.arms, shared, cov, "skipped", plan.status, plan)
    plan = lifecycle.plan_archive(
        store, memory.rel, superseded_by=request.path, reason=f'forget request: "{request.pref}"', trailers=trailers
    )
    why = f"coverage {cov:.4f} >= floor {floor}: archive whole" if floor > 0 else "floor is 0: always archive whole"
    if plan.status == "already_archived":
        return Candidate(memory.rel, rank, hit.arms, shared, cov, "skipped", "already archived", plan)
    return Candidate(memory.rel, rank, hit.arms, shared, cov, "archive", why, plan)


@backing.one_listing
def plan_forget(
    store: Store,
    index: SearchIndex,
    request_path: str,
    memories: Mapping[str, Memory],
    knobs: ForgetKnobs | None = None,
    lexical: bool = False,
    *,
    check: bool = True,
) -> ForgetPlan:
    request = request_at(store, request_path)
    knobs = knobs or store.config.forget
    return route(store, resolve(index, request, knobs.search_k, memories, lexical), knobs, memories, check=check)
