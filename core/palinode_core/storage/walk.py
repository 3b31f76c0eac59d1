"""Which files under a store root are candidate memories: an iterative walk
(no recursion limit on deep trees) that never follows directory links."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable

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


def listed(root: str, rels: Iterable[str]) -> Listing:
    """The entries of ``rels`` that ``iter_markdown`` would list, sorted, without
    walking the store: each folder on the way is a real directory (no link),
    none skipped or hidden, and the file a ``*.md`` still there."""
    found: Listing = []
    checked: dict[str, bool] = {}  # folder rel -> fine
    for rel in sorted(set(rels)):
        parts = rel.split("/")
        if not rel.endswith(".md") or any(not p or p[0] == "." for p in parts):
            continue
        if any(p in paths.ALWAYS_SKIP for p in parts[:-1]):
            continue
        fine = True
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if folder not in checked:
                try:
                    checked[folder] = stat.S_ISDIR(os.lstat(os.path.join(root, folder)).st_mode)
                except OSError:
                    checked[folder] = False
            if not checked[folder]:
                fine = False
                break
        if not fine:
            continue
        path = os.path.join(root, rel)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            continue
        found.append((rel, path, st))
    return found
