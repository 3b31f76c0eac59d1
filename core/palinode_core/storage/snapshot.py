"""The store as of a commit or a date, read straight from git objects.

Nothing is checked out: the tree comes from ``git ls-tree`` and every blob
from one long-lived ``git cat-file --batch`` process, so the worktree and the
index are never touched (``GIT_OPTIONAL_LOCKS=0`` keeps git from refreshing
the index on its own). A ``SnapshotStore`` offers the reading surface of
``Store`` (load, scan, read_optional, read_text, git.log up to that commit)
and refuses every mutation.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import GitError, MemoryNotFound, PalinodeError, ReadOnlyError, UnreadableMemory
from ..text.document import parse_document
from . import paths
from .cache import ScanCache, store_cache_dir
from .commits import Commit
from .config import CONFIG_NAME, StoreConfig, config_from_text, config_or_defaults
from .gitstore import GitStore
from .memory import Memory, ScanError, ScanResult, Summary
from .textio import MAX_MEMORY_BYTES, decode_memory, fingerprint

_DAY_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def date_bound(text: str) -> str:
    """A user's date as the instant ``--before`` needs, to the second, in the
    user's time zone: a bare day means the end of that day there (23:59:59), a
    time without a zone is a time there; a zone given is kept."""
    text = text.strip()
    try:
        if _DAY_RE.match(text):
            when = datetime.fromisoformat(text + "T23:59:59").astimezone()  # a naive time is local
        else:
            when = datetime.fromisoformat(text.replace("Z", "+00:00"))
            if when.tzinfo is None:
                when = when.astimezone()
    except (ValueError, OverflowError, OSError):  # OverflowError/OSError: a year mktime cannot place
        raise PalinodeError(f"cannot read the date {text!r}; use YYYY-MM-DD or an ISO 8601 time") from None
    return min(when, _GIT_DATE_MAX).isoformat()


# git reads --before dates past 2099 erratically (2999-12-31 matched no commit): later means every commit
_GIT_DATE_MAX = datetime(2099, 12, 31, 23, 59, 59, tzinfo=UTC)


@dataclass(frozen=True)
class AsOf:
    """Which point of history a snapshot shows, and what the user asked for."""

    commit: str
    date: str  # the commit's committer date, ISO 8601
    asked: str  # "--at REV" or "--as-of DATE" as given
    subject: str
    bound: str | None = None  # --as-of: the instant asked (ISO 8601, the user's zone); the commit is the last before it

    @property
    def label(self) -> str:
        return f"{self.asked} = commit {self.commit[:7]} of {self.date}"

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "date": self.date, "asked": self.asked, "subject": self.subject}


def resolve_point(git: GitStore, *, at: str | None = None, date: str | None = None) -> AsOf:
    """The commit ``--at REV`` names, or the last one at or before ``--as-of DATE``."""
    if (at is None) == (date is None):
        raise PalinodeError("give exactly one of a revision (--at) or a date (--as-of)")
    bound: str | None = None
    if at is not None:
        if not at.strip() or at.startswith("-"):
            raise PalinodeError(f"not a revision: {at!r}")
        try:
            sha = git.run_bytes("rev-parse", "--verify", "--quiet", "--end-of-options", f"{at}^{{commit}}", read=True)
        except GitError:
            raise PalinodeError(f"no commit {at!r} in {git.root}") from None
        asked = f"--at {at}"
    else:
        bound = date_bound(date or "")
        try:
            sha = git.run_bytes("rev-list", "-1", f"--before={bound}", "HEAD", read=True)
        except GitError:
            sha = b""
        if not sha.strip():
            raise PalinodeError(f"no commit at or before {bound} in {git.root}")
        asked = f"--as-of {date}"
    commit = sha.decode().strip()
    out = git.run_bytes("show", "-s", "--format=%cI%x1f%s", commit, read=True).decode("utf-8", "replace").rstrip("\n")
    when, _, subject = out.partition("\x1f")
    return AsOf(commit, when, asked, subject, bound)


class GitObjects:
    """One ``git cat-file --batch`` process for the life of a snapshot: a blob
    costs a pipe round trip, not a process."""

    def __init__(self, git: GitStore):
        argv, env = git.command("cat-file", "--batch", read=True)
        self._proc = subprocess.Popen(
            argv, cwd=git.root, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
        )
        self._lock = threading.Lock()

    def read(self, name: str) -> bytes | None:
        """The object's bytes (a sha, or ``REV:path``), or None when missing."""
        if "\n" in name:
            return None
        with self._lock:
            assert self._proc.stdin is not None and self._proc.stdout is not None
            self._proc.stdin.write(name.encode("utf-8", "surrogateescape") + b"\n")
            self._proc.stdin.flush()
            header = self._proc.stdout.readline()
            if not header:
                raise GitError(
                    "git stopped while reading the store's history: an object it needs may be missing "
                    "(a partial clone holds only what it fetched, and this tool never fetches)"
                )
            parts = header.split()
            if len(parts) != 3:  # "<name> missing" / "ambiguous"
                return None
            size = int(parts[2])
            data = self._proc.stdout.read(size)
            self._proc.stdout.read(1)  # the newline after the content
            return data

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    def __del__(self) -> None:  # a forgotten snapshot must not leave a process behind
        with contextlib.suppress(Exception):
            self.close()


