"""The status line shown on every main screen."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import ProgressBar, Static

from ..render import plain

if TYPE_CHECKING:
    from textual import getters

    from ..app import PalinodeApp


class StatusLine(Horizontal):
    """Store path, read-only badge, index progress: shown on every screen."""

    if TYPE_CHECKING:
        app = getters.app(PalinodeApp)

    DEFAULT_CSS = """
    StatusLine { height: 1; background: $panel; padding: 0 1; }
    StatusLine #status-text { width: 1fr; }
    StatusLine ProgressBar { width: 40; }
    StatusLine ProgressBar.-hidden { display: none; }
    """

    def compose(self) -> ComposeResult:
        yield Static(id="status-text")
        yield ProgressBar(id="index-progress", show_eta=False, classes="-hidden")

    def on_mount(self) -> None:
        self.app.status_signal.subscribe(self, self._update)
        self._update(None)

    def _update(self, _value: object) -> None:
        app = self.app
        text = Text()
        text.append(" READ-ONLY ", style="bold reverse red") if app.read_only else None
        text.append(" ")
        text.append(plain(app.display_name))
        if app.status_note:
            text.append("  ·  ")
            text.append(plain(app.status_note, "italic"))
        self.query_one("#status-text", Static).update(text)
        bar = self.query_one(ProgressBar)
        if app.progress is None:
            bar.add_class("-hidden")
        else:
            done, total = app.progress
            bar.remove_class("-hidden")
            bar.update(total=max(total, 1), progress=done)
