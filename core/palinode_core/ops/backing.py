"""``backed_by`` propagation as Palinode 0.23 does it (docs/format.md, "backed_by
propagation"): retiring a source flags each live memory that rests on it with a
``stale_backing`` entry, and restoring a memory re-checks its own backing.
Flags only: bodies and statuses of dependents are never changed."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ParamSpec, TypeVar

from ..errors import MemoryNotFound, PathError, UnreadableMemory
from ..storage import paths, walk
from ..storage.grep import files_containing
from ..storage.memory import Memory, link_refs
from ..storage.textio import decode_memory, fingerprint, read_bytes_checked
from ..text.document import parse_document

FIELD = "stale_backing"
RESTORE_CHECK = "restore-check"
_NOT_DEPENDENTS = frozenset({"archive", "daily", "inbox"})


@dataclass(frozen=True)
class Flag:
    """One dependent gaining an entry: its text before and after."""

    rel: str
    old_text: str
    new_text: str
    fingerprint: str


def normalize_ref(ref: str) -> str:
    r = ref.strip().replace("\\", "/").lstrip("/")
    return r.removesuffix(".md")


def entries(meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The well-formed entries (malformed ones are dropped, as Palinode's merge drops them)."""
    raw = meta.get(FIELD)
    if not isinstance(raw, list):
        return []
    return [e for e in raw if isinstance(e, dict) and str(e.get("ref") or "").strip()]


def source_refs(rel: str) -> list[str]:
    """How a dependent may cite ``rel``; a ``-status`` layer answers to its base, which is canonical."""
    primary = normalize_ref(rel)
    base = re.sub(r"-status$", "", primary)
    return [primary, base] if base != primary else [primary]


def entry(ref: str, op: str, when: datetime, reason: str) -> dict[str, Any]:
    out: dict[str, Any] = {"ref": normalize_ref(ref), "op": op, "at": when.isoformat(timespec="seconds")}
    if reason:
        out["reason"] = reason
    return out


def plan_flags(store: Any, source_rel: str, op: str, reason: str) -> tuple[Flag, ...]:
    """The dependents Palinode flags after ``op`` retired ``source_rel``."""

    refs = source_refs(source_rel)
    wanted = set(refs)
    new_entry = entry(refs[-1], op, store.now(), reason)
    flags = []
    citing = _citing(store)
    listing = store.iter_markdown() if citing is None else walk.listed(str(store.root), citing)
    for rel, abs_path, _st in listing:
        segments = rel.split("/")[:-1]
        if paths.is_history(rel) or any(seg in _NOT_DEPENDENTS for seg in segments) or normalize_ref(rel) in wanted:
            continue
        try:
            data = read_bytes_checked(abs_path)
            if b"backed_by" not in data:
                continue  # cheap: most memories cite nothing
            doc = parse_document(decode_memory(data))
        except (OSError, UnreadableMemory):
            continue  # unreadable: Palinode skips it too
        if doc.meta.get("status") == "archived":
            continue  # asserts nothing in recall
        if not {normalize_ref(r) for r in link_refs(doc.meta)} & wanted:
            continue
        current = entries(doc.meta)
        if any(normalize_ref(e["ref"]) == new_entry["ref"] for e in current):
            continue  # one flag per source
        try:
            new_text = doc.edit({FIELD: [*current, new_entry]})
        except UnreadableMemory:
            continue
        flags.append(Flag(rel, doc.text, new_text, fingerprint(data)))
    return tuple(flags)


def restore_checks(store: Any, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """Entries a memory being restored gains: one per ``backed_by`` source
    archived or missing now that it has no entry for yet."""
    already = {normalize_ref(e["ref"]) for e in entries(meta)}
    out = []
    for raw in link_refs(meta):
        ref = normalize_ref(raw)
        if not ref or ref in already:
            continue
        already.add(ref)
        why = _inactive(store, ref)
        if why is not None:
            out.append(entry(ref, RESTORE_CHECK, store.now(), why))
    return out


def _inactive(store: Any, ref: str) -> str | None:

    for candidate in (f"{ref}.md", f"{ref}-status.md"):
        try:
            _, abs_path = store.resolve(candidate)
            if not abs_path.is_file():
                continue
            meta = parse_document(decode_memory(read_bytes_checked(abs_path))).meta
        except (PathError, OSError, UnreadableMemory, MemoryNotFound):
            return None  # not a retirement signal
        if meta.get("status") != "archived":
            return None
        successor = meta.get("superseded_by")
        return f"{ref} is archived, superseded by {successor}" if successor else f"{ref} is archived"
    return f"{ref} is missing"


# Within one plan the files citing a source are listed once: from the scanned
# memories' summaries when the plan is given them, else by a git grep of the
# whole worktree (70 ms of CPU at 10,000 memories), and a plan asks for every
# target, and again for Palinode's own plan of the same targets.
_LISTED: ContextVar[dict[str, set[str] | None] | None] = ContextVar("backed_by_listed", default=None)
_P = ParamSpec("_P")
_R = TypeVar("_R")


@contextmanager
def listed_from(store: Any, memories: Mapping[str, Memory] | None) -> Iterator[None]:
    """Within it, the files citing anything are those of ``memories`` (the whole
    store as scanned) whose summary says so; without them, one git grep."""
    if _LISTED.get() is not None:  # already inside one: share it
        yield
        return
    listed: dict[str, set[str] | None] = {}
    if memories is not None:  # the store as scanned: what each memory's backed_by names is in its summary
        listed[str(store.root)] = {rel for rel, memory in memories.items() if memory.cites}
    token = _LISTED.set(listed)
    try:
        yield
    finally:
        _LISTED.reset(token)


def one_listing(plan: Callable[_P, _R]) -> Callable[_P, _R]:
    """Run ``plan(store, index, request_path, memories, ...)`` listing the files
    that cite anything once (one consistent read): the memories it is given,
    the whole scanned store, say which do."""

    @functools.wraps(plan)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        store = args[0] if args else kwargs["store"]
        memories = args[3] if len(args) > 3 else kwargs.get("memories")
        with listed_from(store, memories):  # type: ignore[arg-type]
            return plan(*args, **kwargs)

    return wrapper


def _citing(store: Any) -> set[str] | None:
    """The memories whose text holds ``backed_by`` (None: read every memory instead)."""
    listed = _LISTED.get()
    if listed is None:
        return files_containing(store, {"backed_by"})
    key = str(store.root)
    if key not in listed:
        listed[key] = files_containing(store, {"backed_by"})
    return listed[key]
