"""The as-of banner: while the views show the store as of a point of history,
one line on every screen says which point, that it is read-only, and the keys
to move elsewhere in time. Hidden when the views show the store as it is now."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from ..render import plain

if TYPE_CHECKING:
    from textual import getters

    from ..app import PalinodeApp


class AsOfBanner(Static):
    if TYPE_CHECKING:
        app = getters.app(PalinodeApp)

    DEFAULT_CSS = """
    AsOfBanner { height: 1; display: none; background: $warning 30%; padding: 0 1; }
    AsOfBanner.-on { display: block; }
    """

    def on_mount(self) -> None:
        self.app.status_signal.subscribe(self, self._update)
        self._update(None)

    def _update(self, _value: object) -> None:
        app = self.app
        as_of = app.as_of
        self.set_class(as_of is not None, "-on")
        if as_of is None:
            return
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(f" AS OF {app.as_of_words()} · read-only ", style="bold reverse yellow")
        text.append(f"  {app.key_for('app.now')} now · {app.key_for('app.as_of')} another point  ", style="bold")
        text.append(plain(as_of.subject, "dim"))
        self.update(text)
