"""Scenes of the app on the demo store: the SVG snapshot tests
(tests/tui/test_snapshots.py) and the README screenshots (``make screenshots``,
``python tools/scenes.py screenshots``) are made from the same scripts. Not
part of the installed package."""
from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Awaitable, Callable

from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from palinode_core.demo import build_demo_store
from palinode_core.search.embed import Embedder

from palinode_tui.app import PalinodeApp

SIZE = (120, 36)
SMALL = (80, 24)  # the smallest terminal everything must fit
DEMO_NOW = datetime(2025, 5, 20, 12, 0, tzinfo=timezone.utc)


def demo_app(root: Path, embedder: Embedder | None = None, cache_dir: Path | None = None) -> PalinodeApp:
    # the app's own resolver (thorough): the review shows its evidence beside Palinode's plan
    return PalinodeApp(root, embedder=embedder, watch=False, clock=lambda: DEMO_NOW, cache_dir=cache_dir,
                       display_name="~/palinode-demo")


async def settle(pilot: Pilot, remeasure: bool = True) -> None:
    app = pilot.app
    from textual.worker import WorkerCancelled
    for _ in range(5):
        await pilot.pause(0.1)  # past Browse's 50 ms detail timer
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:
            pass  # a superseded exclusive worker
    for widget in app.screen.query(Input):
        widget.cursor_blink = False  # a blinking cursor would make snapshots flaky
    app.clear_notifications()  # a toast's life depends on the machine's speed, not on the screen shown
    # A worker's result can land after the last wait (a list refilled): let it, and let the tables
    # size their columns on the idle that follows, before the shot (a loaded CI machine caught one
    # with every column at its header's width).
    for _ in range(3):
        await pilot.pause(0.1)
        try:
            await app.workers.wait_for_complete()
        except WorkerCancelled:
            pass
    await pilot.pause()
    # Then until two frames 0.1 s apart are the same: a table that sizes its columns on a later
    # idle changes the frame once more (seen once on a loaded machine), a settled screen does not.
    frame = app.export_screenshot()
    for _ in range(30):
        await pilot.pause(0.1)
        frame, previous = app.export_screenshot(), frame
        if frame == previous and not _tables_pending(app):
            break
    if remeasure and _remeasure_clamped(app):  # twice in many CI runs under load: columns at their header's width
        await settle(pilot, remeasure=False)


def _remeasure_clamped(app) -> bool:
    """A table whose rows were measured narrower than their text (Textual measures a new row once,
    against the console's width at that moment, and a column never shrinks or grows again for it):
    its rows are measured again on the next idle. True when one was."""
    from rich.measure import measure_renderables

    found = False
    for table in app.screen.query(DataTable):
        if not table.row_count:
            continue
        console = app.console
        for column in table.ordered_columns:
            if not column.auto_width:
                continue
            cells = [table.get_cell(row, column.key) for row in list(table.rows)[:50]]
            widest = max(measure_renderables(console, console.options, [c]).maximum for c in cells)
            if column.content_width < widest:
                table._new_rows.update(table.rows)  # as add_row queues them: measured on the next idle
                table._require_update_dimensions = True
                found = True
                break
    return found


def _tables_pending(app) -> bool:
    """Whether a table still has rows or cells whose widths it measures on its next idle:
    two equal frames on a loaded machine can both come before that idle (Textual's
    DataTable keeps what it has yet to measure in these two fields)."""
    return any(
        getattr(table, "_require_update_dimensions", False) or getattr(table, "_updated_cells", None)
        for table in app.screen.query(DataTable)
    )


def _select(table: DataTable, rows: list, value) -> None:
    table.focus()
    table.move_cursor(row=rows.index(value))


async def browse(pilot: Pilot) -> None:
    await settle(pilot)
    screen = pilot.app.screen
    _select(screen.query_one("#memories", DataTable), screen.rows, "projects/weekly-plan.md")
    await settle(pilot)


async def _review_at(pilot: Pilot, request: str, target: str) -> None:
    await settle(pilot)
    await pilot.press("2")
    await settle(pilot)
    screen = pilot.app.screen
    _select(screen.query_one("#requests", DataTable), screen.request_rows, request)
    await settle(pilot)
    _select(screen.query_one("#candidates", DataTable), screen.candidate_rows, target)
    await settle(pilot)


