"""archive / restore / retract / unretract as plans (nothing is written here;
``apply`` writes). One dispatcher plans any operation by name through
``PLANNERS``, the kind's row (storage.records.OPERATION_KINDS) saying which
planner makes it and which takes it back, so re-planning a plan and planning an
operation's inverse are each written once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ..errors import PalinodeError
from ..storage.paths import history_rel_for, subject_path
from ..storage.records import OPERATION_KINDS
from ..storage.store import Memory, Store
from ..text.history import history_line
from ..text.markdown import Matcher, Region, Span, find_mentions, marker_for, strike, struck_spans, unstrike
from ..text.words import normalize_pref, retraction_id
from . import backing
from .plan import FieldChange, Op, Plan, PlanStatus


def _subject(store: Store, text: str) -> str:
    return f"{store.config.commit_prefix} {text}"


def _base(store: Store, memory: Memory, op: Op, status: PlanStatus, **kw: Any) -> Plan:
    return Plan(
        op=op,
        target=memory.rel,
        status=status,
        old_text=memory.text,
        new_text=kw.pop("new_text", memory.text),
        fingerprint=memory.fingerprint,
        history_rel=history_rel_for(memory.rel),
        body_line_offset=memory.body_line_offset,
        **kw,
    )


def _with_flags(store: Store, plan: Plan, op: str, reason: str) -> Plan:
    """Palinode flags the live dependents of a retired source (backing.py)."""
    flags = backing.plan_flags(store, plan.target, op, reason)
    if not flags:
        return plan
    ref = backing.source_refs(plan.target)[-1]
    # Palinode's words; a ref git or a shell would read as a pattern is JSON-quoted like any path
    subject = _subject(store, f"backed_by review: {subject_path(ref)} {op} -> {len(flags)} dependent(s)")
    return replace(plan, flags=flags, flags_subject=subject)


def _reason_suffix(reason: str | None) -> str:
    return f" (reason: {reason})" if reason else ""


def plan_archive(
    store: Store,
    ref: str,
    superseded_by: str | None = None,
    reason: str | None = None,
    actor: str | None = None,
    trailers: dict[str, str] | None = None,
) -> Plan:
    memory = store.load_memory(ref)
    if superseded_by is not None:
        superseded_by = store.successor(superseded_by, memory.rel)
    if memory.archived:
        return _base(store, memory, "archive", "already_archived", superseded_by=superseded_by, reason=reason)
    updates: dict[str, Any] = {"status": "archived"}
    if superseded_by:
        updates["superseded_by"] = superseded_by
    actor_tail = f" [actor: {actor}]" if actor else ""
    if superseded_by:
        line_text = f"Superseded by {superseded_by}{_reason_suffix(reason)}{actor_tail}"
        subject = f"supersede: {subject_path(memory.rel)} -> {subject_path(superseded_by)}"
    else:
        line_text = f"Archived: {memory.rel}{_reason_suffix(reason)}{actor_tail}"
        subject = f"archive: {subject_path(memory.rel)}"
    if actor:
        subject += f" (actor: {actor})"
    return _with_flags(
        store,
        _base(
            store,
            memory,
            "archive",
            "would_archive",
            new_text=memory.doc.edit(updates),
            history_line=history_line(line_text, memory.fact_id, store.now()),
            commit_subject=_subject(store, subject),
            trailers=dict(trailers or {}),
            field_changes=tuple(FieldChange(k, memory.meta.get(k), v) for k, v in updates.items()),
            superseded_by=superseded_by,
            reason=reason,
        ),
        "supersede" if superseded_by else "archive",
        line_text,
    )


def plan_restore(store: Store, ref: str, reason: str | None = None, trailers: dict[str, str] | None = None) -> Plan:
    memory = store.load_memory(ref)
    if not memory.archived:
        return _base(store, memory, "restore", "not_archived", reason=reason)
    successor = memory.superseded_by
    restored_at = store.now().isoformat()
    updates: dict[str, Any] = {"status": "active", "restored_from": successor or "archived", "restored_at": restored_at}
    removed = ("superseded_by",) if "superseded_by" in memory.meta else ()
    was = f"was superseded by {successor}" if successor else "was archived"
    stale = backing.restore_checks(store, memory.meta)
    if stale:  # Palinode re-checks the memory's own backing on the way back
        updates[backing.FIELD] = [*backing.entries(memory.meta), *stale]
        was_tail = "; stale backing: " + ", ".join(e["ref"] for e in stale)
    else:
        was_tail = ""
    subject = f"restore: {subject_path(memory.rel)}" + (f" <- {subject_path(successor)}" if successor else "")
    changes = [FieldChange(k, memory.meta.get(k), v) for k, v in updates.items()]
    changes += [FieldChange(k, memory.meta.get(k), None) for k in removed]
    return _base(
        store,
        memory,
        "restore",
        "would_restore",
        new_text=memory.doc.edit(updates, delete_keys=removed),
        history_line=history_line(
            f"Restored: {memory.rel} ({was}){_reason_suffix(reason)}{was_tail}", memory.fact_id, store.now()
        ),
        commit_subject=_subject(store, subject),
        trailers=dict(trailers or {}),
        field_changes=tuple(changes),
        superseded_by=successor,
        reason=reason,
    )


def plan_retract(
    store: Store,
    ref: str,
    pref: str,
    superseded_by: str | None = None,
    selected: set[int] | None = None,
    trailers: dict[str, str] | None = None,
    spans: tuple[Span, ...] | None = None,
    regions: tuple[Region, ...] | None = None,
    again: bool = False,
) -> Plan:
    """Strike the sentences and list items of ``ref`` that carry ``pref``.
    ``selected`` narrows the strike to some of the candidate spans. ``spans``
    and ``regions``, when given, replace the walker's (a resolver's own units,
    clauses included; span indices must be their positions). ``again`` strikes
    more of a memory already retracted for ``pref`` (Palinode refuses): the
    new strikes carry the same id and the record keeps the pref once."""
    memory = store.load_memory(ref)
    if superseded_by is not None:
        superseded_by = store.successor(superseded_by, memory.rel)
    norm = normalize_pref(pref)
    rid = retraction_id(pref)
    common: dict[str, Any] = dict(pref=pref, rid=rid, superseded_by=superseded_by)
    matcher = Matcher.for_pref(pref)
    recorded = norm in memory.retracted_prefs
    if recorded and not again:
        return _base(store, memory, "retract", "already_retracted", **common)
    custom = spans is not None
    if spans is None:
        found, walked = find_mentions(memory.body, matcher)
        spans, regions = tuple(found), tuple(walked)
    else:
        spans, regions = tuple(spans), tuple(regions or ())
        common["custom_spans"] = True
    if memory.is_replace_doc:
        lines = tuple(Region("replace_doc", s.line, s.text) for s in spans) + tuple(regions)
        return _base(
            store,
            memory,
            "retract",
            "replace_doc",
            regions=lines or (Region("replace_doc", 0, "update_policy: replace"),),
            **common,
        )
    if not spans:
        return _base(store, memory, "retract", "no_mentions", regions=tuple(regions), **common)
    chosen = [s for s in spans if selected is None or s.index in selected]
    if custom and any(memory.body[s.start : s.end] != s.text for s in chosen):
        return _base(
            store, memory, "retract", "nothing_selected", spans=tuple(spans), regions=tuple(regions), **common
        )  # the body moved under the spans: strike nothing
    if not chosen:
        return _base(store, memory, "retract", "nothing_selected", spans=tuple(spans), regions=tuple(regions), **common)
    marker = marker_for(store.now().strftime("%Y-%m-%d"), rid)
    new_body = strike(memory.body, chosen, marker)
    raw_prefs = memory.meta.get("retracted_prefs")
    prefs = [*raw_prefs, norm] if isinstance(raw_prefs, list) else [norm]  # written unless already recorded
    count = len(chosen)
    line_text = f'Retracted {count} mention(s) [r:{rid}]: "{pref}"'
    subject = f"retract: {subject_path(memory.rel)} ({count} mentions)"
    if superseded_by:
        line_text += f" \u2014 superseded by {superseded_by}"
        subject += f" <- {subject_path(superseded_by)}"
    return _with_flags(
        store,
        _base(
            store,
            memory,
            "retract",
            "would_retract",
            new_text=memory.doc.edit({} if recorded else {"retracted_prefs": prefs}, body=new_body),
            history_line=history_line(line_text, memory.fact_id, store.now()),
            commit_subject=_subject(store, subject),
            trailers=dict(trailers or {}),
            field_changes=() if recorded else (FieldChange("retracted_prefs", raw_prefs, prefs),),
            mentions=count,
            spans=tuple(spans),
            selected=tuple(s.index for s in chosen),
            regions=tuple(regions),
            **common,
        ),
        "retract",
        f"retracted {count} mention(s) r:{rid}",
    )


def plan_unretract(
    store: Store,
    ref: str,
    pref: str,
    reason: str | None = None,
    trailers: dict[str, str] | None = None,
    only: frozenset[int] | None = None,
) -> Plan:
    """Unstrike ``pref``'s strikes in ``ref`` (``only``: just those opening at
    these offsets; the record then stays while another strike of it does)."""
    memory = store.load_memory(ref)
    norm = normalize_pref(pref)
    rid = retraction_id(pref)
    if norm not in memory.retracted_prefs:
        return _base(store, memory, "unretract", "not_retracted", pref=pref, rid=rid, reason=reason)
    new_body, count = unstrike(memory.body, rid, only)
    raw = memory.meta.get("retracted_prefs")
    remaining = [p for p in raw if p != norm] if isinstance(raw, list) else []
    changes: tuple[FieldChange, ...] = (FieldChange("retracted_prefs", raw, remaining or None),)
    if only is not None and struck_spans(new_body, rid):
        new_text, changes = memory.doc.edit({}, body=new_body), ()
    elif remaining:
        new_text = memory.doc.edit({"retracted_prefs": remaining}, body=new_body)
    else:
        new_text = memory.doc.edit(delete_keys=("retracted_prefs",), body=new_body)
    return _base(
        store,
        memory,
        "unretract",
        "would_unretract",
        new_text=new_text,
        history_line=history_line(
            f'Unretracted {count} mention(s) [r:{rid}]: "{pref}"{_reason_suffix(reason)}', memory.fact_id, store.now()
        ),
        commit_subject=_subject(store, f"unretract: {subject_path(memory.rel)} ({count} mentions)"),
        trailers=dict(trailers or {}),
        field_changes=changes,
        pref=pref,
        rid=rid,
        mentions=count,
        reason=reason,
    )


@dataclass(frozen=True)
class OpArgs:
    """What planning an operation by name may be given; each planner takes what it uses."""

    pref: str | None = None
    superseded_by: str | None = None
    reason: str | None = None
    trailers: dict[str, str] | None = None


Planner = Callable[[Store, str, OpArgs], Plan]

# One planner per kind a plan makes (storage.records.OPERATION_KINDS names it as ``plans_as``).
PLANNERS: dict[str, Planner] = {
    "archive": lambda store, target, a: plan_archive(
        store, target, superseded_by=a.superseded_by, reason=a.reason, trailers=a.trailers
    ),
    "restore": lambda store, target, a: plan_restore(store, target, reason=a.reason, trailers=a.trailers),
    "retract": lambda store, target, a: plan_retract(
        store, target, a.pref or "", superseded_by=a.superseded_by, trailers=a.trailers
    ),
    "unretract": lambda store, target, a: plan_unretract(
        store, target, a.pref or "", reason=a.reason, trailers=a.trailers
    ),
}


def plan_op(
    store: Store,
    op: str,
    target: str,
    *,
    pref: str | None = None,
    superseded_by: str | None = None,
    reason: str | None = None,
    trailers: dict[str, str] | None = None,
) -> Plan:
    """Plan any operation by name (an ``OPERATION_KINDS`` name), against the file as it is now."""
    kind = OPERATION_KINDS.get(op)
    if kind is None:
        raise PalinodeError(f"unknown operation {op!r}")
    return PLANNERS[kind.plans_as](store, target, OpArgs(pref, superseded_by, reason, trailers))


def replan(store: Store, plan: Plan) -> Plan:
    """The same operation planned again on the file as it is now."""
    return plan_op(
        store,
        plan.op,
        plan.target,
        pref=plan.pref,
        superseded_by=plan.superseded_by,
        reason=plan.reason,
        trailers=plan.trailers,
    )


def plan_inverse(
    store: Store,
    op: str,
    target: str,
    *,
    pref: str | None = None,
    counterpart: str | None = None,
    reason: str | None = None,
    trailers: dict[str, str] | None = None,
) -> Plan:
    """The undo of an applied ``op``, made against the file as it is now.
    ``counterpart`` is what the operation pointed at: the successor a restore
    came from (archived again under it) or the request a strike was undone for."""
    inverse = OPERATION_KINDS[op].inverse
    return plan_op(store, inverse, target, pref=pref, superseded_by=counterpart, reason=reason, trailers=trailers)
