"""Typed messages workers post back to the UI thread."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from textual.message import Message

from palinode_core.api import ProgressPhase

ActivityKind = Literal["action", "git", "error", "watch"]
IndexMode = Literal["building", "lexical", "hybrid"]
# published on the app's index signal on the way to an IndexMode: chunks current (units still being
# segmented; a plan reads those whole), units current, the likeliest sentences embedded
IndexStep = Literal["searchable", "lexical-partial", "hybrid-partial"]
WorkPhase = ProgressPhase  # the core's phases of long work


class ScanDone(Message):
    def __init__(self, scan, changed: set[str] | None = None, counts: dict | None = None) -> None:
        super().__init__()
        self.scan = scan
        self.changed = changed
        self.counts = counts or {}


class FilesChanged(Message):
    """A coalesced batch from the watcher."""

    def __init__(self, paths: set[str]) -> None:
        super().__init__()
        self.paths = set(paths)

    def can_replace(self, message: Message) -> bool:
        if isinstance(message, FilesChanged):
            self.paths |= message.paths
            return True
        return False


class WorkProgress(Message):
    """Long background work, in one of the core's phases (reading is the first scan)."""

    def __init__(self, phase: WorkPhase, done: int, total: int) -> None:
        super().__init__()
        self.phase, self.done, self.total = phase, done, total

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, WorkProgress) and message.phase == self.phase


class WorkDone(Message):
    """A blocking job's result (workers.py); ``generation`` is its exclusive
    group's number, or None when it is never superseded."""

    def __init__(
        self, description: str, group: str, generation: int | None, result: Any, on_done: Callable[[Any], Any]
    ) -> None:
        super().__init__()
        self.description, self.group, self.generation = description, group, generation
        self.result, self.on_done = result, on_done


class WorkFailed(Message):
    """A blocking job's error, as one line; ``on_error`` shows it in place, or the app's error modal does."""

    def __init__(
        self, description: str, group: str, generation: int | None, reason: str, on_error: Callable[[str], Any] | None
    ) -> None:
        super().__init__()
        self.description, self.group, self.generation = description, group, generation
        self.reason, self.on_error = reason, on_error


class IndexReady(Message):
    def __init__(self, mode: IndexMode, notice: str | None) -> None:
        super().__init__()
        self.mode, self.notice = mode, notice


@dataclass
class ActivityEntry:
    when: str
    kind: ActivityKind
    text: str
    commits: list[str] = field(default_factory=list)