async def review(pilot: Pilot) -> None:
    await _review_at(pilot, "insights/forget-w.md", "projects/moonrise-closeout.md")


async def review_unforgotten(pilot: Pilot) -> None:
    """A target striking cannot reach (heading, table, code): flagged, with its evidence."""
    await _review_at(pilot, "insights/forget-ottoline.md", "projects/harbor-board.md")


async def diff(pilot: Pilot) -> None:
    await review(pilot)
    await pilot.press("d")
    await settle(pilot)


async def confirm(pilot: Pilot) -> None:
    await review(pilot)
    await pilot.press("A")
    await settle(pilot)


async def undo(pilot: Pilot) -> None:
    await settle(pilot)
    await pilot.press("3")
    await settle(pilot)
    screen = pilot.app.screen
    table = screen.query_one("#undo-ops", DataTable)
    row = next(i for i, (kind, item) in enumerate(screen.rows) if kind == "op" and item.op == "retract")
    table.focus()
    table.move_cursor(row=row)
    await settle(pilot)


async def residue(pilot: Pilot) -> None:
    await settle(pilot)
    await pilot.press("4")
    await settle(pilot)
    pilot.app.screen.set_pref("I hired Ottoline Marsh")
    await settle(pilot)


async def trace(pilot: Pilot) -> None:
    await settle(pilot)
    screen = pilot.app.screen
    _select(screen.query_one("#memories", DataTable), screen.rows, "decisions/db-choice-v2.md")
    await pilot.press("t")
    await settle(pilot)


async def activity(pilot: Pilot) -> None:
    await settle(pilot)
    await pilot.press("5")
    await settle(pilot)


async def as_of(pilot: Pilot) -> None:
    """Browse as of the evening the gym preference was archived (restored since)."""
    await settle(pilot)
    await pilot.press("at")
    await settle(pilot)
    pilot.app.screen.query_one("#as-of", Input).value = "2025-05-12"
    await pilot.press("enter")
    await settle(pilot)
    screen = pilot.app.screen
    _select(screen.query_one("#memories", DataTable), screen.rows, "insights/pref-gym.md")
    await settle(pilot)


async def timeline(pilot: Pilot) -> None:
    """The gym preference's timeline with its first save and its archiving marked."""
    await settle(pilot)
    screen = pilot.app.screen
    _select(screen.query_one("#memories", DataTable), screen.rows, "insights/pref-gym.md")
    await pilot.press("l")
    await settle(pilot)
    points = pilot.app.screen.query_one("#points", DataTable)
    for row in (2, 1):
        points.move_cursor(row=row)
        await pilot.press("space")
    await settle(pilot)


async def help_screen(pilot: Pilot) -> None:
    await review(pilot)
    await pilot.press("f1")
    await settle(pilot)


SCENES: dict[str, Callable[[Pilot], Awaitable[None]]] = {
    "browse": browse, "review": review, "review-unforgotten": review_unforgotten, "diff": diff, "confirm": confirm,
    "undo": undo, "residue": residue, "trace": trace, "activity": activity, "help": help_screen, "as_of": as_of,
    "timeline": timeline,
}


# A review from plan to undo, on a store of its own (it applies): the README's animation and the guide's steps.
REVIEW_STEPS = (
    "1 · Review: the plan of a forget request, each target's route and evidence",
    "2 · d: the diff of a strike; space toggles each sentence",
    "3 · A: apply what is approved (the default button is Cancel)",
    "4 · applied: the request's record, who approved it, its operations",
    "5 · 3: Undo lists its operations; U takes one back, W the whole request",
)


async def review_steps(pilot: Pilot) -> list[str]:
    """One SVG frame per step of REVIEW_STEPS."""
    app = pilot.app
    frames = []
    await review(pilot)
    frames.append(app.export_screenshot())
    await pilot.press("d")
    await settle(pilot)
    frames.append(app.export_screenshot())
    await pilot.press("escape")
    await settle(pilot)
    await pilot.press("A")
    await settle(pilot)
    frames.append(app.export_screenshot())
    await pilot.click("#confirm")
    await settle(pilot)
    app.screen.show_request("insights/forget-w.md")  # the list shows pending ones: the request moved on
    await settle(pilot)
    frames.append(app.export_screenshot())
    await pilot.press("3")
    await settle(pilot)
    app.screen.query_one("#undo-ops", DataTable).focus()
    app.screen.query_one("#undo-ops").select_key("req:insights/forget-w.md")
    await settle(pilot)
    frames.append(app.export_screenshot())
    return frames


