"""Which files under a store root are candidate memories: an iterative walk
(no recursion limit on deep trees) that never follows directory links."""

from __future__ import annotations

import os

from . import paths

Listing = list[tuple[str, str, "os.stat_result | None"]]


def iter_markdown(root: str) -> Listing:
    """(rel, absolute path, lstat) of every ``*.md`` Palinode could treat as
    memory, sorted, pruning skipped and dot directories, never descending
    through directory links. The lstat is None when the file vanished."""
    found: Listing = []
    stack = [(root, "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        subdirs = []
        for entry in entries:
            name = entry.name
            if name[0] == ".":
                continue
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            if is_dir:
                if name not in paths.ALWAYS_SKIP:
                    subdirs.append(entry)
            elif name.endswith(".md"):
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    st = None
                found.append((prefix + name, entry.path, st))
        # pushed in reverse so folders are visited in name order, depth first
        for entry in reversed(subdirs):
            stack.append((entry.path, f"{prefix}{entry.name}/"))
    return found
