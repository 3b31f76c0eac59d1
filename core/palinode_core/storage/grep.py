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