@dataclass(frozen=True)
class Entry:
    mode: str
    kind: str
    sha: str
    size: int


def list_tree(git: GitStore, rev: str) -> dict[str, Entry]:
    """Every file of ``rev``'s tree (recursive), by store-relative path."""
    out = git.run_bytes("ls-tree", "-r", "-l", "-z", "--full-tree", rev, read=True)
    tree: dict[str, Entry] = {}
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, name = record.partition(b"\t")
        mode, kind, sha, size = meta.split(None, 3)
        rel = name.decode("utf-8", "replace")
        tree[rel] = Entry(mode.decode(), kind.decode(), sha.decode(), int(size) if size.strip().isdigit() else 0)
    return tree


def is_memory_path(rel: str) -> bool:
    """What ``walk.iter_markdown`` would list: ``*.md``, no dot segment, no skipped folder."""
    return rel.endswith(".md") and not paths.is_skipped(rel) and not any(s.startswith(".") for s in rel.split("/"))


def memory_from_bytes(rel: str, data: bytes) -> Memory:
    """A memory parsed from a blob exactly as a scan parses a file."""
    if len(data) > MAX_MEMORY_BYTES:
        raise UnreadableMemory(f"file is {len(data)} bytes, over the {MAX_MEMORY_BYTES}-byte limit for a memory")
    doc = parse_document(decode_memory(data))
    return Memory(rel, fingerprint(data), Summary.of(rel, doc), loaded=doc)


class SnapshotGit(GitStore):
    """The repository seen from one commit: logs stop there, nothing commits."""

    def __init__(self, root: Path, as_of: AsOf, on_command: Callable[[str], None] | None = None):
        super().__init__(root, on_command)
        self.as_of = as_of

    def log(self, path: str | None = None, limit: int = 200, rev: str | None = None) -> list[Commit]:
        return super().log(path, limit, rev=rev or self.as_of.commit)

    def head(self) -> str | None:
        return self.as_of.commit

    def tip(self) -> str:
        return self.as_of.commit

    def status(self, paths: list[str]) -> str:
        return ""

    def preflight(self) -> None:
        raise ReadOnlyError(refusal(self.as_of))

    def commit(self, *args: object, **kwargs: object) -> str | None:  # whatever it is asked: refused
        raise ReadOnlyError(refusal(self.as_of))


def refusal(as_of: AsOf) -> str:
    return (
        f"the store is shown as of {as_of.label}: history cannot be changed; "
        "open it without --as-of/--at to make changes"
    )


