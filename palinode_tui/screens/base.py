"""What every mode screen shares: tabs, footer, status line, read-only and
as-of checks, and the keys of the main screens (q quits, Tab moves between panes,
Esc leaves a text field)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from textual import events
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, Input

if TYPE_CHECKING:
    from textual import getters

    from ..app import PalinodeApp

from ..actions import MAIN_SCOPES, REGISTRY, ActionSpec, Scope, bindings_for
from ..widgets import ListFilter


def footer() -> Footer:
    # The palette key is on the tabs line; the footer keeps its room for the screen's keys.
    return Footer(compact=True, show_command_palette=False)


class ModeScreen(Screen):
    if TYPE_CHECKING:
        app = getters.app(PalinodeApp)

    SCOPE: Scope | Literal[""] = ""

    def __init_subclass__(cls, **kwargs):
        # Before Textual merges the class bindings in its own __init_subclass__.
        scope = cls.__dict__.get("SCOPE")
        if scope:
            cls.BINDINGS = [*bindings_for(scope), *(bindings_for("main") if scope in MAIN_SCOPES else [])]
        super().__init_subclass__(**kwargs)

    def on_mount(self) -> None:
        self.app.store_signal.subscribe(self, self.store_updated)
        self.app.index_signal.subscribe(self, self.index_updated)
        self.app.time_signal.subscribe(self, self._time_switched)
        if self.app.as_of is not None:
            self.as_of_changed()
        if self.app.scan is not None:
            self.store_updated(None)

    def store_updated(self, changed: object) -> None:
        """Called after every scan with the changed paths (None = all)."""

    def index_updated(self, mode: object) -> None:
        """Called when the search index gets lexical or hybrid."""

    def _time_switched(self, as_of: object) -> None:
        self.refresh_bindings()  # mutations show disabled as of a point
        self.as_of_changed()

    def as_of_changed(self) -> None:
        """Called when the views move to a point of history or back to now
        (before ``store_updated`` with everything changed)."""

    def panes(self) -> list:
        """The Tab stops, in screen order: every pane and every field (".field"),
        so each input is reachable from the keyboard."""
        return [
            w
            for w in self.query(".pane, .field")
            if w.focusable and w.display and all(a.display for a in w.ancestors if isinstance(a, Widget))
        ]

    def action_next_pane(self, step: int = 1) -> None:
        panes = self.panes()
        if not panes:
            return
        here = next(
            (
                i
                for i, p in enumerate(panes)
                if self.focused is not None and (p is self.focused or self.focused in p.ancestors)
            ),
            -1,
        )
        panes[(here + step) % len(panes)].focus()

    def action_back(self) -> None:
        self.app.go_back()

    def action_focus_filter(self) -> None:
        """`/`: the filter of the list that has focus (else the screen's first list)."""
        bars = list(self.query(ListFilter))
        if not bars:
            return
        focused_id = self.focused.id if self.focused is not None else None
        next((b for b in bars if b.table_id == focused_id), bars[0]).open()

    def on_key(self, event: events.Key) -> None:
        if not isinstance(self.focused, Input):
            spec = self._mutating_spec(event.key)
            refusal = self.app.refusal(spec.description) if spec is not None else None
            if refusal is not None:  # a refused key says so instead of doing nothing
                event.stop()
                event.prevent_default()
                self.notify(refusal, severity="warning")
                return
        # Esc in a text field gives the keys back to the screen (else "2" types "2").
        if event.key == "escape" and isinstance(self.focused, Input):
            event.stop()
            event.prevent_default()
            panes = [p for p in self.panes() if not isinstance(p, Input)]
            if panes:
                panes[0].focus()

    def _mutating_spec(self, key: str) -> ActionSpec | None:
        keymap = self.app.settings.keymap
        for spec in REGISTRY:
            if (
                spec.mutates
                and spec.scope == self.SCOPE
                and key in {k.strip() for k in keymap.get(spec.id, spec.key).split(",")}
            ):
                return spec
        return None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        for spec in REGISTRY:
            if spec.scope == self.SCOPE and spec.action.split("(")[0] == action and spec.mutates:
                if self.app.read_only:
                    return False
                if self.app.as_of is not None:
                    return None  # as of a point: shown, disabled
        return True
