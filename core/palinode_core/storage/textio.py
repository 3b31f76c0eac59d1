"""Reading memory files defensively and writing them atomically."""

from __future__ import annotations

import hashlib
import os

from ..errors import UnreadableMemory
from . import safeio

# A memory is a note, not a data dump; anything larger is reported, not parsed.
MAX_MEMORY_BYTES = 8 * 1024 * 1024


def fingerprint(data: bytes) -> str:
    """The content fingerprint a plan records and apply re-checks."""
    return hashlib.sha256(data).hexdigest()


def read_bytes_checked(
    path: str | os.PathLike[str], max_bytes: int = MAX_MEMORY_BYTES, root: str | os.PathLike[str] | None = None
) -> bytes:
    """The file's bytes, refusing one over the limit (also if it grows while
    read). Never follows a link, on the way or at the name (see safeio):
    ``path`` is store-relative with ``root``, else absolute."""
    try:
        return safeio.read_bytes(path, root, max_bytes)
    except ValueError as exc:
        raise UnreadableMemory(too_big(exc, max_bytes)) from None


def too_big(exc: ValueError, max_bytes: int = MAX_MEMORY_BYTES) -> str:
    """The message for safeio's size refusal."""
    if exc.args and exc.args[0] == "grew":
        return f"file grew past the {max_bytes}-byte limit for a memory while being read"
    size = exc.args[1] if len(exc.args) > 1 else "?"
    return f"file is {size} bytes, over the {max_bytes}-byte limit for a memory"


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


def atomic_write(path: str | os.PathLike[str], text: str, root: str | os.PathLike[str] | None = None) -> None:
    """Write via a dot-prefixed temp file in the same folder, fsync, rename.

    The ``.tmp`` dot name is what Palinode's watcher ignores; a crash or a full
    disk leaves the original file intact. No link is followed on the way (a
    swapped-in link makes the write fail with an OSError): ``path`` is
    store-relative with ``root``, else absolute (built from a real path).
    """
    safeio.write_atomic(path, text.encode("utf-8"), root)
