"""archive / restore / retract / unretract, each a plan then an apply.

A plan is a plain value: the operation, the exact old and new text of the
target, the history line to append, the commit subject, and the fingerprint
of the bytes it was made from. ``apply`` re-checks that fingerprint, writes
atomically, appends the history line, and makes one pathspec commit; if the
commit fails, both files are put back as they were.
"""
from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from . import backing, journal
from .errors import GitError, PalinodeError, StalePlan
from .history import history_line, with_entry
from .markdown import Matcher, Region, Span, find_mentions, marker_for, strike, unstrike
from .paths import history_rel_for
from .store import Memory, Store
from .textio import atomic_write
from .words import normalize_pref, retraction_id

@dataclass(frozen=True)
class FieldChange:
    key: str
    before: Any
    after: Any  # None means the key is removed


@dataclass(frozen=True)
class Plan:
    op: str
    target: str
    status: str  # would_<op>, or Palinode's no-op status (already_archived, no_mentions, ...)
    old_text: str
    new_text: str
    fingerprint: str
    history_rel: str
    history_line: str | None = None
    commit_subject: str | None = None
    trailers: dict[str, str] = field(default_factory=dict)
    field_changes: tuple[FieldChange, ...] = ()
    pref: str | None = None
    rid: str | None = None
    mentions: int = 0
    spans: tuple[Span, ...] = ()  # every candidate span, chosen or not
    selected: tuple[int, ...] = ()  # indices of spans this plan strikes
    regions: tuple[Region, ...] = ()  # mentions striking cannot reach
    superseded_by: str | None = None
    reason: str | None = None
    body_line_offset: int = 0
    flags: tuple[backing.Flag, ...] = ()  # dependents flagged in a commit of their own, after this one
    flags_subject: str | None = None

    @property
    def changes(self) -> bool:
        return self.new_text != self.old_text

    def diff(self, context: int = 3) -> str:
        return "".join(difflib.unified_diff(
            self.old_text.splitlines(keepends=True), self.new_text.splitlines(keepends=True),
            fromfile=f"a/{self.target}", tofile=f"b/{self.target}", n=context))

    def to_dict(self, with_text: bool = False) -> dict[str, Any]:
        data: dict[str, Any] = {
            "op": self.op, "target": self.target, "status": self.status,
            "changes": self.changes, "fingerprint": self.fingerprint,
            "history_file": self.history_rel, "history_line": self.history_line,
            "commit_subject": self.commit_subject, "trailers": dict(self.trailers),
            "field_changes": [_jsonable(asdict(c)) for c in self.field_changes],
            "pref": self.pref, "rid": self.rid, "mentions": self.mentions,
            "spans": [_span_dict(s, s.index in self.selected, self.body_line_offset) for s in self.spans],
            "unforgotten": [_region_dict(r, self.body_line_offset) for r in self.regions],
            "diff": self.diff(),
            "dependents": [{"path": f.rel, "diff": "".join(difflib.unified_diff(
                f.old_text.splitlines(keepends=True), f.new_text.splitlines(keepends=True),
                fromfile=f"a/{f.rel}", tofile=f"b/{f.rel}"))} for f in self.flags],
            "dependents_subject": self.flags_subject,
        }
        if with_text:
            data.update(old_text=self.old_text, new_text=self.new_text)
        return data


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _span_dict(span: Span, selected: bool, offset: int) -> dict[str, Any]:
    return {"index": span.index, "kind": span.kind, "line": span.line + offset, "text": span.text,
            "multiline": span.multiline, "collateral": span.collateral, "selected": selected}


def _region_dict(region: Region, offset: int) -> dict[str, Any]:
    return {"kind": region.kind, "line": region.line + offset, "text": region.text}


@dataclass(frozen=True)
class Applied:
    plan: Plan
    commit: str | None
    history_rel: str
    flags_commit: str | None = None
    flags_error: str | None = None  # the flags were put back; the operation itself landed


# Fault-injection points, in order, for the reliability tests.
APPLY_STEPS = ("after_check", "after_file_write", "after_history_write", "before_commit")


def _subject(store: Store, text: str) -> str:
    return f"{store.config.commit_prefix} {text}"


def _base(store: Store, memory: Memory, op: str, status: str, **kw: Any) -> Plan:
    return Plan(op=op, target=memory.rel, status=status, old_text=memory.text,
                new_text=kw.pop("new_text", memory.text), fingerprint=memory.fingerprint,
                history_rel=history_rel_for(memory.rel), body_line_offset=memory.body_line_offset, **kw)


