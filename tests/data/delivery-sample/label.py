"""Labels the delivery sample's 200 rows (rows.json) by hand-made facts, never
by the audit: which request's preference each memory's first version carries
(read by a person, sentence by sentence: CARRIES), when each memory's version
stopped or started carrying it live (the store's steps: LIVE), and each
request's state over time (STATES). A row's class for a request follows the
rules of issue 40 (README.md here); its headline is the gravest. Run it
again only when the sample changes:

    python3 tests/data/delivery-sample/label.py
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent


def t(day: int, hour: int, minute: int = 0) -> str:
    return datetime(2025, 6, day, hour, minute).isoformat() + "+00:00"


SNEAKERS, GYM, POKER, KAYAK, WILHELMINA = (
    "insights/forget-sneakers.md",
    "insights/forget-gym.md",
    "insights/forget-poker.md",
    "insights/forget-kayak.md",
    "insights/forget-wilhelmina.md",
)

# Read by a person: the request whose preference the memory's first version states as the user's.
CARRIES = {
    "notes/closet.md": SNEAKERS,  # "I collect vintage sneakers from the nineties."
    "notes/market.md": SNEAKERS,  # "Every spring I collect vintage sneakers there."
    "notes/release.md": None,  # a release schedule and a board meeting on Friday: no gym, no poker
    "insights/gym.md": GYM,  # "My gym schedule is ..."
    "notes/weekly.md": POKER,  # "Fridays are poker nights with friends." (the user's weekly plan)
    "notes/standup.md": None,  # a Friday standup: no poker
    "notes/river.md": KAYAK,  # "... because I go kayaking on the river with her brother": the user kayaks
    "notes/tom.md": None,  # Tom kayaks, not the user
    "notes/club.md": WILHELMINA,  # "I know Wilhelmina Cragg from the rowing club."
    "notes/rowing.md": WILHELMINA,  # "I know Wilhelmina Cragg; we rowed together"
    "notes/garden.md": None,
    "notes/sneaker-shop.md": None,  # a shop closed: nothing of the user collecting
    "daily/2025-05-30.md": KAYAK,  # "Went kayaking with Maria": the user's own note, subjectless
}
# When the memory's current version carries its request's preference struck or archived
# (the apply's own operation in force), as (from, until) intervals; live otherwise.
RETRACTED = {
    "notes/closet.md": [(t(1, 12), None)],
    "notes/market.md": [(t(1, 12), t(2, 15)), (t(3, 14), None)],  # undone on day 2, redone on day 3
    "insights/gym.md": [(t(1, 14), t(2, 12))],  # restored by the withdrawal
    "notes/weekly.md": [(t(3, 10), None)],
    "notes/club.md": [(t(2, 9), None)],
}
FILED = {SNEAKERS: t(1, 10), GYM: t(1, 10, 10), POKER: t(1, 10, 20), KAYAK: t(1, 10, 30), WILHELMINA: t(1, 10, 40)}
# Each request's state from a moment on, and the memories its apply left as they were then.
STATES = {
    SNEAKERS: [(t(1, 10), "pending", ()), (t(1, 12), "applied", ()), (t(2, 15), "partial", ("notes/market.md",)),
               (t(3, 14), "applied", ())],
    GYM: [(t(1, 10, 10), "pending", ()), (t(1, 14), "applied", ()), (t(2, 12), "withdrawn", ())],
    POKER: [(t(1, 10, 20), "pending", ()), (t(1, 16), "dismissed", ()), (t(3, 10), "applied", ())],
    KAYAK: [(t(1, 10, 30), "pending", ())],
    WILHELMINA: [(t(1, 10, 40), "pending", ()), (t(2, 9), "partial", ("notes/rowing.md",))],
}
GRAVITY = ["leak", "exposure_window", "dismissed", "withdrawn", "delivered_retracted", "before_request"]


def state(request: str, when: str) -> tuple[str | None, tuple[str, ...]]:
    found: tuple[str | None, tuple[str, ...]] = (None, ())
    for start, name, left in STATES[request]:
        if start <= when:
            found = (name, left)
    return found


def label(row: dict[str, str]) -> dict[str, str | None]:
    path, when, kind = row["path"], row["when"], row["kind"]
    request = CARRIES[path]
    if request is None:
        return {"class": "unrelated", "request": None, "why": "carries no request's preference"}
    first = kind == "stale"  # the memory as first written: live
    retracted = not first and any(a <= when and (b is None or when < b) for a, b in RETRACTED.get(path, ()))
    name, left = state(request, when)
    if retracted:
        return {"class": "delivered_retracted", "request": request, "why": "the apply's strike or archive delivered"}
    if when < FILED[request]:
        return {"class": "before_request", "request": request, "why": "live, before the request was filed"}
    if name in ("withdrawn", "dismissed"):
        return {"class": name, "request": request, "why": f"live, the request {name} then"}
    if name == "pending" or path in left:
        why = "live, the request filed and not applied" if name == "pending" else "live, left by a partial apply"
        return {"class": "exposure_window", "request": request, "why": why}
    return {"class": "leak", "request": request, "why": f"live ({'a stale copy' if first else 'as it is'}) while the apply stood"}


def main() -> None:
    rows = json.loads((HERE / "rows.json").read_text())
    labels = [{"session": r["session"], "line": r["line"], **label(r)} for r in rows]
    (HERE / "labels.json").write_text(json.dumps(labels, indent=1) + "\n")
    counts: dict[str, int] = {}
    for item in labels:
        counts[str(item["class"])] = counts.get(str(item["class"]), 0) + 1
    print(counts)


if __name__ == "__main__":
    main()
