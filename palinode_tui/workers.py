"""Blocking work off the UI thread. Every file read, git call and core
computation a screen needs goes through ``run_blocking``: it runs in a thread
worker, which posts its outcome as a typed message (``WorkDone`` or
``WorkFailed``) and goes on without waiting for the UI; the app handles the
message on the UI thread, in arrival order, where widgets may be touched."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from textual.widget import Widget

from palinode_core.api import Cancelled, PalinodeError

from .messages import WorkDone, WorkFailed, WorkPhase, WorkProgress

T = TypeVar("T")
PROGRESS_INTERVAL = 0.25  # seconds between status-line progress reports


class BlockingWork:
    """Mixed into the App: one helper for blocking work, with a generation
    guard per group so a superseded result never overwrites a newer one."""

    _generations: dict[str, int]

    def run_blocking(
        self,
        fn: Callable[[], T],
        on_done: Callable[[T], Any],
        description: str,
        group: str = "work",
        exclusive: bool = False,
        on_error: Callable[[str], Any] | None = None,
    ) -> None:
        """Run ``fn`` in a thread; ``on_done`` gets its result on the UI thread.
        An error goes to ``on_error`` (a preview shows it in place) or, by
        default, to an error modal."""
        app: Any = self
        # Thread workers cannot be cancelled: a superseded exclusive job still
        # finishes, so its result is dropped instead of overwriting a newer one.
        generation = self._generations.get(group, 0) + 1 if exclusive else None
        if generation is not None:
            self._generations[group] = generation

        def job() -> None:
            try:
                result = fn()
            except Cancelled:
                return  # the app is closing
            except PalinodeError as exc:
                reason = str(exc)
            except Exception as exc:  # a bug must not take the user's session down
                reason = f"{exc.__class__.__name__}: {exc}"
            else:
                app.post_message(WorkDone(description, group, generation, result, on_done))
                return
            app.post_message(WorkFailed(description, group, generation, reason, on_error))

        app.run_worker(job, thread=True, group=group, exclusive=exclusive, description=description)

    def _current(self, group: str, generation: int | None, callback: Callable[..., Any] | None) -> bool:
        # a screen closed while its work ran is no longer in the DOM: its callback would query nothing and raise
        owner = getattr(callback, "__self__", None)
        if isinstance(owner, Widget) and not owner.is_attached:
            return False
        return generation is None or self._generations.get(group) == generation

    def on_work_done(self, message: WorkDone) -> None:
        if self._current(message.group, message.generation, message.on_done):
            message.on_done(message.result)

    def on_work_failed(self, message: WorkFailed) -> None:
        if not self._current(message.group, message.generation, message.on_error):
            return
        if message.on_error is not None:
            message.on_error(message.reason)
        else:
            self.fail(message.description, message.reason)  # type: ignore[attr-defined]

    def progress_reporter(self) -> Callable[[WorkPhase, int, int], None]:
        """Progress for the status line, at most a few times a second: a child
        indexing 100,000 files reports dozens of times a second, and each report
        repaints."""
        app: Any = self
        last_at, last_phase = [0.0], [""]

        def report(phase: WorkPhase, done: int, total: int) -> None:
            now = time.monotonic()
            if phase == last_phase[0] and now - last_at[0] < PROGRESS_INTERVAL and done < total:
                return
            last_at[0], last_phase[0] = now, phase
            app.post_message(WorkProgress(phase, done, total))

        return report
