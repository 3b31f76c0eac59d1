"""Apply a plan: re-check, journal the intent, write atomically, append the
history line, make one commit of exactly the memory and its sibling; on any
failure put both files back, and git's index too.

``commit_files`` is the one write-and-commit path (a plan's two files, or the
ledger): under the store's writer lock, it records each path's index entry
before anything is staged, journals the whole intent, and afterwards decides
success from what HEAD really holds, never from git's wording."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import GitError, PalinodeError, PathError, StalePlan, UncommittedEdits, UnreadableMemory
from ..storage import safeio
from ..storage.gitparse import blob_id
from ..storage.gitstore import GitCommandFailed
from ..storage.records import CommitIntent, FileIntent, step_op_id
from ..storage.store import Store
from ..storage.textio import atomic_write
from ..text.history import with_entry
from . import journal
from .journal import Recovered, in_head
from .lock import git_locks, writer_lock
from .plan import Applied, Plan
from .subjects import OP_ID_TRAILER

# Fault-injection points, in order, for the reliability tests.
APPLY_STEPS = ("after_check", "after_file_write", "after_history_write", "before_commit")
Fault = Callable[[str], None]


def _nothing(_name: str) -> None:
    return None


def apply(
    store: Store,
    plan: Plan,
    fault: Fault | None = None,
    parent: str | None = None,
    on_commit: Callable[[str | None], None] | None = None,
    step_index: int | None = None,
) -> Applied:
    """Write the plan and commit it, or refuse with nothing written.

    The intent is journaled first, so a crash at any point is found by
    ``integrity`` and repaired by ``recover``. ``fault`` is called at each of
    ``APPLY_STEPS`` and at ``after_commit`` (tests simulate a crash or a full
    disk there). ``on_commit`` hears the commit before the journal entry goes,
    so a caller's own journal never lags behind a commit."""
    store.check_writable()
    if not plan.changes:
        return Applied(plan, None, plan.history_rel)
    store.git.preflight()
    with writer_lock(store):
        # what a failure puts back is what was read here, under the lock: never bytes a plan carries
        (target_before,) = refuse_stale(store, [plan])
        refuse_uncommitted(store, [plan])  # again: the lock holds off our writers, not an editor or a script
        history_before, _ = read_or_refuse(store, plan.history_rel, plan.target)
        history_after = with_entry(history_before, plan.history_line or "")
        files = [
            FileIntent(plan.target, target_before, plan.new_text),
            FileIntent(plan.history_rel, history_before, history_after),
        ]
        intent = CommitIntent(
            kind="apply",
            op=plan.op,
            target=plan.target,
            history_rel=plan.history_rel,
            subject=plan.commit_subject or plan.op,
            trailers=plan.trailers,
            parent=parent,
            step=step_index,
            op_id=step_op_id(parent, step_index) if parent and step_index is not None else None,
        )
        sha = commit_files(
            store,
            intent,
            files,
            fault,
            on_commit,
            recheck=lambda: store.read_optional(plan.target)[1] == plan.fingerprint,
        )
        if plan.flags:
            flags_commit, flags_error = _apply_flags(store, plan)
            return Applied(plan, sha, plan.history_rel, flags_commit, flags_error)
    return Applied(plan, sha, plan.history_rel)


def read_or_refuse(store: Store, rel: str, target: str) -> tuple[str | None, str | None]:
    """A file's text and fingerprint (None when absent), or one line saying ``target`` was not changed."""
    try:
        return store.read_optional(rel)
    except OSError as exc:
        raise PalinodeError(
            f"cannot read {exc.filename or rel}: {exc.strerror or exc}; {target} was not changed"
        ) from None
    except UnreadableMemory as exc:  # bytes that are no text file: say which file, and that nothing was written
        raise PalinodeError(f"{rel} cannot be read as a memory ({exc}); {target} was not changed") from None


def refuse_stale(store: Store, plans: list[Plan]) -> list[str]:
    """Each plan's file as it is now, or a refusal when it changed since the plan
    was made, or when the plan's own copy of it is not those bytes (nothing is written)."""
    texts = []
    for plan in plans:
        refuse_misspelled(store, plan.target)
        current, current_fp = read_or_refuse(store, plan.target, plan.target)
        if current is None or current_fp != plan.fingerprint:
            raise StalePlan(f"{plan.target} changed since this plan was made; re-plan before applying")
        if current != plan.old_text:  # a plan made by hand: its text and its fingerprint disagree
            raise PalinodeError(
                f"the plan's text of {plan.target} is not the file its fingerprint names (made by hand?); "
                "nothing was changed"
            )
        texts.append(current)
    return texts


