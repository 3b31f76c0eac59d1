"""Redo an undone operation: the original operation planned again on the file
as it is now, exactly as it was approved. A redone strike strikes the very
sentences (or clauses) the original commit struck, nothing more; when the file
no longer holds them where they were, the redo is refused."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from ..errors import PalinodeError, StalePlan
from ..ops import lifecycle
from ..ops.plan import Plan
from ..storage.store import Store
from ..text.document import parse_document
from ..text.markdown import Span, struck_spans, unstrike
from ..text.units import clause_span, memory_units
from .operations import Operation, body_at, pref_for, struck_by


def plan_redo(store: Store, operation: Operation, reason: str | None = None) -> Plan:
    """The undone ``operation`` again, as a plan against the file as it is now.
    Its commit names both the original (``Redoes:``) and the undo it takes
    back (``Undoes:``), with the original's request trailers."""
    short = operation.commit[:7]
    if operation.undone_by is None:
        raise PalinodeError(f"{short} ({operation.subject}) was not undone; there is nothing to redo")
    if operation.redone_by is not None:
        raise PalinodeError(f"{short} was already redone in {operation.redone_by[:7]}; act on that commit")
    trailers = {k: v for k, v in operation.trailers.items() if k in ("Forget-Request", "Retraction-Id")}
    trailers.update(Redoes=operation.commit, Undoes=operation.undone_by)
    if operation.op == "retract":
        plan = _restrike(store, operation, trailers)
    else:
        pref = None
        if operation.op == "unretract":
            rid = operation.trailers.get("Retraction-Id") or _rid(store, operation, new_in="before")
            pref = pref_for(store, operation.path, rid, "retract")  # the undo struck it again under that rid
            if pref is None:
                raise PalinodeError(f"cannot tell which preference {short} unstruck")
        plan = lifecycle.plan_op(
            store,
            operation.op,
            operation.path,
            pref=pref,
            superseded_by=operation.counterpart,
            reason=reason or f"redo of {short}",
            trailers=trailers,
        )
    if not plan.changes:
        raise PalinodeError(f"nothing to redo: {operation.path} is {plan.status.replace('_', ' ')}")
    return plan


def _rid(store: Store, operation: Operation, new_in: str) -> str:
    """The one retraction id whose markers the commit added (``new_in`` "after")
    or removed ("before"), for a commit that carries no ``Retraction-Id``."""
    before = {s.rid for s in struck_spans(body_at(store, f"{operation.commit}^", operation.path))}
    after = {s.rid for s in struck_spans(body_at(store, operation.commit, operation.path))}
    rids = after - before if new_in == "after" else before - after
    if len(rids) != 1:
        raise PalinodeError(f"cannot tell which retraction {operation.commit[:7]} made in {operation.path}")
    return rids.pop()


def _restrike(store: Store, operation: Operation, trailers: dict[str, str]) -> Plan:
    short = operation.commit[:7]
    rid = operation.trailers.get("Retraction-Id") or _rid(store, operation, new_in="after")
    pref = pref_for(store, operation.path, rid, "retract")
    if pref is None:
        raise PalinodeError(f"cannot tell which preference {short} struck")
    after = body_at(store, operation.commit, operation.path)
    own = struck_by(store, operation, rid)  # not the strikes of another commit under the same id
    texts = [s.text for s in own]
    # where each strike opened in the text it was made on (unstrike's exact inverse)
    original, _ = unstrike(after, rid, {s.start for s in own})
    starts, shift = [], 0
    for s in struck_spans(after, rid):
        if s in own:
            starts.append(s.start - shift)
        shift += (s.end - s.start) - len(s.text) if s in own else 0
    body = store.load(operation.path).body
    earlier = Counter(s.text for s in struck_spans(body, rid))
    units = [u.span for u in memory_units(body, {}) if u.span is not None]
    spans: list[Span] = []
    for index, (text, start) in enumerate(zip(texts, starts, strict=True)):
        fits = [u for u in units if u.text.startswith(text)]  # the whole unit, or its leading clauses
        if body == original:  # unchanged since: the very places it struck
            fits = [u for u in fits if u.start == start]
        if len(fits) != 1:
            raise StalePlan(
                f"{operation.path} changed since {short} was undone: cannot find exactly the sentence it struck "
                f"({text[:60]!r}); re-plan the request instead"
            )
        unit = fits[0]
        spans.append(
            replace(unit, index=index, collateral=None) if unit.text == text else clause_span(unit, len(text), index)
        )
    plan = lifecycle.plan_retract(
        store,
        operation.path,
        pref,
        superseded_by=operation.counterpart,
        trailers=trailers,
        spans=tuple(spans),
        regions=(),
        again=True,
    )
    struck_now = (
        Counter(s.text for s in struck_spans(parse_document(plan.new_text).body, rid)) if plan.changes else None
    )
    if struck_now is not None and struck_now - earlier != Counter(texts):
        raise PalinodeError(
            f"cannot strike exactly what {short} struck in {operation.path}; re-plan the request instead"
        )
    return plan
