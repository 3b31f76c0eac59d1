"""Asks which point of history to show: a date or a git revision. The store
is opened as of that point in a worker while the dialog says so; a point that
cannot be read is one line in the dialog, and nothing else changes."""

from __future__ import annotations

from collections.abc import Callable

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from ..render import plain, safe

# Opens the store as of what was asked, off the UI thread: (asked, on_view, on_error);
# given by the app, so this dialog needs nothing of it.
Opener = Callable[[str, Callable[[object], None], Callable[[str], None]], None]

HOW = (
    "A date: YYYY-MM-DD (the end of that day) or YYYY-MM-DD HH:MM, your time zone unless one is given; "
    "or a git revision: a commit, a tag, HEAD~3. Empty: back to now. Read from git; nothing is checked out."
)


class AsOfModal(ModalScreen[object]):
    """Dismissed with the opened view (``timetravel.AsOfView``), "now", or None (cancelled)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    AsOfModal { align: center middle; }
    AsOfModal > Vertical { width: 84; max-width: 100%; height: auto; border: thick $warning; background: $surface; padding: 1 2; }
    AsOfModal #as-of-how { color: $text-muted; }
    AsOfModal #as-of-line { height: auto; min-height: 1; }
    AsOfModal Horizontal { height: auto; align-horizontal: right; }
    AsOfModal Button { margin-left: 2; }
    """

    def __init__(self, opener: Opener, current: str = "") -> None:
        super().__init__()
        self.opener, self.current = opener, current
        self.loading = False
        self.cancelled = False

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain("Show the store as of…", "bold"))
            yield Static(HOW, id="as-of-how")
            yield Input(value=safe(self.current), placeholder="2025-05-01 · 2025-05-01 14:30 · HEAD~3", id="as-of")
            yield Static(id="as-of-line")
            with Horizontal():
                yield Button("Cancel", id="cancel")
                yield Button("Show", id="show", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#as-of", Input).focus()

    @on(Button.Pressed, "#show")
    @on(Input.Submitted, "#as-of")
    def _show(self) -> None:
        if self.loading:
            return
        asked = self.query_one("#as-of", Input).value.strip()
        if not asked:
            self.dismiss("now")
            return
        self.loading = True
        self.query_one("#as-of", Input).disabled = True
        self.query_one("#as-of-line", Static).update(plain(f"opening the store as of {asked}…", "italic"))
        self.opener(asked, self._opened, self._failed)

    def _opened(self, view: object) -> None:
        if not self.cancelled:  # else the view is dropped, and its git process with it
            self.dismiss(view)

    def _failed(self, reason: str) -> None:
        if self.cancelled:
            return
        self.loading = False
        field = self.query_one("#as-of", Input)
        field.disabled = False
        field.focus()
        self.query_one("#as-of-line", Static).update(plain(reason, "bold red"))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.cancelled = True
        self.dismiss(None)
