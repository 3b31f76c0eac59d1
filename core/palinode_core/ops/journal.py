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
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NotRequired, TypedDict, TypeVar

from ..errors import GitError, PathError
from ..storage import safeio
from ..storage.gitparse import HeadObjects
from ..storage.records import CommitIntent, FileIntent, Json, Malformed, TxnIntent, parse_entry
from ..storage.store import Store
from ..storage.textio import atomic_write
from .lock import audit_dir, busy_elsewhere

# atomic_write's temp names: ".<name>." + mkstemp's 8 random characters + ".tmp"
TEMP_RE = re.compile(r"^\..+\.[a-z0-9_]{8}\.tmp$")
Entry = CommitIntent | TxnIntent
E = TypeVar("E", CommitIntent, TxnIntent)


def journal_dir(store: Store) -> Path | None:
    folder = audit_dir(store)
    return None if folder is None else folder / "journal"


def write_entry(store: Store, entry: E) -> tuple[E, Path | None]:
    """Journal a new entry; it is given its id here (returned with it)."""
    folder = journal_dir(store)
    if folder is None:
        return entry, None
    if not entry.id:
        # from what it records and when (its ids go into commits: a fixed clock gives the demo
        # store the same history every build); a clash with a live entry takes a random id
        body = json.dumps(entry.to_json(), ensure_ascii=False, sort_keys=True, default=str)
        entry = replace(
            entry, id=f"{entry.kind}-{hashlib.sha256(body.encode('utf-8', 'surrogatepass')).hexdigest()[:12]}"
        )
        if (folder / f"{entry.id}.json").exists():
            entry = replace(entry, id=f"{entry.kind}-{secrets.token_hex(6)}")
    path = folder / f"{entry.id}.json"
    atomic_write(path, json.dumps(entry.to_json(), ensure_ascii=False))
    return entry, path


def update(path: Path | None, entry: TxnIntent) -> None:
    if path is not None:
        atomic_write(path, json.dumps(entry.to_json(), ensure_ascii=False))


def clear(path: Path | None) -> None:
    if path is not None:
        path.unlink(missing_ok=True)


def in_head(store: Store, files: Sequence[FileIntent], seen: HeadObjects | None = None) -> bool:
    """Does HEAD hold every file exactly as we meant to write it? ``seen``: HEAD
    as our commit left it, read by that commit (else read now, in one git process)."""
    rels = [f.rel for f in files]
    try:
        head = seen if seen is not None and all(rel in seen.blobs for rel in rels) else store.git.head_objects(rels)
    except GitError:  # git could not answer in one go: ask file by file
        return all(store.git.blob_at("HEAD", f.rel) == f.after for f in files)
    return all(head.holds(f.rel, f.after) for f in files)


def staged_leftovers(store: Store, intent: CommitIntent) -> list[str]:
    """Paths whose index entry is no longer what it was before we staged."""
    rels = [f.rel for f in intent.files]
    now = store.git.index_entries(rels) if rels else {}
    return [rel for rel in rels if now.get(rel) != intent.index_before.get(rel)]


@dataclass(frozen=True)
class Interrupted:
    """One operation that did not finish, with what was and was not done.
    ``entry`` is None for an entry this tool cannot act on (unreadable, not
    one it wrote, or an older version's); ``kind`` and ``target`` name it."""

    path: Path
    entry: Entry | None
    summary: str
    can_complete: bool
    can_roll_back: bool
    children: tuple[tuple[Path, CommitIntent], ...] = ()
    live: bool = False  # another writer holds the lock: work in progress, not a crash
    done: dict[int, str | None] = field(default_factory=dict)
    ledger_committed: bool = False
    older: tuple[str, str | None, str | None] | None = None  # an older version's entry: its kind, target, id

    @property
    def kind(self) -> str:
        if self.entry is not None:
            return self.entry.kind
        return self.older[0] if self.older else "unknown"

    @property
    def target(self) -> str | None:
        if isinstance(self.entry, CommitIntent):
            return self.entry.target
        if isinstance(self.entry, TxnIntent):
            return self.entry.request
        return self.older[1] if self.older else None

    @property
    def id(self) -> str | None:
        if self.entry is not None:
            return self.entry.id or self.path.stem
        return self.older[2] if self.older else self.path.stem

    @property
    def writes(self) -> list[str]:
        """Every file it (and each step of it cut short) writes."""
        intents = [self.entry, *(child for _, child in self.children)]
        return [f.rel for intent in intents if isinstance(intent, CommitIntent) for f in intent.files]

    @property
    def step_targets(self) -> list[str]:
        """A transaction's targets, every step's."""
        return [step.target for step in self.entry.steps] if isinstance(self.entry, TxnIntent) else []

    def to_dict(self) -> Recovered:
        return {
            "id": self.id,
            "kind": self.kind,
            "target": self.target,
            "summary": self.summary,
            "can_complete": self.can_complete,
            "can_roll_back": self.can_roll_back,
            "live": self.live,
        }


class Recovered(TypedDict, total=False):
    """What recover did with one interrupted operation, or with git's locks or temp files a stop left."""

    id: str | None
    kind: str
    target: str | None
    summary: str
    can_complete: bool
    can_roll_back: bool
    live: bool
    request: str
    result: str
    commit: str | None  # one commit's
    commits: list[str | None]  # a transaction's
    failed: list[FailedJson]
    ledger_commit: str | None
    paths: list[str]


class FailedJson(TypedDict):
    """A refused step, as recover and a withdraw report it."""

    path: str
    op: str
    reason: str
    index: NotRequired[int]


