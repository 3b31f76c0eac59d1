"""A reviewed forget plan as a value and as a file (``plan --out``): what
``apply --plan`` executes, exactly, without planning again.

The file names the request and the SHA-256 of its file, the base commit, and
each approved step whole: the target, the SHA-256 of its bytes when planned,
and the bytes the step writes (docs/plan-file.md). Before anything is written
the file is checked against the store as it is: the request and every target
must be byte-for-byte what was planned (else: stale, re-plan), every path must
be a memory of the store, and each step is made again from its own choices
(the operation, the spans chosen, the plan's date) and must give the very
bytes the file holds: a file edited by hand, or forged, is refused, never
written."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from datetime import datetime
from typing import Any

from ..errors import PalinodeError, StalePlan
from ..ops import lifecycle
from ..ops.backing import Flag
from ..ops.plan import FieldChange, Plan
from ..storage.store import Store
from ..text.markdown import Region, Span
from .requests import request_at

FORMAT = "palinode-audit.forget-plan"
_ROUTE_OF = {"archive": "archive", "retract": "strike"}  # a step's operation and the route it is shown as
VERSION = 1


@dataclass(frozen=True)
class Approved:
    """The steps a person approved for one request, and the ledger fields."""

    request: str
    request_fingerprint: str
    pref: str
    rid: str
    resolver: str
    planned_at: str  # ISO 8601: the date a strike marker carries
    steps: tuple[tuple[Plan, str], ...]  # (the target's plan, narrowed to the approved spans; its route)
    ledger: dict[str, Any]
    base_commit: str | None = None

    @property
    def files(self) -> set[str]:
        """Every file applying it writes: each target, its history, each dependent it flags."""
        return {rel for plan, _ in self.steps for rel in (plan.target, plan.history_rel, *(f.rel for f in plan.flags))}

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "request": {"path": self.request, "sha256": self.request_fingerprint, "pref": self.pref, "rid": self.rid},
            "resolver": self.resolver,
            "planned_at": self.planned_at,
            "base_commit": self.base_commit,
            "steps": [
                {"route": route, "target": plan.target, "sha256": plan.fingerprint, "plan": asdict(plan)}
                for plan, route in self.steps
            ],
            "ledger": self.ledger,
        }


def dumps(approved: Approved) -> str:
    return json.dumps(approved.to_dict(), ensure_ascii=True, indent=1, sort_keys=True) + "\n"


def loads(text: str) -> Approved:
    """An Approved from a plan file's text; PalinodeError naming what is wrong."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a palinode-audit plan file")
        if data.get("version") != VERSION:
            raise ValueError(f"plan file version {data.get('version')!r}; this release reads version {VERSION}")
        request = data["request"]
        steps = tuple((_plan(step["plan"]), _str(step["route"])) for step in data["steps"])
        ledger = data["ledger"]
        if not isinstance(ledger, dict) or not steps:
            raise ValueError("no approved step")
        return Approved(
            request=_str(request["path"]),
            request_fingerprint=_str(request["sha256"]),
            pref=_str(request["pref"]),
            rid=_str(request["rid"]),
            resolver=_str(data["resolver"]),
            planned_at=_str(data["planned_at"]),
            steps=steps,
            ledger=ledger,
            base_commit=data.get("base_commit") if isinstance(data.get("base_commit"), str) else None,
        )
    except KeyError as exc:
        raise PalinodeError(f"cannot read the plan file: the field {exc} is missing") from None
    except (TypeError, AttributeError):
        raise PalinodeError("cannot read the plan file: a field has the wrong shape (edited by hand?)") from None
    except ValueError as exc:
        raise PalinodeError(f"cannot read the plan file: {exc}") from None


