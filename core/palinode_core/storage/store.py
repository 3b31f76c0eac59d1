"""A Palinode store on disk: which files are memories, each parsed as it is."""

from __future__ import annotations

import gc
import os
import stat as stat_mod
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import Cancelled, MemoryNotFound, PalinodeError, PathError, ReadOnlyError, UnreadableMemory
from ..text.document import parse_document
from . import child, paths, safeio
from .cache import ScanCache, store_cache_dir
from .config import StoreConfig, config_or_defaults, load_store_config
from .gitstore import GitStore
from .memory import Memory, ScanError, ScanResult, Summary, stamp_of, tally
from .textio import MAX_MEMORY_BYTES, decode_memory, fingerprint, read_bytes_checked, too_big
from .walk import Listing, iter_markdown

SAVE_EVERY = 2000  # files parsed between writes to the scan cache

# Our own durable state lives in a dot-directory with no .md files, so
# Palinode's watcher and indexer never see it.
AUDIT_DIR = ".palinode-audit"


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
    return datetime.now(UTC)


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a byte that is not UTF-8, kept by the file system as a surrogate
        return False
    return True


class Store:
    """One store root. ``read_only`` makes every mutation raise in the core."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        read_only: bool = False,
        clock: Callable[[], datetime] = utc_now,
        on_git: Callable[[str], None] | None = None,
        cache_dir: Path | None = None,
        use_scan_cache: bool = True,
    ):
        path = Path(root).expanduser()
        if not path.is_dir():
            raise PalinodeError(f"no store at {path}: not a directory")
        self.root = Path(os.path.realpath(path))
        self.read_only = read_only or os.environ.get("PALINODE_AUDIT_READ_ONLY", "") not in ("", "0")
        self.clock = clock
        self.git = GitStore(self.root, on_command=on_git, read_only=self.read_only)
        # A config that cannot be read stops no read: Palinode's defaults, said once (config_error);
        # writes are refused until it is fixed, since its commit prefix and knobs are unknown.
        self.config: StoreConfig
        self.config_error: str | None
        self.config, self.config_error = config_or_defaults(lambda: load_store_config(self.root))
        # absolute: a child process (storage.child) is handed it and runs in a folder of its own
        self.cache_dir = Path(os.path.abspath(cache_dir)) if cache_dir else store_cache_dir(self.root)
        self.scan_cache = ScanCache(self.cache_dir / "scan.sqlite3") if use_scan_cache else None
        self._cancel = threading.Event()

    # -- paths -------------------------------------------------------------
    def resolve(self, ref: str) -> tuple[str, Path]:
        return paths.resolve_in_store(self.root, ref)

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only; no change was made")
        if self.config_error:
            raise PalinodeError(f"{self.config_error}: fix it before changing the store; nothing was changed")

    # -- reading -----------------------------------------------------------
    def iter_markdown(self) -> Listing:
        return iter_markdown(str(self.root))

    def load(self, ref: str) -> Memory:
        rel, abs_path = self.resolve(ref)
        return self._load(rel, abs_path)

    def load_memory(self, ref: str) -> Memory:
        """``load``, for a change: refused unless ``ref`` is a memory as the scan lists them."""
        rel, abs_path = self.resolve(ref)
        why = paths.not_a_memory(rel)
        if why:
            raise PathError(f"{rel} is {why}; nothing was changed")
        return self._load(rel, abs_path)

    def successor(self, ref: str, of: str) -> str:
        """A ``superseded_by`` target: a path of this store other than ``of``
        (one not written yet is Palinode's to allow; ``integrity`` flags it)."""
        rel, _ = self.resolve(ref)
        if rel == of:
            raise PathError(f"{rel} cannot supersede itself; nothing was changed")
        return rel

    def _load(self, rel: str, abs_path: str | Path) -> Memory:
        """Read one file without following a link on the way; a memory that is
        itself a link inside the store is read at its target's own path (again
        without links), so a swapped link can only make the read fail."""
        read_rel, via_link = rel, False
        try:
            data, st = safeio.read_file(rel, self.root, MAX_MEMORY_BYTES)
        except FileNotFoundError:
            raise MemoryNotFound(f"no memory at {rel}") from None
        except safeio.LinkRefused:
            read_rel, via_link = self._link_target(rel, abs_path), True
            try:
                data, st = safeio.read_file(read_rel, self.root, MAX_MEMORY_BYTES)
            except FileNotFoundError:
                raise UnreadableMemory("broken or looping symlink") from None
            except safeio.LinkRefused:
                raise UnreadableMemory("a link leads to another link; not followed") from None
            except IsADirectoryError:
                raise UnreadableMemory("not a regular file") from None
            except ValueError as exc:
                raise UnreadableMemory(too_big(exc)) from None
            except OSError as exc:
                raise UnreadableMemory(f"cannot read: {exc.strerror or exc}") from None
        except IsADirectoryError:
            raise UnreadableMemory("not a regular file") from None
        except ValueError as exc:
            raise UnreadableMemory(too_big(exc)) from None
        except OSError as exc:
            raise UnreadableMemory(f"cannot read: {exc.strerror or exc}") from None
        doc = parse_document(decode_memory(data))
        return Memory(rel, fingerprint(data), Summary.of(rel, doc), stamp_of(st), loaded=doc, via_link=via_link)

    def _link_target(self, rel: str, abs_path: str | Path) -> str:
        """The store-relative real path of a memory that is a link, or a refusal."""
        try:
            st = os.lstat(abs_path)
        except OSError:
            st = None
        if st is None or not stat_mod.S_ISLNK(st.st_mode):
            raise UnreadableMemory("a folder on the way is a symbolic link; not followed")
        real = Path(os.path.realpath(abs_path))
        if real == self.root or self.root not in real.parents:
            raise UnreadableMemory("symlink points outside the store; not followed")
        return real.relative_to(self.root).as_posix()

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
                child.run_audit(
                    ["scan", str(self.root), "--cache-dir", str(self.cache_dir)],
                    (lambda phase, done, total: progress(done, total)) if progress else None,
                    self._cancel,
                )
            except PalinodeError as exc:
                self.scan_cache.notice = f"{exc}; parsed here instead"
            else:
                with _gc_paused():
                    cached = self.scan_cache.load()  # now filled by the child
        with _gc_paused():
            return self._scan(listed, cached, progress)

    def _scan(
        self,
        listed: list[tuple[str, str, os.stat_result | None]],
        cached: dict[str, Any],
        progress: Callable[[int, int], None] | None,
    ) -> ScanResult:
        result = ScanResult()
        parsed: list[Memory] = []
        # A first scan of a big store keeps each memory's summary, not its text (read
        # again on first use, as from the cache): memory stays flat at 100,000 files.
        light = sum(1 for rel, _a, _s in listed if rel not in cached) > child.ISOLATE_ABOVE
        load, memories, history = self._load, result.memories, result.history
        for done, (rel, abs_path, st) in enumerate(listed):
            if done % SAVE_EVERY == 0:
                if parsed:  # what is parsed is kept as it goes: an interrupted first scan resumes
                    self._save_cache(parsed, [])
                    parsed = []
                if self._cancel.is_set():
                    raise Cancelled()
                if progress is not None:
                    progress(done, len(listed))
            hit = cached.pop(rel, None)
            if st is None:
                continue  # vanished while listing
            if hit is not None and stat_mod.S_ISREG(st.st_mode) and stamp_of(st) == hit[0]:
                memory = Memory.from_cache(rel, hit[1], hit[2], hit[0], partial(load, rel, abs_path))
                (history if paths.is_history(rel) else memories)[rel] = memory
                continue
            fresh = self._scan_one(result, rel, abs_path)
            if fresh is None:
                continue
            parsed.append(fresh)
            if light and not fresh.via_link:
                kept = replace(fresh, loaded=None, reload=partial(self._load, rel, abs_path))
                (result.history if paths.is_history(rel) else result.memories)[rel] = kept
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
        result = ScanResult(
            dict(previous.memories), dict(previous.history), [e for e in previous.errors if e.path not in changed]
        )
        tallies = dict(previous._tallies) if previous._tallies is not None else None
        parsed = []
        for rel in changed:
            old_memory = result.memories.pop(rel, None)
            result.history.pop(rel, None)
            if tallies is not None and old_memory is not None:
                tally(tallies, old_memory, -1)
            if not rel.endswith(".md") or paths.is_skipped(rel) or any(seg.startswith(".") for seg in rel.split("/")):
                continue
            try:
                _, rel_path = self.resolve(rel)
            except PathError as exc:
                result.errors.append(ScanError(rel, str(exc)))
                continue
            if os.path.lexists(rel_path):
                memory = self._scan_one(result, rel, rel_path)
                if memory is not None:
                    parsed.append(memory)
                    if tallies is not None and not memory.is_history:
                        tally(tallies, memory, 1)
        result._tallies = tallies
        result.errors.sort(key=lambda e: e.path)
        self._save_cache(parsed, [rel for rel in changed if rel not in result.memories and rel not in result.history])
        return result

    def _scan_one(self, result: ScanResult, rel: str, abs_path: str | Path) -> Memory | None:
        if not _utf8(rel):  # legal on Linux, unusable in caches, commits and JSON: one entry naming it
            shown = os.fsencode(rel).decode("utf-8", "backslashreplace")
            result.errors.append(ScanError(shown, "file name is not valid UTF-8; rename it to read it"))
            return None
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
        """Text and fingerprint of a store file, or (None, None) when absent.
        No link is followed (a linked file or folder raises an OSError)."""
        rel, _ = self.resolve(rel)
        try:
            data = read_bytes_checked(rel, root=self.root)
        except FileNotFoundError:
            return None, None
        return decode_memory(data), fingerprint(data)

    def read_text(self, rel: str) -> str | None:
        """A store file's text with undecodable bytes replaced, or None when
        absent (our own records, which a damaged byte must not make unreadable)."""
        rel, _ = self.resolve(rel)
        try:  # never through a link: a linked record would be read from outside the store
            return safeio.read_bytes(rel, self.root).decode("utf-8", errors="replace")
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        except safeio.LinkRefused:
            raise PalinodeError(f"{rel} or a folder above it is a symbolic link; it is not followed") from None

    def now(self) -> datetime:
        return self.clock()
