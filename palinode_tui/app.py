"""The Textual app. It renders core values and hands plans back to the core;
it never edits a file itself. Blocking work runs in thread workers."""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Iterable

from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.signal import Signal

from palinode_core.errors import Cancelled, PalinodeError
from palinode_core.search.embed import Embedder
from palinode_core.search.index import SearchIndex
from palinode_core.session import Session
from palinode_core.storage.memory import ScanResult
from palinode_core.storage.store import utc_now
from palinode_core.storage.watch import StoreWatcher
from palinode_core.text.sanitize import printable

from .actions import REGISTRY, bindings_for
from .messages import ActivityEntry, FilesChanged, IndexReady, ScanDone, WorkProgress
from .settings import Settings
from .widgets import ErrorModal


PROGRESS_INTERVAL = 0.25  # seconds between status-line progress reports


class PalinodeApp(App):
    CSS_PATH = "app.tcss"
    TITLE = "palinode-tui"
    BINDINGS = bindings_for("app")

    def __init__(self, store_path: str | os.PathLike[str], *, read_only: bool = False,
                 embedder: Embedder | None = None, vectors: bool = True, watch: bool = True,
                 clock: Callable[[], datetime] = utc_now, cache_dir: Path | None = None,
                 display_name: str | None = None, resolver: str = "thorough") -> None:
        from .screens import MODES
        self.MODES = MODES
        super().__init__()
        # background embedding leaves a core to the UI
        self.embedder = embedder or Embedder(threads=max(1, (os.cpu_count() or 2) - 1))
        self.session = Session.open(store_path, read_only=read_only, clock=clock, on_git=self._on_git_command,
                               cache_dir=cache_dir, embedder=self.embedder, vectors=vectors, resolver=resolver)
        self.store = self.session.store
        self.read_only = self.store.read_only
        self.want_vectors = vectors
        self.watch_files = watch
        self.display_name = display_name or str(self.store.root)
        self.scan: ScanResult | None = None
        self.index: SearchIndex | None = None
        self.index_mode = "building"
        self.index_notice: str | None = None
        self.progress: tuple[int, int] | None = None
        self.progress_phase: str | None = None
        self.status_note = "reading store…"
        self.activity: list[ActivityEntry] = []
        self._activity_lock = threading.Lock()
        self.status_signal: Signal[object] = Signal(self, "status")
        # Published with the set of changed paths (None = everything) after each scan.
        self.store_signal: Signal[object] = Signal(self, "store")
        self.index_signal: Signal[object] = Signal(self, "index")
        self.settings = Settings.load()
        self.watcher: StoreWatcher | None = None
        self._generations: dict[str, int] = {}
        self.counts: dict[str, int] = {}
        self._index_running = False
        self._index_dirty = False
        self.refreshes = 0

    # -- start-up --------------------------------------------------------------
    def on_mount(self) -> None:
        if self.settings.theme and self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        if self.settings.keymap:
            self.set_keymap(self.settings.keymap)
        if self.settings.problem:
            self.notify(self.settings.problem, severity="warning", markup=False)
        self.switch_mode("browse")
        self.scan_store()
        if self.watch_files:
            self.watcher = StoreWatcher(self.store.root, lambda paths: self.post_message(FilesChanged(paths)))
            self.watcher.start()

    def on_unmount(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        self.session.cancel()  # neither a first scan nor a first index of a huge store may hold up quitting

    def _remember_theme(self, theme: Any) -> None:
        self.settings.theme = getattr(theme, "name", None) or str(theme)
        self.settings.save()

    # -- activity log ------------------------------------------------------------
    def _on_git_command(self, command: str) -> None:
        # Only commands that change the repository: reads are not actions.
        if command.startswith(("git add", "git commit")):
            self.record("git", command if len(command) < 300 else command[:300] + "…")

    def record(self, kind: str, text: str, commits: Iterable[str] = ()) -> None:
        entry = ActivityEntry(self.store.now().strftime("%H:%M:%S"), kind, printable(text), [c for c in commits if c])
        with self._activity_lock:
            self.activity.append(entry)

    def set_status(self, note: str | None = None, progress: tuple[int, int] | None = None) -> None:
        if note is not None:
            self.status_note = note
        self.progress = progress
        self.status_signal.publish(None)

    # -- background work ------------------------------------------------------------
    def run_blocking(self, fn: Callable[[], Any], on_done: Callable[[Any], None], description: str,
                     group: str = "work", exclusive: bool = False,
                     on_error: Callable[[str], None] | None = None) -> None:
        """Run ``fn`` in a thread; hand its result back on the UI thread. An
        error goes to ``on_error`` (a preview shows it in place) or, by
        default, to an error modal."""

        # Thread workers cannot be cancelled: a superseded exclusive job still
        # finishes, so its result is dropped instead of overwriting a newer one.
        generation = self._generations.get(group, 0) + 1 if exclusive else None
        if generation is not None:
            self._generations[group] = generation

        def current() -> bool:
            return generation is None or self._generations.get(group) == generation

        def deliver(callback: Callable[..., None], value: Any) -> None:
            if current():
                callback(value)

        def job() -> None:
            try:
                result = fn()
            except Cancelled:
                return  # the app is closing
            except PalinodeError as exc:
                reason = str(exc)
            except Exception as exc:  # a bug must not take the user's session down
                reason = f"{exc.__class__.__name__}: {exc}"
            else:
                self.call_from_thread(deliver, on_done, result)
                return
            if on_error is not None:
                self.call_from_thread(deliver, on_error, reason)
            elif current():
                self.call_from_thread(self.fail, description, reason)

        self.run_worker(job, thread=True, group=group, exclusive=exclusive, description=description)

    def fail(self, description: str, reason: str) -> None:
        self.record("error", f"{description}: {reason}")
        self.push_screen(ErrorModal(description, reason))

    def _progress_reporter(self) -> Callable[[str, int, int], None]:
        """Progress for the status line, at most a few times a second: a child
        indexing 100,000 files reports dozens of times a second, and each report
        repaints."""
        last = {"at": 0.0, "phase": ""}

        def report(phase: str, done: int, total: int) -> None:
            now = time.monotonic()
            if phase == last["phase"] and now - last["at"] < PROGRESS_INTERVAL and done < total:
                return
            last["at"], last["phase"] = now, phase
            self.post_message(WorkProgress(phase, done, total))
        return report

    def scan_store(self, changed: set[str] | None = None) -> None:
        previous = self.scan

        report = self._progress_reporter()

        def reading(done: int, total: int) -> None:
            report("reading", done, total)

        def work() -> tuple[ScanResult, dict]:
            scan = (self.session.rescan(reading, isolate=True) if previous is None
                    else self.session.refresh(changed))
            return scan, scan.counts()  # counting 100k memories belongs off the UI thread too

        self.run_blocking(work, lambda result: self.post_message(ScanDone(result[0], changed, result[1])),
                          "read the store", "scan")

    def on_scan_done(self, message: ScanDone) -> None:
        first = self.scan is None
        self.scan = message.scan
        self.refreshes += 1
        self.counts = counts = message.counts
        self.set_status(f"{counts['memories']} memories · {counts['archived']} archived · {counts['struck']} struck"
                        + (f" · {counts['errors']} unreadable" if counts["errors"] else ""),
                        None if self.progress_phase == "reading" else self.progress)
        self.store_signal.publish(message.changed)
        if first:
            problem = self.store.scan_cache.problem if self.store.scan_cache else None
            if problem:  # the cache only saves time; say so, then carry on
                self.notify(problem, title="Scan cache", severity="warning", markup=False)
            self.check_interrupted()
        if first or message.changed is None or any(p.endswith(".md") for p in message.changed):
            self.build_index()

    def check_interrupted(self) -> None:
        """Offer to repair operations a crash left half-done."""

        from .widgets import RecoveryModal

        items = self.session.interrupted()
        if not items:
            return

        def chosen(how: str | None) -> None:
            if how is None:
                self.notify("Interrupted operations remain; Residue lists them under Integrity.",
                            severity="warning", markup=False)
                return
            self.run_blocking(lambda: self.session.recover("complete" if how == "complete" else "rollback"),
                              lambda results: (self.record("action", f"recover ({how}): {len(results)} operation(s)",
                                                           [r.get("commit") or "" for r in results]),
                                               self.notify(f"Recovered {len(results)} operation(s) ({how}).",
                                                           markup=False),
                                               self.scan_store(None)),
                              "recover", "apply")

        self.push_screen(RecoveryModal(items), chosen)

    def on_files_changed(self, message: FilesChanged) -> None:
        self.record("watch", f"{len(message.paths)} file(s) changed on disk: {', '.join(sorted(message.paths)[:5])}")
        self.scan_store(message.paths)

    def build_index(self) -> None:
        """Bring the index up to date. While an update runs, later requests only
        mark it dirty; the running worker loops once more with the newest scan,
        so a burst of changes never queues a thread per change."""
        self._index_dirty = True
        if self._index_running:
            return
        self._index_running = True

        progress = self._progress_reporter()

        def work() -> tuple[str, str | None]:
            try:
                while self._index_dirty:
                    self._index_dirty = False
                    if self.index is None:
                        self.index = self.session.search_index()
                    self.index.update_lexical(progress, memories=self.session.memories, isolate=True)
                    self.call_from_thread(self.index_signal.publish, "lexical-partial")
                    if self.want_vectors:
                        self.index.update_vectors(progress)
            finally:
                self._index_running = False
            mode = "hybrid" if self.index.vectors_ready else "lexical"
            notice = self.embedder.error if self.want_vectors else "vectors off (--no-vectors)"
            return mode, notice

        self.run_blocking(work, lambda result: self.post_message(IndexReady(*result)), "build the search index",
                          "index")

    def on_work_progress(self, message: WorkProgress) -> None:
        if message.phase == "reading" and self.scan is not None:
            return  # a late report from a scan that has finished
        self.progress_phase = message.phase
        label = {"reading": "reading", "lexical": "indexing"}.get(message.phase, "embedding")
        self.set_status(f"{label} {message.done}/{message.total}", (message.done, message.total))

    def on_index_ready(self, message: IndexReady) -> None:
        self.index_mode, self.index_notice = message.mode, message.notice
        if message.notice and message.mode == "lexical" and self.want_vectors:
            self.notify(message.notice, title="Search is lexical only", severity="warning", markup=False)
        self.set_status(f"{self.counts.get('memories', 0)} memories · search: {message.mode}", None)
        self.index_signal.publish(message.mode)

    # -- actions ---------------------------------------------------------------------
    def action_rescan(self) -> None:
        self.scan_store(None)

    def action_help(self) -> None:
        from .screens.help import HelpScreen
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        spec = next((s for s in REGISTRY if s.action.split("(")[0] == action and s.scope == "app"), None)
        if spec is not None and spec.mutates and self.read_only:
            return False
        return True

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        scope = getattr(screen, "SCOPE", None)
        for spec in REGISTRY:
            if spec.scope not in ("app", scope) or spec.id in ("app.quit", "app.help"):
                continue
            name = spec.action.split("(")[0]
            target = self if spec.scope == "app" else screen
            if spec.mutates and self.read_only:
                continue
            if spec.scope != "app" and target.check_action(name, ()) is False:
                continue
            yield SystemCommand(spec.description, spec.help or spec.description,
                                lambda t=target, a=spec.action: self.call_later(t.run_action, a))


def default_store() -> str:
    return os.environ.get("PALINODE_DIR") or os.path.expanduser("~/palinode")


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="palinode-tui",
                                     description="Review, undo and audit how a Palinode memory store forgets.")
    parser.add_argument("store", nargs="?", help="store folder (default: $PALINODE_DIR, else ~/palinode), or 'demo'")
    parser.add_argument("--read-only", action="store_true", help="disable every mutation, in the core as well as the UI")
    parser.add_argument("--no-vectors", action="store_true", help="lexical search only; never load the embedding model")
    return parser


def build_app(argv: list[str] | None = None) -> PalinodeApp:
    """Parse the command line and make the app (raises PalinodeError)."""
    args = make_parser().parse_args(argv)
    target = args.store or default_store()
    if target == "demo" and not Path("demo").is_dir():
        import tempfile

        from palinode_core.demo import build_demo_store
        target = str(Path(tempfile.mkdtemp(prefix="palinode-demo-")) / "store")
        print(f"building the demo store in {target} …", file=sys.stderr)
        build_demo_store(Path(target))
    return PalinodeApp(target, read_only=args.read_only, vectors=not args.no_vectors)


def main(argv: list[str] | None = None) -> int:
    try:
        app = build_app(argv)
    except PalinodeError as exc:
        print(f"palinode-tui: {printable(str(exc))}", file=sys.stderr)
        return 1
    app.run()
    return 0
