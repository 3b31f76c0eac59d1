"""A Palinode store on disk: which files are memories, each parsed as it is."""
from __future__ import annotations

import gc
import os
import stat as stat_mod
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property, partial
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, NamedTuple

from . import child, paths
from .cache import ScanCache, store_cache_dir
from .config import StoreConfig, load_store_config
from .detect import detect_forget_request, detect_palinode_request
from .document import Document, parse_document
from .errors import Cancelled, MemoryNotFound, PalinodeError, PathError, ReadOnlyError, UnreadableMemory
from .gitstore import GitStore
from .markdown import MARKER_RE
from .textio import decode_memory, fingerprint, read_bytes_checked

# Our own durable state lives in a dot-directory with no .md files, so
# Palinode's watcher and indexer never see it.
AUDIT_DIR = ".palinode-audit"
RETIRED_STATUSES = frozenset({"archived", "deprecated", "superseded", "retracted"})


def _as_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


Stamp = tuple[int, int, int, int]  # (mtime_ns, ctime_ns, size, inode): a file is unchanged while all match


def stamp_of(st: os.stat_result) -> Stamp:
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


class Summary(NamedTuple):
    """What listing, counting and finding requests need, derived once when the
    file is parsed; the scan cache persists it so a reopen needs no parse.
    (A NamedTuple: a 100,000-memory reopen builds one per file.)"""
    status: str
    superseded_by: str | None
    retracted_prefs: tuple[str, ...] | None  # None when there are none (as the cache stores it)
    update_policy: str | None
    created_at: str | None
    restored_at: str | None
    fact_id: str
    category: str
    title: str
    lifecycle: str
    struck: bool
    forget_pref: str | None  # the preference this memory asks to forget, if it is a request
    palinode_pref: str | None  # what Palinode's own detector extracts where ours declines (else None)

    @classmethod
    def of(cls, rel: str, doc: Document) -> Summary:
        meta, body = doc.meta, doc.body
        status = meta.get("status")
        prefs = meta.get("retracted_prefs")
        fact_id = str(meta.get("id") or "").strip()
        category = meta.get("category")
        return cls(
            # exact, as Palinode compares it: `Archived` or a quoted `"archived "` is not archived
            status=str(status) if status not in (None, "") else "active",
            superseded_by=_as_text(meta.get("superseded_by")),
            # only a list is a record for Palinode; a scalar is not (it strikes and replaces it)
            retracted_prefs=(tuple(v for v in prefs if isinstance(v, str)) or None
                             if isinstance(prefs, list) else None),
            update_policy=_as_text(meta.get("update_policy")),
            created_at=_as_text(meta.get("created_at")),
            restored_at=_as_text(meta.get("restored_at")),
            fact_id=fact_id or Path(rel).stem,
            category=category if isinstance(category, str) and category else paths.category_of(rel),
            title=_title(rel, meta, body),
            lifecycle=str(meta.get("lifecycle") or "").lower(),
            struck=bool(MARKER_RE.search(body)),
            forget_pref=(pref := detect_forget_request(body)),
            palinode_pref=None if pref else detect_palinode_request(body),
        )


def _title(rel: str, meta: dict[str, Any], body: str) -> str:
    value = meta.get("title") or meta.get("name")
    if isinstance(value, str) and value.strip():
        return value.strip()
    for line in body.splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return Path(rel).stem


