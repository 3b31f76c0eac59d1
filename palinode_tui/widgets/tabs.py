"""The top line of every main screen: the screens as tabs with their keys
(the current one highlighted) and the app-wide keys, so the footer below has
room for the screen's own keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual import events
from textual.widgets import Static

from ..actions import REGISTRY

if TYPE_CHECKING:
    from textual import getters

    from ..app import PalinodeApp


class ModeTabs(Static):
    if TYPE_CHECKING:
        app = getters.app(PalinodeApp)

    DEFAULT_CSS = """
    ModeTabs { height: 1; background: $panel; padding: 0 1; }
    """

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current
        self.spans: list[tuple[int, int, str]] = []  # (first cell, end, mode) of each tab, for a click

    def on_mount(self) -> None:
        self.update(self._line())

    def _line(self) -> Text:
        keymap = getattr(self.app, "settings", None)
        overrides = keymap.keymap if keymap is not None else {}
        text = Text(no_wrap=True, overflow="ellipsis")
        self.spans = []
        for spec in REGISTRY:
            if spec.scope != "app" or not spec.action.startswith("go("):
                continue
            mode = spec.action.split("'")[1]
            key = overrides.get(spec.id, spec.key).split(",")[0]
            current = mode == self.current
            start = text.cell_len
            text.append(f" {key} ", style="bold reverse" if current else "bold cyan")
            text.append(f"{spec.description} ", style="bold reverse" if current else "")
            self.spans.append((start, text.cell_len, mode))
            text.append(" ")
        text.append(" f1 help · ^p palette · q quit", style="dim")
        return text

    def on_click(self, event: events.Click) -> None:
        """A click on a tab goes to that screen, as its key does."""
        x = event.x - self.styles.padding.left
        mode = next((m for start, end, m in self.spans if start <= x < end), None)
        if mode is not None and mode != self.current:
            self.app.action_go(mode)
