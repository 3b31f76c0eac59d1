"""A reviewed forget plan as a value and as a file (``plan --out``): what
``apply --plan`` executes, exactly, without planning again.

The file names the request and the SHA-256 of its file, the base commit, and
each approved step whole: the target, the SHA-256 of its bytes when planned,
and the bytes the step writes (docs/plan-file.md). A plan file is checked whole
before anything is written: ``loads`` refuses any field it does not know, of
the wrong type, nested too deep or too large; ``checked`` holds it against the
store as it is: the request and every target byte-for-byte what was planned
(else: stale, re-plan), every path spelled as the store names it, no target
committed to since the base commit (an undone strike is not applied again),
every step what its operation makes from its own choices (the operation, the
spans chosen, the plan's date), field by field, each target carrying the
request's preference, and the ledger fields consistent with the steps. A file
edited by hand, or forged, is refused with one line, never written."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import MISSING, asdict, dataclass, fields, replace
from datetime import datetime, timedelta
from typing import Any, cast

from ..errors import PalinodeError, StalePlan, UnreadableMemory
from ..ops import lifecycle
from ..ops.apply import refuse_misspelled
from ..ops.backing import Flag
from ..ops.plan import FieldChange, Plan
from ..storage.gitstore import GitCommandFailed
from ..storage.paths import spelled_on_disk
from ..storage.records import OPERATION_KINDS, LedgerRecord
from ..storage.store import Store
from ..text.markdown import Region, Span
from ..text.stem import counted_stems, stems
from ..text.units import item_sentence_texts, memory_units
from ..text.words import content_words, retraction_id
from .evidence import WEAK_NEAR
from .leak import _cached_similarities
from .requests import Request, request_at

FORMAT = "palinode-audit.forget-plan"
# a step's operation and the route it is shown as
_ROUTE_OF: dict[str, str] = {k.plans_as: k.route for k in OPERATION_KINDS.values() if k.route is not None}
VERSION = 1
RESOLVERS = ("palinode", "thorough")
SEARCH_MODES = ("hybrid", "lexical")
TARGET_ROUTES = ("archive", "strike", "unforgotten")  # the routes of a plan's targets (ForgetPlan.targets)
KNOBS = {"search_k": int, "min_shared_words": int, "max_targets": int, "min_target_coverage": float}
MAX_DEPTH = 24  # a plan file nests 6 deep; a frontmatter value in a field change may nest a little more
MAX_ITEMS = 100_000  # steps, targets, spans, flags: each list of a plan file
MAX_WORDS = 4_000  # characters of a ledger note or a target's reason
CLOCK_SKEW = timedelta(days=1)  # a plan dated later than this after now was not planned on any clock
_SHA_RE = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")  # a commit, SHA-1 or SHA-256
_SHA256_RE = re.compile(r"[0-9a-f]{64}")


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
    ledger: LedgerRecord  # the decision's own fields: knobs, search_mode, targets, rejected, deferred, note
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


class _Malformed(ValueError):
    """What is wrong with a plan file, in words (becomes one PalinodeError line)."""


def loads(text: str) -> Approved:
    """An Approved from a plan file's text, every field checked for its type,
    depth and size; PalinodeError naming what is wrong."""
    try:
        data = json.loads(text)
    except RecursionError:
        raise PalinodeError("cannot read the plan file: it is nested far deeper than any plan file") from None
    except ValueError as exc:
        raise PalinodeError(f"cannot read the plan file: not JSON ({exc})") from None
    try:
        _depth(data)
        return _approved(data)
    except _Malformed as exc:
        raise PalinodeError(f"cannot read the plan file: {exc}") from None


def _depth(data: Any) -> None:
    """Refuse nesting past MAX_DEPTH, without recursion (a list of lists is walked level by level)."""
    level, depth = [data], 0
    while level:
        depth += 1
        if depth > MAX_DEPTH:
            raise _Malformed(f"it nests deeper than {MAX_DEPTH} levels")
        level = [
            child
            for item in level
            if isinstance(item, (dict, list))
            for child in (item.values() if isinstance(item, dict) else item)
            if isinstance(child, (dict, list))
        ]


Check = Callable[[Any, str], Any]


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _Malformed(f"{where} is not text")
    return value


def _int(value: Any, where: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Malformed(f"{where} is not a whole number")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise _Malformed(f"{where} is not true or false")
    return value


def _number(value: Any, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < float("inf"):
        raise _Malformed(f"{where} is not a number")
    return value


def _any(value: Any, where: str) -> Any:
    return value  # a frontmatter value as it was (depth already bounded)


def _optional(check: Check) -> Check:
    return lambda value, where: None if value is None else check(value, where)


def _short(check: Check) -> Check:
    def short(value: Any, where: str) -> Any:
        if len(check(value, where)) > MAX_WORDS:
            raise _Malformed(f"{where} is longer than {MAX_WORDS} characters")
        return value

    return short


def _sha256(value: Any, where: str) -> str:
    if not _SHA256_RE.fullmatch(_text(value, where)):
        raise _Malformed(f"{where} is not a SHA-256")
    return value


def _one_of(*allowed: str) -> Check:
    def one_of(value: Any, where: str) -> str:
        if value not in allowed:
            raise _Malformed(f"{where} is {str(value)[:40]!r}, not one of {', '.join(allowed)}")
        return str(value)

    return one_of


def _path(value: Any, where: str) -> str:
    """A store path spelled as the store names its files: no ``.``/``..`` or empty
    segment, no leading or trailing slash, no backslash, no control character."""
    rel = _text(value, where)
    if not rel or rel.startswith("~") or any(seg in ("", ".", "..") for seg in rel.split("/")):
        raise _Malformed(f"{where} {rel[:200]!r} is not a path as the store spells it")
    if "\\" in rel or any(ord(c) < 0x20 or c == "\x7f" for c in rel):
        raise _Malformed(f"{where} {rel[:200]!r} holds a backslash or a control character")
    return rel


def _list(check: Check) -> Check:
    def items(value: Any, where: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise _Malformed(f"{where} is not a list")
        if len(value) > MAX_ITEMS:
            raise _Malformed(f"{where} holds more than {MAX_ITEMS} items")
        return tuple(check(item, f"{where}[{i}]") for i, item in enumerate(value))

    return items


def _object(
    data: Any, where: str, required: dict[str, Check], optional: dict[str, Check] | None = None
) -> dict[str, Any]:
    """The fields of a JSON object: each required one present, none unknown, each checked."""
    if not isinstance(data, dict):
        raise _Malformed(f"{where} is not an object")
    optional = optional or {}
    missing = sorted(set(required) - set(data))
    if missing:
        raise _Malformed(f"{where} has no field {missing[0]!r}")
    unknown = sorted(set(data) - set(required) - set(optional))
    if unknown:
        raise _Malformed(f"{where} has a field this release does not know: {unknown[0][:40]!r}")
    checks = {**required, **optional}
    return {key: checks[key](value, f"{where}.{key}" if where else key) for key, value in data.items()}


def _record(cls: type, kinds: dict[str, Check]) -> Check:
    """A dataclass from a JSON object holding exactly its fields (those with a default may be left out)."""
    names = {f.name for f in fields(cls)}
    assert names == set(kinds), cls  # every field has a check
    required = {f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING}
    return lambda value, where: cls(
        **_object(
            value,
            where,
            {k: c for k, c in kinds.items() if k in required},
            {k: c for k, c in kinds.items() if k not in required},
        )
    )


_SPAN = _record(
    Span,
    {
        "index": _int,
        "kind": _text,
        "start": _int,
        "end": _int,
        "replace_end": _int,
        "text": _text,
        "fact_comment": _text,
        "line": _int,
        "multiline": _bool,
        "collateral": _optional(_text),
    },
)
_REGION = _record(Region, {"kind": _text, "line": _int, "text": _text})
_FLAG = _record(Flag, {"rel": _path, "old_text": _text, "new_text": _text, "fingerprint": _sha256})
_FIELD_CHANGE = _record(FieldChange, {"key": _text, "before": _any, "after": _any})


def _trailers(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise _Malformed(f"{where} is not an object")
    return {_text(k, f"{where} key"): _text(v, f"{where}.{k}") for k, v in value.items()}


_PLAN = _record(
    Plan,
    {
        "op": _one_of(*_ROUTE_OF),
        "target": _path,
        "status": _text,
        "old_text": _text,
        "new_text": _text,
        "fingerprint": _sha256,
        "history_rel": _path,
        "history_line": _optional(_text),
        "commit_subject": _optional(_text),
        "trailers": _trailers,
        "field_changes": _list(_FIELD_CHANGE),
        "pref": _optional(_text),
        "rid": _optional(_text),
        "mentions": _int,
        "spans": _list(_SPAN),
        "selected": _list(_int),
        "regions": _list(_REGION),
        "superseded_by": _optional(_path),
        "reason": _optional(_text),
        "body_line_offset": _int,
        "flags": _list(_FLAG),
        "flags_subject": _optional(_text),
        "custom_spans": _bool,
    },
)


def _step(value: Any, where: str) -> tuple[Plan, str]:
    step = _object(
        value, where, {"route": _one_of(*_ROUTE_OF.values()), "target": _path, "sha256": _sha256, "plan": _PLAN}
    )
    plan: Plan = step["plan"]
    if (step["target"], step["sha256"]) != (plan.target, plan.fingerprint):
        raise _Malformed(f"{where} names {step['target']!r} but its plan changes {plan.target!r} (edited by hand?)")
    return plan, step["route"]


_LEDGER_TARGET = {
    "path": _path,
    "rank": _int,
    "route": _one_of(*TARGET_ROUTES),
    "shared_words": _list(_short(_text)),
    "coverage": _optional(_number),
    "reason": _short(_text),
}


def _ledger(value: Any, where: str) -> LedgerRecord:
    ledger = _object(
        value,
        where,
        {
            "knobs": lambda v, w: _object(v, w, {k: _int if t is int else _number for k, t in KNOBS.items()}),
            "search_mode": _one_of(*SEARCH_MODES),
            "targets": _list(lambda v, w: _object(v, w, _LEDGER_TARGET)),
            "rejected": _list(_path),
            "deferred": _list(_path),
            "note": _optional(_short(_text)),
            "failed": _list(_any),
        },
    )
    if ledger["failed"]:
        raise _Malformed(f"{where}.failed is not empty: a plan not applied yet has no failure")
    return cast(LedgerRecord, dict(value))  # as the file holds it (checked above): lists kept as written


def _approved(data: Any) -> Approved:
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise _Malformed("not a palinode-audit plan file")
    if data.get("version") != VERSION:
        raise _Malformed(f"plan file version {str(data.get('version'))[:20]!r}; this release reads version {VERSION}")
    top = _object(
        data,
        "",
        {
            "format": _text,
            "version": _int,
            "request": lambda v, w: _object(v, w, {"path": _path, "sha256": _sha256, "pref": _text, "rid": _text}),
            "resolver": _one_of(*RESOLVERS),
            "planned_at": _text,
            "base_commit": _optional(_text),
            "steps": _list(_step),
            "ledger": _ledger,
        },
    )
    request = top["request"]
    if request["rid"] != retraction_id(request["pref"]):
        raise _Malformed("its request's rid is not the id of its preference")
    if top["base_commit"] is not None and not _SHA_RE.fullmatch(top["base_commit"]):
        raise _Malformed("its base_commit is not a commit id")
    try:
        when = datetime.fromisoformat(top["planned_at"])
    except ValueError:
        raise _Malformed("its planned_at is not an ISO 8601 time") from None
    if when.tzinfo is None:
        raise _Malformed("its planned_at has no time zone")
    if not top["steps"]:
        raise _Malformed("no approved step")
    return Approved(
        request=request["path"],
        request_fingerprint=request["sha256"],
        pref=request["pref"],
        rid=request["rid"],
        resolver=top["resolver"],
        planned_at=top["planned_at"],
        steps=top["steps"],
        ledger=top["ledger"],
        base_commit=top["base_commit"],
    )


def checked(store: Store, approved: Approved, index: Any = None) -> Approved:
    """``approved`` once the store still holds what it was planned on and
    each step is what its operation makes (see the module's docstring).
    ``index``: the search index whose cached sentence vectors may show a
    target near the preference in meaning (never loads the model)."""
    request = _request(store, approved)
    _refuse_inconsistent(store, approved)
    when = datetime.fromisoformat(approved.planned_at)
    if when > store.now() + CLOCK_SKEW:
        raise PalinodeError(
            f"the plan file is dated {approved.planned_at}, after today: it was never planned; nothing was changed"
        )
    clock = store.clock
    store.clock = lambda: when  # the markers and subjects carry the plan's own date
    try:
        for plan, _route in approved.steps:
            rel = plan.target
            try:
                made = _remake(store, plan)
            except UnreadableMemory as exc:
                raise StalePlan(
                    f"{rel} is not a readable memory now ({exc}): it changed since the plan was saved; plan it again"
                ) from None
            if made.fingerprint != plan.fingerprint:
                raise StalePlan(f"{rel} changed since the plan was saved; plan it again")
            now, then = ({(f.rel, f.fingerprint) for f in p.flags} for p in (made, plan))
            if now != then:  # a memory citing the target was added, edited or removed since
                changed = ", ".join(sorted({r for r, _fp in now ^ then})[:5])
                raise StalePlan(
                    f"the memories citing {rel} changed since the plan was saved ({changed}); plan it again"
                )
            if made != plan:  # every field, the file's text before the change included
                wrong = next(f.name for f in fields(Plan) if getattr(made, f.name) != getattr(plan, f.name))
                raise PalinodeError(
                    f"the plan file's change to {rel} is not what its operation makes (its {wrong} differs: edited "
                    "by hand?); nothing was changed"
                )
            _refuse_unrelated(store, request, plan, index)
    finally:
        store.clock = clock
    _refuse_moved_since(store, approved)
    return approved


def _request(store: Store, approved: Approved) -> Request:
    refuse_misspelled(store, approved.request)
    if not spelled_on_disk(store.root, approved.request):
        raise PalinodeError(f"{approved.request!r} is not spelled as the store names it; nothing was changed")
    try:
        request = request_at(store, approved.request)
    except UnreadableMemory as exc:
        raise StalePlan(f"{approved.request} is not a readable memory now ({exc}); plan it again") from None
    if request.memory.fingerprint != approved.request_fingerprint or request.pref != approved.pref:
        raise StalePlan(f"{approved.request} changed since the plan was saved; plan it again")
    return request


def _refuse_inconsistent(store: Store, approved: Approved) -> None:
    """What the operations do not make, checked against the request and the ledger fields."""
    trailers = {"Forget-Request": approved.request, "Retraction-Id": approved.rid}
    reason = f'forget request: "{approved.pref}"'  # every resolver's archive reason
    seen: set[str] = set()
    for plan, route in approved.steps:
        refuse_misspelled(store, plan.target)
        if not spelled_on_disk(store.root, plan.target):
            raise PalinodeError(f"{plan.target!r} is not spelled as the store names it; nothing was changed")
        if plan.target == approved.request or plan.target in seen:
            raise PalinodeError(
                f"the plan file changes {plan.target} twice, or the request itself (made by hand?); nothing was changed"
            )
        seen.add(plan.target)
        mine = (plan.pref, plan.rid) == (approved.pref, approved.rid) if plan.op == "retract" else plan.reason == reason
        if (
            _ROUTE_OF.get(plan.op) != route
            or plan.trailers != trailers
            or plan.superseded_by != approved.request
            or not mine
        ):
            raise PalinodeError(
                f"the plan file's step for {plan.target} is not what a forget of {approved.request} writes "
                "(its route, preference, reason, commit trailers or successor were edited); nothing was changed"
            )
    ledger = approved.ledger
    routes = {t["path"]: t["route"] for t in ledger["targets"]}
    listed = [t["path"] for t in ledger["targets"]]
    left = [*ledger["rejected"], *ledger["deferred"]]
    if (
        len(set(listed)) != len(listed)
        or any(routes.get(plan.target) != route for plan, route in approved.steps)
        or len(set(left)) != len(left)
        or set(left) & seen
        or not set(left) <= set(routes)
    ):
        raise PalinodeError(
            "the plan file's ledger fields do not match its steps (each target listed once with its route; "
            "what was rejected or deferred, a listed target that is not applied); nothing was changed"
        )


def _refuse_unrelated(store: Store, request: Request, plan: Plan, index: Any) -> None:
    """A step acts only where the request's preference is: an archived memory
    shares one of its words or is near it in meaning, and so does every
    sentence a resolver's own spans strike (Palinode's walker finds only
    sentences carrying it). Meaning is read from cached vectors only."""
    if plan.op == "retract" and not plan.custom_spans:
        return
    memory = store.load(plan.target)
    units = memory_units(memory.body, memory.meta)
    hint = "(a plan made with vectors is checked with them: run `palinode-audit index` first)"
    if plan.op == "archive":
        if not _carries(request, [u.text for u in units], [u.text for u in units], index):
            raise PalinodeError(
                f'the plan file archives {plan.target}, which shares no word with "{request.pref}" and is near it '
                f"in meaning by no cached sentence vector; nothing was changed {hint}"
            )
        return
    for span in (s for s in plan.spans if s.index in plan.selected):
        around = [u.text for u in units if u.span is not None and u.span.start <= span.start and span.end <= u.span.end]
        if not _carries(request, [span.text], [span.text, *around], index):
            raise PalinodeError(
                f'the plan file strikes {span.text[:80]!r} in {plan.target}, which shares no word with "{request.pref}" '
                f"and is near it in meaning by no cached sentence vector; nothing was changed {hint}"
            )


def _carries(request: Request, worded: list[str], meant: list[str], index: Any) -> bool:
    """A word of the preference in ``worded`` (its content words, or its stems inflected), or one
    of ``meant`` (a list item's own sentences too) as near it as the weakest proposal is."""
    words, word_stems = content_words(request.pref), stems(request.pref)
    if any(words & content_words(t) or word_stems & counted_stems(t) for t in worded):
        return True
    near = [t for text in meant for t in (text, *item_sentence_texts(text))]
    return any(s is not None and s >= WEAK_NEAR for s in _cached_similarities(index, request.pref, near) or ())


def _refuse_moved_since(store: Store, approved: Approved) -> None:
    """The plan's base commit is in this clone's history and no commit since it
    touched a target or the request: a strike undone since (its bytes back as
    planned) is not struck again by the same file."""
    if not store.git.available:
        return
    base = approved.base_commit
    if base is None:
        raise PalinodeError("the plan file names no base commit (made by hand?); plan it again; nothing was changed")
    try:
        store.git.run("merge-base", "--is-ancestor", base, "HEAD", read=True)
    except GitCommandFailed:
        raise StalePlan(
            f"the plan was made on commit {base[:12]}, which this clone's history does not hold: "
            "sync, or plan it again; nothing was changed"
        ) from None
    paths = sorted({approved.request, *(plan.target for plan, _ in approved.steps)})
    moved = store.git.run("rev-list", "-n1", f"{base}..HEAD", "--", *paths, read=True).strip()
    if moved:
        raise StalePlan(
            f"a commit since the plan was made ({moved[:12]}) changed what it targets: an apply, an undo or "
            "an edit; plan it again; nothing was changed"
        )


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
