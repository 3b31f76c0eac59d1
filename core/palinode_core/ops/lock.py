"""One advisory writer lock per store, so our own read-modify-writes (the
ledger, a history sibling, the journal, a whole forget request) never
interleave with another palinode-audit process or thread.

``fcntl.flock`` on ``.git/palinode-audit/write.lock``: the kernel drops it
when the holder dies (kill -9 included), so a crash never leaves it stuck.
Re-entrant inside one thread (a forget apply holds it across every target
commit and the ledger commit); other threads and processes wait, then get a
clear retryable error.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import GitError
from ..storage import safeio
from ..storage.store import Store

WAIT_SECONDS = 15.0


class Busy(GitError):
    """Another writer holds the store; trying again later is safe."""


class _Held:
    def __init__(self) -> None:
        self.guard = threading.RLock()
        self.owner: int | None = None
        self.depth = 0
        self.fd: int | None = None


_HELD: dict[str, _Held] = {}
_HELD_GUARD = threading.Lock()


def audit_dir(store: Store) -> Path | None:
    """``.git/palinode-audit``: never tracked, never in ``git status``, never read by Palinode."""
    if store.git.repo is None:
        return None
    return Path(store.git.repo.git_dir) / "palinode-audit"


def _held(store: Store) -> _Held:
    with _HELD_GUARD:
        return _HELD.setdefault(str(store.root), _Held())


@contextmanager
def writer_lock(store: Store, wait: float = WAIT_SECONDS) -> Iterator[None]:
    folder = audit_dir(store)
    if folder is None:  # no git: nothing can be committed, preflight refuses
        yield
        return
    held = _held(store)
    if not held.guard.acquire(timeout=wait):
        raise Busy("another task of this program is writing to the store; try again when it has finished")
    try:
        if held.depth == 0:
            fd = _open_lock(folder, os.O_RDWR | os.O_CREAT)
            deadline = time.monotonic() + wait
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        os.close(fd)
                        raise Busy(
                            "another palinode-audit is writing to this store; nothing was changed; "
                            "try again when it has finished"
                        ) from None
                    time.sleep(0.05)
            held.fd, held.owner = fd, threading.get_ident()
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0 and held.fd is not None:
                fcntl.flock(held.fd, fcntl.LOCK_UN)
                os.close(held.fd)
                held.fd, held.owner = None, None
    finally:
        held.guard.release()


def _open_lock(folder: Path, flags: int) -> int:
    """The lock file, reached without following a link (a linked audit folder
    would put it outside the store) and never blocking (a FIFO planted there
    would hang every read); anything but a regular file is refused."""
    with safeio.open_dir(folder.parent, [folder.name], create=bool(flags & os.O_CREAT)) as dfd:
        fd = os.open("write.lock", flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644, dir_fd=dfd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise safeio.LinkRefused(errno.EINVAL, "not a regular file", "write.lock")
    return fd


def busy_elsewhere(store: Store) -> bool:
    """Is a writer working right now (another process, or another thread of this
    one)? Then its journal entries are live work, not a crash's leftovers.
    Read-only: opens an existing lock file for reading and takes a shared lock."""
    held = _held(store)
    if held.owner is not None:
        return held.owner != threading.get_ident()
    folder = audit_dir(store)
    if folder is None:
        return False
    try:
        fd = _open_lock(folder, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def git_locks(store: Store) -> list[Path]:
    """The lock files git holds while it commits, present now in the store's git
    folder: the index's, HEAD's and the current branch's. A git stopped inside
    ``git commit`` (killed with the process that ran it) leaves them behind."""
    if store.git.repo is None:
        return []
    git_dir = Path(store.git.repo.git_dir)
    names = ["index.lock", "HEAD.lock"]
    try:
        head = safeio.read_bytes(git_dir / "HEAD", max_bytes=4096).decode("utf-8", "replace")
    except (OSError, ValueError):
        head = ""
    ref = head[5:].strip() if head.startswith("ref: ") else ""
    if ref.startswith("refs/heads/") and ".." not in ref.split("/"):  # a branch, never a path out of .git
        names.append(ref + ".lock")
    inside = os.path.realpath(git_dir) + os.sep
    return [
        git_dir / name
        for name in names
        if os.path.lexists(git_dir / name) and (os.path.realpath((git_dir / name).parent) + os.sep).startswith(inside)
    ]


def why_not_stale(store: Store, locks: list[Path], since: float) -> str | None:
    """Why ``locks`` cannot be shown to be left by a git that is gone, or None
    when they are: each a plain file made no earlier than ``since`` (when the
    interrupted operation that was committing began), no git process is at work
    in the store (nor one whose folder we may not see) and no process holds one
    open. Read from /proc (Linux); elsewhere it is not told."""
    for lock in locks:
        info = os.lstat(lock)
        if not stat.S_ISREG(info.st_mode):
            return f"{lock.name} is not a plain file"
        if info.st_mtime < since - 2:  # a second of clock granularity either side
            return f"{lock.name} is older than the interrupted operation, so not left by it"
    proc = Path("/proc")
    if not (proc / "self" / "fd").is_dir():
        return "this system does not show which processes hold a file"
    git_dir = Path(str(store.git.git_dir))
    held = {str(lock) for lock in locks} | {os.path.realpath(lock) for lock in locks}
    places = {os.path.realpath(store.root), os.path.realpath(git_dir)}
    for pid in (p for p in os.listdir(proc) if p.isdigit() and int(p) != os.getpid()):
        try:
            comm = (proc / pid / "comm").read_text().strip()
        except OSError:
            continue  # gone since listed
        if comm == "git" or comm.startswith("git-"):  # only git takes git's locks
            try:
                cwd = os.readlink(proc / pid / "cwd")
            except FileNotFoundError:
                continue
            except OSError:
                return f"git (process {pid}) is running as another user, and where it works cannot be seen"
            if any(cwd == place or cwd.startswith(place + os.sep) for place in places):
                return f"git (process {pid}) is running in the store"
        try:
            fds = os.listdir(proc / pid / "fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(proc / pid / "fd" / fd)
            except OSError:
                continue
            if target in held:
                return f"process {pid} ({comm}) holds {os.path.basename(target)} open"
    return None
