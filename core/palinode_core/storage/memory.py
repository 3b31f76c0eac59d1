"""Memory values: one parsed file's summary (what listing and counting need),
the memory itself (its text read on first use), and a scan's result."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import MemoryNotFound
from ..text.detect import detect_forget_request
from ..text.document import Document
from ..text.markdown import MARKER_RE
from ..text.palinode_detect import detect_palinode_request
from . import paths

RETIRED_STATUSES = frozenset({"archived", "deprecated", "superseded", "retracted"})


def _as_text(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return value.isoformat() if hasattr(value, "isoformat") else str(value)


Stamp = tuple[int, int, int, int]  # (mtime_ns, ctime_ns, size, inode): a file is unchanged while all match


def link_refs(meta: dict[str, Any], field: str = "backed_by") -> list[str]:
    """A string or a list of strings; anything else names nothing."""
    raw = meta.get(field)
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return []
    return [r.strip() for r in raw if isinstance(r, str) and r.strip()]


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
    cites: bool  # its backed_by names a memory: retiring that one flags this one

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
            retracted_prefs=(
                tuple(v for v in prefs if isinstance(v, str)) or None if isinstance(prefs, list) else None
            ),
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
            cites=bool(link_refs(meta)),
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
    reload: Callable[[], Memory] | None = field(default=None, repr=False, compare=False)
    via_link: bool = False  # read through a symlink: its stamp does not cover the target, so never cached

    @classmethod
    def from_cache(
        cls, rel: str, fingerprint: str, summary: Summary, stamp: Stamp, reload: Callable[[], Memory]
    ) -> Memory:
        """One memory of the scan cache, made in a quarter of the dataclass's frozen
        ``__init__`` (a reopen makes one per file: 10,000 took 24 ms); equal to
        ``Memory(rel, fingerprint, summary, stamp, reload=reload)``."""
        memory = object.__new__(cls)
        memory.__dict__.update(
            rel=rel, fingerprint=fingerprint, summary=summary, stamp=stamp, loaded=None, reload=reload, via_link=False
        )
        return memory

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
    def cites(self) -> bool:
        return bool(self.summary.cites)  # the cache stores it as 0/1

    @property
    def palinode_pref(self) -> str | None:
        return self.summary.palinode_pref

    @property
    def is_history(self) -> bool:
        return paths.is_history(self.rel)

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


def tally(counts: dict[str, int], memory: Memory, sign: int) -> None:
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
                tally(tallies, memory, 1)
            self._tallies = tallies
        return {
            "memories": len(self.memories),
            **self._tallies,
            "history": len(self.history),
            "errors": len(self.errors),
        }