def refuse_misspelled(store: Store, rel: str) -> None:
    """A path as the store spells it, or a refusal: ``a/./b.md``, ``a//b.md`` or ``b.md/`` names
    the same file, but git records, history lines and undo would each read it differently."""
    canonical, _ = store.resolve(rel)
    if canonical != rel:
        raise PathError(f"{rel!r} is not spelled as the store names it ({canonical!r}); nothing was changed")


def uncommitted_files(store: Store, plans: list[Plan]) -> list[str]:
    """The files these plans would commit (each target and its history sibling)
    that hold someone's own uncommitted edits."""
    return store.git.uncommitted(sorted({rel for plan in plans for rel in (plan.target, plan.history_rel)}))


def refuse_uncommitted(store: Store, plans: list[Plan]) -> None:
    """Never commit someone's own edits under our subject."""
    dirty = uncommitted_files(store, plans)
    if dirty and any(not i.live for i in journal.pending(store)):
        # a cut-short apply left these files half-done: they are ours to repair, not the person's to commit
        raise UncommittedEdits(
            f"{', '.join(dirty)} differ from the last commit and an interrupted operation is on record: "
            "recover it first (palinode-audit recover); nothing was changed"
        )
    if dirty and not _has_commit(store):
        raise UncommittedEdits(
            "the store's git repository has no commit yet: commit its memories first "
            "(git add -A && git commit -m memories); nothing was changed"
        )
    if dirty:
        raise UncommittedEdits(f"commit or stash your edits to {', '.join(dirty)} first; nothing was changed")


def _refuse_marked(files: Sequence[FileIntent], index: dict[str, list[str]], tags: dict[str, str]) -> None:
    """An index entry git is told not to look at: skip-worktree (git will not stage it), or
    assume-unchanged holding an edit `git status` does not report (it would be committed as ours)."""
    skipped = [f.rel for f in files if tags.get(f.rel, "").upper() == "S"]  # "s": also assume-unchanged
    if skipped:
        raise UncommittedEdits(
            f"{', '.join(skipped)} marked skip-worktree (outside a sparse checkout): git will not stage it; "
            "unmark it first; nothing was changed"
        )
    hidden = []
    for f in files:
        entry = index.get(f.rel)
        if entry is None or tags.get(f.rel) == "H" or entry[2] != "0":
            continue
        text = f.before
        # as git's own line-ending conversion (core.autocrlf, eol) would store it
        if entry[1] not in (blob_id(text, entry[1]), blob_id(text and text.replace("\r\n", "\n"), entry[1])):
            hidden.append(f.rel)
    if hidden:
        raise UncommittedEdits(
            f"{', '.join(hidden)} differ from the last commit but are marked assume-unchanged, so git status "
            "does not say so: commit, stash or unmark them first; nothing was changed"
        )


def _has_commit(store: Store) -> bool:
    try:
        return bool(store.git.run("rev-parse", "--verify", "-q", "HEAD", read=True).strip())
    except GitCommandFailed:  # an unborn HEAD
        return False


def _apply_flags(store: Store, plan: Plan) -> tuple[str | None, str | None]:
    """Write and commit the dependents' flags, best effort as Palinode does:
    the operation has landed and is never failed by its side effect. A
    dependent changed since the plan is skipped; a failed commit puts the
    written flags back (index included), journaled like any commit."""
    try:
        # a dependent as read now, and only when the plan's copy is those very bytes (put back on failure)
        todo = [f for f in plan.flags if store.read_optional(f.rel) == (f.old_text, f.fingerprint)]
        dirty = set(store.git.uncommitted([f.rel for f in todo]))  # a dependent with the user's edits is left alone
        todo = [f for f in todo if f.rel not in dirty]
    except OSError as exc:
        return None, f"dependents were not flagged: {exc.strerror or exc}"
    except PalinodeError as exc:  # git refused, or a dependent is no longer a readable memory
        return None, f"dependents were not flagged: {exc}"
    if not todo:
        return None, None
    subject = (plan.flags_subject or "").replace(f"-> {len(plan.flags)} dependent", f"-> {len(todo)} dependent")
    files = [FileIntent(f.rel, f.old_text, f.new_text) for f in todo]
    try:
        intent = CommitIntent(
            kind="flags", op="flag dependents of", target=plan.target, subject=subject, trailers=plan.trailers
        )
        return commit_files(store, intent, files, None), None
    except PalinodeError as exc:
        return None, f"dependents were not flagged: {exc}"


