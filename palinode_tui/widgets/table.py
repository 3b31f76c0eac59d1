"""A DataTable whose rows have keys and which keeps the selected key across
refills (a refresh must not move the reviewer's cursor to another row)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual.widgets import DataTable


class KeyedTable(DataTable):
    """Rows are addressed by string keys; ``keys`` lists them in order."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("cursor_type", "row")
        super().__init__(*args, **kwargs)
        self.keys: list[str] = []

    @property
    def selected_key(self) -> str | None:
        if not self.keys or not (0 <= self.cursor_row < len(self.keys)):
            return None
        return self.keys[self.cursor_row]

    def select_key(self, key: str) -> bool:
        """Move the cursor to ``key``; False if no row has it."""
        if key not in self.keys:
            return False
        self.move_cursor(row=self.keys.index(key))
        return True

    def refill(self, rows: Iterable[tuple[str, Sequence[Text | str]]], keep: str | None = None) -> bool:
        """Replace every row; the cursor stays on ``keep`` (default: the
        selected key) when it is still there. True if it was kept."""
        keep = self.selected_key if keep is None else keep
        self.clear()
        self.keys = []
        for key, cells in rows:
            self.add_row(*cells, key=key)
            self.keys.append(key)
        return keep is not None and self.select_key(keep)
