"""What a reviewer approved: per target, approved or not, and for a strike
which of its sentences. ``narrow`` is the one place a strike plan is cut down
to the chosen spans; the app, its diff view and apply all go through it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import StalePlan
from ..ops import lifecycle
from ..ops.plan import Plan
from ..storage.store import Store


@dataclass(frozen=True)
class Choice:
    approved: bool = True
    spans: frozenset[int] | None = None  # a strike's chosen span indices; None = every proposed span

    @property
    def rejects(self) -> bool:
        """Rejected outright, or a strike with no sentence left to strike."""
        return not self.approved or self.spans == frozenset()


# Targets the selection does not name are deferred: neither applied nor rejected.
Selection = Mapping[str, Choice]
APPROVE_ALL = Choice()
REJECT = Choice(approved=False)


def narrow(store: Store, plan: Plan, spans: frozenset[int] | None) -> Plan:
    """``plan`` striking only ``spans`` (planned again against the same bytes);
    any other plan, or the plan's own choice, is returned as it is."""
    if plan.op != "retract" or spans is None or frozenset(plan.selected) == spans:
        return plan
    narrowed = lifecycle.plan_retract(
        store,
        plan.target,
        plan.pref or "",
        superseded_by=plan.superseded_by,
        selected=set(spans),
        trailers=plan.trailers,
        spans=plan.spans if plan.custom_spans else None,
        regions=plan.regions if plan.custom_spans else None,
    )
    if narrowed.fingerprint != plan.fingerprint:
        raise StalePlan(f"{plan.target} changed since the plan was made; re-plan")
    return narrowed
