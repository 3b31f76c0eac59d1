"""The Textual app. It renders core values and hands plans back to the core;
it never edits a file itself. Blocking work runs in thread workers."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.signal import Signal

from palinode_core.api import Embedder, PalinodeError, ScanResult, SearchIndex, Session, StoreWatcher, utc_now

from .actions import MAIN_SCOPES, REGISTRY, bindings_for
from .drafts import DRAFTS_NAME, DraftBook
from .messages import (
    ActivityEntry,
    ActivityKind,
    FilesChanged,
    IndexMode,
    IndexReady,
    IndexStep,
    ScanDone,
    WorkProgress,
)
from .render import safe, spoken
from .settings import Settings
from .timetravel import TimeTravel, counts_note
from .widgets import ErrorModal, RecoveryModal
from .workers import BlockingWork


class PalinodeApp(TimeTravel, BlockingWork, App):
    CSS_PATH = "app.tcss"
    TITLE = "palinode-tui"
    BINDINGS = [*bindings_for("app")]
    # Screens get "-narrow" below 100 columns: panes stack, boxes shrink (app.tcss).
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]

    def __init__(
        self,
        store_path: str | os.PathLike[str],
        *,
        read_only: bool = False,
        embedder: Embedder | None = None,
        vectors: bool = True,
        watch: bool = True,
        clock: Callable[[], datetime] = utc_now,
        cache_dir: Path | None = None,
        display_name: str | None = None,
        resolver: str = "thorough",
    ) -> None:
        from .screens import MODES

        self.MODES = MODES  # type: ignore[misc,assignment]  # set before App.__init__ reads it; imported here: screens import the app
        super().__init__()
        # background embedding leaves a core to the UI
        self.embedder = embedder or Embedder(threads=max(1, (os.cpu_count() or 2) - 1))
        # The store as it is now; ``session`` (timetravel.py) is what the views show: this, or a point of history.
        self.live = Session.open(
            store_path,
            read_only=read_only,
            clock=clock,
            on_git=self._on_git_command,
            cache_dir=cache_dir,
            embedder=self.embedder,
            vectors=vectors,
            resolver=resolver,
        )
        self.store = self.live.store
        self.read_only = self.store.read_only
        self.want_vectors = vectors
        self.watch_files = watch
        self.display_name = display_name or str(self.store.root)
        self.demo_store: str | None = None  # a demo store built in a temporary folder, named on close
        self.scan: ScanResult | None = None  # the scan the views show (the live one, or as of a point)
        self.live_scan: ScanResult | None = None
        self.live_note = ""
        self.as_of_session: Session | None = None
        self.as_of_asked = ""
        self._recovery_deferred = False
        self.index: SearchIndex | None = None
        self.segmenting = False  # the index is searchable, its sentences still being segmented (plans read them whole)
        self.index_mode: IndexMode = "building"
        self.index_notice: str | None = None
        self.progress: tuple[int, int] | None = None
        self.progress_phase: str | None = None
        self.status_note = "reading store…"
        self.activity: list[ActivityEntry] = []
        self._activity_lock = threading.Lock()
        self.status_signal: Signal[object] = Signal(self, "status")
        # Published with the set of changed paths (None = everything) after each scan.
        self.store_signal: Signal[object] = Signal(self, "store")
        self.index_signal: Signal[IndexMode | IndexStep] = Signal(self, "index")
        self.time_signal: Signal[object] = Signal(self, "time")  # published with the AsOf shown (None = now)
        self.drafts = DraftBook(self.store.cache_dir / DRAFTS_NAME)  # review drafts: outside the store
        self.settings = Settings.load()
        self.watcher: StoreWatcher | None = None
        self._generations: dict[str, int] = {}
        self.counts: dict[str, int] = {}
        self._index_running = False
        self._index_dirty = False
        self._index_preempt = threading.Event()  # set by a change while the rest is embedded in the background
        self._config_said: str | None = None  # the config error last told, so each is told once
        self.mode_trail: list[str] = []  # the modes Enter drilled from, for Esc to walk back

    # -- start-up --------------------------------------------------------------
    def on_mount(self) -> None:
        if self.settings.theme and self.settings.theme in self.available_themes:
            self.theme = self.settings.theme
        self.theme_changed_signal.subscribe(self, self._remember_theme)
        if self.settings.keymap:
            self.set_keymap(self.settings.keymap)
        for notice in self.settings.notices:
            self.notify(notice, title="Settings", severity="warning", timeout=15)
        self._say_config()
        if not self.store.git.available:  # said as the CLI says it: what cannot be done here, and why
            self.notify(
                f"{self.display_name} is not a git repository: read as plain files. Without history nothing can be "
                "forgotten, undone, traced or shown as of a date here (every change is a git commit); "
                "git init and a first commit make it a store.",
                title="Not a git repository",
                severity="warning",
                timeout=30,
                markup=False,
            )
        self.switch_mode("browse")
        self.scan_store()
        if self.watch_files:
            self.watcher = StoreWatcher(self.store.root, self._files_changed)
            self.watcher.start()

    def on_unmount(self) -> None:
        if self.watcher is not None:
            self.watcher.stop()
        self.live.cancel()  # neither a first scan nor a first index of a huge store may hold up quitting
        self.close_as_of()

    def _remember_theme(self, theme: Any) -> None:
        self.settings.theme = getattr(theme, "name", None) or str(theme)
        self.run_blocking(self.settings.save, lambda _none: None, "remember the theme", "settings")

    # -- activity log ------------------------------------------------------------
    def _on_git_command(self, command: str) -> None:
        # Only commands that change the repository: reads are not actions.
        if command.startswith(("git add", "git commit")):
            self.record("git", command if len(command) < 300 else command[:300] + "…")

    def record(self, kind: ActivityKind, text: str, commits: Iterable[str] = ()) -> None:
        entry = ActivityEntry(self.store.now().strftime("%H:%M:%S"), kind, safe(text), [c for c in commits if c])
        with self._activity_lock:
            self.activity.append(entry)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every toast passes here (a screen's ``notify`` calls the app's): its
        text often names store files, so it is never markup and never acts."""
        kwargs: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        super().notify(safe(spoken(message)), title=safe(title), severity=severity, markup=False, **kwargs)

    def set_status(self, note: str | None = None, progress: tuple[int, int] | None = None) -> None:
        if note is not None:
            self.status_note = note
        self.progress = progress
        self.status_signal.publish(None)

    # -- background work (run_blocking and progress_reporter: workers.py) ----------------
    def fail(self, description: str, reason: str) -> None:
        self.record("error", f"{description}: {reason}")
        self.push_screen(ErrorModal(description, spoken(reason)))

    def scan_store(self, changed: set[str] | None = None) -> None:
        """Read the live store (again); shown unless the views are as of a point."""
        previous = self.live_scan

        report = self.progress_reporter()

        def reading(done: int, total: int) -> None:
            report("reading", done, total)

        def work() -> tuple[ScanResult, dict]:
            scan = self.live.rescan(reading, isolate=True) if previous is None else self.live.refresh(changed)
            return scan, scan.counts()  # counting 100k memories belongs off the UI thread too

        self.run_blocking(
            work, lambda result: self.post_message(ScanDone(result[0], changed, result[1])), "read the store", "scan"
        )

    def _say_config(self) -> None:
        """The store's config read at start and again whenever it changes: one that cannot be
        read (reads go on with Palinode's defaults) is told once, and so is its fix."""
        error = self.store.config_error
        if error == self._config_said:
            return
        if error:
            self.notify(
                safe(f"{error}: read with Palinode's defaults; changes wait until it is fixed"),
                title="Store config",
                severity="warning",
                timeout=15,
            )
        elif self._config_said:
            self.notify(safe("palinode.config.yaml read again; changes can be made"), title="Store config")
        self._config_said = error

    def on_scan_done(self, message: ScanDone) -> None:
        self._say_config()  # the scan read the config again if it changed
        first = self.live_scan is None
        self.live_scan = message.scan
        self.counts = message.counts
        self.live_note = counts_note(message.counts)
        shown = self.as_of is None  # as of a point, the live store is kept current but not shown
        self.set_status(self.live_note if shown else None, None if self.progress_phase == "reading" else self.progress)
        if shown:
            self.scan = message.scan
            self.store_signal.publish(message.changed)
        if first:
            notice = self.store.scan_cache.notice if self.store.scan_cache else None
            if notice:  # the cache only saves time; say so, then carry on
                self.notify(notice, title="Scan cache", severity="warning", markup=False)
            self.check_interrupted()
        if first or message.changed is None or any(p.endswith(".md") for p in message.changed):
            self.build_index()

    def check_interrupted(self) -> None:
        """Offer to repair operations a crash left half-done."""

        if self.as_of is not None:
            self._recovery_deferred = True  # recovery writes: offered when the views are back to now
            return
        self._recovery_deferred = False
        items = self.live.interrupted()
        if not items:
            return

        def chosen(how: str | None) -> None:
            if how is None:
                self.notify(
                    "Interrupted operations remain; Residue lists them under Integrity.",
                    severity="warning",
                    markup=False,
                )
                return
            self.run_blocking(
                lambda: self.live.recover("complete" if how == "complete" else "rollback"),
                lambda results: (
                    self.record(
                        "action",
                        f"recover ({how}): {len(results)} operation(s)",
                        [r.get("commit") or "" for r in results],
                    ),
                    self.notify(f"Recovered {len(results)} operation(s) ({how}).", markup=False),
                    self.scan_store(None),
                ),
                "recover",
                "apply",
            )

        self.push_screen(RecoveryModal(items), chosen)

    def _files_changed(self, paths: set[str]) -> None:  # the watcher's thread
        self.post_message(FilesChanged(paths))

    def on_files_changed(self, message: FilesChanged) -> None:
        self.record("watch", f"{len(message.paths)} file(s) changed on disk: {', '.join(sorted(message.paths)[:5])}")
        self.scan_store(message.paths)

    def build_index(self) -> None:
        """Bring the index up to date. While an update runs, later requests only
        mark it dirty; the running worker loops once more with the newest scan,
        so a burst of changes never queues a thread per change."""
        self._index_dirty = True
        if self._index_running:
            self._index_preempt.set()  # the background embedding of the rest gives way: this change is covered first
            return
        self._index_running = True

        progress = self.progress_reporter()

        def work() -> tuple[IndexMode, str | None]:
            try:
                while self._index_dirty:
                    self._index_preempt.clear()  # before the flag: a change from now on preempts this round
                    self._index_dirty = False
                    # published once lexically current: a plan on a half-built index would show too few targets
                    index = self.index or self.live.search_index()

                    def searchable(index: SearchIndex = index) -> None:
                        # many versions still to segment: a plan reads those whole rather than wait
                        self.index, self.segmenting = index, True
                        self.call_from_thread(self.index_signal.publish, "searchable")

                    index.update_lexical(progress, memories=self.live.memories, isolate=True, searchable=searchable)
                    self.index, self.segmenting = index, False
                    self.call_from_thread(self.index_signal.publish, "lexical-partial")
                    if self.want_vectors:

                        def replan() -> None:
                            self.call_from_thread(self.index_signal.publish, "hybrid-partial")

                        # the sentences sharing a word with a request first, then those the cascade finds near one
                        # (search.cascade): plans are covered then, re-planned after each
                        before = index.stats.embedded_this_session
                        if index.update_vectors(progress, on_likely=replan, cover=self.live.open_prefs()):
                            if index.stats.embedded_this_session > before:
                                replan()
                            # then the rest, for search by meaning (given way to a change: the loop comes back)
                            index.embed_everything(progress, isolate=True, preempt=self._index_preempt)
            finally:
                self._index_running, self.segmenting = False, False
            mode: IndexMode = "hybrid" if self.index is not None and self.index.vectors_ready else "lexical"
            notice = self.embedder.notice if self.want_vectors else "vectors off (--no-vectors)"
            return mode, notice

        self.run_blocking(
            work, lambda result: self.post_message(IndexReady(*result)), "build the search index", "index"
        )

    def on_work_progress(self, message: WorkProgress) -> None:
        if message.phase == "reading" and self.live_scan is not None:
            return  # a late report from a scan that has finished
        self.progress_phase = message.phase
        label = {
            "reading": "reading",
            "lexical": "indexing",
            "segmenting": "segmenting sentences",
            "sentences": "embedding sentences",
            "sample": "embedding a sample of sentences",
            "screening": "screening sentences",
            "candidates": "embedding sentences near a request",
            "model": "loading the embedding model",
        }.get(message.phase, "embedding")
        self.set_status(f"{label} {message.done}/{message.total}", (message.done, message.total))

    def on_index_ready(self, message: IndexReady) -> None:
        self.index_mode, self.index_notice = message.mode, message.notice
        if message.notice and message.mode == "lexical" and self.want_vectors:
            self.notify(message.notice, title="Search is lexical only", severity="warning", markup=False)
        if self.as_of is None:
            self.live_note = f"{self.counts.get('memories', 0)} memories · search: {message.mode}"
        self.set_status(self.live_note if self.as_of is None else None, None)
        self.index_signal.publish(message.mode)

    # -- actions ---------------------------------------------------------------------
    def action_go(self, mode: str) -> None:
        """1-5: a mode chosen, not drilled into; Esc has nothing to walk back to."""
        self.mode_trail.clear()
        self.switch_mode(mode)

    async def drill(self, mode: str) -> None:
        """Enter (or x) from one mode into another: Esc walks back to it.
        Returns once that mode's screen is mounted."""
        if mode != self.current_mode:
            self.mode_trail.append(self.current_mode)
            await self.switch_mode(mode)
        # a screen left open over that mode's own (a Timeline over Review) would get what was drilled for
        while len(self.screen_stack) > 1:
            await self.pop_screen()

    def go_back(self) -> bool:
        """Esc on a mode drilled into: the mode it came from. False if none."""
        if not self.mode_trail:
            return False
        self.switch_mode(self.mode_trail.pop())
        return True

    def action_rescan(self) -> None:
        self.scan_store(None)

    def action_help(self) -> None:
        from .screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen, self.read_only))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        spec = next((s for s in REGISTRY if s.action.split("(")[0] == action and s.scope == "app"), None)
        if spec is not None and spec.mutates and self.read_only:
            return False
        if spec is not None and spec.mutates and self.as_of is not None:
            return None  # shown, disabled
        return True

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        scope = getattr(screen, "SCOPE", None)
        for spec in REGISTRY:
            main = scope in MAIN_SCOPES and spec.scope == "main"
            if (spec.scope not in ("app", scope) and not main) or spec.id in ("app.quit", "app.help"):
                continue
            name = spec.action.split("(")[0]
            target = self if spec.scope == "app" else screen
            if main and spec.id == "main.quit":
                continue  # the palette has its own Quit
            if spec.mutates and (self.read_only or self.as_of is not None):
                continue
            if spec.scope != "app" and target.check_action(name, ()) is False:
                continue
            # Each command names its key, so the palette also teaches the keys.
            key = self.settings.keymap.get(spec.id, spec.key).split(",")[0]
            yield SystemCommand(
                spec.description,
                f"key {self._key_word(key)} · {spec.help or spec.description}",
                lambda t=target, a=spec.action: self.call_later(t.run_action, a),
            )

    @staticmethod
    def _key_word(key: str) -> str:
        return {"slash": "/", "plus": "+", "minus": "-", "question_mark": "?", "space": "space", "at": "@"}.get(
            key, key
        )


