"""Help: the keys that work right now, for whatever has focus."""
from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from ..actions import REGISTRY
from ..render import plain


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,f1,question_mark,q", "close", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 90; max-height: 85%; border: thick $accent; background: $surface; padding: 1 2; }
    """

    def __init__(self, under: Screen) -> None:
        super().__init__()
        self.under = under

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self._table(), id="help-table")

    def rows(self) -> list[tuple[str, str, str]]:
        """(key, action, what it does) for every binding live on the screen below."""
        by_id = {s.id: s for s in REGISTRY}
        out, seen = [], set()
        for _key, active in self.under.active_bindings.items():
            binding = active.binding
            if binding.system or (binding.action, binding.description) in seen:
                continue
            seen.add((binding.action, binding.description))
            spec = by_id.get(binding.id or "")
            desc = (binding.description or binding.action) + ("" if active.enabled else " (not available now)")
            out.append((self.app.get_key_display(binding), desc, spec.help if spec else ""))
        return out

    def _table(self) -> Table:
        focused = self.under.focused
        table = Table(title=Text(f"Keys for {type(self.under).__name__}"
                                 + (f" · focus: {type(focused).__name__}" if focused else ""), style="bold"),
                      expand=True, show_edge=False)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        table.add_column("what it does", style="dim")
        for key, desc, help_text in self.rows():
            table.add_row(plain(key), plain(desc), plain(help_text))
        if self.app.read_only:
            table.caption = "read-only: every mutation is refused by the core"
        return table

    def action_close(self) -> None:
        self.dismiss(None)
