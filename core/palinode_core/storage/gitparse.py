"""What git prints, read back: ``log`` records and ``cat-file --batch-check``
answers. Parsing only; gitstore runs the commands."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ..errors import GitError
from .commits import Commit, escape_control, parse_trailers

SHA_RE = re.compile(r"[0-9a-f]{4,64}")
_FIELD_SEP = "\x1f"
_RECORD_SEP = "\x1e"
LOG_FORMAT = _RECORD_SEP + _FIELD_SEP.join(["%H", "%s", "%an", "%aI", "%(trailers:only,unfold)", ""])
# what parse_log reads: no textconv, external diff, colour, signature check or rename pairing
LOG_ARGS = (
    f"--format={LOG_FORMAT}",
    "--name-only",
    "-z",
    "--no-textconv",
    "--no-ext-diff",
    "--no-color",
    "--no-show-signature",
    "--no-renames",
)


def parse_log(out: str) -> list[Commit]:
    """``git log --format=LOG_FORMAT --name-only -z`` as commits, in git's order."""
    commits = []
    for record in out.split(_RECORD_SEP):
        parts = record.split(_FIELD_SEP)
        if len(parts) < 6:
            continue
        sha, subject, author, date, trailer_text = parts[:5]
        files = _FIELD_SEP.join(parts[5:]).lstrip("\0")
        files = files[1:] if files.startswith("\n") else files
        commits.append(
            Commit(
                sha.strip("\0\n"),
                subject,
                author,
                date,
                parse_trailers(trailer_text),
                tuple(f for f in files.split("\0") if f),
            )
        )
    return commits


@dataclass(frozen=True)
class HeadObjects:
    """HEAD's commit id and some paths' blob ids in it (None: absent)."""

    commit: str | None
    blobs: dict[str, str | None]

    def holds(self, path: str, text: str | None) -> bool:
        """Is ``path`` in HEAD exactly ``text`` (None: absent)? Compared by git's own
        object id of the bytes, so nothing is read back."""
        blob = self.blobs.get(path)
        if text is None or blob is None or self.commit is None:
            return text is None and blob is None
        # or as git's own line-ending conversion (core.autocrlf, eol) stores CRLF text
        return blob in (blob_id(text, blob), blob_id(text.replace("\r\n", "\n"), blob))


def blob_id(text: str | None, like: str) -> str | None:
    """git's object id of ``text`` as a file, in the object format of the id ``like``
    (SHA-256 when it is 64 digits); None for no file or text no file could hold."""
    if text is None:
        return None
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None  # could never have been written
    digest = hashlib.sha256 if len(like) == 64 else hashlib.sha1
    return digest(b"blob %d\0" % len(data) + data).hexdigest()


def _names(paths: list[str]) -> list[bytes]:
    return [b"HEAD", *(f"HEAD:{path}".encode("utf-8", "surrogateescape") for path in paths)]


def batch_check_input(paths: list[str]) -> bytes:
    """``cat-file --batch-check -z``'s input: HEAD, then each path in it."""
    return b"".join(name + b"\0" for name in _names(paths))


def parse_batch_check(out: bytes, paths: list[str]) -> HeadObjects:
    """Its answers, one per name in order; a missing name is echoed whole, so a
    name holding a newline still parses."""
    ids: list[str | None] = []
    at = 0
    for name, kind in zip(_names(paths), [b"commit"] + [b"blob"] * len(paths), strict=True):
        absent = name + b" missing\n"
        if out.startswith(absent, at):
            ids.append(None)
            at += len(absent)
            continue
        end = out.find(b"\n", at)
        fields = out[at:end].split(b" ") if end >= 0 else []
        if len(fields) != 3 or not SHA_RE.fullmatch(fields[0].decode("ascii", "replace")):
            raise GitError(
                f"git cat-file answered what this version cannot read: {escape_control(repr(out[at : at + 80]))}"
            )
        ids.append(fields[0].decode("ascii") if fields[1] == kind else None)
        at = end + 1
    return HeadObjects(ids[0], dict(zip(paths, ids[1:], strict=True)))


def git_complaint(text: str) -> str:
    """git's own sentence about what went wrong: the last ``fatal:``/``error:``
    line (not a trailing hint), whole, with control characters made visible."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    chosen = (
        [line for line in lines if line.startswith(("fatal:", "error:"))]
        or [line for line in lines if not line.startswith("hint:")]  # git's advice is not the reason
        or lines
    )
    return escape_control(chosen[-1]) if chosen else ""