def _entries(store: Store) -> list[tuple[Path, Json | None]]:
    folder = journal_dir(store)
    if folder is None or not folder.is_dir():
        return []
    out: list[tuple[Path, Json | None]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            entry = json.loads(safeio.read_bytes(path))  # no link followed, a FIFO refused unread
            out.append((path, entry if isinstance(entry, dict) else None))
        except (OSError, ValueError, RecursionError):  # not UTF-8 or JSON, or nested past the parser
            out.append((path, None))
    return out


def _typed(store: Store, path: Path, raw: Json | None, live: bool) -> Entry | Interrupted:
    """The entry as its record, or the Interrupted listing it as one recover cannot act on."""
    if raw is None:
        return Interrupted(path, None, "an unreadable journal entry (remove it by hand)", False, False, live=live)
    try:
        entry = parse_entry(raw)
        problem = None if entry is None else _foreign(store, entry)
    except Malformed as exc:
        entry, problem = None, str(exc)
    if problem is not None:
        return Interrupted(
            path,
            None,
            f"a journal entry this tool did not write ({problem}; remove it by hand)",
            False,
            False,
            live=live,
        )
    if entry is None:  # an older version's entry: shown, never silently skipped
        kind, target = raw.get("kind"), raw.get("target") or raw.get("request")
        return Interrupted(
            path,
            None,
            f"a journal entry this version cannot repair ({path.name}); check the files it names and remove it by hand",
            False,
            False,
            live=live,
            older=(str(kind), target if isinstance(target, str) else None, str(raw["id"]) if "id" in raw else None),
        )
    return entry


def pending(store: Store) -> list[Interrupted]:
    """Every journaled operation that has not finished; a transaction's steps are inside it."""
    live = busy_elsewhere(store)
    typed = [(path, _typed(store, path, raw, live)) for path, raw in _entries(store)]
    ids = {e.id for _, e in typed if not isinstance(e, Interrupted)}
    out = []
    for path, entry in typed:
        if isinstance(entry, Interrupted):
            out.append(entry)
        elif isinstance(entry, CommitIntent) and entry.parent in ids:
            continue  # described with its transaction
        elif isinstance(entry, TxnIntent):
            children = tuple((p, e) for p, e in typed if isinstance(e, CommitIntent) and e.parent == entry.id)
            out.append(_describe_txn(store, path, entry, children, live))
        else:
            out.append(_describe_single(store, path, entry, live))
    return out


def _foreign(store: Store, entry: Entry) -> str | None:
    """Why ``entry`` cannot be one this tool journaled (so it is listed, never
    acted on), or None: a path outside the store."""
    if isinstance(entry, CommitIntent):
        named = [f.rel for f in entry.files]
    else:
        named = [rel for step in entry.steps for rel in (step.target, step.history_rel)]
    for rel in named:
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


def _describe_single(store: Store, path: Path, entry: CommitIntent, live: bool) -> Interrupted:
    name = f"{entry.op or entry.kind} {entry.name}"
    if live:
        return Interrupted(
            path,
            entry,
            f"{name} is being written by another palinode-audit right now",
            False,
            False,
            live=True,
        )
    if in_head(store, entry.files):
        return Interrupted(path, entry, f"{name}: written and committed; only the journal was left behind", True, False)
    files = entry.files
    states = [_state(store.read_optional(f.rel)[0], f.before, f.after) for f in files]
    staged = staged_leftovers(store, entry)
    tail = f"; staged and not committed: {', '.join(staged)}" if staged else ""
    if "other" in states:
        which = files[states.index("other")].rel
        return Interrupted(
            path,
            entry,
            f"{name} was interrupted and {which} has since been changed by someone else; resolve by hand" + tail,
            False,
            False,
        )
    if entry.kind == "apply" and len(states) == 2:
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
    store: Store, entry: TxnIntent, children: Iterable[tuple[Path, CommitIntent]]
) -> tuple[dict[int, str | None], bool]:
    """Which steps of a transaction are committed, and whether its ledger record is,
    from the journal's record and, for the step a stop cut short, from HEAD."""
    done: dict[int, str | None] = {d.index: d.commit for d in entry.done}
    ledger = False
    for _, child in children:
        committed = in_head(store, child.files)
        if committed and child.kind == "apply" and child.step is not None:
            done.setdefault(child.step, None)
        if committed and child.kind == "ledger":
            ledger = True
    if not ledger and entry.ledger_rel:
        text = store.git.blob_at("HEAD", entry.ledger_rel) or ""
        ledger = json.dumps({"txn": entry.id})[1:-1] in text
    return done, ledger


def _describe_txn(
    store: Store, path: Path, entry: TxnIntent, children: tuple[tuple[Path, CommitIntent], ...], live: bool
) -> Interrupted:
    what = "withdraw" if entry.kind == "withdraw" else "forget apply"
    if live:
        return Interrupted(
            path,
            entry,
            f"{what} of {entry.request} is in progress in another palinode-audit right now",
            False,
            False,
            children,
            live=True,
        )
    done, ledger = progress(store, entry, children)
    total = len(entry.steps)
    unit = "step(s)" if entry.kind == "withdraw" else "target commit(s)"
    summary = f"{what} of {entry.request} stopped after {len(done)} of {total} {unit}"
    summary += "; its ledger record is committed" if ledger else "; its ledger record is not committed"
    staged = sorted(
        {rel for _, child in children if not in_head(store, child.files) for rel in staged_leftovers(store, child)}
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
