"""The labelled delivery sample (issues 39 and 40): a store whose five forget
requests go through every change of state over four days, and 200 deliveries
between those changes, logged by Palinode 0.23's own RetrievalLogger.

``build`` makes the store, step by step, byte for byte the same every time
(fixed clock, fixed commit times, fixed identity); given a ``deliver``
callback (tests/compat/write_delivery_sample.py, which runs Palinode's logger)
it also logs each row at its moment, with the file on disk as the row delivers
it. The log it wrote is committed (tests/data/delivery-sample/retrievals.jsonl)
with what each row delivered (rows.json) and each row's class, labelled by
hand from the tables in tests/data/delivery-sample/README.md (labels.json);
tests/core/test_delivery_sample.py builds the store again, puts the log in it
and compares."""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from helpers import GIT_ENV, Clock, make_git_store, palinode_file

from palinode_core.forget.selection import APPROVE_ALL
from palinode_core.session import Session

DATA = Path(__file__).resolve().parent / "data" / "delivery-sample"
WRITTEN_AT = "/tmp/palinode-delivery-sample/store"  # where the log was written: its absolute paths name it
START = datetime(2025, 6, 1, tzinfo=UTC)

MEMORIES = {
    "notes/closet.md": "I collect vintage sneakers from the nineties. The closet shelf is full.",
    "notes/market.md": "The flea market opens at eight. Every spring I collect vintage sneakers there.",
    "notes/release.md": "The release schedule slipped a week. The board meets on Friday.",
    "insights/gym.md": "My gym schedule is Monday, Wednesday and Friday at 7am.",
    "notes/weekly.md": "Weekly plan: Tuesday reviews. Fridays are poker nights with friends.",
    "notes/standup.md": "Friday standup moved to ten.",
    "notes/river.md": "Anna lent me her dry bag because I go kayaking on the river with her brother.",
    "notes/tom.md": "Tom goes kayaking every weekend.",
    "notes/club.md": "I know Wilhelmina Cragg from the rowing club.",
    "notes/rowing.md": "I know Wilhelmina Cragg; we rowed together in 2019.",
    "notes/garden.md": "The tomatoes need staking before June.",
    "notes/sneaker-shop.md": "The sneaker shop on Elm Street closed.",
    "daily/2025-05-30.md": "Went kayaking with Maria in the morning.",
}
REQUESTS = {
    "insights/forget-sneakers.md": "Please forget that I collect vintage sneakers.",
    "insights/forget-gym.md": "Please forget my gym schedule.",
    "insights/forget-poker.md": "Please forget that I play poker on Fridays.",
    "insights/forget-kayak.md": "Please forget that I go kayaking.",
    "insights/forget-wilhelmina.md": "Please forget that I know Wilhelmina Cragg.",
}


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return START + timedelta(days=day - 1, hours=hour, minutes=minute)


# What happens to the store, in time order: (when, what, request, memories)
STEPS: list[tuple[datetime, str, str | None, tuple[str, ...]]] = [
    (at(1, 9), "create", None, ()),
    (at(1, 10), "file", "insights/forget-sneakers.md", ()),
    (at(1, 10, 10), "file", "insights/forget-gym.md", ()),
    (at(1, 10, 20), "file", "insights/forget-poker.md", ()),
    (at(1, 10, 30), "file", "insights/forget-kayak.md", ()),
    (at(1, 10, 40), "file", "insights/forget-wilhelmina.md", ()),
    (at(1, 12), "apply", "insights/forget-sneakers.md", ("notes/closet.md", "notes/market.md")),
    (at(1, 14), "apply", "insights/forget-gym.md", ("insights/gym.md",)),
    (at(1, 16), "dismiss", "insights/forget-poker.md", ()),
    (at(2, 9), "apply", "insights/forget-wilhelmina.md", ("notes/club.md",)),  # rowing.md deferred
    (at(2, 12), "withdraw", "insights/forget-gym.md", ()),
    (at(2, 15), "undo", "insights/forget-sneakers.md", ("notes/market.md",)),
    (at(3, 10), "reopen", "insights/forget-poker.md", ("notes/weekly.md",)),
    (at(3, 14), "redo", "insights/forget-sneakers.md", ("notes/market.md",)),
]
ROW_KINDS = ("read", "current", "stale", "index", "plain")  # how each row is logged (write_delivery_sample.py)


def rows() -> list[dict[str, str]]:
    """The 200 deliveries: a moment, a memory, how it was logged. Seeded, so
    the same every time; the first 20 fall before the requests are all filed;
    stale rows deliver the memory as first written (a replica never updated),
    the others as it is at that moment."""
    rng = random.Random(40)
    paths = sorted(MEMORIES)
    out = []
    for number in range(200):
        if number < 20:
            when = at(1, 9, 1) + timedelta(minutes=rng.randrange(0, 100))
        else:
            when = at(1, 9, 1) + timedelta(minutes=rng.randrange(0, 4 * 24 * 60 - 9 * 60 - 1))
        path = rng.choice(paths)
        kind = rng.choice(ROW_KINDS + ("stale",))  # a stale copy twice as often: what leaks
        out.append({"session": f"s{number:03d}", "when": when.isoformat(), "path": path, "kind": kind})
    out.sort(key=lambda r: (r["when"], r["session"]))
    return out


def build(root: Path, setenv: Callable[[str, str], None], deliver: Callable[[dict[str, str]], None] | None = None) -> None:
    """The store at ``root``, each step at its moment; ``deliver`` logs each row at its own."""
    for key, value in GIT_ENV.items():
        setenv(key, value)
    clock = Clock(at(1, 9))
    pending = rows() if deliver is not None else []

    def moment(when: datetime) -> None:
        setenv("GIT_AUTHOR_DATE", when.isoformat())
        setenv("GIT_COMMITTER_DATE", when.isoformat())
        clock.when = when

    def session() -> Session:
        return Session.open(root, clock=clock, vectors=False)

    for when, what, request, memories in STEPS:
        while deliver is not None and pending and pending[0]["when"] < when.isoformat():
            deliver(pending.pop(0))
        moment(when)
        if what == "create":
            make_git_store(
                root,
                {path: palinode_file({"category": path.split("/")[0]}, text) for path, text in MEMORIES.items()},
            )
        elif what == "file":
            assert request is not None
            path = root / request
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(palinode_file({"category": "insights"}, REQUESTS[request]))
            _git(root, "add", "--", request)
            _git(root, "commit", "-q", "-m", f"palinode auto-save: {request}")
        elif what in ("apply", "reopen"):
            assert request is not None
            s = session()
            plan = s.plan(request)
            found = {t.path for t in plan.actionable}
            assert set(memories) <= found, (request, found)
            s.apply_forget(plan, dict.fromkeys(memories, APPROVE_ALL), reopen=what == "reopen")
        elif what == "dismiss":
            assert request is not None
            session().dismiss(request, "not now")
        elif what == "withdraw":
            assert request is not None
            s = session()
            s.apply_withdraw(s.plan_withdraw(request))
        elif what in ("undo", "redo"):
            for op in session().operations():
                if op.trailers.get("Forget-Request") != request or op.path not in memories:
                    continue
                if op.op in ("archive", "supersede", "retract") and (op.undone if what == "redo" else not op.undone):
                    s = session()
                    s.apply(s.plan_redo(op) if what == "redo" else s.plan_undo(op))
    while deliver is not None and pending:
        deliver(pending.pop(0))


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, env={**os.environ, **GIT_ENV})
