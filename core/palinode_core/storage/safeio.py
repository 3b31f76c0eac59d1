"""Opening, reading, writing and removing files inside a store without ever
following a symbolic link (issue 11 §3).

Every path is walked one component at a time from a directory descriptor,
each folder opened with ``O_DIRECTORY | O_NOFOLLOW`` and the file itself with
``O_NOFOLLOW``; a temp file is created and renamed relative to the folder's
descriptor. Swapping a folder for a link between a check and a write can then
only make the operation fail (``ELOOP``/``ENOTDIR``), never redirect it.

A refusal is an ``OSError`` (``LinkRefused``), so callers that already undo
their work on an ``OSError`` do so here too.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat as stat_mod
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress

from .paths import OWN_GIT_FILES, is_git_internal

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


class LinkRefused(OSError):
    """A component of the path is a symbolic link (or not a folder)."""

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}" if self.filename else str(self.strerror)


def _refused(rel: str, exc: OSError) -> OSError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        return LinkRefused(exc.errno, "a symbolic link (or a non-folder) is on the way; not followed", rel)
    return exc


def split_rel(rel: str | os.PathLike[str]) -> list[str]:
    """The components of a store-relative path; refuses ``..``, absolute and NUL."""
    text = os.fspath(rel)
    if os.sep != "/":  # pragma: no cover - POSIX only in practice
        text = text.replace(os.sep, "/")
    if not text or "\x00" in text or text[0] == "/":
        raise LinkRefused(errno.EINVAL, "not a store-relative path", text)
    parts = [p for p in text.split("/") if p and p != "."]
    if not parts or ".." in parts:
        raise LinkRefused(errno.EINVAL, "not a store-relative path", text)
    return parts


def _anchor(path: str | os.PathLike[str], root: str | os.PathLike[str] | None) -> tuple[str, list[str]]:
    """(the folder trusted as it is, the components below it to walk without links).

    With ``root`` the root may itself be reached through links (the person
    named it); without, every component from ``/`` is walked (our callers build
    such paths from a real path, so none is a link unless one was swapped in)."""
    text = os.fspath(path)
    if root is not None:
        base = os.fspath(root).rstrip("/") or "/"
        if text.startswith("/"):
            prefix = base if base.endswith("/") else base + "/"
            if not text.startswith(prefix):
                raise LinkRefused(errno.EINVAL, "path is outside the store", text)
            text = text[len(prefix) :]
        parts = split_rel(text)
        if "/".join(parts) not in OWN_GIT_FILES and any(is_git_internal(p) for p in parts):
            # the last line of defence: whatever named it, git's own files are never opened here
            raise LinkRefused(errno.EPERM, "git's own files are never read or written", text)
        return base, parts
    if not text.startswith("/"):
        raise LinkRefused(errno.EINVAL, "an absolute path or a root is needed", text)
    return "/", split_rel(text[1:])


@contextmanager
def open_dir(root: str | os.PathLike[str], parts: list[str], *, create: bool = False) -> Iterator[int]:
    """A descriptor of the folder ``root/parts...``, every step opened without
    following a link (created, with ``create``, when missing)."""
    fd = os.open(os.fspath(root), os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    try:
        for index, name in enumerate(parts):
            try:
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=fd)
                nxt = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise _refused("/".join(parts[: index + 1]), exc) from None
            os.close(fd)
            fd = nxt
        yield fd
    finally:
        os.close(fd)


def read_file(
    path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None, max_bytes: int | None = None
) -> tuple[bytes, os.stat_result]:
    """A regular file's bytes and stat; ``FileNotFoundError`` when absent,
    ``LinkRefused`` when it or a folder on the way is a link. ``max_bytes``:
    refuse bigger with ``ValueError("size" or "grew", n)``."""
    base, parts = _anchor(path, root)
    with open_dir(base, parts[:-1]) as dfd:
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=dfd)
        except OSError as exc:
            raise _refused("/".join(parts), exc) from None
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat_mod.S_ISREG(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", "/".join(parts))
        if max_bytes is not None and st.st_size > max_bytes:
            raise ValueError("size", st.st_size)
        data = handle.read() if max_bytes is None else handle.read(max_bytes + 1)
    if max_bytes is not None and len(data) > max_bytes:
        raise ValueError("grew", len(data))
    return data, st


def read_files(root: str | os.PathLike[str], rels: Iterable[str], max_bytes: int) -> Iterator[tuple[str, bytes | None]]:
    """(rel, bytes) of each regular file of ``rels`` under ``root``, each
    folder walked once and never through a link; None for one that cannot be
    read so (missing, a link, not a regular file, over ``max_bytes``)."""
    by_folder: dict[str, list[str]] = {}
    for rel in rels:
        folder, _, name = rel.rpartition("/")
        by_folder.setdefault(folder, []).append(name)
    for folder, names in by_folder.items():
        rels_here = [f"{folder}/{name}" if folder else name for name in names]
        with ExitStack() as stack:
            try:
                dfd = stack.enter_context(open_dir(root, _anchor(rels_here[0], root)[1][:-1]))
            except OSError:  # a link or no folder on the way: none of its files is read
                yield from ((rel, None) for rel in rels_here)
                continue
            for rel, name in zip(rels_here, names, strict=True):
                yield rel, _read_at(dfd, name, max_bytes)


def _read_at(dfd: int, name: str, max_bytes: int) -> bytes | None:
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dfd)
    except OSError:
        return None
    try:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) <= max_bytes else None


def read_bytes(
    path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None, max_bytes: int | None = None
) -> bytes:
    return read_file(path, root, max_bytes)[0]


def lstat(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> os.stat_result:
    """The entry's own stat (a link is not followed), its folders walked without links."""
    base, parts = _anchor(path, root)
    with open_dir(base, parts[:-1]) as dfd:
        return os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)


def exists(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> bool:
    try:
        lstat(path, root)
    except (FileNotFoundError, NotADirectoryError):
        return False
    return True


def unlink(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None, missing_ok: bool = True) -> None:
    """Remove one file (a link itself, never its target) without following links on the way."""
    base, parts = _anchor(path, root)
    try:
        with open_dir(base, parts[:-1]) as dfd:
            os.unlink(parts[-1], dir_fd=dfd)
    except FileNotFoundError:
        if not missing_ok:
            raise


def write_atomic(path: str | os.PathLike[str], data: bytes, root: str | os.PathLike[str] | None = None) -> None:
    """Write via a dot-prefixed temp file in the same folder (created there
    through the folder's descriptor), fsync, rename over the name, fsync the
    folder. Missing folders are created. A link at the name is replaced, not
    followed; a link on the way is refused."""
    base, parts = _anchor(path, root)
    name = parts[-1]
    with open_dir(base, parts[:-1], create=True) as dfd:
        mode = None
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat_mod.S_ISREG(st.st_mode):
                mode = st.st_mode & 0o7777
        except FileNotFoundError:
            pass
        tmp = f".{name[:200]}.{secrets.token_hex(4)}.tmp"
        fd = os.open(
            tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666, dir_fd=dfd
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                if mode is not None:
                    os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
        except BaseException:
            with suppress(OSError):
                os.unlink(tmp, dir_fd=dfd)
            raise
        with suppress(OSError):
            os.fsync(dfd)