class SnapshotStore:
    """The reading surface of ``Store`` over one commit's tree. Every mutation
    is refused with a message naming the point in history."""

    read_only = True
    scan_cache = None

    def __init__(
        self,
        root: str | os.PathLike[str],
        as_of: AsOf,
        clock: Callable[[], datetime] | None = None,
        on_git: Callable[[str], None] | None = None,
        cache_dir: Path | None = None,
        cache: bool = True,
    ):
        self.root = Path(os.path.realpath(Path(root).expanduser()))
        self.as_of = as_of
        self.git = SnapshotGit(self.root, as_of, on_git)
        self.clock = clock or (lambda: datetime.now(UTC))
        self._objects = GitObjects(self.git)
        # the live scan cache's file: summaries of history's blobs kept beside those of files
        self._summaries = ScanCache((cache_dir or store_cache_dir(self.root)) / "scan.sqlite3") if cache else None
        self._tree: dict[str, Entry] | None = None
        self._parsed: dict[tuple[str, str], Memory] = {}  # (rel, blob sha): a blob parses the same every time
        text = self.read_text(CONFIG_NAME)
        source = f"{CONFIG_NAME} at {as_of.commit[:7]}"
        # broken at that commit, history is still read (Palinode's defaults, said once by the caller)
        self.config: StoreConfig
        self.config_error: str | None
        self.config, self.config_error = config_or_defaults(
            lambda: config_from_text(text, source) if text is not None else StoreConfig()
        )

    @classmethod
    def open(
        cls,
        root: str | os.PathLike[str],
        *,
        at: str | None = None,
        date: str | None = None,
        on_git: Callable[[str], None] | None = None,
        cache_dir: Path | None = None,
    ) -> SnapshotStore:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise PalinodeError(f"no store at {path}: not a directory")
        git = GitStore(path, on_git)
        if not git.available:
            raise GitError(f"{path} is not a git repository: there is no history to read")
        return cls(path, resolve_point(git, at=at, date=date), on_git=on_git, cache_dir=cache_dir)

    def close(self) -> None:
        self._objects.close()

    # -- the surface Store offers -------------------------------------------------
    def check_writable(self) -> None:
        raise ReadOnlyError(refusal(self.as_of))

    def now(self) -> datetime:
        return self.clock()

    def cancel(self) -> None:
        pass

    @property
    def tree(self) -> dict[str, Entry]:
        if self._tree is None:
            self._tree = list_tree(self.git, self.as_of.commit)
        return self._tree

    def resolve(self, ref: str) -> tuple[str, Path]:
        """The same refusals as the live store's (NUL, absolute, ``..``); links are
        judged by the tree (a link in history is never followed)."""
        parts = paths.relative_parts(ref)
        rel = PurePosixPath(*parts).as_posix()
        return rel, self.root.joinpath(*parts)

    def _blob(self, rel: str) -> tuple[Entry, bytes]:
        entry = self.tree.get(rel)
        if entry is None or entry.kind != "blob":
            raise MemoryNotFound(f"no memory at {rel} as of {self.as_of.commit[:7]}")
        if entry.mode == "120000":
            raise UnreadableMemory("a symlink in history; not followed")
        if entry.size > MAX_MEMORY_BYTES:
            raise UnreadableMemory(f"file is {entry.size} bytes, over the {MAX_MEMORY_BYTES}-byte limit for a memory")
        data = self._objects.read(entry.sha)
        if data is None:
            raise UnreadableMemory(f"blob {entry.sha[:7]} is missing from the repository")
        return entry, data

    def load(self, ref: str) -> Memory:
        rel, _ = self.resolve(ref)
        entry = self.tree.get(rel)
        if entry is not None and (rel, entry.sha) in self._parsed:
            return self._parsed[(rel, entry.sha)]
        entry, data = self._blob(rel)
        memory = memory_from_bytes(rel, data)
        self._parsed[(rel, entry.sha)] = memory
        return memory

    def read_optional(self, rel: str) -> tuple[str | None, str | None]:
        rel, _ = self.resolve(rel)
        try:
            _, data = self._blob(rel)
        except MemoryNotFound:
            return None, None
        return decode_memory(data), fingerprint(data)

    def read_text(self, rel: str) -> str | None:
        """A file's text at this commit, undecodable bytes replaced (our own records)."""
        rel, _ = self.resolve(rel)
        try:
            _, data = self._blob(rel)
        except (MemoryNotFound, UnreadableMemory):
            return None
        return data.decode("utf-8", "replace")

    def scan(self, progress: Callable[[int, int], None] | None = None, *, isolate: bool = False) -> ScanResult:
        """Every memory of the commit's tree. A (path, blob) parsed before, at
        any commit, is served from the scan cache (content-addressed, so
        never stale) and its text read from the blob on first use."""
        result = ScanResult()
        listed = sorted(rel for rel in self.tree if is_memory_path(rel) and self.tree[rel].kind == "blob")
        known = self._summaries.load_blobs((rel, self.tree[rel].sha) for rel in listed) if self._summaries else {}
        parsed: list[tuple[str, Memory]] = []
        for done, rel in enumerate(listed):
            if progress is not None and done % 2000 == 0:
                progress(done, len(listed))
            entry = self.tree[rel]
            hit = known.get((rel, entry.sha))
            if hit is not None and entry.mode != "120000" and entry.size <= MAX_MEMORY_BYTES:
                memory = Memory.from_cache(rel, hit[0], hit[1], (0, 0, 0, 0), partial(self.load, rel))
            else:
                try:
                    memory = self.load(rel)
                except (UnreadableMemory, MemoryNotFound) as exc:
                    result.errors.append(ScanError(rel, str(exc)))
                    continue
                parsed.append((entry.sha, memory))
            (result.history if paths.is_history(rel) else result.memories)[rel] = memory
        if self._summaries is not None:
            self._summaries.save_blobs(parsed)
        return result

    def refresh(self, previous: ScanResult, changed: set[str] | None = None) -> ScanResult:
        return previous  # history does not change