def _with_flags(store: Store, plan: Plan, op: str, reason: str) -> Plan:
    """Palinode flags the live dependents of a retired source (backing.py)."""
    from dataclasses import replace

    flags = backing.plan_flags(store, plan.target, op, reason)
    if not flags:
        return plan
    ref = backing.source_refs(plan.target)[-1]
    subject = _subject(store, f"backed_by review: {ref} {op} -> {len(flags)} dependent(s)")
    return replace(plan, flags=flags, flags_subject=subject)


def _reason_suffix(reason: str | None) -> str:
    return f" (reason: {reason})" if reason else ""


def plan_archive(store: Store, ref: str, superseded_by: str | None = None, reason: str | None = None,
                 actor: str | None = None, trailers: dict[str, str] | None = None) -> Plan:
    memory = store.load(ref)
    if superseded_by is not None:
        superseded_by, _ = store.resolve(superseded_by)
    if memory.archived:
        return _base(store, memory, "archive", "already_archived", superseded_by=superseded_by, reason=reason)
    updates: dict[str, Any] = {"status": "archived"}
    if superseded_by:
        updates["superseded_by"] = superseded_by
    actor_tail = f" [actor: {actor}]" if actor else ""
    if superseded_by:
        line_text = f"Superseded by {superseded_by}{_reason_suffix(reason)}{actor_tail}"
        subject = f"supersede: {memory.rel} -> {superseded_by}"
    else:
        line_text = f"Archived: {memory.rel}{_reason_suffix(reason)}{actor_tail}"
        subject = f"archive: {memory.rel}"
    if actor:
        subject += f" (actor: {actor})"
    return _with_flags(store, _base(
        store, memory, "archive", "would_archive", new_text=memory.doc.edit(updates),
        history_line=history_line(line_text, memory.fact_id, store.now()),
        commit_subject=_subject(store, subject), trailers=dict(trailers or {}),
        field_changes=tuple(FieldChange(k, memory.meta.get(k), v) for k, v in updates.items()),
        superseded_by=superseded_by, reason=reason), "supersede" if superseded_by else "archive", line_text)


def plan_restore(store: Store, ref: str, reason: str | None = None,
                 trailers: dict[str, str] | None = None) -> Plan:
    memory = store.load(ref)
    if not memory.archived:
        return _base(store, memory, "restore", "not_archived", reason=reason)
    successor = memory.superseded_by
    restored_at = store.now().isoformat()
    updates: dict[str, Any] = {"status": "active", "restored_from": successor or "archived",
                               "restored_at": restored_at}
    removed = ("superseded_by",) if "superseded_by" in memory.meta else ()
    was = f"was superseded by {successor}" if successor else "was archived"
    stale = backing.restore_checks(store, memory.meta)
    if stale:  # Palinode re-checks the memory's own backing on the way back
        updates[backing.FIELD] = [*backing.entries(memory.meta), *stale]
        was_tail = "; stale backing: " + ", ".join(e["ref"] for e in stale)
    else:
        was_tail = ""
    subject = f"restore: {memory.rel}" + (f" <- {successor}" if successor else "")
    changes = [FieldChange(k, memory.meta.get(k), v) for k, v in updates.items()]
    changes += [FieldChange(k, memory.meta.get(k), None) for k in removed]
    return _base(
        store, memory, "restore", "would_restore",
        new_text=memory.doc.edit(updates, delete_keys=removed),
        history_line=history_line(f"Restored: {memory.rel} ({was}){_reason_suffix(reason)}{was_tail}",
                                  memory.fact_id, store.now()),
        commit_subject=_subject(store, subject), trailers=dict(trailers or {}),
        field_changes=tuple(changes), superseded_by=successor, reason=reason)


