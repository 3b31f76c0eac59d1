"""Time travel: the app's read views show the store as of a date or a commit
(a read-only Session over git objects: nothing is checked out, the worktree and
the index are never touched) and come back to now. The live session keeps
scanning and indexing underneath, so a watcher event or a rescan never
replaces the view being read; going back to now shows the live store as it
has become meanwhile."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from palinode_core.api import AsOf, ScanResult, Session

from .actions import REGISTRY
from .render import safe, short_date, short_sha

# A date (a day, or a day and a time, with an optional zone) is read as a date; anything else is a revision.
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2})?(?:Z|[+-]\d{2}:?\d{2})?)?$")


@dataclass(frozen=True)
class AsOfView:
    """A store opened as of a point, scanned, ready to show."""

    asked: str
    session: Session
    scan: ScanResult
    counts: dict[str, int]


def point_of(asked: str) -> tuple[str | None, str | None]:
    """The user's text as ``Session.open_as_of``'s (at, date): a revision or a date."""
    text = asked.strip()
    if _DATE_RE.match(text):
        return None, text.replace(" ", "T", 1)
    return text, None


def counts_note(counts: dict[str, int]) -> str:
    return f"{counts['memories']} memories · {counts['archived']} archived · {counts['struck']} struck" + (
        f" · {counts['errors']} unreadable" if counts["errors"] else ""
    )


class TimeTravel:
    """Mixed into the App. ``session`` and ``scan`` are what the read views
    show; ``live`` and ``live_scan`` are the store as it is now."""

    live: Session
    live_scan: ScanResult | None
    scan: ScanResult | None
    as_of_session: Session | None
    as_of_asked: str
    read_only: bool
    live_note: str
    _recovery_deferred: bool

    @property
    def session(self) -> Session:
        return self.as_of_session or self.live

    @property
    def as_of(self) -> AsOf | None:
        return self.as_of_session.as_of if self.as_of_session is not None else None

    def as_of_words(self) -> str:
        as_of = self.as_of
        return f"{short_date(as_of.date)} · {short_sha(as_of.commit)}" if as_of is not None else "now"

    def key_for(self, spec_id: str) -> str:
        """The key bound to a registry action, as the footer shows it (keymap overrides included)."""
        app: Any = self
        spec = next(s for s in REGISTRY if s.id == spec_id)
        key = app.settings.keymap.get(spec_id, spec.key).split(",")[0].strip()
        return app._key_word(key)

    def refusal(self, what: str) -> str | None:
        """Why a mutation is off right now, in a sentence; None when it is allowed."""
        if self.read_only:
            return f"Read-only: {what} is not available (opened with --read-only)."
        if self.as_of is not None:
            return (
                f"Viewing the store as of {self.as_of_words()}: switch back to now "
                f"({self.key_for('app.now')}) to change anything. {what} is off."
            )
        return None

    # -- switching -------------------------------------------------------------------
    def open_as_of(self, asked: str) -> AsOfView:
        """Blocking (run in a worker): open and scan the store as of ``asked``."""
        at, date = point_of(asked)
        session = Session.open_as_of(self.live.root, at=at, date=date, cache_dir=self.live.cache_dir)
        try:
            scan = session.rescan()
            return AsOfView(asked.strip(), session, scan, scan.counts())
        except BaseException:
            session.close()
            raise

    def action_time_travel(self) -> None:
        from .widgets.asof_modal import AsOfModal

        app: Any = self

        def opener(asked: str, on_view: Callable[[object], None], on_error: Callable[[str], None]) -> None:
            app.run_blocking(
                lambda: self.open_as_of(asked),
                on_view,
                f"open the store as of {asked}",
                "as-of",
                exclusive=True,
                on_error=on_error,
            )

        app.push_screen(AsOfModal(opener, self.as_of_asked), self._time_chosen)

    def _time_chosen(self, chosen: AsOfView | str | None) -> None:
        if isinstance(chosen, AsOfView):
            self.show_as_of(chosen)
        elif chosen == "now":
            self.action_back_to_now()

    def show_as_of(self, view: AsOfView) -> None:
        app: Any = self
        # The previous snapshot is dropped, not closed: a worker may still be reading it;
        # its git process ends with the last reference (GitObjects.__del__).
        self.as_of_session, self.as_of_asked = view.session, view.asked
        self.scan = view.scan
        app.record("action", f"as of {view.asked}: commit {short_sha(self.as_of.commit if self.as_of else '')}")
        error = getattr(view.session.store, "config_error", None)
        if error:  # that commit's config: its history is read with Palinode's defaults
            app.notify(safe(f"{error}: read with Palinode's defaults"), title="Store config", severity="warning")
        self._time_switched(counts_note(view.counts) + " (history)")

    def action_back_to_now(self) -> None:
        app: Any = self
        if self.as_of_session is None:
            app.notify("Already showing the store as it is now.")
            return
        self.as_of_session, self.as_of_asked = None, ""
        self.scan = self.live_scan
        app.record("action", "back to now")
        self._time_switched(self.live_note)
        if self._recovery_deferred:
            app.check_interrupted()

    def _time_switched(self, note: str) -> None:
        app: Any = self
        app.set_status(note, app.progress)
        app.time_signal.publish(self.as_of)
        if self.scan is not None:
            app.store_signal.publish(None)

    def close_as_of(self) -> None:
        if self.as_of_session is not None:
            self.as_of_session.close()
