"""An intent journal, so a crash mid-apply is reported and repaired, never
left silently inconsistent.

Before the first byte of an apply is written, the whole intent (old and new
text of the target and its history sibling, the commit subject) is saved to
``.git/palinode-audit/journal/``; it is removed once the commit exists. Inside
``.git`` it is never tracked, never shows in ``git status``, and Palinode never
reads it. A withdraw, which is several commits, journals its progress too.
"""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..storage.store import Store
from ..storage.textio import atomic_write


def journal_dir(store: Store) -> Path | None:
    git_dir = store.git.git_dir  # not store.git.repo: reading the journal needs no GitPython
    return None if git_dir is None else git_dir / "palinode-audit" / "journal"


def write_entry(store: Store, entry: dict[str, Any]) -> Path | None:
    folder = journal_dir(store)
    if folder is None:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    entry.setdefault("id", f"{entry['kind']}-{uuid.uuid4().hex[:12]}")
    path = folder / f"{entry['id']}.json"
    atomic_write(path, json.dumps(entry, ensure_ascii=False))
    return path


def clear(path: Path | None) -> None:
    if path is not None:
        path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Interrupted:
    """One operation that did not finish, with what was and was not done."""

    path: Path
    entry: dict[str, Any]
    summary: str
    can_complete: bool
    can_roll_back: bool

    @property
    def kind(self) -> str:
        return str(self.entry.get("kind"))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.entry.get("id"), "kind": self.kind, "target": self.entry.get("target") or
                self.entry.get("request"), "summary": self.summary, "can_complete": self.can_complete,
                "can_roll_back": self.can_roll_back}


def _state(current: str | None, old: str | None, new: str) -> str:
    if current == new:
        return "new"
    if current == old:
        return "old"
    return "other"


def pending(store: Store) -> list[Interrupted]:
    folder = journal_dir(store)
    if folder is None or not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json")):
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            out.append(Interrupted(path, {"kind": "unknown", "id": path.stem},
                                   "an unreadable journal entry (remove it by hand)", False, False))
            continue
        if entry.get("kind") == "apply":
            out.append(_describe_apply(store, path, entry))
        elif entry.get("kind") == "withdraw":
            done, total = len(entry.get("done", [])), entry.get("total", 0)
            out.append(Interrupted(path, entry, f"withdraw of {entry.get('request')} stopped after {done} of "
                                   f"{total} step(s)", True, True))
    return out


def _describe_apply(store: Store, path: Path, entry: dict[str, Any]) -> Interrupted:
    target, sibling = entry["target"], entry["history_rel"]
    current, _ = store.read_optional(target)
    history, _ = store.read_optional(sibling)
    file_state = _state(current, entry["old_text"], entry["new_text"])
    hist_state = _state(history, entry["history_before"], entry["history_after"])
    committed = False
    if file_state == "new":
        committed = not store.git.status([target, sibling])
    op = f"{entry.get('op')} {target}"
    if committed:
        return Interrupted(path, entry, f"{op}: written and committed; only the journal was left behind", True, False)
    if file_state == "other" or hist_state == "other":
        which = target if file_state == "other" else sibling
        return Interrupted(path, entry, f"{op} was interrupted and {which} has since been changed by someone else; "
                           "resolve by hand", False, False)
    steps = {("old", "old"): "before anything was written",
             ("new", "old"): "after the file write (history not appended, not committed)",
             ("new", "new"): "after the history write (not committed)",
             ("old", "new"): "after the history write but with the file put back (not committed)"}
    return Interrupted(path, entry, f"{op} was interrupted {steps[(file_state, hist_state)]}", True, True)
