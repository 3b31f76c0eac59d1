"""What every mode screen shares: header, footer, status line, read-only checks."""
from __future__ import annotations

from textual.screen import Screen

from ..actions import REGISTRY, bindings_for


class ModeScreen(Screen):
    SCOPE = ""

    def __init_subclass__(cls, **kwargs):
        # Before Textual merges the class bindings in its own __init_subclass__.
        if cls.__dict__.get("SCOPE"):
            cls.BINDINGS = bindings_for(cls.SCOPE)
        super().__init_subclass__(**kwargs)

    def on_mount(self) -> None:
        self.app.store_signal.subscribe(self, self.store_updated)
        self.app.index_signal.subscribe(self, self.index_updated)
        if self.app.scan is not None:
            self.store_updated(None)

    def store_updated(self, changed: object) -> None:
        """Called after every scan with the changed paths (None = all)."""

    def index_updated(self, mode: object) -> None:
        """Called when the search index gets lexical or hybrid."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        for spec in REGISTRY:
            if spec.scope == self.SCOPE and spec.action.split("(")[0] == action and spec.mutates and self.app.read_only:
                return False
        return True