def default_store() -> str:
    return os.environ.get("PALINODE_DIR") or os.path.expanduser("~/palinode")


HELP_EXAMPLES = """\
examples:
  palinode-tui demo                      a demo store in a temporary folder, to try every screen
  palinode-tui ~/palinode                your store (or set PALINODE_DIR and run palinode-tui)
  palinode-tui ~/palinode --read-only    look without any way to write
  palinode-tui ~/palinode --no-vectors   lexical search only; never loads the model

In the app, F1 lists the keys of the screen you are on. The same actions, scriptable:
palinode-audit --help. The user guide: docs/guide/ in the project's repository."""


def version_line() -> str:
    """The app's version and the core's (released together, from one version file)."""
    from importlib.metadata import PackageNotFoundError, version

    from palinode_core.api import __version__ as core_version

    try:
        mine = version("palinode-tui")
    except PackageNotFoundError:  # run from a source tree that was never installed
        mine = core_version
    return f"palinode-tui {mine} (palinode-core {core_version})"


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="palinode-tui",
        description="Review, undo and audit how a Palinode memory store forgets.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=HELP_EXAMPLES,
    )
    parser.add_argument("--version", action="version", version=version_line())
    parser.add_argument("store", nargs="?", help="store folder (default: $PALINODE_DIR, else ~/palinode), or 'demo'")
    parser.add_argument(
        "--read-only", action="store_true", help="disable every mutation, in the core as well as the UI"
    )
    parser.add_argument("--no-vectors", action="store_true", help="lexical search only; never load the embedding model")
    return parser


