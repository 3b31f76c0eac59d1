"""Help: the keys that work right now, for whatever has focus."""

from __future__ import annotations

from rich.table import Table
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
    HelpScreen > VerticalScroll { width: 90; max-width: 100%; max-height: 100%; border: thick $accent; background: $surface; padding: 1 2; }
    """

    def __init__(self, under: Screen, read_only: bool = False) -> None:
        super().__init__()
        self.under, self.read_only = under, read_only

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self._table(), id="help-table")

    def rows(self) -> list[tuple[str, str, str]]:
        """(key, action, what it does) for every binding live on the screen
        below: the screen's own keys first, then the app's, then the generic
        keys of whatever has focus."""
        by_id = {s.id: s for s in REGISTRY}
        scope = getattr(self.under, "SCOPE", "")
        groups: tuple[list[tuple[str, str, str]], ...] = ([], [], [])
        # A list's own Enter (select) hides the screen's: the list's selection is what runs it.
        own = {k.strip(): s for s in REGISTRY if s.scope == scope for k in s.key.split(",")}
        seen = set()
        for key, active in self.under.active_bindings.items():
            binding = active.binding
            spec = by_id.get(binding.id or "")
            if spec is None and key in own:
                spec = own[key]
                binding = Binding(key, spec.action, spec.description, id=spec.id)
            if binding.system or (binding.action, binding.description) in seen:
                continue
            seen.add((binding.action, binding.description))
            desc = (binding.description or binding.action) + ("" if active.enabled else " (not available now)")
            group = 0 if spec is not None and spec.scope == scope else 1 if spec is not None else 2
            groups[group].append((self.app.get_key_display(binding), desc, spec.help if spec else ""))
        return groups[0] + groups[1] + groups[2]

    def _table(self) -> Table:
        focused = self.under.focused
        name = getattr(self.under, "SCOPE", "") or "this screen"
        title = f"Keys for {name.capitalize()}"
        if focused is not None and focused.id:
            title += f" · focus: {focused.id.replace('-', ' ')}"
        table = Table(title=plain(title, "bold"), expand=True, show_edge=False)
        table.add_column("key", style="bold cyan", no_wrap=True)
        table.add_column("action")
        table.add_column("what it does", style="dim")
        for key, desc, help_text in self.rows():
            table.add_row(plain(key), plain(desc), plain(help_text))
        if self.read_only:
            table.caption = "read-only: every mutation is refused by the core"
        return table

    def action_close(self) -> None:
        self.dismiss(None)
