"""A DataTable whose rows have keys and which keeps the selected key across
refills (a refresh must not move the reviewer's cursor to another row), and
which can show only the rows containing a filter text."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from rich.text import Text
from textual.events import Resize
from textual.widgets import DataTable


class KeyedTable(DataTable):
    """Rows are addressed by string keys; ``keys`` lists them in order."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("cursor_type", "row")
        super().__init__(*args, **kwargs)
        self.keys: list[str] = []  # the rows shown, in order
        self.filter_text = ""
        self.on_refilled: Callable[[], None] | None = None  # the filter bar's count
        self._rows: list[tuple[str, Sequence[Text | str]]] = []
        self._haystacks: list[str] = []
        # the column saying what a row is about (a path), widened to its longest cell, and the other
        # columns' widths as asked; those after it give way first (then those before) so it fits the table
        self.key_column: int | None = None
        self._asked: list[int] = []

    @property
    def total(self) -> int:
        """Every row, shown or filtered out."""
        return len(self._rows)

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
        selected key) when it is still shown. True if it was kept."""
        keep = self.selected_key if keep is None else keep
        self._rows = list(rows)
        self._haystacks = [
            " ".join(c.plain if isinstance(c, Text) else str(c) for c in cells).casefold() for _, cells in self._rows
        ]
        self._fit_key_column()
        return self._show(keep)

    def on_resize(self, _event: Resize) -> None:
        if self.key_column is not None and self._rows:
            self._fit_key_column()
            self.refresh()

    def _fit_key_column(self) -> None:
        columns = list(self.columns.values())
        if self.key_column is None or not columns:
            return
        if len(self._asked) != len(columns):
            self._asked = [c.width for c in columns]
        widths = list(self._asked)
        key = self.key_column
        widths[key] = max([widths[key], *(Text(str(cells[key])).cell_len for _, cells in self._rows)])
        room = (self.scrollable_content_region.width or self.app.size.width) - 2 * self.cell_padding * len(columns) - 1
        order = [*range(len(columns) - 1, key, -1), *range(key)]  # after the key column first, from the right
        for i in order:
            over = sum(widths) - room
            if over <= 0:
                break
            widths[i] = max(widths[i] - over, min(len(str(columns[i].label)), widths[i]))
        widths[key] = min(widths[key], max(room - sum(w for i, w in enumerate(widths) if i != key), self._asked[key]))
        for column, width in zip(columns, widths, strict=True):
            column.width = width
        self._require_update_dimensions = True

    def set_filter(self, text: str) -> bool:
        """Show only the rows whose cells contain ``text`` (any case); "" shows all."""
        self.filter_text = text.strip()
        return self._show(self.selected_key)

    def _show(self, keep: str | None) -> bool:
        needle = self.filter_text.casefold()
        self.clear()
        self.keys = []
        for (key, cells), haystack in zip(self._rows, self._haystacks, strict=True):
            if needle in haystack:
                self.add_row(*cells, key=key)
                self.keys.append(key)
        if self.on_refilled is not None:
            self.on_refilled()
        return keep is not None and self.select_key(keep)
