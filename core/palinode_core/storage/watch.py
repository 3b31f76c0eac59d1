"""Watch a store for changes made by anyone (an agent, an editor, Palinode).

watchdog delivers one event per syscall and a single git commit fires ~190 of
them under ``.git/``; we drop what is not memory, then coalesce the rest on a
trailing-edge timer so a burst becomes one callback with the set of paths.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from watchdog.observers.api import BaseObserver

from . import paths as store_paths

DEFAULT_DEBOUNCE = 0.1
CHANGING_EVENTS = frozenset({"created", "modified", "deleted", "moved", "closed"})


def is_relevant(rel: str) -> bool:
    """Memory files and our ledger; never git internals, temp files or caches."""
    parts = rel.split("/")
    if any(p in store_paths.ALWAYS_SKIP for p in parts[:-1]):
        return False
    name = parts[-1]
    if rel == ".palinode-audit/ledger.jsonl":
        return True
    if any(p.startswith(".") for p in parts):
        return False
    return name.endswith(".md") or name == "palinode.config.yaml"


class StoreWatcher:
    def __init__(self, root: Path, on_change: Callable[[set[str]], None], debounce: float = DEFAULT_DEBOUNCE):
        self.root = Path(os.path.realpath(root))
        self.on_change = on_change
        self.debounce = debounce
        self._pending: set[str] = set()
        self._timer: threading.Timer | None = None
        self._lock = threading.Lock()
        self._observer: BaseObserver | None = None

    def _rel(self, path: str) -> str | None:
        try:
            rel = os.path.relpath(os.path.realpath(path) if os.path.islink(path) else path, self.root)
        except ValueError:
            return None
        if rel.startswith(".."):
            return None
        return rel.replace(os.sep, "/")

    def feed(self, *raw_paths: str) -> None:
        """Record raw event paths; public so tests and benches can drive it."""
        rels = {r for r in (self._rel(p) for p in raw_paths if p) if r and is_relevant(r)}
        if not rels:
            return
        with self._lock:
            self._pending |= rels
            if self._timer is not None:
                self._timer.cancel()
            self._timer = threading.Timer(self.debounce, self._flush)
            self._timer.daemon = True
            self._timer.start()

    def _flush(self) -> None:
        with self._lock:
            batch, self._pending = self._pending, set()
            self._timer = None
        if batch:
            self.on_change(batch)

    def start(self) -> None:
        from watchdog.events import (
            FileClosedEvent,
            FileCreatedEvent,
            FileDeletedEvent,
            FileModifiedEvent,
            FileMovedEvent,
            FileSystemEvent,
            FileSystemEventHandler,
        )
        from watchdog.observers import Observer

        watcher = self

        class Handler(FileSystemEventHandler):
            def on_any_event(self, event: FileSystemEvent) -> None:
                # Only events that change content: reads raise "opened" and
                # "closed_no_write", and reacting to our own scans would loop.
                if event.is_directory or event.event_type not in CHANGING_EVENTS:
                    return
                watcher.feed(os.fsdecode(event.src_path), os.fsdecode(getattr(event, "dest_path", "") or ""))

        observer = Observer()
        # The filter also narrows the inotify mask, so the kernel never sends the
        # open/access events that our own scans would otherwise flood in.
        observer.schedule(
            Handler(),
            str(self.root),
            recursive=True,
            event_filter=[FileCreatedEvent, FileModifiedEvent, FileDeletedEvent, FileMovedEvent, FileClosedEvent],
        )
        observer.daemon = True
        observer.start()
        self._observer = observer

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=2)
            self._observer = None
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