def commit_files(
    store: Store,
    intent: CommitIntent,
    files: Sequence[FileIntent],
    fault: Fault | None,
    on_commit: Callable[[str | None], None] | None = None,
    recheck: Callable[[], bool] | None = None,
    steps: tuple[str, ...] = ("after_file_write", "after_history_write"),
) -> str | None:
    """Journal ``intent`` (what the commit is), write ``files`` in order,
    commit exactly them.

    The caller holds the writer lock. Returns the commit, or None when the
    change was already in HEAD (someone else committed our bytes). On failure
    the files and their index entries are as they were, and the error says so."""
    step = fault or _nothing
    rels = [f.rel for f in files]
    name = intent.target or rels[0]
    for rel in rels:
        refuse_misspelled(store, rel)
    abs_paths = [store.resolve(rel)[1] for rel in rels]
    try:
        index_before, tags = store.git.index_state(rels)
        _refuse_marked(files, index_before, tags)
        # The id travels in the commit, so a record names the operation whatever its sha becomes
        # after a rebase; journaled with the message, so a recovered commit carries the same id.
        at = store.now().isoformat()
        op_id = intent.op_id or new_op_id(intent.kind, at, files, index_before)
        intent = replace(
            intent,
            op_id=op_id,
            trailers={**intent.trailers, OP_ID_TRAILER: op_id},
            files=tuple(files),
            index_before=index_before,
            started_at=store.now().isoformat(),
        )
        intent, entry = journal.write_entry(store, intent)
    except OSError as exc:
        raise PalinodeError(f"could not write {name}: {exc.strerror or exc}; nothing was changed") from None
    try:
        step("after_check")
        # re-check right before replacing: a writer may have slipped in since the first look
        if recheck is not None and not recheck():
            raise StalePlan(f"{name} changed while applying; nothing was written")
        for number, (f, path) in enumerate(zip(files, abs_paths, strict=True)):
            if f.after is not None:
                atomic_write(path, f.after)
            step(steps[number] if number < len(steps) else f"after_write_{number}")
        step("before_commit")
        if store.read_optional(rels[0])[0] != files[0].after:
            # someone wrote the file after us: keep their bytes, take back only the rest
            put_back(store, files[1:], index_before)
            raise StalePlan(f"{name} was changed by someone else while applying; their version was kept")
        # a plain index entry is committed from the worktree with no `git add` first
        add_first = [rel for rel in rels if tags.get(rel) != "H" or index_before[rel][2] != "0"]
        subject = intent.subject or str(intent.op)
        sha = store.git.commit(rels, subject, intent.trailers, add_first=add_first)
        committed = in_head(store, files, store.git.head_after_commit)
        for _ in range(2):
            if committed:
                break
            # a rival (a reset, a checkout) reverted part of our write between the check and git reading
            # the files: write what it took again and commit that too, so HEAD holds the whole change
            currents = [store.read_optional(f.rel)[0] for f in files]
            if any(c not in (f.before, f.after) for c, f in zip(currents, files, strict=True)):
                break  # a stranger's bytes, not a revert: never written over
            for f, path, current in zip(files, abs_paths, currents, strict=True):
                if f.after is not None and current != f.after:
                    atomic_write(path, f.after)
            sha = store.git.commit(rels, subject, intent.trailers) or sha
            committed = in_head(store, files, store.git.head_after_commit)
        if not committed:
            raise GitError(f"another process kept changing {name} while it was committed")
    except StalePlan:
        journal.clear(entry)
        raise
    except (GitError, OSError) as exc:
        if in_head(store, files):
            sha = None  # git failed after the commit existed, or a rival committed our bytes: it is done
        else:
            try:
                undone = put_back(store, files, index_before, f"palinode-audit: put back {name} (its commit failed)")
            except (GitError, OSError) as again:
                raise PalinodeError(
                    f"{_reason(exc, name)}; putting it back failed too ({_reason(again, name)}); "
                    "the journal keeps the intent: run `palinode-audit recover`"
                ) from None
            journal.clear(entry)
            outcome = (
                f"a rival had committed part of it, so it was put back in commit {undone[:7]}"
                if undone
                else "nothing was changed"
            )
            held = _held_git_lock(store) if isinstance(exc, GitError) else None
            if held:  # GitStore.commit already waited and retried: say so, and that trying again is safe
                raise PalinodeError(
                    f"{name} not committed: git stayed busy (another git process holds {held}); "
                    f"{outcome}; try again when it has finished"
                ) from None
            raise PalinodeError(f"{_reason(exc, name)}; {outcome}") from None
    step("after_commit")
    if on_commit is not None:
        on_commit(sha)
    journal.clear(entry)
    return sha