def build_app(argv: list[str] | None = None) -> PalinodeApp:
    """Parse the command line and make the app (raises PalinodeError)."""
    args = make_parser().parse_args(argv)
    target = args.store or default_store()
    if target == "demo" and not Path("demo").is_dir():
        import tempfile

        from palinode_core.api import build_demo_store

        target = str(Path(tempfile.mkdtemp(prefix="palinode-demo-")) / "store")
        print(f"building the demo store in {target} …", file=sys.stderr)
        build_demo_store(Path(target))
    app = PalinodeApp(target, read_only=args.read_only, vectors=not args.no_vectors)
    app.demo_store = str(app.store.root) if target != (args.store or default_store()) else None
    return app


def main(argv: list[str] | None = None) -> int:
    try:
        app = build_app(argv)
    except PalinodeError as exc:
        print(f"palinode-tui: {safe(str(exc))}", file=sys.stderr)
        return 1
    app.run()
    if app.demo_store:
        # The demo store lives in a temporary folder: say where, and how to come back.
        print(
            f"The demo store is in {safe(app.demo_store)}\nReopen it with: {reopen_command()} {safe(app.demo_store)}",
            file=sys.stderr,
        )
    return 0


def reopen_command() -> str:
    """How to run this app again from where the user is: its name when PATH finds this very program,
    else its full path (make demo runs .venv/bin/palinode-tui, which is not on PATH)."""
    import shutil

    me = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    found = shutil.which("palinode-tui")
    if me is None or not me.is_file() or (found and Path(found).resolve() == me):
        return "palinode-tui"
    return safe(str(me))