@dataclass(frozen=True)
class Memory:
    """One memory file: its summary always, its text when asked. A memory from
    the scan cache reads its file on first use of ``doc`` (through the store's
    checks, so a link retargeted since is still refused)."""
    rel: str
    fingerprint: str
    summary: Summary
    stamp: Stamp = (0, 0, 0, 0)
    loaded: Document | None = field(default=None, repr=False, compare=False)
    reload: Callable[[], "Memory"] | None = field(default=None, repr=False, compare=False)
    via_link: bool = False  # read through a symlink: its stamp does not cover the target, so never cached

    @cached_property
    def doc(self) -> Document:
        if self.loaded is not None:
            return self.loaded
        if self.reload is None:
            raise MemoryNotFound(f"{self.rel} has no text loaded")
        return self.reload().doc

    @property
    def text_read(self) -> bool:
        """Has this file's text been read (at scan time or since)?"""
        return self.loaded is not None or "doc" in self.__dict__

    @property
    def meta(self) -> dict[str, Any]:
        return self.doc.meta

    @property
    def body(self) -> str:
        return self.doc.body

    @property
    def text(self) -> str:
        return self.doc.text

    @property
    def status(self) -> str:
        return self.summary.status

    @property
    def archived(self) -> bool:
        return self.summary.status == "archived"

    @property
    def superseded_by(self) -> str | None:
        return self.summary.superseded_by

    @property
    def retracted_prefs(self) -> list[str]:
        return list(self.summary.retracted_prefs or ())

    @property
    def update_policy(self) -> str | None:
        return self.summary.update_policy

    @property
    def is_replace_doc(self) -> bool:
        return self.update_policy == "replace"  # exact, as Palinode's replace-guard compares it

    @property
    def created_at(self) -> str | None:
        return self.summary.created_at

    @property
    def effective_created_at(self) -> str | None:
        """``restored_at`` wins: a restored memory counts as created then."""
        return self.summary.restored_at or self.summary.created_at

    @property
    def fact_id(self) -> str:
        """The id tagging history entries: frontmatter ``id``, else the stem."""
        return self.summary.fact_id

    @property
    def struck(self) -> bool:
        return bool(self.summary.struck)  # the cache stores it as 0/1

    @property
    def forget_pref(self) -> str | None:
        return self.summary.forget_pref

    @property
    def palinode_pref(self) -> str | None:
        return self.summary.palinode_pref

    @property
    def is_history(self) -> bool:
        return paths.is_history(self.rel)

    @property
    def special_dir(self) -> str | None:
        return paths.special_dir(self.rel)

    @property
    def category(self) -> str:
        return self.summary.category

    @property
    def title(self) -> str:
        return self.summary.title

    @property
    def retired_reason(self) -> str | None:
        """Palinode's lifecycle eligibility, first matching rule (spec §2)."""
        status = self.status.strip().lower()
        if status in RETIRED_STATUSES:
            return f"status:{status}"
        if self.summary.lifecycle in RETIRED_STATUSES:
            return f"lifecycle:{self.summary.lifecycle}"
        if "archive" in self.rel.split("/")[:-1]:
            return "path:archive"
        if self.superseded_by:
            return "superseded_by"
        return None

    @cached_property
    def body_line_offset(self) -> int:
        """Lines before the body, so body line N is file line N + offset."""
        return self.text[: len(self.text) - len(self.body)].count("\n")


@dataclass(frozen=True)
class ScanError:
    path: str
    reason: str


def _tally(counts: dict[str, int], memory: Memory, sign: int) -> None:
    key = "archived" if memory.archived else "active"
    counts[key] += sign
    if memory.struck:
        counts["struck"] += sign


@dataclass
class ScanResult:
    memories: dict[str, Memory] = field(default_factory=dict)
    history: dict[str, Memory] = field(default_factory=dict)
    errors: list[ScanError] = field(default_factory=list)
    # status tallies, kept incrementally by Store.refresh (a full pass over
    # 100,000 memories per refreshed file would show in the UI)
    _tallies: dict[str, int] | None = field(default=None, repr=False)

    def counts(self) -> dict[str, int]:
        if self._tallies is None:
            tallies = {"active": 0, "archived": 0, "struck": 0}
            for memory in self.memories.values():
                _tally(tallies, memory, 1)
            self._tallies = tallies
        return {"memories": len(self.memories), **self._tallies, "history": len(self.history),
                "errors": len(self.errors)}


