"""Every version of every path in a store's history, for finding what a
delivery delivered: by the SHA-256 of the whole file (a receipt's
``file_sha256``), searched over every version of the path and of the paths it
was renamed from or to; or the version current at a time (inferred).

Git is read in one ``git log --raw`` pass (renames detected) and blobs through
one ``git cat-file --batch``; a path's versions are hashed once, the first
time a delivery of it names a ``file_sha256``."""

from __future__ import annotations

import bisect
import hashlib
from dataclasses import dataclass

from ..errors import PalinodeError
from ..storage.snapshot import GitObjects
from ..storage.store import Store
from .judgments import JudgmentCache

_LOG_FMT = "%x1e%H%x1f%at"  # author time, as the report dates requests and operations
_NO_BLOB = "0" * 40
_EXACT_KEPT = 100_000  # receipts answered from memory at once (memory stays bounded)


@dataclass(frozen=True, slots=True)
class Version:
    path: str
    commit: str
    blob: str
    epoch: int  # author time of the commit


class Versions:
    def __init__(self, store: Store, rev: str = "HEAD", cache: JudgmentCache | None = None) -> None:
        self._store = store
        self._cache = cache  # blobs hashed in an earlier run
        self._times: dict[str, list[int]] = {}
        self._entries: dict[str, list[Version | None]] = {}  # None: deleted at that time
        self._parent: dict[str, str] = {}  # renames, as a union-find over paths
        self._hashed: dict[str, dict[str, Version]] = {}  # family -> sha256 -> earliest version
        self._members: dict[str, list[str]] | None = None  # family -> paths, built on first need
        self._exact: dict[tuple[str, str], Version | None] = {}  # (path, sha256) asked -> answer
        self._objects: GitObjects | None = None
        self._depth: int | None = None  # the most components a path in history has
        self.note: str | None = None
        try:
            out = store.git.run_bytes(
                "log", "--raw", "-M", "-z", "--no-abbrev", "--reverse", f"--format={_LOG_FMT}", rev, "--", read=True
            )
        except PalinodeError as exc:
            self.note = f"no git history read ({exc}); every delivered version is unknown"
            return
        self._parse(out)

    def _parse(self, out: bytes) -> None:
        pending: dict[str, list[tuple[int, Version | None]]] = {}
        for record in out.split(b"\x1e")[1:]:
            head, _, raw = record.partition(b"\x00")
            sha, _, when = head.decode("ascii", "replace").partition("\x1f")
            epoch = int(when.strip() or 0)
            tokens = raw.lstrip(b"\n").split(b"\x00")
            i = 0
            while i < len(tokens):
                meta = tokens[i].decode("ascii", "replace")
                if not meta.startswith(":"):
                    i += 1
                    continue
                fields = meta[1:].split()
                status = fields[4] if len(fields) > 4 else "M"
                names = 2 if status[:1] in ("R", "C") else 1
                paths = [t.decode("utf-8", "surrogateescape") for t in tokens[i + 1 : i + 1 + names]]
                i += 1 + names
                if len(fields) < 4 or len(paths) < names:
                    continue
                new_blob = fields[3]
                if names == 2:
                    old, new = paths
                    if status[:1] == "R":
                        pending.setdefault(old, []).append((epoch, None))
                    self._union(old, new)
                    path = new
                else:
                    path = paths[0]
                version = None if new_blob == _NO_BLOB else Version(path, sha.strip(), new_blob, epoch)
                pending.setdefault(path, []).append((epoch, version))
        for path, items in pending.items():
            items.sort(key=lambda item: item[0])  # stable: same-second commits keep their order
            self._times[path] = [t for t, _ in items]
            self._entries[path] = [v for _, v in items]

    def _find(self, path: str) -> str:
        while path in self._parent and self._parent[path] != path:
            path = self._parent[path]
        return path

    def _union(self, a: str, b: str) -> None:
        ra, rb = self._find(a), self._find(b)
        if ra != rb:
            self._parent[rb] = ra

    def known(self, path: str) -> bool:
        return path in self._entries

    def history(self, path: str) -> tuple[list[int], list[Version | None]]:
        """Each time ``path`` changed, oldest first, and its version from then (None: deleted)."""
        return self._times.get(path, []), self._entries.get(path, [])

    def family(self, path: str) -> str:
        """One name for every name a memory had (renames followed)."""
        return self._find(path)

    def tail(self, file_path: str) -> tuple[str, str] | None:
        """(the longest tail of an absolute ``file_path`` that is a path in
        history, the folder before it), or None: where a store moved since a
        row was logged kept its files. Only as many trailing components as the
        deepest path in history are looked at (linear in the path)."""
        if self._depth is None:
            self._depth = max((p.count("/") + 1 for p in self._entries), default=0)
        cut = len(file_path)
        cuts = []
        for _ in range(self._depth):
            cut = file_path.rfind("/", 0, cut)
            if cut <= 0:
                break
            cuts.append(cut)
        for cut in reversed(cuts):  # the longest tail first
            tail = file_path[cut + 1 :]
            for name in (tail, tail + ".md"):
                if name in self._entries:
                    return name, file_path[:cut]
        return None

    def at(self, path: str, epoch: float) -> Version | None:
        """The version of ``path`` current at ``epoch`` (None: not yet committed, or deleted then)."""
        times = self._times.get(path)
        if not times:
            return None
        i = bisect.bisect_right(times, epoch)
        return self._entries[path][i - 1] if i else None

    def exact(self, path: str, sha256: str) -> Version | None:
        """The version of ``path`` (renames followed) whose bytes hash to ``sha256``."""
        key = (path, sha256)
        if key in self._exact:
            return self._exact[key]
        family = self._find(path)
        table = self._hashed.get(family)
        if table is None:
            table = self._hashed[family] = self._hash_family(family)
        if len(self._exact) >= _EXACT_KEPT:
            self._exact.clear()
        found = self._exact[key] = table.get(sha256.lower())
        return found

    def _hash_family(self, family: str) -> dict[str, Version]:
        table: dict[str, Version] = {}
        seen: set[str] = set()
        if self._members is None:
            self._members = {}
            for path in self._entries:
                self._members.setdefault(self._find(path), []).append(path)
        versions = [
            v for member in self._members.get(family, [family]) for v in self._entries.get(member, ()) if v is not None
        ]
        known = self._cache.hashes(list({v.blob for v in versions})) if self._cache is not None else {}
        hashed: list[tuple[str, str]] = []
        for version in versions:  # oldest first within each path: the earliest version of a hash wins
            if version.blob in seen:
                continue
            seen.add(version.blob)
            digest = known.get(version.blob)
            if digest is None:
                data = self.read(version.blob)
                if data is None:
                    continue
                digest = hashlib.sha256(data).hexdigest()
                hashed.append((version.blob, digest))
            table.setdefault(digest, version)
        if self._cache is not None:
            self._cache.put_hashes(hashed)
        return table

    def read(self, blob: str) -> bytes | None:
        if self._objects is None:
            self._objects = GitObjects(self._store.git)
        return self._objects.read(blob)

    def close(self) -> None:
        if self._objects is not None:
            self._objects.close()
            self._objects = None