def new_op_id(kind: str, at: str, files: Sequence[FileIntent], index_before: dict[str, list[str]]) -> str:
    """Unique per commit (the time, what it writes over what), yet reproducible
    under a fixed clock: the demo store's history is the same every build."""
    digest = hashlib.sha256(f"{at}\0{json.dumps(index_before, sort_keys=True)}".encode())
    for f in files:
        digest.update(f"\0{f.rel}\0".encode("utf-8", "surrogatepass"))
        digest.update(str(f.after).encode("utf-8", "surrogatepass"))
    return f"{kind}-{digest.hexdigest()[:12]}"


def _reason(exc: BaseException, name: str) -> str:
    if isinstance(exc, OSError):
        return f"could not write {name}: {exc.strerror or exc}"
    return f"{name} not committed: {str(exc).rstrip('.')}"


def _held_git_lock(store: Store) -> str | None:
    """The lock file a rival git holds (index, HEAD or the branch ref), read from disk, not from git's wording."""
    locks = git_locks(store)
    return f".git/{locks[0].relative_to(Path(str(store.git.git_dir))).as_posix()}" if locks else None


def put_back(
    store: Store, files: Sequence[FileIntent], index_before: dict[str, list[str]], subject: str | None = None
) -> str | None:
    """Files and their index entries as they were before we staged anything.

    A file someone else rewrote since is left alone. When a rival already
    committed our bytes, putting the old text back is committed too (with
    ``subject``), so no half-change is left staged or silently reverted."""
    in_commit = []
    for f in files:
        _, path = store.resolve(f.rel)
        current, _ = store.read_optional(f.rel)
        if current == f.after and current != f.before:
            if f.before is None:
                safeio.unlink(f.rel, store.root)  # never through a swapped-in folder link
            else:
                atomic_write(path, f.before)
        elif current != f.before:
            continue  # a stranger's bytes: theirs to keep
        if store.git.blob_at("HEAD", f.rel) == f.after and f.after != f.before:
            in_commit.append(f.rel)
    rels = [f.rel for f in files if f.rel not in in_commit]
    now = store.git.index_entries(rels) if rels else {}
    for rel in rels:
        if now.get(rel) != index_before.get(rel):
            before = index_before.get(rel)
            if before is None or before[2] == "0":  # a conflict stage is git's to redo, not ours
                store.git.set_index_entry(rel, before)
    if in_commit:
        return store.git.commit(in_commit, subject or f"palinode-audit: put back {', '.join(in_commit)}")
    return None


def finish(store: Store, intent: CommitIntent, how: str) -> Recovered:
    """Complete or roll back one interrupted single commit, from the real state."""
    files, name = intent.files, intent.name
    if in_head(store, files):
        return {"result": "already committed", "commit": _last_commit(store, files[0].rel)}
    states = [store.read_optional(f.rel)[0] for f in files]
    if any(s not in (f.before, f.after) for s, f in zip(states, files, strict=True)):
        raise PalinodeError(f"cannot {how} {name}: it was changed by someone else since; resolve it by hand")
    if how == "rollback":
        subject = f"palinode-audit recover: roll back {intent.op or intent.kind} {name}"
        sha = put_back(store, files, intent.index_before, subject)
        return {"result": "rolled back", "commit": sha} if sha else {"result": "rolled back"}
    for f, state in zip(files, states, strict=True):
        if state != f.after and f.after is not None:
            atomic_write(store.resolve(f.rel)[1], f.after)
    sha = store.git.commit([f.rel for f in files], intent.subject or str(intent.op), intent.trailers)
    if sha is None and not in_head(store, files):
        raise PalinodeError(f"cannot complete {name}: git committed nothing")
    return {"result": "completed", "commit": sha or _last_commit(store, files[0].rel)}


def _last_commit(store: Store, rel: str) -> str | None:
    found = store.git.log(rel, limit=1)
    return found[0].sha if found else None


def restore_history(history_abs: Path, history_before: str | None) -> None:
    """The history sibling as it was: removed if it did not exist."""
    if history_before is None:
        safeio.unlink(history_abs)  # never through a swapped-in folder link
    elif _text_now(history_abs) != history_before:
        atomic_write(history_abs, history_before)


def restore_files(target_abs: Path, old_text: str, history_abs: Path, history_before: str | None) -> None:
    """Put a target and its sibling back; skips what was never replaced (a failed atomic write)."""
    if _text_now(target_abs) != old_text:
        atomic_write(target_abs, old_text)
    restore_history(history_abs, history_before)


def _text_now(path: Path) -> str | None:
    """The file's text as it is, read without following a link (None when absent)."""
    try:
        return safeio.read_bytes(path).decode("utf-8", "replace")
    except FileNotFoundError:
        return None
