"""Which store files could contain any of some words, by ``git grep`` (C, one
process, several threads): a residue sweep then reads only those files
instead of parsing every memory. A superset by construction: case-insensitive
fixed strings anywhere in the file, untracked and ignored files included.
None means "cannot tell" (no git, a non-ASCII word, git failed): check all."""

from __future__ import annotations

import os
import subprocess

from .store import Store

GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", "GIT_OPTIONAL_LOCKS": "0"}


def files_containing(store: Store, words: set[str] | frozenset[str]) -> set[str] | None:
    if getattr(store, "as_of", None) is not None or not store.git.available:
        return None  # history is read from blobs, not the worktree
    if not words or any(not w.isascii() for w in words):
        return None  # git's -i folds ASCII only
    args = ["git", "-C", str(store.root), "grep", "-l", "-z", "-i", "-F", "-I", "--untracked", "--no-exclude-standard"]
    for word in sorted(words):
        args += ["-e", word]
    args += ["--", "*.md"]
    proc = subprocess.run(args, capture_output=True, env={**os.environ, **GIT_ENV}, stdin=subprocess.DEVNULL)
    if proc.returncode not in (0, 1):  # 1: nothing matched
        return None
    return {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}