def animate(frames: list[str], captions: tuple[str, ...], seconds: float = 4.0) -> str:
    """One SVG showing each frame in turn, its caption below: SMIL, no script, no CSS animation.
    A viewer that does not animate shows the first frame."""
    import re
    from xml.sax.saxutils import escape

    width, height = (float(v) for v in re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', frames[0]).groups())
    strip = 44.0
    n = len(frames)
    key_times = ";".join(f"{i / n:.4f}" for i in range(n))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height + strip}" '
        f'width="{width}" height="{height + strip}">',
        f'<rect width="{width}" height="{height + strip}" fill="#1e1e1e"/>',
    ]
    for i, (frame, caption) in enumerate(zip(frames, captions, strict=True)):
        inner = frame[frame.index("<svg"):]
        inner = re.sub(r"^<svg ", f'<svg x="0" y="0" width="{width}" height="{height}" ', inner, count=1)
        values = ";".join("1" if j == i else "0" for j in range(n))
        parts.append(
            f'<g opacity="{1 if i == 0 else 0}">'
            f'<animate attributeName="opacity" values="{values}" keyTimes="{key_times}" calcMode="discrete" '
            f'dur="{seconds * n}s" repeatCount="indefinite"/>{inner}'
            f'<text x="16" y="{height + 29}" font-family="sans-serif" font-size="20" font-weight="600" '
            f'fill="#e0e0e0">{escape(caption)}</text></g>'
        )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


async def _capture_review_steps(out: Path, embedder: Embedder) -> None:
    work = Path(tempfile.mkdtemp(prefix="palinode-steps-"))
    store = work / "palinode-demo"
    build_demo_store(store)
    app = demo_app(store, embedder, work / "cache")
    # the review's commits and decisions carry the demo's date and a reviewer's name, not the machine's
    stamp = DEMO_NOW.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    reviewer = {"GIT_AUTHOR_NAME": "Jo Reviewer", "GIT_AUTHOR_EMAIL": "jo@example.org",
                "GIT_COMMITTER_NAME": "Jo Reviewer", "GIT_COMMITTER_EMAIL": "jo@example.org",
                "GIT_AUTHOR_DATE": stamp, "GIT_COMMITTER_DATE": stamp}
    saved = {key: os.environ.get(key) for key in reviewer}
    os.environ.update(reviewer)
    try:
        async with app.run_test(size=SIZE) as pilot:
            frames = await review_steps(pilot)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    for i, frame in enumerate(frames, 1):
        (out / f"review-step-{i}.svg").write_text(frame, encoding="utf-8")
    (out / "review-steps.svg").write_text(animate(frames, REVIEW_STEPS), encoding="utf-8")
    print(f"wrote {out / 'review-steps.svg'} and {len(frames)} steps")


async def _capture(out: Path, size: tuple[int, int] = SIZE, suffix: str = "") -> None:
    work = Path(tempfile.mkdtemp(prefix="palinode-shots-"))
    store = work / "palinode-demo"
    build_demo_store(store)
    embedder = Embedder()
    out.mkdir(parents=True, exist_ok=True)
    for name, scene in SCENES.items():
        app = demo_app(store, embedder, work / "cache")
        async with app.run_test(size=size) as pilot:
            await scene(pilot)
            app.save_screenshot(filename=f"{name}{suffix}.svg", path=str(out))
        print(f"wrote {out / (name + suffix + '.svg')}")
    if not suffix:
        await _capture_review_steps(out, embedder)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    small = "--small" in args  # 80x24 scenes, for checking the smallest layout by eye
    args = [a for a in args if a != "--small"]
    asyncio.run(_capture(Path(args[0] if args else "screenshots"), SMALL if small else SIZE,
                         "-80x24" if small else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
