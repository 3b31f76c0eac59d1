"""`/` in a list: a one-line field above a KeyedTable that narrows its rows to
those containing the typed text (any column, any case). Enter goes back to the
list and keeps the filter (the field stays, showing it); Esc clears it."""

from __future__ import annotations

from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Label

from .table import KeyedTable


class ListFilter(Horizontal):
    DEFAULT_CSS = """
    ListFilter { height: 1; display: none; }
    ListFilter.-shown { display: block; }
    ListFilter Label { width: auto; padding: 0 1; color: $text-muted; }
    ListFilter Input { width: 1fr; }
    """

    def __init__(self, table_id: str) -> None:
        super().__init__(id=f"{table_id}-filter-bar")
        self.table_id = table_id

    def compose(self) -> ComposeResult:
        yield Label("/", id=f"{self.table_id}-filter-label")
        yield ListFilterInput(self.table_id)

    def on_mount(self) -> None:
        self.call_after_refresh(self._follow_table)  # the table is composed after this bar

    def _follow_table(self) -> None:
        self.table.on_refilled = self._count

    @property
    def table(self) -> KeyedTable:
        return self.screen.query_one(f"#{self.table_id}", KeyedTable)

    @property
    def field(self) -> Input:
        return self.query_one(ListFilterInput)

    def open(self) -> None:
        self.add_class("-shown")
        self.field.focus()

    def clear(self) -> None:
        self.field.value = ""
        self.remove_class("-shown")
        self.table.set_filter("")
        self._count()
        self.table.focus()

    def _count(self) -> None:
        table = self.table
        label = self.query_one(Label)
        if table.filter_text:
            label.update(f"/ {len(table.keys)} of {table.total}")
        else:
            label.update("/")

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.table.set_filter(event.value)
        self._count()

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            self.clear()
            return
        self.table.focus()


class ListFilterInput(Input):
    """The field; a ``.field`` so Tab reaches it while the filter is shown."""

    def __init__(self, table_id: str) -> None:
        super().__init__(
            placeholder="filter: rows containing… (Enter keeps it · Esc clears)",
            id=f"{table_id}-filter",
            classes="field",
            compact=True,
        )

    def on_key(self, event: events.Key) -> None:
        if event.key == "escape":  # clear the filter, not leave the screen
            event.stop()
            event.prevent_default()
            bar = self.parent
            if isinstance(bar, ListFilter):
                bar.clear()