_gc_lock = threading.Lock()
_gc_state = {"pauses": 0, "was_enabled": True}


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Building 100,000 memories would run the cyclic collector hundreds of
    times over objects that are never garbage (a third of a cached reopen)."""
    with _gc_lock:
        if _gc_state["pauses"] == 0:
            _gc_state["was_enabled"] = gc.isenabled()
            gc.disable()
        _gc_state["pauses"] += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_state["pauses"] -= 1
            if _gc_state["pauses"] == 0 and _gc_state["was_enabled"]:
                gc.enable()


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Store:
    """One store root. ``read_only`` makes every mutation raise in the core."""

    def __init__(self, root: str | os.PathLike[str], *, read_only: bool = False,
                 clock: Callable[[], datetime] = utc_now,
                 on_git: Callable[[str], None] | None = None, cache_dir: Path | None = None,
                 use_scan_cache: bool = True):
        path = Path(root).expanduser()
        if not path.is_dir():
            raise PalinodeError(f"no store at {path}: not a directory")
        self.root = Path(os.path.realpath(path))
        self.read_only = read_only or os.environ.get("PALINODE_AUDIT_READ_ONLY", "") not in ("", "0")
        self.clock = clock
        self.git = GitStore(self.root, on_command=on_git)
        self.config: StoreConfig = load_store_config(self.root)
        self.cache_dir = cache_dir or store_cache_dir(self.root)
        self.scan_cache = ScanCache(self.cache_dir / "scan.sqlite3") if use_scan_cache else None
        self._cancel = threading.Event()

    # -- paths -------------------------------------------------------------
    def resolve(self, ref: str) -> tuple[str, Path]:
        return paths.resolve_in_store(self.root, ref)

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only; no change was made")

    # -- reading -----------------------------------------------------------
    def iter_markdown(self) -> list[tuple[str, str, os.stat_result | None]]:
        """(rel, absolute path, lstat) of every ``*.md`` Palinode could treat as
        memory, sorted, pruning skipped and dot directories, never descending
        through directory links. The lstat is None when the file vanished.
        (A list built without generators: this runs over every file on open.)"""
        found: list[tuple[str, str, os.stat_result | None]] = []

        def walk(folder: str, prefix: str) -> None:
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                return
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
            for entry in subdirs:
                walk(entry.path, f"{prefix}{entry.name}/")

        walk(str(self.root), "")
        return found

    def load(self, ref: str) -> Memory:
        rel, abs_path = self.resolve(ref)
        return self._load(rel, abs_path)

    def _load(self, rel: str, abs_path: str | Path) -> Memory:
        try:
            st = os.lstat(abs_path)
        except FileNotFoundError:
            raise MemoryNotFound(f"no memory at {rel}") from None
        via_link = stat_mod.S_ISLNK(st.st_mode)
        if via_link:
            try:
                paths.resolve_in_store(self.root, rel)
            except PathError:
                raise UnreadableMemory("symlink points outside the store; not followed") from None
            try:
                st = os.stat(abs_path)
            except OSError:
                raise UnreadableMemory("broken or looping symlink") from None
        if not stat_mod.S_ISREG(st.st_mode):
            raise UnreadableMemory("not a regular file")
        try:
            data = read_bytes_checked(abs_path)
        except OSError as exc:
            raise UnreadableMemory(f"cannot read: {exc.strerror or exc}") from None
        doc = parse_document(decode_memory(data))
        return Memory(rel, fingerprint(data), Summary.of(rel, doc), stamp_of(st), loaded=doc, via_link=via_link)

    def cancel(self) -> None:
        """Stop a scan running in another thread (its owner is closing)."""
        self._cancel.set()

    def scan(self, progress: Callable[[int, int], None] | None = None, *, isolate: bool = False) -> ScanResult:
        """Every memory in the store. Files whose stat stamp matches the scan
        cache are not read at all (their text loads on first use). ``progress``
        hears (files done, total) now and then: a first open of a big store
        parses every file. With ``isolate``, when thousands of files are not
        cached yet, they are parsed into the cache by a low-priority child
        process first (see child.py), so the caller's UI keeps the GIL."""
        with _gc_paused():
            cached = self.scan_cache.load() if self.scan_cache else {}
            listed = self.iter_markdown()
        if isolate and self.scan_cache is not None and len(listed) - len(cached) > child.ISOLATE_ABOVE:
            try:
                child.run_audit(["scan", str(self.root), "--cache-dir", str(self.cache_dir)],
                                (lambda phase, done, total: progress(done, total)) if progress else None,
                                self._cancel)
            except PalinodeError as exc:
                self.scan_cache.problem = f"{exc}; parsed here instead"
            else:
                with _gc_paused():
                    cached = self.scan_cache.load()  # now filled by the child
        with _gc_paused():
            return self._scan(listed, cached, progress)

    def _scan(self, listed: list[tuple[str, str, os.stat_result | None]], cached: dict[str, Any],
              progress: Callable[[int, int], None] | None) -> ScanResult:
        result = ScanResult()
        parsed: list[Memory] = []
        for done, (rel, abs_path, st) in enumerate(listed):
            if done % 2000 == 0:
                if self._cancel.is_set():
                    raise Cancelled()
                if progress is not None:
                    progress(done, len(listed))
            hit = cached.pop(rel, None)
            if st is None:
                continue  # vanished while listing
            if hit is not None and stat_mod.S_ISREG(st.st_mode) and stamp_of(st) == hit[0]:
                memory = Memory(rel, hit[1], hit[2], hit[0], reload=partial(self._load, rel, abs_path))
                (result.history if paths.is_history(rel) else result.memories)[rel] = memory
                continue
            memory = self._scan_one(result, rel, abs_path)
            if memory is not None:
                parsed.append(memory)
        self._save_cache(parsed, [*cached, *(e.path for e in result.errors)])
        return result

    def refresh(self, previous: ScanResult, changed: set[str] | None = None) -> ScanResult:
        """A new scan reusing unchanged entries of ``previous``.

        With ``changed`` only those paths are re-read (the watcher's batch);
        without it every file is stat-ed and re-read only if its stamp moved."""
        with _gc_paused():
            return self._refresh(previous, changed)

    def _refresh(self, previous: ScanResult, changed: set[str] | None) -> ScanResult:
        if changed is None:
            result = ScanResult()
            old = {**previous.memories, **previous.history}
            parsed: list[Memory] = []
            for rel, abs_path, st in self.iter_markdown():
                known = old.pop(rel, None)
                if st is None:
                    continue  # vanished while listing
                if known is not None and not known.via_link and stamp_of(st) == known.stamp:
                    (result.history if known.is_history else result.memories)[rel] = known
                    continue
                memory = self._scan_one(result, rel, abs_path)
                if memory is not None:
                    parsed.append(memory)
            self._save_cache(parsed, [*old, *(e.path for e in result.errors)])
            return result
        result = ScanResult(dict(previous.memories), dict(previous.history),
                            [e for e in previous.errors if e.path not in changed])
        tallies = dict(previous._tallies) if previous._tallies is not None else None
        parsed = []
        for rel in changed:
            old_memory = result.memories.pop(rel, None)
            result.history.pop(rel, None)
            if tallies is not None and old_memory is not None:
                _tally(tallies, old_memory, -1)
            if not rel.endswith(".md") or paths.is_skipped(rel) or any(
                    seg.startswith(".") for seg in rel.split("/")):
                continue
            try:
                _, abs_path = self.resolve(rel)
            except PathError as exc:
                result.errors.append(ScanError(rel, str(exc)))
                continue
            if os.path.lexists(abs_path):
                memory = self._scan_one(result, rel, abs_path)
                if memory is not None:
                    parsed.append(memory)
                    if tallies is not None and not memory.is_history:
                        _tally(tallies, memory, 1)
        result._tallies = tallies
        result.errors.sort(key=lambda e: e.path)
        self._save_cache(parsed, [rel for rel in changed if rel not in result.memories and rel not in result.history])
        return result

    def _scan_one(self, result: ScanResult, rel: str, abs_path: str | Path) -> Memory | None:
        try:
            memory = self._load(rel, abs_path)
        except (UnreadableMemory, MemoryNotFound) as exc:
            result.errors.append(ScanError(rel, str(exc)))
            return None
        (result.history if paths.is_history(rel) else result.memories)[rel] = memory
        return memory

    def _save_cache(self, parsed: list[Memory], removed: list[str]) -> None:
        if self.scan_cache is not None:
            self.scan_cache.save([m for m in parsed if not m.via_link], removed)

    def read_optional(self, rel: str) -> tuple[str | None, str | None]:
        """Text and fingerprint of a store file, or (None, None) when absent."""
        _, abs_path = self.resolve(rel)
        try:
            data = read_bytes_checked(abs_path)
        except FileNotFoundError:
            return None, None
        return decode_memory(data), fingerprint(data)

    def now(self) -> datetime:
        return self.clock()
