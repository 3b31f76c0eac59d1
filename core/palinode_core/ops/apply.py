"""Apply a plan: re-check, journal the intent, write atomically, append the
history line, make one commit of exactly the memory and its sibling; on any
failure put both files back."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from ..errors import GitError, PalinodeError, StalePlan
from ..storage.store import Store
from ..storage.textio import atomic_write
from ..text.history import with_entry
from . import journal
from .plan import Applied, Plan

# Fault-injection points, in order, for the reliability tests.
APPLY_STEPS = ("after_check", "after_file_write", "after_history_write", "before_commit")


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