def plan_retract(store: Store, ref: str, pref: str, superseded_by: str | None = None,
                 selected: set[int] | None = None, trailers: dict[str, str] | None = None) -> Plan:
    """Strike the sentences and list items of ``ref`` that carry ``pref``.
    ``selected`` narrows the strike to some of the candidate spans."""
    memory = store.load(ref)
    if superseded_by is not None:
        superseded_by, _ = store.resolve(superseded_by)
    norm = normalize_pref(pref)
    rid = retraction_id(pref)
    common = dict(pref=pref, rid=rid, superseded_by=superseded_by)
    matcher = Matcher.for_pref(pref)
    if norm in memory.retracted_prefs:
        return _base(store, memory, "retract", "already_retracted", **common)
    spans, regions = find_mentions(memory.body, matcher)
    if memory.is_replace_doc:
        lines = tuple(Region("replace_doc", s.line, s.text) for s in spans) + tuple(regions)
        return _base(store, memory, "retract", "replace_doc",
                     regions=lines or (Region("replace_doc", 0, "update_policy: replace"),), **common)
    if not spans:
        return _base(store, memory, "retract", "no_mentions", regions=tuple(regions), **common)
    chosen = [s for s in spans if selected is None or s.index in selected]
    if not chosen:
        return _base(store, memory, "retract", "nothing_selected", spans=tuple(spans),
                     regions=tuple(regions), **common)
    marker = marker_for(store.now().strftime("%Y-%m-%d"), rid)
    new_body = strike(memory.body, chosen, marker)
    raw_prefs = memory.meta.get("retracted_prefs")
    prefs = [*raw_prefs, norm] if isinstance(raw_prefs, list) else [norm]
    count = len(chosen)
    line_text = f'Retracted {count} mention(s) [r:{rid}]: "{pref}"'
    subject = f"retract: {memory.rel} ({count} mentions)"
    if superseded_by:
        line_text += f" \u2014 superseded by {superseded_by}"
        subject += f" <- {superseded_by}"
    return _with_flags(store, _base(
        store, memory, "retract", "would_retract",
        new_text=memory.doc.edit({"retracted_prefs": prefs}, body=new_body),
        history_line=history_line(line_text, memory.fact_id, store.now()),
        commit_subject=_subject(store, subject), trailers=dict(trailers or {}),
        field_changes=(FieldChange("retracted_prefs", raw_prefs, prefs),),
        mentions=count, spans=tuple(spans), selected=tuple(s.index for s in chosen),
        regions=tuple(regions), **common), "retract", f"retracted {count} mention(s) r:{rid}")


def plan_unretract(store: Store, ref: str, pref: str, reason: str | None = None,
                   trailers: dict[str, str] | None = None) -> Plan:
    memory = store.load(ref)
    norm = normalize_pref(pref)
    rid = retraction_id(pref)
    if norm not in memory.retracted_prefs:
        return _base(store, memory, "unretract", "not_retracted", pref=pref, rid=rid, reason=reason)
    new_body, count = unstrike(memory.body, rid)
    raw = memory.meta.get("retracted_prefs")
    remaining = [p for p in raw if p != norm] if isinstance(raw, list) else []
    if remaining:
        new_text = memory.doc.edit({"retracted_prefs": remaining}, body=new_body)
    else:
        new_text = memory.doc.edit(delete_keys=("retracted_prefs",), body=new_body)
    return _base(
        store, memory, "unretract", "would_unretract", new_text=new_text,
        history_line=history_line(
            f'Unretracted {count} mention(s) [r:{rid}]: "{pref}"{_reason_suffix(reason)}',
            memory.fact_id, store.now()),
        commit_subject=_subject(store, f"unretract: {memory.rel} ({count} mentions)"),
        trailers=dict(trailers or {}),
        field_changes=(FieldChange("retracted_prefs", raw, remaining or None),),
        pref=pref, rid=rid, mentions=count, reason=reason)


def plan_inverse(store: Store, plan: Plan, reason: str | None = None) -> Plan:
    """The undo of an applied plan, made against the file as it is now."""
    if plan.op == "archive":
        return plan_restore(store, plan.target, reason=reason)
    if plan.op == "restore":
        return plan_archive(store, plan.target, superseded_by=plan.superseded_by, reason=reason)
    if plan.op == "retract":
        return plan_unretract(store, plan.target, plan.pref or "", reason=reason)
    if plan.op == "unretract":
        return plan_retract(store, plan.target, plan.pref or "")
    raise PalinodeError(f"no inverse for {plan.op}")


