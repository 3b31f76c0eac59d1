from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

# The scene scripts shared by the snapshot tests and `make screenshots`.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))

from helpers import MOONRISE, make_git_store, palinode_file

FAIR = "Met Wilhelmina Cragg at the fair; she judges the Moonrise panel."


def fm(rel: str, created: str) -> dict:
    category, stem = rel.split("/")
    return {"id": f"{category}-{stem[:-3]}", "category": category, "created_at": created}


SPEC_FILES = {
    "projects/moonrise-closeout.md": (MOONRISE, "2025-05-20T10:00:00+00:00"),
    "people/wilhelmina-fair.md": (FAIR, "2025-05-21T10:00:00+00:00"),
    "insights/pref-tea.md": ("I drink oolong tea every morning before work.", "2025-05-22T11:00:00+00:00"),
    "insights/forget-w.md": ("Please forget that I know Wilhelmina Cragg.", "2025-06-01T10:00:00+00:00"),
}


@pytest.fixture
def spec_store(tmp_path):
    return make_git_store(tmp_path / "store", {rel: palinode_file(fm(rel, c), b) for rel, (b, c) in SPEC_FILES.items()})


async def workers_done(app) -> None:
    """Wait for every worker; a superseded (cancelled) exclusive one is fine."""
    from textual.worker import WorkerCancelled
    try:
        await app.workers.wait_for_complete()
    except WorkerCancelled:
        pass


async def settle(app, pilot, rounds: int = 4) -> None:
    """Wait until no worker runs and the message queues are drained."""
    for _ in range(rounds):
        await pilot.pause()
        await workers_done(app)
    await pilot.pause()


def errors(app) -> list[str]:
    return [e.text for e in app.activity if e.kind == "error"]


async def wait_until(app, pilot, predicate, attempts: int = 200) -> None:
    """Poll a condition while letting the app run (for watcher-driven updates)."""
    for _ in range(attempts):
        if predicate():
            return
        await pilot.pause(0.05)
        await workers_done(app)
    assert predicate(), f"condition never became true; errors: {errors(app)}"


def screen_lines(app) -> list[str]:
    """The screen as a person sees it, one string a line: what a cut column or line leaves out is not there."""
    from rich.console import Console

    console = Console(width=app.size.width, record=True, file=io.StringIO(), color_system=None)
    console.print(app.screen._compositor.render_update(full=True))
    return console.export_text().splitlines()
