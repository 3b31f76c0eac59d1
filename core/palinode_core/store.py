"""A Palinode store on disk: which files are memories, each parsed as it is."""
from __future__ import annotations

import os
import stat as stat_mod
from dataclasses import dataclass, field
from functools import cached_property
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from . import paths
from .config import StoreConfig, load_store_config
from .document import Document, parse_document
from .errors import MemoryNotFound, PalinodeError, PathError, ReadOnlyError, UnreadableMemory
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


@dataclass(frozen=True)
class Memory:
    """One parsed memory file. Derived values (struck, title, ...) are computed
    once: views ask for them for every memory on every refresh."""
    rel: str
    doc: Document
    fingerprint: str
    mtime_ns: int = 0
    size: int = 0

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
        value = self.meta.get("status")
        return str(value).strip() if value not in (None, "") else "active"

    @property
    def archived(self) -> bool:
        return self.status.lower() == "archived"

    @property
    def superseded_by(self) -> str | None:
        return _as_text(self.meta.get("superseded_by"))

    @property
    def retracted_prefs(self) -> list[str]:
        value = self.meta.get("retracted_prefs")
        if isinstance(value, list):
            return [str(v) for v in value]
        return [str(value)] if isinstance(value, str) and value else []

    @property
    def update_policy(self) -> str | None:
        return _as_text(self.meta.get("update_policy"))

    @property
    def is_replace_doc(self) -> bool:
        return (self.update_policy or "").strip().lower() == "replace"

    @property
    def created_at(self) -> str | None:
        return _as_text(self.meta.get("created_at"))

    @property
    def effective_created_at(self) -> str | None:
        """``restored_at`` wins: a restored memory counts as created then."""
        return _as_text(self.meta.get("restored_at")) or self.created_at

    @property
    def fact_id(self) -> str:
        """The id tagging history entries: frontmatter ``id``, else the stem."""
        value = str(self.meta.get("id") or "").strip()
        return value or Path(self.rel).stem

    @cached_property
    def struck(self) -> bool:
        return bool(MARKER_RE.search(self.body))

    @property
    def is_history(self) -> bool:
        return paths.is_history(self.rel)

    @property
    def special_dir(self) -> str | None:
        return paths.special_dir(self.rel)

    @cached_property
    def category(self) -> str:
        value = self.meta.get("category")
        return str(value) if isinstance(value, str) and value else paths.category_of(self.rel)

    @cached_property
    def title(self) -> str:
        value = self.meta.get("title") or self.meta.get("name")
        if isinstance(value, str) and value.strip():
            return value.strip()
        for line in self.body.splitlines():
            if line.startswith("# "):
                return line[2:].strip()
        return Path(self.rel).stem

    @property
    def retired_reason(self) -> str | None:
        """Palinode's lifecycle eligibility, first matching rule (spec §2)."""
        status = self.status.lower()
        if status in RETIRED_STATUSES:
            return f"status:{status}"
        lifecycle = str(self.meta.get("lifecycle") or "").lower()
        if lifecycle in RETIRED_STATUSES:
            return f"lifecycle:{lifecycle}"
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


@dataclass
class ScanResult:
    memories: dict[str, Memory] = field(default_factory=dict)
    history: dict[str, Memory] = field(default_factory=dict)
    errors: list[ScanError] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        mems = self.memories.values()
        return {
            "memories": len(self.memories),
            "active": sum(1 for m in mems if not m.archived),
            "archived": sum(1 for m in mems if m.archived),
            "struck": sum(1 for m in mems if m.struck),
            "history": len(self.history),
            "errors": len(self.errors),
        }


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


class Store:
    """One store root. ``read_only`` makes every mutation raise in the core."""

    def __init__(self, root: str | os.PathLike[str], *, read_only: bool = False,
                 clock: Callable[[], datetime] = utc_now,
                 on_git: Callable[[str], None] | None = None):
        path = Path(root).expanduser()
        if not path.is_dir():
            raise PalinodeError(f"no store at {path}: not a directory")
        self.root = Path(os.path.realpath(path))
        self.read_only = read_only or os.environ.get("PALINODE_AUDIT_READ_ONLY", "") not in ("", "0")
        self.clock = clock
        self.git = GitStore(self.root, on_command=on_git)
        self.config: StoreConfig = load_store_config(self.root)

    # -- paths -------------------------------------------------------------
    def resolve(self, ref: str) -> tuple[str, Path]:
        return paths.resolve_in_store(self.root, ref)

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError("the store is open read-only; no change was made")

    # -- reading -----------------------------------------------------------
    def iter_markdown(self) -> Iterator[tuple[str, Path]]:
        """Every ``*.md`` Palinode could treat as memory, pruning skipped and
        dot directories, never descending through directory links."""
        for dirpath, dirnames, filenames in os.walk(self.root, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in paths.ALWAYS_SKIP and not d.startswith("."))
            rel_dir = os.path.relpath(dirpath, self.root)
            for name in sorted(filenames):
                if not name.endswith(".md") or name.startswith("."):
                    continue
                rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
                yield rel, Path(dirpath, name)

    def load(self, ref: str) -> Memory:
        rel, abs_path = self.resolve(ref)
        return self._load(rel, abs_path)

    def _load(self, rel: str, abs_path: Path) -> Memory:
        try:
            st = os.lstat(abs_path)
        except FileNotFoundError:
            raise MemoryNotFound(f"no memory at {rel}") from None
        if stat_mod.S_ISLNK(st.st_mode):
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
        text = decode_memory(data)
        return Memory(rel, parse_document(text), fingerprint(data), st.st_mtime_ns, st.st_size)

    def scan(self) -> ScanResult:
        result = ScanResult()
        for rel, abs_path in self.iter_markdown():
            self._scan_one(result, rel, abs_path)
        return result

    def refresh(self, previous: ScanResult, changed: set[str] | None = None) -> ScanResult:
        """A new scan reusing unchanged entries of ``previous``.

        With ``changed`` only those paths are re-read (the watcher's batch);
        without it every file is stat-ed and re-read only if its size or mtime
        moved."""
        if changed is None:
            result = ScanResult()
            old = {**previous.memories, **previous.history}
            for rel, abs_path in self.iter_markdown():
                known = old.get(rel)
                if known is not None:
                    try:
                        st = os.lstat(abs_path)
                    except OSError:
                        continue
                    if st.st_mtime_ns == known.mtime_ns and st.st_size == known.size and not stat_mod.S_ISLNK(st.st_mode):
                        (result.history if known.is_history else result.memories)[rel] = known
                        continue
                self._scan_one(result, rel, abs_path)
            return result
        result = ScanResult(dict(previous.memories), dict(previous.history),
                            [e for e in previous.errors if e.path not in changed])
        for rel in changed:
            result.memories.pop(rel, None)
            result.history.pop(rel, None)
            if not rel.endswith(".md") or paths.is_skipped(rel) or any(
                    seg.startswith(".") for seg in rel.split("/")):
                continue
            try:
                _, abs_path = self.resolve(rel)
            except PathError as exc:
                result.errors.append(ScanError(rel, str(exc)))
                continue
            if os.path.lexists(abs_path):
                self._scan_one(result, rel, abs_path)
        result.errors.sort(key=lambda e: e.path)
        return result

    def _scan_one(self, result: ScanResult, rel: str, abs_path: Path) -> None:
        try:
            memory = self._load(rel, abs_path)
        except (UnreadableMemory, MemoryNotFound) as exc:
            result.errors.append(ScanError(rel, str(exc)))
            return
        (result.history if paths.is_history(rel) else result.memories)[rel] = memory

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
