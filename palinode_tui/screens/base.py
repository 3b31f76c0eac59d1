"""What every mode screen shares: tabs, footer, status line, read-only
checks, and the keys of the main screens (q quits, Tab moves between panes,
Esc leaves a text field)."""
from __future__ import annotations

from textual import events
from textual.screen import Screen
from textual.widgets import Footer, Input

from ..actions import MAIN_SCOPES, REGISTRY, ActionSpec, bindings_for

def footer() -> Footer:
    # The palette key is on the tabs line; the footer keeps its room for the screen's keys.
    return Footer(compact=True, show_command_palette=False)


class ModeScreen(Screen):
    SCOPE = ""

    def __init_subclass__(cls, **kwargs):
        # Before Textual merges the class bindings in its own __init_subclass__.
        if cls.__dict__.get("SCOPE"):
            cls.BINDINGS = bindings_for(cls.SCOPE) + (bindings_for("main") if cls.SCOPE in MAIN_SCOPES else [])
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

    def panes(self) -> list:
        return [w for w in self.query(".pane") if w.display and w.focusable]

    def action_next_pane(self, step: int = 1) -> None:
        panes = self.panes()
        if not panes:
            return
        here = next((i for i, p in enumerate(panes) if self.focused is not None
                     and (p is self.focused or self.focused in p.ancestors)), -1)
        panes[(here + step) % len(panes)].focus()

    def on_key(self, event: events.Key) -> None:
        if self.app.read_only and not isinstance(self.focused, Input):
            spec = self._mutating_spec(event.key)
            if spec is not None:  # a refused key says so instead of doing nothing
                event.stop()
                event.prevent_default()
                self.notify(f"Read-only: {spec.description} is not available (opened with --read-only).",
                            severity="warning")
                return
        # Esc in a text field gives the keys back to the screen (else "2" types "2").
        if event.key == "escape" and isinstance(self.focused, Input):
            event.stop()
            event.prevent_default()
            panes = self.panes()
            if panes:
                panes[0].focus()

    def _mutating_spec(self, key: str) -> ActionSpec | None:
        keymap = self.app.settings.keymap
        for spec in REGISTRY:
            if spec.mutates and spec.scope == self.SCOPE:
                if key in {k.strip() for k in keymap.get(spec.id, spec.key).split(",")}:
                    return spec
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        for spec in REGISTRY:
            if spec.scope == self.SCOPE and spec.action.split("(")[0] == action and spec.mutates and self.app.read_only:
                return False
        return True
