"""An intent journal, so a crash mid-write is reported and repaired, never
left silently inconsistent.

Before the first byte of a commit is written, the whole intent (each file's
old and new text, each path's index entry, the commit subject) is saved to
``.git/palinode-audit/journal/``; it is removed once the commit exists. A
forget apply or a withdraw is one transaction: its entry lists every planned
step before the first write and records each commit as it lands; each step's
own entry names it as ``parent``. Inside ``.git`` nothing here is tracked,
shown by ``git status`` or read by Palinode.

What was done is always decided from what HEAD, the index and the worktree
hold; the journal only says what was meant.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import GitError, PathError
from ..storage import safeio
from ..storage.gitparse import HeadObjects
from ..storage.store import Store
from ..storage.textio import atomic_write
from .lock import audit_dir, busy_elsewhere

# atomic_write's temp names: ".<name>." + mkstemp's 8 random characters + ".tmp"
TEMP_RE = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
TXN_KINDS = ("forget", "withdraw")


def journal_dir(store: Store) -> Path | None:
    folder = audit_dir(store)
    return None if folder is None else folder / "journal"


def write_entry(store: Store, entry: dict[str, Any]) -> Path | None:
    folder = journal_dir(store)
    if folder is None:
        return None
    if "id" not in entry:
        # from what it records and when (its ids go into commits: a fixed clock gives the demo
        # store the same history every build); a clash with a live entry takes a random id
        body = json.dumps(entry, ensure_ascii=False, sort_keys=True, default=str)
        entry["id"] = f"{entry['kind']}-{hashlib.sha256(body.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
        if (folder / f"{entry['id']}.json").exists():
            entry["id"] = f"{entry['kind']}-{secrets.token_hex(6)}"
    path = folder / f"{entry['id']}.json"
    atomic_write(path, json.dumps(entry, ensure_ascii=False))
    return path


def update(path: Path | None, entry: dict[str, Any]) -> None:
    if path is not None:
        atomic_write(path, json.dumps(entry, ensure_ascii=False))


def clear(path: Path | None) -> None:
    if path is not None:
        path.unlink(missing_ok=True)


def in_head(store: Store, files: list[dict[str, Any]], seen: HeadObjects | None = None) -> bool:
    """Does HEAD hold every file exactly as we meant to write it? ``seen``: HEAD
    as our commit left it, read by that commit (else read now, in one git process)."""
    rels = [f["rel"] for f in files]
    try:
        head = seen if seen is not None and all(rel in seen.blobs for rel in rels) else store.git.head_objects(rels)
    except GitError:  # git could not answer in one go: ask file by file
        return all(store.git.blob_at("HEAD", f["rel"]) == f["after"] for f in files)
    return all(head.holds(f["rel"], f["after"]) for f in files)


def staged_leftovers(store: Store, entry: dict[str, Any]) -> list[str]:
    """Paths whose index entry is no longer what it was before we staged."""
    before = entry.get("index_before") or {}
    rels = [f["rel"] for f in entry.get("files", [])]
    now = store.git.index_entries(rels) if rels else {}
    return [rel for rel in rels if now.get(rel) != before.get(rel)]


@dataclass(frozen=True)
class Interrupted:
    """One operation that did not finish, with what was and was not done."""

    path: Path
    entry: dict[str, Any]
    summary: str
    can_complete: bool
    can_roll_back: bool
    children: tuple[tuple[Path, dict[str, Any]], ...] = ()
    live: bool = False  # another writer holds the lock: work in progress, not a crash
    done: dict[int, str | None] = field(default_factory=dict)
    ledger_committed: bool = False

    @property
    def kind(self) -> str:
        return str(self.entry.get("kind"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.entry.get("id"),
            "kind": self.kind,
            "target": self.entry.get("target") or self.entry.get("request"),
            "summary": self.summary,
            "can_complete": self.can_complete,
            "can_roll_back": self.can_roll_back,
            "live": self.live,
        }


def _entries(store: Store) -> list[tuple[Path, dict[str, Any] | None]]:
    folder = journal_dir(store)
    if folder is None or not folder.is_dir():
        return []
    out: list[tuple[Path, dict[str, Any] | None]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            entry = json.loads(safeio.read_bytes(path))  # no link followed, a FIFO refused unread
            out.append((path, entry if isinstance(entry, dict) else None))
        except (OSError, ValueError, RecursionError):  # not UTF-8 or JSON, or nested past the parser
            out.append((path, None))
    return out


def pending(store: Store) -> list[Interrupted]:
    """Every journaled operation that has not finished; a transaction's steps are inside it."""
    live = busy_elsewhere(store)
    entries = _entries(store)
    ids = {e.get("id") for _, e in entries if e}
    out = []
    for path, entry in entries:
        if entry is None:
            out.append(
                Interrupted(
                    path,
                    {"kind": "unknown", "id": path.stem},
                    "an unreadable journal entry (remove it by hand)",
                    False,
                    False,
                    live=live,
                )
            )
        elif entry.get("parent") in ids:
            continue  # described with its transaction
        elif problem := _foreign(store, entry):
            out.append(
                Interrupted(
                    path,
                    {"kind": "unknown", "id": path.stem},
                    f"a journal entry this tool did not write ({problem}; remove it by hand)",
                    False,
                    False,
                    live=live,
                )
            )
        elif entry.get("kind") in TXN_KINDS:
            children = tuple((p, e) for p, e in entries if e and e.get("parent") == entry.get("id"))
            out.append(_describe_txn(store, path, entry, children, live))
        elif "files" in entry:
            out.append(_describe_single(store, path, entry, live))
        else:  # an older version's entry: shown, never silently skipped
            out.append(
                Interrupted(
                    path,
                    entry,
                    f"a journal entry this version cannot repair ({path.name}); "
                    "check the files it names and remove it by hand",
                    False,
                    False,
                    live=live,
                )
            )
    return out


