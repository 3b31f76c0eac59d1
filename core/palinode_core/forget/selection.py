"""What a reviewer approved: per target, approved or not, and for a strike
which of its sentences. ``narrow`` is the one place a strike plan is cut down
to the chosen spans; the app, its diff view and apply all go through it.
``strike_sentence`` is a reviewer's strike of one sentence by hand."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import PalinodeError, StalePlan
from ..ops import lifecycle
from ..ops.plan import Plan
from ..storage.store import Store
from ..text.markdown import Matcher, find_mentions
from .requests import Request


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
    unknown = spans - {s.index for s in plan.spans}
    if unknown:  # a damaged or crafted choice: striking nothing for it would drop the target silently
        raise PalinodeError(
            f"{plan.target} has no proposed sentence numbered {min(unknown)} "
            f"(it has {len(plan.spans)}); choose its sentences again; nothing was changed"
        )
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
    if not narrowed.changes:
        raise PalinodeError(
            f"the sentences chosen in {plan.target} strike nothing ({narrowed.status}); nothing was changed"
        )
    return narrowed


def strike_sentence(store: Store, request: Request, path: str, line: int, text: str) -> Plan:
    """A retract plan for ``request`` striking exactly one sentence of ``path``:
    the one Palinode's walker finds at file ``line`` reading ``text`` (a live
    residue mention). In a memory already retracted for the preference the
    strike joins the earlier ones under the same id. Raises PalinodeError
    saying why when that sentence cannot be struck."""
    memory = store.load(path)
    spans, _ = find_mentions(memory.body, Matcher.for_pref(request.pref))
    found = [s for s in spans if s.line + memory.body_line_offset == line and s.text == text]
    if not found:
        raise PalinodeError(
            f"{memory.rel}:{line} holds no strikeable sentence reading that text: a heading, table, code block or "
            "frontmatter cannot be struck, or the file changed since it was read"
        )
    plan = lifecycle.plan_retract(
        store,
        memory.rel,
        request.pref,
        superseded_by=request.path,
        selected={found[0].index},
        trailers={"Forget-Request": request.path, "Retraction-Id": request.rid},
        again=True,
    )
    if plan.status == "replace_doc":
        raise PalinodeError(f"{memory.rel} is a living document (update_policy: replace): it is never struck")
    if plan.status != "would_retract":
        raise PalinodeError(f"{memory.rel}:{line} cannot be struck ({plan.status})")
    return plan