def checked(store: Store, approved: Approved) -> Approved:
    """``approved`` once the store still holds what it was planned on and
    each step is what its operation makes (see the module's docstring)."""
    request = request_at(store, approved.request)
    if request.memory.fingerprint != approved.request_fingerprint or request.pref != approved.pref:
        raise StalePlan(f"{approved.request} changed since the plan was saved; plan it again")
    trailers = {"Forget-Request": approved.request, "Retraction-Id": approved.rid}
    for plan, route in approved.steps:  # what the operation itself does not make: checked here
        if _ROUTE_OF.get(plan.op) != route or plan.trailers != trailers or plan.superseded_by != approved.request:
            raise PalinodeError(
                f"the plan file's step for {plan.target} is not what a forget of {approved.request} writes "
                "(its route, commit trailers or successor were edited); nothing was changed"
            )
    when = datetime.fromisoformat(approved.planned_at)
    clock = store.clock
    store.clock = lambda: when  # the markers and subjects carry the plan's own date
    try:
        for plan, _route in approved.steps:
            rel, _ = store.resolve(plan.target)  # a memory of this store, or refused
            made = _remake(store, plan)
            if made.fingerprint != plan.fingerprint:
                raise StalePlan(f"{rel} changed since the plan was saved; plan it again")
            now, then = ({(f.rel, f.fingerprint) for f in p.flags} for p in (made, plan))
            if now != then:  # a memory citing the target was added, edited or removed since
                changed = ", ".join(sorted({r for r, _fp in now ^ then})[:5])
                raise StalePlan(
                    f"the memories citing {rel} changed since the plan was saved ({changed}); plan it again"
                )
            if _written(made) != _written(plan):
                raise PalinodeError(
                    f"the plan file's change to {rel} is not what its operation makes (edited by hand?); "
                    "nothing was changed"
                )
    finally:
        store.clock = clock
    return approved


def restamped(store: Store, approved: Approved) -> Approved:
    """Every step made again at the one time ``planned_at`` names: a plan's steps are
    made while it resolves, which may cross a minute (a history line's) or a day (a
    marker's) before it is approved, and the apply makes them again at that time."""
    when = datetime.fromisoformat(approved.planned_at)
    clock = store.clock
    store.clock = lambda: when
    try:
        steps = tuple((_remake(store, plan), route) for plan, route in approved.steps)
    finally:
        store.clock = clock
    for (made, _route), (plan, _r) in zip(steps, approved.steps, strict=True):
        if made.fingerprint != plan.fingerprint:  # never save what the reviewer did not see
            raise StalePlan(f"{plan.target} changed since it was planned; plan it again")
    return replace(approved, steps=steps)


def _written(plan: Plan) -> tuple[Any, ...]:
    """Everything a step writes: the file, its history line, the commit, the flags."""
    return (
        plan.new_text,
        plan.history_rel,
        plan.history_line,
        plan.commit_subject,
        plan.trailers,
        plan.flags,
        plan.flags_subject,
    )


def _remake(store: Store, plan: Plan) -> Plan:
    if plan.op == "archive":
        return lifecycle.plan_archive(
            store, plan.target, superseded_by=plan.superseded_by, reason=plan.reason, trailers=plan.trailers
        )
    if plan.op == "retract" and plan.pref is not None:
        return lifecycle.plan_retract(
            store,
            plan.target,
            plan.pref,
            superseded_by=plan.superseded_by,
            selected=set(plan.selected),
            trailers=plan.trailers,
            spans=plan.spans if plan.custom_spans else None,
            regions=plan.regions if plan.custom_spans else None,
        )
    raise PalinodeError(f"a plan file step may archive or retract, not {plan.op!r}")


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, found {type(value).__name__}")
    return value


def _plan(data: Any) -> Plan:
    if not isinstance(data, dict):
        raise TypeError("a step's plan is not an object")
    known = {f.name for f in fields(Plan)}
    values = {k: v for k, v in data.items() if k in known}
    values["trailers"] = {_str(k): _str(v) for k, v in dict(values.get("trailers") or {}).items()}
    values["field_changes"] = tuple(FieldChange(**c) for c in values.get("field_changes") or ())
    values["spans"] = tuple(Span(**s) for s in values.get("spans") or ())
    values["regions"] = tuple(Region(**r) for r in values.get("regions") or ())
    values["flags"] = tuple(Flag(**f) for f in values.get("flags") or ())
    values["selected"] = tuple(int(i) for i in values.get("selected") or ())
    for name in ("target", "old_text", "new_text", "fingerprint", "history_rel", "op", "status"):
        _str(values.get(name))
    return Plan(**values)
