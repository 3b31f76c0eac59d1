"""Export one request's audit report: a dialog for the format, the file
(default ``<request-stem>-report.<ext>`` in the current directory) and whether
it is redacted (for posting on a forge: rule ids and hashes, no preference
text, and a file name that does not repeat the request's), then the report
written by the core in a worker. An existing file is replaced only after a
second, explicit press."""

from __future__ import annotations

import secrets
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Input, Label, RadioButton, RadioSet, Static

from palinode_core.api import FORMATS, UnderReview

from ..render import plain, safe

if TYPE_CHECKING:
    from textual import getters

    from ..app import PalinodeApp

Export = tuple[str, str, bool, bool]  # (format, path, overwrite, redacted)


def default_name(request: str, fmt: str, redacted: bool = False, token: str = "") -> str:
    if redacted:  # the request's file name often names what is being forgotten; a hash of it, a word list undoes
        return f"request-{token}-redacted.{fmt}"
    return f"{PurePosixPath(request).stem}-report.{fmt}"


def _radio_label(fmt: str, chosen: bool) -> str:
    return f"{fmt} (chosen)" if chosen else fmt


class ExportModal(ModalScreen["Export | None"]):
    if TYPE_CHECKING:
        app = getters.app(PalinodeApp)

    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    ExportModal { align: center middle; }
    ExportModal > Vertical { width: 84; max-width: 100%; height: auto; border: thick $accent; background: $surface; padding: 1 2; }
    ExportModal RadioSet { layout: horizontal; width: auto; height: auto; }
    ExportModal #export-line { height: auto; min-height: 1; }
    ExportModal Horizontal { height: auto; align-horizontal: right; }
    ExportModal Button { margin-left: 2; }
    """

    def __init__(self, request: str, when: str | None) -> None:
        super().__init__()
        self.request, self.when = request, when
        self.fmt = "md"
        self.redacted = False
        self.token = secrets.token_hex(4)  # a redacted file's name: random, not a hash of the request's
        self.confirmed: Path | None = None  # the existing file a second press replaces
        self.mismatch_ok: Path | None = None  # a name whose extension names another format, confirmed

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(plain("Export the audit report", "bold"))
            yield Static(
                plain(
                    f"{self.request}"
                    + (f"  as of {self.when}" if self.when else "")
                    + f"\nrelative paths are in {Path.cwd()}",
                    "dim",
                )
            )
            with RadioSet(id="export-format"):
                # the chosen format first: the keyboard highlight starts on it
                for fmt in sorted(FORMATS, key=lambda f: f != self.fmt):
                    yield RadioButton(_radio_label(fmt, fmt == self.fmt), value=fmt == self.fmt, name=fmt)
            yield Checkbox("redacted: rule ids and hashes, no preference text (to post on a forge)", id="export-redact")
            yield Input(value=safe(default_name(self.request, self.fmt)), id="export-path")
            yield Static(id="export-line")
            with Horizontal():
                yield Button("Cancel", id="cancel")
                yield Button("Export", id="export", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    @on(RadioSet.Changed, "#export-format")
    def _format(self, event: RadioSet.Changed) -> None:
        self._rename(event.pressed.name or "md", self.redacted)
        for button in self.query(RadioButton):  # chosen is said in words, not by colour alone
            button.label = _radio_label(button.name or "", button is event.pressed)

    @on(Checkbox.Changed, "#export-redact")
    def _redact(self, event: Checkbox.Changed) -> None:
        self._rename(self.fmt, event.value)

    def _rename(self, fmt: str, redacted: bool) -> None:
        field = self.query_one("#export-path", Input)
        if field.value == default_name(self.request, self.fmt, self.redacted, self.token):  # an edited path: kept
            field.value = default_name(self.request, fmt, redacted, self.token)
        self.fmt, self.redacted = fmt, redacted

    @on(Input.Changed, "#export-path")
    def _path_changed(self) -> None:
        self.confirmed = self.mismatch_ok = None
        self.query_one("#export", Button).label = "Export"
        self.query_one("#export-line", Static).update("")

    @on(Button.Pressed, "#export")
    @on(Input.Submitted, "#export-path")
    def _export(self) -> None:
        text = self.query_one("#export-path", Input).value.strip()
        if not text:
            self.query_one("#export-line", Static).update(plain("Name the file to write.", "bold red"))
            return
        out = Path(text).expanduser()
        fmt, redacted = self.fmt, self.redacted
        other = out.suffix.lower().lstrip(".")
        if other in FORMATS and other != fmt and out != self.mismatch_ok:
            self.mismatch_ok = out
            self.query_one("#export-line", Static).update(
                plain(
                    f"{out.name} ends in .{other} but the format is {fmt}: press Export again to write it anyway, "
                    "or change the name or the format.",
                    "bold yellow",
                )
            )
            return

        def exists() -> Path | None:
            resolved = out.resolve()
            return resolved if resolved.exists() else None

        self.app.run_blocking(
            exists,
            lambda found: self._checked(fmt, out, found, redacted),
            "check the report file",
            "export-check",
            exclusive=True,
        )

    def _checked(self, fmt: str, out: Path, existing: Path | None, redacted: bool) -> None:
        if existing is not None and existing != self.confirmed:
            self.confirmed = existing
            self.query_one("#export", Button).label = "Overwrite"
            self.query_one("#export-line", Static).update(
                plain(f"{existing} exists: press Overwrite to replace it, or change the name.", "bold yellow")
            )
            return
        self.dismiss((fmt, str(out), existing is not None, redacted))

    @on(Button.Pressed, "#cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)


def export_report(app: Any, request: str, review: UnderReview | None = None) -> None:
    """Ask for the format and the file, then write the report of ``request``
    from the session shown (now, or as of a point) in a worker; a pending
    request's ``review`` (the plan open in Review) goes in as proposed targets."""
    session = app.session

    def chosen(choice: Export | None) -> None:
        if choice is None:
            return
        fmt, out, overwrite, redacted = choice
        kind = f"{fmt}, redacted" if redacted else fmt

        def done(result: dict[str, Any]) -> None:
            app.record("action", f"export the report of {request} ({kind}) to {result['written']}")
            app.notify(f"Wrote {result['written']}: {result['targets']} target(s)", title="Report exported")

        app.run_blocking(
            lambda: session.write_report(
                out, fmt, overwrite=overwrite, request=request, redacted=redacted, review=review
            ),
            done,
            f"export the report of {request}",
            "export",
        )

    app.push_screen(ExportModal(request, app.as_of_words() if app.as_of is not None else None), chosen)
