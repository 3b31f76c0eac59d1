"""Store-relative paths: the guard every path argument passes, and which files
count as memories (spec §1)."""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path, PurePosixPath

from ..errors import PathError

# Directory segments that are never memory on any Palinode surface.
ALWAYS_SKIP = frozenset({"specs", "prompts", "logs", ".palinode", ".obsidian", ".git"})
HISTORY_SUFFIX = "-history.md"


def relative_parts(ref: str | os.PathLike[str]) -> tuple[str, ...]:
    """The segments of a store-relative path argument, or PathError: no NUL
    byte, nothing absolute or home-relative, no ``..``."""
    text = os.fspath(ref)
    if not text or "\x00" in text:
        raise PathError(f"malformed path {text!r}")
    if os.path.isabs(text) or text.startswith("~"):
        raise PathError(f"path must be relative to the store: {text!r}")
    parts = PurePosixPath(text.replace(os.sep, "/")).parts
    if ".." in parts:
        raise PathError(f"path may not contain '..': {text!r}")
    return parts


def resolve_in_store(root: Path, ref: str | os.PathLike[str]) -> tuple[str, Path]:
    """Return (posix relative path, absolute path) for a path argument, or raise.

    Refuses NUL bytes, absolute paths, ``..`` segments, and anything whose real
    path (after following symlinks) leaves the store.
    """
    text = os.fspath(ref)
    parts = relative_parts(ref)
    root_real = Path(os.path.realpath(root))
    candidate = root_real.joinpath(*parts)
    real = Path(os.path.realpath(candidate))
    if real != root_real and root_real not in real.parents:
        raise PathError(f"path escapes the store through a link: {text!r}")
    own = PurePosixPath(*parts).as_posix() in OWN_GIT_FILES
    if not own and any(is_git_internal(seg) for seg in (*parts, *real.relative_to(root_real).parts)):
        # whatever a commit, journal, draft or user names: git's own files are never read or written
        raise PathError(f"path is inside git's own files, never a memory: {text!r}")
    rel = PurePosixPath(*parts).as_posix()
    return rel, candidate


def spelled_on_disk(root: Path, rel: str) -> bool:
    """False when a folder lists a segment of ``rel`` under another spelling only: on a
    case-insensitive (or normalising) file system ``People/Me.md`` opens ``people/me.md``,
    but git, history lines and undo name the file as it is listed. An absent path is
    not misspelled (whoever reads it says it is missing)."""
    folder = Path(root)
    for segment in rel.split("/"):
        try:
            names = os.listdir(folder)
        except OSError:
            return True
        if segment not in names:
            folded = unicodedata.normalize("NFC", segment).casefold()
            return not any(unicodedata.normalize("NFC", n).casefold() == folded for n in names)
        folder = folder / segment
    return True


# The one git file this tool writes itself: its ledger's merge rule (forget/ledger.py).
OWN_GIT_FILES = frozenset({".palinode-audit/.gitattributes"})


def is_git_internal(segment: str) -> bool:
    """``.git`` in any spelling (``.GIT``, ``.Git``), and git's own files beside
    it (``.gitattributes``, ``.gitmodules``, ``.gitignore``: they steer filters and hooks)."""
    return segment.casefold().startswith(".git")


def history_rel_for(rel: str) -> str:
    """The history sibling: strip ``-status.md`` else ``.md``, add ``-history.md``."""
    if rel.endswith("-status.md"):
        return rel[: -len("-status.md")] + HISTORY_SUFFIX
    if rel.endswith(".md"):
        return rel[: -len(".md")] + HISTORY_SUFFIX
    return rel + HISTORY_SUFFIX


def is_skipped(rel: str) -> bool:
    """True when any directory segment is one Palinode never treats as memory."""
    segments = rel.split("/")[:-1]
    return any(seg in ALWAYS_SKIP for seg in segments)


def is_history(rel: str) -> bool:
    return rel.endswith(HISTORY_SUFFIX)


def not_a_memory(rel: str) -> str | None:
    """Why ``rel`` is no memory a change may be made to (None: it is one):
    the scan's own rule, so the ledger, the config or a history file is never rewritten."""
    if not rel.endswith(".md"):
        return "not a markdown memory"
    if any(seg.startswith(".") for seg in rel.split("/")):
        return "inside a hidden folder (the audit's own records, or another tool's)"
    if is_skipped(rel):
        return "in a folder Palinode never reads as memory"
    if is_history(rel):
        return "a history file (Palinode's record of a memory's changes)"
    return None


def category_of(rel: str) -> str:
    """The top folder (Palinode's category fallback), or ``(root)``."""
    return rel.split("/")[0] if "/" in rel else "(root)"


_PLAIN_PATH_RE = re.compile(r'[^\s"\\\x00-\x1f\x7f]+')
# A name git or a shell would read as a pattern (``*.md``, ``[ab].md``, ``:!x.md``, ``-x.md``) is
# quoted too, so a subject copied into a command line names that one file.
_GLOB_RE = re.compile(r"[*?\[\]]")
_PATHSPEC_MAGIC_START = ('"', ":", "-", "!")


def subject_path(rel: str) -> str:
    """A path as it appears in a commit subject: as is when it is one plain
    word, else a JSON string (``"a b.md"``, ``"x\\ny.md"``), so a name can
    never break the subject line, forge a trailer, or be misread by Undo."""
    if _PLAIN_PATH_RE.fullmatch(rel) and not rel.startswith(_PATHSPEC_MAGIC_START) and not _GLOB_RE.search(rel):
        return rel
    return json.dumps(rel, ensure_ascii=False).replace("\x7f", "\\u007f")


SUBJECT_PATH_PATTERN = r'"(?:[^"\\]|\\.)*"|[^\s"]\S*'


def parse_subject_path(token: str) -> str:
    """The path a ``subject_path`` token names."""
    if token.startswith('"'):
        try:
            return str(json.loads(token))
        except ValueError:
            return token
    return token
