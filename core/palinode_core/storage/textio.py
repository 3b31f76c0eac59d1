"""Reading memory files defensively and writing them atomically."""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from ..errors import UnreadableMemory

# A memory is a note, not a data dump; anything larger is reported, not parsed.
MAX_MEMORY_BYTES = 8 * 1024 * 1024


def fingerprint(data: bytes) -> str:
    """The content fingerprint a plan records and apply re-checks."""
    return hashlib.sha256(data).hexdigest()


def read_bytes_checked(path: str | os.PathLike[str], max_bytes: int = MAX_MEMORY_BYTES) -> bytes:
    """The file's bytes, refusing one over the limit (also if it grows while read)."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise UnreadableMemory(f"file is {size} bytes, over the {max_bytes}-byte limit for a memory")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise UnreadableMemory(f"file grew past the {max_bytes}-byte limit for a memory while being read")
    return data


def decode_memory(data: bytes) -> str:
    """Bytes to text, refusing what is not a UTF-8 text file. A BOM is an error
    rather than silently dropped, because writing back would change the bytes."""
    if b"\x00" in data:
        raise UnreadableMemory("file contains NUL bytes (binary, not a markdown memory)")
    if data.startswith(b"\xef\xbb\xbf"):
        raise UnreadableMemory("file starts with a UTF-8 byte-order mark; Palinode files have none")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UnreadableMemory(f"not valid UTF-8 at byte {exc.start}") from None


def atomic_write(path: Path, text: str) -> None:
    """Write via a dot-prefixed temp file in the same folder, fsync, rename.

    The ``.tmp`` dot name is what Palinode's watcher ignores; a crash or a full
    disk leaves the original file intact.
    """
    data = text.encode("utf-8")
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = None
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
