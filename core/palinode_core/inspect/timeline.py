"""A memory across time: each commit that changed it, with the operation its
subject names and who made it, the memory's state after it, and the diff
between any two points. Read from git objects; nothing is checked out."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import PalinodeError, UnreadableMemory
from ..ops.subjects import actor_of, parse_subject
from ..storage.paths import history_rel_for
from ..storage.snapshot import AsOf, GitObjects, memory_from_bytes, resolve_point
from ..storage.store import Store
from ..storage.textio import MAX_MEMORY_BYTES

NO_LIMIT = 1_000_000


@dataclass(frozen=True)
class Point:
    commit: str
    date: str
    author: str
    subject: str
    op: str | None  # archive, supersede, retract, unretract, restore; None for a save or a hand edit
    counterpart: str | None
    actor: str  # palinode, palinode-audit, or other (a hand edit)
    status: str  # the memory's status after this commit ("deleted" when the commit removed it)
    retracted_prefs: tuple[str, ...]
    markers: int  # strike markers in the body after this commit
    trailers: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {
            "commit": self.commit,
            "date": self.date,
            "author": self.author,
            "subject": self.subject,
            "op": self.op,
            "counterpart": self.counterpart,
            "actor": self.actor,
            "status": self.status,
            "retracted_prefs": list(self.retracted_prefs),
            "markers": self.markers,
            "trailers": self.trailers,
        }


def timeline(store: Store, ref: str) -> list[Point]:
    """Every commit that changed ``ref``, oldest first."""
    rel, _ = store.resolve(ref)
    commits = store.git.log(rel, limit=NO_LIMIT)
    if not commits:
        raise PalinodeError(f"no commit ever changed {rel}")
    objects = GitObjects(store.git)
    prefix = store.config.commit_prefix
    points = []
    try:
        for commit in reversed(commits):
            parsed = parse_subject(commit.subject, prefix)
            data = objects.read(f"{commit.sha}:{rel}")
            prefs: tuple[str, ...] = ()
            status, markers = "deleted", 0
            if data is not None:
                try:
                    memory = memory_from_bytes(rel, data)
                    status, prefs = memory.status, tuple(memory.retracted_prefs)
                    markers = memory.body.count("[RETRACTED ")
                except UnreadableMemory as exc:
                    status = f"unreadable: {exc}"
            points.append(
                Point(
                    commit.sha,
                    commit.date,
                    commit.author,
                    commit.subject,
                    parsed.op if parsed else None,
                    parsed.counterpart if parsed else None,
                    actor_of(commit.subject, commit.trailers, prefix),
                    status,
                    prefs,
                    markers,
                    commit.trailers,
                )
            )
    finally:
        objects.close()
    return points


def diff_between(store: Store, ref: str, old: str, new: str) -> dict[str, Any]:
    """The memory and its history sibling from revision ``old`` to ``new``."""
    rel, _ = store.resolve(ref)
    start: AsOf = resolve_point(store.git, at=old)
    end: AsOf = resolve_point(store.git, at=new)
    for point in (start, end):  # as show and trace do: a version over the memory limit is not printed
        listing = store.git.run("ls-tree", "-l", point.commit, "--", rel, history_rel_for(rel), read=True)
        for line in listing.splitlines():
            size = line.split("\t", 1)[0].split()[-1]
            if size.isdigit() and int(size) > MAX_MEMORY_BYTES:
                raise PalinodeError(
                    f"{rel} at {point.commit[:7]} is {int(size)} bytes, over the {MAX_MEMORY_BYTES}-byte limit "
                    "for a memory; not shown"
                )
    text = store.git.diff_between(start.commit, end.commit, [rel, history_rel_for(rel)])
    return {"path": rel, "from": start.to_dict(), "to": end.to_dict(), "diff": text}
