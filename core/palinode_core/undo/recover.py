"""Repair what a stop interrupted: complete or roll back each journaled
operation (a whole forget apply or withdraw as one), from what HEAD, the
index and the worktree really hold; remove the temp files a stop left, and
git's lock files when a kill inside our commit provably left them."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from ..errors import PalinodeError
from ..forget import txn
from ..ops import apply as ops_apply
from ..ops import journal
from ..ops.journal import Recovered
from ..ops.lock import git_locks, why_not_stale, writer_lock
from ..storage import safeio
from ..storage.commits import escape_control
from ..storage.records import TXN_KINDS, CommitIntent
from ..storage.store import AUDIT_DIR, Store


def leftover_folders(store: Store, items: list[journal.Interrupted] | None = None) -> set[str]:
    """Folders our writes touch: every memory's, the audit folder, and any a journal names."""
    folders = {AUDIT_DIR, ""}
    for rel, _abs, _st in store.iter_markdown():
        folders.add(rel.rpartition("/")[0])
    folders |= {rel.rpartition("/")[0] for item in items or [] for rel in item.writes}
    return folders


def recover(store: Store, how: str) -> list[Recovered]:
    """Complete or roll back every interrupted operation ("complete" | "rollback")."""
    store.check_writable()
    results: list[Recovered] = []
    with writer_lock(store):  # held: no writer of ours is at work, so every journal entry is a stop's
        items = journal.pending(store)
        cleared = _clear_git_locks(store, items)
        store.git.preflight()
        if cleared:
            results.append(
                {
                    "kind": "git_locks",
                    "result": "removed",
                    "paths": cleared,
                    "summary": f"removed {', '.join(cleared)}, left by a git stopped inside an interrupted commit",
                }
            )
        for item in items:
            if item.kind in TXN_KINDS:
                results.append({**item.to_dict(), **txn.finish(store, item, how)})
                continue
            if not isinstance(item.entry, CommitIntent):  # unreadable, not ours, or an older version's
                raise PalinodeError(f"cannot {how}: {item.summary}")
            outcome = ops_apply.finish(store, item.entry, how)
            journal.clear(item.path)
            results.append({**item.to_dict(), **outcome})
        removed = journal.temp_files(store, leftover_folders(store, items))
        for rel in removed:
            safeio.unlink(rel, store.root)
        for path in journal.journal_temp_files(store):
            path.unlink(missing_ok=True)
        if removed:
            results.append(
                {
                    "kind": "temp_files",
                    "result": "removed",
                    "paths": removed,
                    "summary": f"removed {len(removed)} temp file(s) a stop left behind",
                }
            )
    return results


def _clear_git_locks(store: Store, items: list[journal.Interrupted]) -> list[str]:
    """git's lock files a kill inside one of our commits left (git never removes
    them after a SIGKILL), removed when they are provably that: else refused
    with why, and exactly how to go on."""
    locks = git_locks(store)
    if not locks:
        return []
    git_dir = Path(str(store.git.git_dir))
    names = [f".git/{lock.relative_to(git_dir).as_posix()}" for lock in locks]
    seen = {lock: os.lstat(lock) for lock in locks}
    if not items:
        why: str | None = "no interrupted operation of this tool is on record, so none of its commits left it"
    else:  # the earliest write of the interrupted operations: a lock left by their commit is no older
        since = min(path.stat().st_mtime for item in items for path in [item.path, *(p for p, _ in item.children)])
        why = why_not_stale(store, locks, since)
    if why is not None:
        command = " ".join(shlex.quote(str(lock)) for lock in locks)
        raise PalinodeError(
            escape_control(
                f"git's {', '.join(names)} is still there, and whether a git stopped inside a commit left it "
                f"cannot be told ({why}): once no git command is running in this store, remove it "
                f"(rm -- {command}) and run recover again; nothing was changed"
            )
        )
    for lock in locks:
        now = os.lstat(lock)
        if (now.st_ino, now.st_mtime_ns) == (seen[lock].st_ino, seen[lock].st_mtime_ns):
            os.unlink(lock)  # a new git cannot have taken it meanwhile: git creates a lock only where none is
    return names