def _foreign(store: Store, entry: dict[str, Any]) -> str | None:
    """Why ``entry`` cannot be one this tool journaled (so it is listed, never
    acted on), or None: a malformed transaction, or a path outside the store."""
    if entry.get("kind") in TXN_KINDS and (problem := malformed_txn(entry)):
        return problem
    named = [f.get("rel") if isinstance(f, dict) else f for f in entry.get("files") or []]
    for step in entry.get("steps") or []:
        named += [step.get("target"), step.get("history_rel")] if isinstance(step, dict) else [step]
    for rel in named:
        if rel is None:
            continue
        if not isinstance(rel, str):
            return "a path that is not text"
        try:
            store.resolve(rel)
        except PathError as exc:
            return str(exc)
    return None


def _state(current: str | None, old: str | None, new: str | None) -> str:
    if current == new:
        return "new"
    if current == old:
        return "old"
    return "other"


def _describe_single(store: Store, path: Path, entry: dict[str, Any], live: bool) -> Interrupted:
    files = entry["files"]
    name = f"{entry.get('op') or entry.get('kind')} {entry.get('target') or files[0]['rel']}"
    if live:
        return Interrupted(
            path, entry, f"{name} is being written by another palinode-audit right now", False, False, live=True
        )
    if in_head(store, files):
        return Interrupted(path, entry, f"{name}: written and committed; only the journal was left behind", True, False)
    states = [_state(store.read_optional(f["rel"])[0], f["before"], f["after"]) for f in files]
    staged = staged_leftovers(store, entry)
    tail = f"; staged and not committed: {', '.join(staged)}" if staged else ""
    if "other" in states:
        which = files[states.index("other")]["rel"]
        return Interrupted(
            path,
            entry,
            f"{name} was interrupted and {which} has since been changed by someone else; resolve by hand" + tail,
            False,
            False,
        )
    if entry.get("kind") == "apply" and len(states) == 2:
        steps = {
            ("old", "old"): "before anything was written",
            ("new", "old"): "after the file write (history not appended, not committed)",
            ("new", "new"): "after the history write (not committed)",
            ("old", "new"): "after the history write but with the file put back (not committed)",
        }
        when = steps[(states[0], states[1])]
    else:
        when = "after the file write (not committed)" if "new" in states else "before anything was written"
    return Interrupted(path, entry, f"{name} was interrupted {when}{tail}", True, True)


