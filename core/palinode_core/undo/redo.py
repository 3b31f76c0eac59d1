"""Redo an undone operation: the original operation planned again on the file
as it is now, exactly as it was approved. A redone strike strikes the very
sentences (or clauses) the original commit struck, nothing more; when the file
no longer holds them where they were, the redo is refused."""

from __future__ import annotations

from ..errors import PalinodeError
from ..ops.plan import Plan
from ..ops.subjects import REDOES_OP_TRAILER, UNDOES_OP_TRAILER
from ..storage.store import Store
from ..text.markdown import struck_spans
from .operations import Operation, plan_change, pref_for
from .restrike import body_at


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
    if operation.op_id:
        trailers[REDOES_OP_TRAILER] = operation.op_id
    if operation.undone_by_op:
        trailers[UNDOES_OP_TRAILER] = operation.undone_by_op
    pref = None
    if operation.kind.changes == "strikes":
        forward = operation.kind.direction == "forward"
        rid = operation.trailers.get("Retraction-Id") or _rid(store, operation, new_in="after" if forward else "before")
        pref = pref_for(store, operation.path, rid, "retract")  # an unretract's undo struck it again under that rid
        if pref is None:
            raise PalinodeError(f"cannot tell which preference {short} {'struck' if forward else 'unstruck'}")
    plan = plan_change(store, operation, back=False, pref=pref, reason=reason or f"redo of {short}", trailers=trailers)
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
