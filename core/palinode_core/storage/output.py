"""Writing a file the user named (a report, a saved plan): never inside the
store, never through a link, never replacing what is not a regular file.

A regular file is replaced atomically: a new file renamed (or, when it must not
be overwritten, linked) into place, so the old name's inode is never written to
and an output that is a hard link to a memory cannot reach it. A device or a
FIFO (``-o /dev/null``, a pipe) is opened and written, never replaced. A
symbolic link (``/dev/stdout`` is one) is refused with one line."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import tempfile
from pathlib import Path

from ..errors import PalinodeError


def write_output(root: Path, text: str, output: str | os.PathLike[str], *, overwrite: bool = True) -> Path:
    """Write ``text`` to ``output`` (outside the store ``root``); the path written."""
    named = Path(output).expanduser()
    named = named if named.is_absolute() else Path.cwd() / named
    try:
        st: os.stat_result | None = os.lstat(named)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise PalinodeError(f"cannot write {named}: {exc.strerror or exc}") from None
    if st is not None and stat.S_ISLNK(st.st_mode):
        raise PalinodeError(f"{named} is a link; name the file itself (nothing was written)")
    out = named.parent.resolve() / named.name
    store = root.resolve()
    if out == store or store in out.parents:
        # inside the store the file would be read as a memory (and committed by Palinode)
        raise PalinodeError(f"{out} is inside the store; write it somewhere else")
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise PalinodeError(f"{out} is a folder; name a file")
        return _write_stream(out, text)  # a device or a pipe: written, never replaced
    try:
        handle, tmp = tempfile.mkstemp(prefix=".palinode-out-", dir=out.parent)
    except OSError as exc:
        raise PalinodeError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(tmp, 0o644)
        if overwrite:
            os.replace(tmp, out)
        else:
            os.link(tmp, out)  # fails if the name exists, atomically
    except FileExistsError:
        raise PalinodeError(f"{out} already exists") from None
    except OSError as exc:
        raise PalinodeError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return out


def _write_stream(out: Path, text: str) -> Path:
    try:
        # O_NOFOLLOW: a link swapped in since the check is refused, not followed; O_NONBLOCK:
        # a pipe nobody reads is refused at once (ENXIO), not waited on for ever
        fd = os.open(out, os.O_WRONLY | os.O_NOFOLLOW | os.O_NOCTTY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise PalinodeError(f"cannot write {out}: no program is reading that pipe (nothing was written)") from None
        raise PalinodeError(f"cannot write {out}: {exc.strerror or exc}") from None
    os.set_blocking(fd, True)  # a reader is there: write at its pace
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        try:
            stream.write(text)
        except OSError as exc:
            raise PalinodeError(f"cannot write {out}: {exc.strerror or exc}") from None
    return out
