"""Modal dialogs. Titles and bodies that hold store text go through
``render.plain``; the default button is always the harmless one."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from ..render import plain


class ConfirmModal(ModalScreen[bool]):
    """Shows what will happen; the default (focused) button is Cancel."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ConfirmModal { align: center middle; }
    ConfirmModal > Vertical { width: 90; max-width: 100%; max-height: 100%; border: thick $error; background: $surface; padding: 1 2; }
    ConfirmModal #confirm-body { max-height: 60vh; }
    ConfirmModal Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ConfirmModal Button { margin-left: 2; }
    """

    def __init__(self, title: str, body: Text, confirm_label: str = "Apply") -> None:
        super().__init__()
        self.title_text = title
        self.body = body
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain(self.title_text, "bold"))
            with VerticalScroll(id="confirm-body"):
                yield Static(self.body)
            with Horizontal():
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button(self.confirm_label, id="confirm", variant="error")

    def on_mount(self) -> None:
        self.query_one("#cancel", Button).focus()

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(False)

    @on(Button.Pressed, "#confirm")
    def _confirm(self) -> None:
        self.dismiss(True)


class NoteModal(ModalScreen["str | None"]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    NoteModal { align: center middle; }
    NoteModal > Vertical { width: 80; max-width: 100%; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    NoteModal Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    NoteModal Button { margin-left: 2; }
    """

    def __init__(self, title: str, context: Text | None = None, confirm_label: str = "Save") -> None:
        super().__init__()
        self.title_text = title
        self.context = context
        self.confirm_label = confirm_label

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain(self.title_text, "bold"))
            if self.context is not None:
                yield Static(self.context)
            yield Input(placeholder="note (required)", id="note")
            with Horizontal():
                yield Button("Cancel", id="cancel", variant="primary")
                yield Button(self.confirm_label, id="ok", variant="warning")

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#ok")
    @on(Input.Submitted, "#note")
    def _ok(self) -> None:
        note = self.query_one("#note", Input).value.strip()
        if not note:
            self.notify("A note is required.", severity="warning", markup=False)
            return
        self.dismiss(note)


class ErrorModal(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter", "close", "Close")]
    DEFAULT_CSS = """
    ErrorModal { align: center middle; }
    ErrorModal > Vertical { width: 80; max-width: 100%; height: auto; border: thick $error; background: $surface; padding: 1 2; }
    """

    def __init__(self, title: str, reason: str) -> None:
        super().__init__()
        self.title_text, self.reason = title, reason

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain(self.title_text, "bold red"))
            yield Static(plain(self.reason))
            yield Button("Close", id="close", variant="primary")

    @on(Button.Pressed, "#close")
    def action_close(self) -> None:
        self.dismiss(None)


class RecoveryModal(ModalScreen["str | None"]):
    """Shown on open when a crash interrupted an operation: complete it, roll
    it back, or decide later. The default is Later."""

    BINDINGS = [Binding("escape", "later", "Later")]
    DEFAULT_CSS = """
    RecoveryModal { align: center middle; }
    RecoveryModal > Vertical { width: 96; max-width: 100%; height: auto; max-height: 80%; border: thick $warning; background: $surface; padding: 1 2; }
    RecoveryModal Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    RecoveryModal Button { margin-left: 2; }
    """

    def __init__(self, items: list) -> None:
        super().__init__()
        self.items = items

    def compose(self) -> ComposeResult:
        body = Text()
        for item in self.items:
            body.append("• ", style="bold yellow")
            body.append(plain(item.summary))
            body.append("\n")
        with Vertical():
            yield Label(plain("An operation was interrupted (a crash or a kill)", "bold yellow"))
            yield Static(body)
            with Horizontal():
                yield Button("Later", id="later", variant="primary")
                yield Button(
                    "Roll back", id="rollback", variant="warning", disabled=not all(i.can_roll_back for i in self.items)
                )
                yield Button(
                    "Complete", id="complete", variant="success", disabled=not all(i.can_complete for i in self.items)
                )

    def on_mount(self) -> None:
        self.query_one("#later", Button).focus()

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "later" else event.button.id)

    def action_later(self) -> None:
        self.dismiss(None)