def apply(store: Store, plan: Plan, fault: Callable[[str], None] | None = None,
          parent: str | None = None) -> Applied:
    """Write the plan and commit it, or refuse with nothing written.

    The intent is journaled first, so a crash at any point is found by
    ``integrity`` and repaired by ``recover``. ``fault`` is called at each of
    ``APPLY_STEPS`` (tests use it to simulate a crash or a full disk)."""
    store.check_writable()
    if not plan.changes:
        return Applied(plan, None, plan.history_rel)
    store.git.preflight()
    step = fault or (lambda _name: None)
    current, current_fp = store.read_optional(plan.target)
    if current_fp != plan.fingerprint:
        raise StalePlan(f"{plan.target} changed since this plan was made; re-plan before applying")
    history_before, _ = store.read_optional(plan.history_rel)
    history_after = with_entry(history_before, plan.history_line or "")
    _, target_abs = store.resolve(plan.target)
    _, history_abs = store.resolve(plan.history_rel)
    try:
        entry = journal.write_entry(store, {
            "kind": "apply", "op": plan.op, "target": plan.target, "history_rel": plan.history_rel,
            "old_text": plan.old_text, "new_text": plan.new_text, "history_before": history_before,
            "history_after": history_after, "subject": plan.commit_subject or plan.op, "trailers": plan.trailers,
            "parent": parent, "started_at": store.now().isoformat()})
    except OSError as exc:
        raise PalinodeError(f"could not write {plan.target}: {exc.strerror or exc}; nothing was changed") from None
    try:
        step("after_check")
        # re-check right before replacing: a writer may have slipped in since the first look
        if store.read_optional(plan.target)[1] != plan.fingerprint:
            raise StalePlan(f"{plan.target} changed while applying; nothing was written")
        atomic_write(target_abs, plan.new_text)
        step("after_file_write")
        atomic_write(history_abs, history_after)
        step("after_history_write")
        step("before_commit")
        if store.read_optional(plan.target)[0] != plan.new_text:
            # someone wrote the file after us: keep their bytes, take back only our history line
            restore_history(history_abs, history_before)
            journal.clear(entry)
            raise StalePlan(f"{plan.target} was changed by someone else while applying; their version was kept")
        sha = store.git.commit([plan.target, plan.history_rel], plan.commit_subject or plan.op, plan.trailers)
    except StalePlan:
        journal.clear(entry)
        raise
    except (GitError, OSError) as exc:
        try:
            restore_files(target_abs, plan.old_text, history_abs, history_before)
        except OSError as again:
            raise PalinodeError(f"{plan.target}: {exc}; putting the files back failed too ({again.strerror or again}); "
                                "the journal keeps the intent: run `palinode-audit recover`") from None
        journal.clear(entry)
        if isinstance(exc, OSError):
            raise PalinodeError(f"could not write {plan.target}: {exc.strerror or exc}; nothing was changed") from None
        raise
    journal.clear(entry)
    if plan.flags:
        flags_commit, flags_error = _apply_flags(store, plan)
        return Applied(plan, sha, plan.history_rel, flags_commit, flags_error)
    return Applied(plan, sha, plan.history_rel)


def _apply_flags(store: Store, plan: Plan) -> tuple[str | None, str | None]:
    """Write and commit the dependents' flags, best effort as Palinode does:
    the operation has landed and is never failed by its side effect. A
    dependent changed since the plan is skipped; a failed commit puts the
    written flags back."""
    written = []
    try:
        for flag in plan.flags:
            if store.read_optional(flag.rel)[1] != flag.fingerprint:
                continue
            _, abs_path = store.resolve(flag.rel)
            atomic_write(abs_path, flag.new_text)
            written.append((flag, abs_path))
        if not written:
            return None, None
        subject = (plan.flags_subject or "").replace(f"-> {len(plan.flags)} dependent", f"-> {len(written)} dependent")
        return store.git.commit([f.rel for f, _ in written], subject, plan.trailers), None
    except (GitError, OSError) as exc:
        for flag, abs_path in written:
            try:
                atomic_write(abs_path, flag.old_text)
            except OSError:
                pass
        return None, f"dependents were not flagged: {exc}"


def restore_history(history_abs: Path, history_before: str | None) -> None:
    """The history sibling as it was: removed if it did not exist."""
    if history_before is None:
        history_abs.unlink(missing_ok=True)
    elif not history_abs.exists() or history_abs.read_text(encoding="utf-8") != history_before:
        atomic_write(history_abs, history_before)


def restore_files(target_abs: Path, old_text: str, history_abs: Path, history_before: str | None) -> None:
    """Put a target and its sibling back; skips what was never replaced (a failed atomic write)."""
    if not target_abs.exists() or target_abs.read_text(encoding="utf-8") != old_text:
        atomic_write(target_abs, old_text)
    restore_history(history_abs, history_before)
