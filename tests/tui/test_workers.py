"""The one helper for blocking work: results and errors come back as typed
messages on the UI thread, and a superseded exclusive job's result is dropped."""
from __future__ import annotations

import threading

from textual.app import App
from textual.screen import Screen
from textual.widgets import Static

from palinode_core.errors import PalinodeError
from palinode_tui.workers import BlockingWork
from tui.conftest import settle, wait_until


class WorkApp(BlockingWork, App):
    def __init__(self) -> None:
        super().__init__()
        self._generations = {}
        self.delivered: list[tuple[str, object]] = []
        self.failures: list[tuple[str, str]] = []
        self.ui_thread = threading.get_ident()
        self.delivery_threads: set[int] = set()

    def fail(self, description: str, reason: str) -> None:
        self.failures.append((description, reason))

    def take(self, name: str):
        def deliver(value: object) -> None:
            self.delivery_threads.add(threading.get_ident())
            self.delivered.append((name, value))
        return deliver


async def test_a_superseded_exclusive_result_is_dropped_and_the_newest_delivered():
    app = WorkApp()
    release = threading.Event()
    async with app.run_test() as pilot:
        app.run_blocking(lambda: (release.wait(10), "old")[1], app.take("first"), "slow", "plan", exclusive=True)
        app.run_blocking(lambda: "new", app.take("second"), "fast", "plan", exclusive=True)
        await wait_until(app, pilot, lambda: app.delivered)
        release.set()
        await settle(app, pilot)
        assert app.delivered == [("second", "new")]
        assert app.delivery_threads == {app.ui_thread}


async def test_non_exclusive_jobs_all_deliver_on_the_ui_thread():
    app = WorkApp()
    async with app.run_test() as pilot:
        for i in range(5):
            app.run_blocking(lambda i=i: i * i, app.take(f"job{i}"), "square", "work")
        await wait_until(app, pilot, lambda: len(app.delivered) == 5)
        assert sorted(v for _, v in app.delivered) == [0, 1, 4, 9, 16]
        assert app.delivery_threads == {app.ui_thread}


async def test_errors_go_in_place_or_to_the_error_modal_as_one_line():
    app = WorkApp()
    in_place: list[str] = []

    def refuse() -> None:
        raise PalinodeError("the plan is stale: people/ann.md changed")

    def bug() -> None:
        raise KeyError("x")

    async with app.run_test() as pilot:
        app.run_blocking(refuse, app.take("never"), "preview", "preview", on_error=in_place.append)
        app.run_blocking(bug, app.take("never"), "apply", "apply")
        await wait_until(app, pilot, lambda: in_place and app.failures)
        assert in_place == ["the plan is stale: people/ann.md changed"]
        assert app.failures == [("apply", "KeyError: 'x'")]
        assert app.delivered == []


class Panel(Screen):
    def compose(self):
        yield Static(id="result")

    def show(self, value: object) -> None:
        self.query_one("#result", Static).update(str(value))


async def test_a_result_for_a_dismissed_screen_is_dropped_not_raised():
    """Closing a screen while its work runs (a timeline, a diff, a preview):
    the result arrives after the screen left the DOM and must not raise."""
    app = WorkApp()
    release = threading.Event()
    async with app.run_test() as pilot:
        panel = Panel()
        await app.push_screen(panel)
        app.run_blocking(lambda: (release.wait(10), "late")[1], panel.show, "read", "read", exclusive=True)
        app.run_blocking(lambda: (release.wait(10), "later")[1], app.take("other"), "read", "other")
        await app.pop_screen()
        await wait_until(app, pilot, lambda: not panel.is_attached)
        release.set()
        await wait_until(app, pilot, lambda: app.delivered)
        await settle(app, pilot)
        assert app.delivered == [("other", "later")] and app.is_running
