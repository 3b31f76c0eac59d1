"""Which store files could contain any of some words, by ``git grep`` (C, one
process, several threads): a residue sweep then reads only those files
instead of parsing every memory. A superset by construction: case-insensitive
fixed strings anywhere in the file, untracked and ignored files included.
None means "cannot tell" (no git, a non-ASCII word, git failed): check all."""

from __future__ import annotations

from .gitstore import GitCommandFailed
from .store import Store


def files_containing(store: Store, words: set[str] | frozenset[str]) -> set[str] | None:
    if getattr(store, "as_of", None) is not None or not store.git.available:
        return None  # history is read from blobs, not the worktree
    if not words or any(not w.isascii() for w in words):
        return None  # git's -i folds ASCII only
    args = ["grep", "-l", "-z", "-i", "-F", "-I", "--no-color", "--untracked", "--no-exclude-standard"]
    for word in sorted(words):
        args += ["-e", word]
    try:  # through the one runner: the store's own config runs nothing; the glob is ours
        out = store.git.run_bytes(*args, "--", "*.md", read=True, patterns=True)
    except GitCommandFailed as exc:
        return set() if exc.status == 1 else None  # 1: nothing matched
    return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}


def files_with_words_starting(
    store: Store, prefixes: set[str], literals: frozenset[str] | set[str] = frozenset()
) -> set[str] | None:
    """Which store files hold a word starting with one of ``prefixes`` (case-insensitive,
    at a word's start: "liv" finds "living", not "delivery") or any of ``literals``
    anywhere; a superset, by one ``git grep -P``. None: cannot tell (no PCRE in this git,
    a non-ASCII prefix): fall back to ``files_containing``."""
    if getattr(store, "as_of", None) is not None or not store.git.available:
        return None
    if not prefixes or any(not p.isascii() or not p.isalnum() for p in prefixes):
        return None  # a literal in another script is matched byte for byte (git's PCRE, C locale)
    args = ["grep", "-l", "-z", "-i", "-P", "-I", "--no-color", "--untracked", "--no-exclude-standard"]
    for prefix in sorted(prefixes):
        args += ["-e", f"(?<![a-z]){prefix}"]  # letters and digits only: nothing to escape
    for literal in sorted(literals):
        args += ["-e", "\\Q" + literal.replace("\\E", "\\E\\\\E\\Q") + "\\E"]
    try:
        out = store.git.run_bytes(*args, "--", "*.md", read=True, patterns=True)
    except GitCommandFailed as exc:
        return set() if exc.status == 1 else None  # 1: nothing matched; 128: no PCRE here
    return {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}