def progress(
    store: Store, entry: dict[str, Any], children: Iterable[tuple[Path, dict[str, Any]]]
) -> tuple[dict[int, str | None], bool]:
    """Which steps of a transaction are committed, and whether its ledger record is,
    from the journal's record and, for the step a stop cut short, from HEAD."""
    done: dict[int, str | None] = {d["index"]: d.get("commit") for d in entry.get("done", [])}
    ledger = bool(entry.get("ledger_commit"))
    for _, child in children:
        committed = "files" in child and in_head(store, child["files"])
        if committed and child.get("kind") == "apply" and child.get("step") is not None:
            done.setdefault(int(child["step"]), None)
        if committed and child.get("kind") == "ledger":
            ledger = True
    if not ledger and entry.get("ledger_rel"):
        text = store.git.blob_at("HEAD", entry["ledger_rel"]) or ""
        ledger = json.dumps({"txn": entry["id"]})[1:-1] in text
    return done, ledger


def _describe_txn(
    store: Store, path: Path, entry: dict[str, Any], children: tuple[tuple[Path, dict[str, Any]], ...], live: bool
) -> Interrupted:
    what = "withdraw" if entry["kind"] == "withdraw" else "forget apply"
    if live:
        return Interrupted(
            path,
            entry,
            f"{what} of {entry.get('request')} is in progress in another palinode-audit right now",
            False,
            False,
            children,
            live=True,
        )
    done, ledger = progress(store, entry, children)
    total = len(entry.get("steps", []))
    unit = "step(s)" if entry["kind"] == "withdraw" else "target commit(s)"
    summary = f"{what} of {entry.get('request')} stopped after {len(done)} of {total} {unit}"
    summary += "; its ledger record is committed" if ledger else "; its ledger record is not committed"
    staged = sorted(
        {
            rel
            for _, child in children
            if "files" in child and not in_head(store, child["files"])
            for rel in staged_leftovers(store, child)
        }
    )
    if staged:
        summary += f"; staged and not committed: {', '.join(staged)}"
    return Interrupted(path, entry, summary, True, not ledger, children, done=done, ledger_committed=ledger)


def temp_files(store: Store, folders: Iterable[str]) -> list[str]:
    """Our atomic writes' temp files (``.X.md.abcd1234.tmp``) a stop left in these folders."""
    found = []
    for folder in sorted(set(folders)):
        try:
            with os.scandir(store.root / folder if folder else store.root) as listing:
                names = [e.name for e in listing if e.name.startswith(".") and e.is_file(follow_symlinks=False)]
        except OSError:
            continue
        found += [f"{folder}/{n}" if folder else n for n in names if TEMP_RE.match(n)]
    return found


def journal_temp_files(store: Store) -> list[Path]:
    folder = journal_dir(store)
    if folder is None or not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if TEMP_RE.match(p.name)]


_STEP_TEXT = ("op", "target", "history_rel", "old_text", "new_text")


def malformed_txn(entry: Any) -> str | None:
    """What makes ``entry`` other than a transaction ``begin`` journals, or None."""
    if not isinstance(entry, dict):
        return "not a record"
    for key, kind in (("steps", list), ("done", list), ("failed", list), ("kind", str)):
        if not isinstance(entry.get(key), kind):
            return f"its {key!r} is missing or not a {kind.__name__}"
    for step in entry["steps"]:
        if not isinstance(step, dict) or not all(isinstance(step.get(k), str) for k in _STEP_TEXT):
            return "a step is not a recorded operation"
        if not isinstance(step.get("trailers") or {}, dict):
            return "a step's trailers are not a mapping"
    for done in entry["done"]:
        if not isinstance(done, dict) or not isinstance(done.get("index"), int):
            return "a done step has no index"
        if not 0 <= done["index"] < len(entry["steps"]):
            return "a done step names no recorded step"
    return None
