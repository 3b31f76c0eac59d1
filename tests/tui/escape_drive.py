"""Run the real app with its real terminal driver (the caller gives it a pty)
and drive it through every screen, toast and dialog on a hostile store.
Used by test_terminal_escapes.py; the caller reads every byte the app writes.

    python escape_drive.py STORE CACHE HOSTILE_MEMORY HOSTILE_REQUEST
"""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path

from textual.pilot import Pilot
from textual.worker import WorkerCancelled

from palinode_tui.app import PalinodeApp

STEPS: list[str] = []


async def settle(pilot: Pilot) -> None:
    for _ in range(3):
        await pilot.pause()
        try:
            await pilot.app.workers.wait_for_complete()
        except WorkerCancelled:
            pass
    await pilot.pause(0.3)  # let the compositor write the frame to the terminal


def main() -> None:
    store, cache, memory, request = sys.argv[1:5]
    app = PalinodeApp(store, vectors=False, watch=False, cache_dir=Path(cache),
                      clock=lambda: datetime(2025, 6, 1, 11, 0, tzinfo=timezone.utc))

    async def drive(pilot: Pilot) -> None:
        async def step(name: str, *keys: str) -> None:
            if keys:
                await pilot.press(*keys)
            await settle(pilot)
            STEPS.append(f"{name}:{type(pilot.app.screen).__name__}")

        await step("browse")
        screen = app.screen
        table = screen.query_one("#memories")
        table.focus()
        table.move_cursor(row=screen.rows.index(memory))
        await step("detail")
        await step("restore toast", "R")  # not archived: a toast naming the file
        await step("trace", "t")
        await step("trace back", "escape")
        await step("memory view", "enter")
        await step("memory back", "escape")
        await step("timeline", "l")
        await step("timeline mark", "space")
        await step("timeline back", "escape")
        await step("as-of dialog", "at")
        app.screen.query_one("#as-of").value = "HEAD"  # the banner names HEAD's hostile subject
        await step("as of", "enter")
        await step("as-of refusal", "R")
        await step("now", "ctrl+n")
        await step("review", "2")
        review = app.screen
        review.query_one("#requests").move_cursor(row=review.request_rows.index(request))
        await step("review plan")
        cands = review.query_one("#candidates")
        cands.focus()
        if review.candidate_rows:
            cands.move_cursor(row=review.candidate_rows.index(memory) if memory in review.candidate_rows else 0)
        await step("candidate")
        await step("diff", "d")
        await step("diff back", "escape")
        await step("confirm", "A")
        await step("confirm cancel", "escape")
        await step("dismiss dialog", "X")
        await step("dismiss cancel", "escape")
        await step("export dialog", "e")
        await step("export cancel", "escape")
        await step("help", "f1")
        await step("help close", "escape")
        await step("undo", "3")
        await step("residue", "4")
        review_pref = review.review.plan.request.pref if review.review else ""
        app.screen.set_pref(review_pref)
        await step("residue pref")
        await step("flag dialog", "f")
        await step("flag cancel", "escape")
        await step("activity", "5")
        app.fail("a failure naming " + memory, "reason: " + memory)  # the error dialog
        await step("error dialog")
        await step("error close", "escape")
        app.notify(memory, title=memory)  # a toast titled with store text
        await step("toast")
        app.exit()

    app.run(auto_pilot=drive)
    # The steps reached, for the test to check the drive really went everywhere.
    with open(cache + "/steps.txt", "w", encoding="utf-8") as out:
        out.write("\n".join(STEPS))


if __name__ == "__main__":
    main()
