"""Deliveries judged against the request's whole life (issue 40): rows
written by Palinode 0.23's own RetrievalLogger (tests/compat/retrieval_driver.py)
between each change of a request's state, each classed by the state at its
own time: a leak only while an apply stands; after every operation is undone
the request is pending again (exposure_window); after a withdrawal or a
dismissal the row says so and is no leak; a partial apply leaks only what it
forgot."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from helpers import Clock, git, make_git_store, palinode_file

from palinode_core.cli import main
from palinode_core.forget.selection import APPROVE_ALL
from palinode_core.session import Session

from .harness import venv_ready
from .test_deliveries import Logger, commit_at

pytestmark = [
    pytest.mark.compat,
    pytest.mark.xdist_group("compat"),
    pytest.mark.skipif(
        not venv_ready(),
        reason="DELIVERY TESTS NOT RUN: .venv-compat is missing (make compat-venv builds it from PyPI)",
    ),
]

REQUEST_PATH = "insights/forget-sneakers.md"
SHOES = palinode_file({"category": "notes", "title": "Closet"}, "I collect vintage sneakers from the nineties.")
BOOTS = palinode_file(
    {"category": "notes", "title": "Market"},
    "The flea market opens at eight. Every spring I collect vintage sneakers there.",
)
GARDEN = palinode_file({"category": "notes", "title": "Garden"}, "The tomatoes need staking before June.")
REQUEST = palinode_file({"category": "insights", "title": "Forget"}, "Please forget that I collect vintage sneakers.")


def iso(hour: int, minute: int = 0) -> str:
    return datetime(2025, 6, 1, hour, minute, tzinfo=UTC).isoformat()


class Story:
    """A store and its request, moved through time; rows logged by Palinode's own code."""

    def __init__(self, tmp_path, monkeypatch, files: dict[str, str] | None = None, request: str = REQUEST_PATH,
                 text: str = REQUEST):
        self.mp = monkeypatch
        self.root = tmp_path / "store"
        self.request, self.text = request, text
        self.clock = Clock(datetime(2025, 6, 1, 9, tzinfo=UTC))
        self.at(9)
        files = files or {"notes/shoes.md": SHOES, "notes/market.md": BOOTS, "notes/garden.md": GARDEN}
        make_git_store(self.root, files)
        self.first = {p: (self.root / p).read_bytes() for p in files}
        self.log = Logger(self.root)

    def at(self, hour: int, minute: int = 0) -> None:
        when = iso(hour, minute)
        self.mp.setenv("GIT_AUTHOR_DATE", when)
        self.mp.setenv("GIT_COMMITTER_DATE", when)
        self.clock.when = datetime.fromisoformat(when)

    def session(self) -> Session:
        return Session.open(self.root, clock=self.clock, vectors=False)

    def file(self, hour: int) -> None:
        self.at(hour)
        (self.root / "insights").mkdir(exist_ok=True)
        (self.root / self.request).write_text(self.text)
        commit_at(self.mp, self.root, iso(hour), f"palinode auto-save: {self.request}", "insights")

    def apply(self, hour: int, only: tuple[str, ...] | None = None, reopen: bool = False) -> None:
        self.at(hour)
        session = self.session()
        plan = session.plan(self.request)
        targets = [t.path for t in plan.actionable]
        assert set(only or ()) <= set(targets), targets
        session.apply_forget(plan, {p: APPROVE_ALL for p in (only or targets)}, reopen=reopen)

    def ops(self) -> list:
        return [o for o in self.session().operations() if o.trailers.get("Forget-Request") == self.request]

    def undo_all(self, hour: int) -> None:
        self.at(hour)
        for op in self.ops():
            if op.op in ("archive", "supersede", "retract") and not op.undone:
                session = self.session()
                session.apply(session.plan_undo(op))

    def redo_all(self, hour: int) -> None:
        self.at(hour)
        for op in self.ops():
            if op.undone and op.op in ("archive", "supersede", "retract"):
                session = self.session()
                session.apply(session.plan_redo(op))

    def withdraw(self, hour: int) -> None:
        self.at(hour)
        session = self.session()
        session.apply_withdraw(session.plan_withdraw(self.request))

    def dismiss(self, hour: int) -> None:
        self.at(hour)
        self.session().dismiss(self.request, "not a real request")

    def deliver(self, path: str, hour: int, minute: int, name: str, *, stale: bool = False) -> None:
        """A row of ``path`` as it is now, or (``stale``) as it was first: a replica never updated."""
        now = (self.root / path).read_bytes()
        if stale:
            (self.root / path).write_bytes(self.first[path])
        try:
            self.log.deliver(path, iso(hour, minute), name, "file_sha256")
        finally:
            (self.root / path).write_bytes(now)

    def audit(self, capsys, *extra: str) -> dict:
        self.log.close()
        assert main(["--json", "deliveries", str(self.root), "--show-queries", *extra]) == 0
        return json.loads(capsys.readouterr().out)


def classes(report: dict) -> dict[str, tuple[str, str | None]]:
    return {r["session_id"]: (r["class"], r["state"]) for r in report["rows"]}


def events(report: dict) -> list[tuple[str, str]]:
    return [(s["event"], s["state"]) for s in report["requests"][REQUEST_PATH]["window"]["timeline"]]


@pytest.fixture
def story(tmp_path, monkeypatch):
    return Story(tmp_path, monkeypatch)


def test_after_every_operation_is_undone_the_request_is_pending_again(story, capsys):
    story.file(10)
    story.deliver("notes/shoes.md", 10, 30, "s-window")
    story.apply(11)
    story.deliver("notes/shoes.md", 11, 30, "s-stale", stale=True)
    story.undo_all(12)
    story.deliver("notes/shoes.md", 12, 30, "s-undone")
    story.deliver("notes/market.md", 12, 40, "s-undone-market")
    report = story.audit(capsys)
    rows = classes(report)
    assert rows["s-window"] == ("exposure_window", "pending")
    assert rows["s-stale"] == ("leak", "applied")
    assert rows["s-undone"] == ("exposure_window", "pending")  # the request stands, unapplied: no leak
    assert rows["s-undone-market"] == ("exposure_window", "pending")
    assert events(report) == [("filed", "pending"), ("applied", "applied"), ("undone", "pending")]
    assert report["requests"][REQUEST_PATH]["window"]["state"] == "pending"


def test_a_redo_makes_a_stale_delivery_a_leak_again(story, capsys):
    story.file(10)
    story.apply(11)
    story.undo_all(12)
    story.deliver("notes/shoes.md", 12, 30, "s-undone", stale=True)
    story.redo_all(13)
    story.deliver("notes/shoes.md", 13, 30, "s-redone", stale=True)
    story.deliver("notes/shoes.md", 13, 40, "s-struck")
    report = story.audit(capsys)
    rows = classes(report)
    assert rows["s-undone"] == ("exposure_window", "pending")
    assert rows["s-redone"] == ("leak", "applied")
    assert rows["s-struck"][0] == "delivered_retracted"
    assert events(report) == [("filed", "pending"), ("applied", "applied"), ("undone", "pending"), ("redone", "applied")]


def test_after_a_withdrawal_a_delivery_says_so_and_is_no_leak(story, capsys):
    story.file(10)
    story.apply(11)
    story.deliver("notes/shoes.md", 11, 30, "s-stale", stale=True)
    story.withdraw(12)
    story.deliver("notes/shoes.md", 12, 30, "s-after")
    story.deliver("notes/market.md", 12, 40, "s-after-market", stale=True)
    report = story.audit(capsys)
    rows = classes(report)
    assert rows["s-stale"] == ("leak", "applied")
    assert rows["s-after"] == ("withdrawn", "withdrawn")
    assert rows["s-after-market"] == ("withdrawn", "withdrawn")
    counts = report["requests"][REQUEST_PATH]["counts"]
    assert counts["leak"] == 1 and counts["withdrawn"] == 2
    assert events(report)[-1] == ("withdrawn", "withdrawn")


def test_after_a_dismissal_a_delivery_says_so_and_a_reopened_apply_leaks_again(story, capsys):
    story.file(10)
    story.deliver("notes/shoes.md", 10, 30, "s-window")
    story.dismiss(11)
    story.deliver("notes/shoes.md", 11, 30, "s-dismissed")
    story.apply(12, reopen=True)
    story.deliver("notes/shoes.md", 12, 30, "s-reopened", stale=True)
    report = story.audit(capsys)
    rows = classes(report)
    assert rows["s-window"] == ("exposure_window", "pending")
    assert rows["s-dismissed"] == ("dismissed", "dismissed")
    assert rows["s-reopened"] == ("leak", "applied")
    assert events(report) == [("filed", "pending"), ("dismissed", "dismissed"), ("reopened", "applied")]


def test_a_partial_apply_leaks_only_what_it_forgot(story, capsys):
    story.file(10)
    story.apply(11, only=("notes/shoes.md",))  # the market memory deferred
    story.deliver("notes/shoes.md", 11, 30, "s-forgotten-stale", stale=True)
    story.deliver("notes/market.md", 11, 40, "s-deferred")
    report = story.audit(capsys)
    rows = classes(report)
    assert rows["s-forgotten-stale"] == ("leak", "partial")
    assert rows["s-deferred"] == ("exposure_window", "partial")  # left for later: the window is open for it
    assert events(report) == [("filed", "pending"), ("partly applied", "partial")]
    stage = report["requests"][REQUEST_PATH]["window"]["timeline"][-1]
    assert stage["forgotten"] == ["notes/shoes.md"] and stage["left"] == ["notes/market.md"]


NEW = palinode_file({"category": "notes", "title": "Still"}, "On Sundays I collect vintage sneakers, still.")


def test_a_resolve_envelope_is_audited_as_the_records_palinode_explain_names(story, tmp_path, capsys):
    """Palinode logs a resolve only as one receipt envelope (no file_path): its
    records are audited, the very ones its own explain_delivery names."""
    story.file(10)
    story.apply(11)
    story.at(12)
    (story.root / "notes/still.md").write_text(NEW)  # a live mention the apply never saw
    commit_at(story.mp, story.root, iso(12), "palinode auto-save: notes/still.md", "notes")
    reply = story.log.resolve("vintage sneakers", iso(12, 30), tmp_path / "palinode.db")
    assert reply["status"] == "explained" and reply["explained"], reply
    report = story.audit(capsys, "--bundle", reply["bundle_id"])
    rows = [r for r in report["rows"] if r["bundle_id"] == reply["bundle_id"]]
    assert sorted(r["file_path"] for r in rows) == sorted(ref + ".md" for ref in reply["explained"])
    assert "notes/still.md" in [r["path"] for r in rows]
    assert all(r["source"] == "resolve" and r["entry"] is not None for r in rows)
    still = next(r for r in rows if r["path"] == "notes/still.md")
    assert still["class"] == "leak" and still["sentence"] == "On Sundays I collect vintage sneakers, still."
    assert still["disposition"] == "selected" and still["coverage"]["status"]
    assert report["log"]["envelopes"] == 1 and report["bundle"]["rows"] == len(rows)


POKER = palinode_file(
    {"category": "notes", "title": "Habits"}, "I collect vintage sneakers and I play poker on Fridays."
)
POKER_REQUEST = palinode_file({"category": "insights", "title": "Forget"}, "Please forget that I play poker on Fridays.")


def test_a_row_counts_for_every_request_it_concerns_whatever_the_scope(story, capsys):
    """The gravest class is the row's headline; the other requests it concerns
    are listed beside it and count it too, so a request's counts are the same
    alone (--request) or among all."""
    story.at(9, 30)
    (story.root / "notes/habits.md").write_text(POKER)
    (story.root / "insights").mkdir()
    (story.root / "insights/forget-poker.md").write_text(POKER_REQUEST)
    commit_at(story.mp, story.root, iso(9, 30), "palinode auto-save: notes/habits.md", "notes", "insights")
    story.first["notes/habits.md"] = POKER.encode()
    story.file(10)
    story.apply(11)
    story.deliver("notes/habits.md", 11, 30, "s-both", stale=True)
    story.log.close()
    every = story.audit(capsys)
    row = next(r for r in every["rows"] if r["session_id"] == "s-both")
    assert (row["class"], row["request"]) == ("leak", REQUEST_PATH)
    assert [(a["request"], a["class"], a["state"]) for a in row["also"]] == [
        ("insights/forget-poker.md", "exposure_window", "pending")
    ]
    alone = story.audit(capsys, "--request", "insights/forget-poker.md")
    for report in (every, alone):
        entry = report["requests"]["insights/forget-poker.md"]
        assert entry["counts"]["exposure_window"] == 1
        assert [r["session_id"] for r in entry["exposure"]] == ["s-both"]
        assert entry["exposure"][0]["class"] == "exposure_window"  # as this request sees it
    assert every["requests"][REQUEST_PATH]["counts"]["leak"] == 1


def test_as_of_and_since_are_the_instant_asked_to_the_second_in_the_users_zone(story, capsys, monkeypatch):
    """--as-of 2025-06-01 is the end of that day where the user is (New York:
    04:00 UTC the next day), not the time of that day's last commit; --since
    is the start of its day there."""
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        story.file(10)  # the day's last commit: 10:00 UTC, 06:00 in New York
        story.deliver("notes/shoes.md", 10, 0, "s-same-second")
        story.log.deliver("notes/shoes.md", "2025-06-01T10:00:02+00:00", "s-two-seconds-later", "file_sha256")
        story.log.deliver("notes/shoes.md", "2025-06-02T03:59:59.600000+00:00", "s-last-second", "file_sha256")
        story.log.deliver("notes/shoes.md", "2025-06-02T04:00:00+00:00", "s-next-day", "file_sha256")
        story.log.deliver("notes/shoes.md", "2025-06-01T03:59:59+00:00", "s-day-before", "file_sha256")
        as_of = story.audit(capsys, "--as-of", "2025-06-01")
        shown = [r["session_id"] for r in as_of["rows"]]
        assert shown == ["s-same-second", "s-two-seconds-later", "s-last-second", "s-day-before"]
        assert as_of["until"] == "2025-06-01T23:59:59-04:00"  # the end of that day where the user is
        since = story.audit(capsys, "--since", "2025-06-01")
        assert "s-day-before" not in [r["session_id"] for r in since["rows"]]
        assert {"s-same-second", "s-next-day"} <= {r["session_id"] for r in since["rows"]}
        exact = story.audit(capsys, "--since", "2025-06-01T23:59:59")  # 03:59:59 UTC: that second on
        assert [r["session_id"] for r in exact["rows"]] == ["s-last-second", "s-next-day"]
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()


def test_a_moved_store_still_maps_its_rows_and_says_so(story, tmp_path, capsys):
    """Palinode logs a search row's file_path absolute: after the store folder
    moves, its rows still name its files, through the folder they name."""
    story.file(10)
    story.apply(11)
    story.deliver("notes/shoes.md", 11, 30, "s-stale", stale=True)  # logged as <old folder>/notes/shoes.md
    story.deliver("notes/market.md", 11, 40, "s-stale-market", stale=True)
    before = story.audit(capsys)
    old = str(story.root)
    assert all(r["file_path"].startswith(old + "/") for r in before["rows"])
    moved = tmp_path / "elsewhere" / "store"
    moved.parent.mkdir()
    story.root.rename(moved)
    story.root = moved
    after = story.audit(capsys)
    assert classes(after) == classes(before) == {"s-stale": ("leak", "applied"), "s-stale-market": ("leak", "applied")}
    assert after["log"]["moved"] == {old: 2} and not after["log"]["problems"]
    assert any(f"2 row(s) name files under {old}" in note for note in after["log"]["notes"])


def test_beside_each_row_what_palinode_explain_gives_and_the_askers_words_only_when_asked(story, capsys):
    story.file(10)
    story.apply(11)
    story.deliver("notes/shoes.md", 11, 30, "s-stale", stale=True)
    story.log.close()
    assert main(["--json", "deliveries", str(story.root)]) == 0
    plain = json.loads(capsys.readouterr().out)
    row = plain["rows"][0]
    assert row["session_id"] is None and row["query"] is None  # withheld
    assert row["disposition"] == "selected" and row["scope"] == [] and row["coverage"]["status"]
    assert row["policy_version"].startswith("palinode/0.23.0")
    assert plain["withheld"]["fields"] == ["session_id", "query"]
    assert main(["deliveries", str(story.root)]) == 0
    text = capsys.readouterr().out
    assert "selected; scope no scope identity; coverage " in text and "what shoes do I like" not in text
    assert "s-stale" not in text and "--show-queries shows them" in text
    assert main(["deliveries", str(story.root), "--show-queries"]) == 0
    shown = capsys.readouterr().out
    assert 'session s-stale query "what shoes do I like"' in shown


def test_an_unknown_bundle_id_names_its_likely_cause(story, capsys, monkeypatch):
    story.log.read("notes/shoes.md", iso(9, 30), "s-read")  # a read carries no receipt: no bundle id
    report = story.audit(capsys, "--bundle", "00112233aabbccdd")
    causes = {c["reason"]: c["holds"] for c in report["bundle"]["causes"]}
    assert report["bundle"]["rows"] == 0 and report["rows"] == []
    assert causes["predates_receipts"] is True and causes["log_absent"] is False
    assert causes["instrumentation_disabled"] is False
    monkeypatch.setenv("PALINODE_INSTRUMENTATION_DISABLED", "1")
    (story.root / ".audit/retrievals.jsonl").unlink()
    assert main(["deliveries", str(story.root), "--bundle", "00112233aabbccdd"]) == 0
    text = capsys.readouterr().out
    assert "no delivery with bundle id 00112233aabbccdd" in text
    assert "[yes] log_absent" in text and "[yes] instrumentation_disabled" in text
    assert main(["deliveries", str(story.root), "--bundle", "../etc"]) != 0
    assert "hex digest" in capsys.readouterr().err


# -- issue 39's delivery cases: the shared judgment (forget.judgment) on rows Palinode logged ------------------------
GYM = palinode_file({"category": "insights", "title": "Gym"}, "My gym schedule is Monday, Wednesday and Friday at 7am.")
RELEASE = palinode_file({"category": "notes", "title": "Release"}, "The release schedule slipped a week.")
STANDUP = palinode_file({"category": "notes", "title": "Standup"}, "Friday standup moved to ten.")
WEEKLY = palinode_file({"category": "notes", "title": "Weekly"}, "Weekly plan. Fridays are poker nights with friends.")
RIVER = palinode_file(
    {"category": "notes", "title": "River"},
    "Anna lent me her dry bag because I go kayaking on the river with her brother.",
)


def test_a_withdrawn_gym_schedule_request_charges_nothing_through_schedule(tmp_path, monkeypatch, capsys):
    story = Story(tmp_path, monkeypatch, {"insights/gym.md": GYM, "notes/release.md": RELEASE},
                  "insights/forget-gym.md", palinode_file({"category": "insights"}, "Please forget my gym schedule."))
    story.file(10)
    story.apply(11)
    story.deliver("insights/gym.md", 11, 30, "s-gym-stale", stale=True)
    story.deliver("notes/release.md", 11, 40, "s-release")
    story.withdraw(12)
    story.deliver("insights/gym.md", 12, 30, "s-gym-after")
    story.deliver("notes/release.md", 12, 40, "s-release-after")
    report = story.audit(capsys)
    rows = classes(report)
    assert rows["s-gym-stale"] == ("leak", "applied")
    assert rows["s-gym-after"] == ("withdrawn", "withdrawn")
    assert rows["s-release"][0] == rows["s-release-after"][0] == "unrelated"  # "schedule" alone says nothing
    assert report["requests"]["insights/forget-gym.md"]["counts"]["leak"] == 1


def test_friday_charges_no_memory_to_a_poker_request(tmp_path, monkeypatch, capsys):
    story = Story(tmp_path, monkeypatch, {"notes/standup.md": STANDUP, "notes/weekly.md": WEEKLY},
                  "insights/forget-poker.md",
                  palinode_file({"category": "insights"}, "Please forget that I play poker on Fridays."))
    story.file(10)
    story.apply(11)
    story.deliver("notes/standup.md", 11, 30, "s-standup")
    story.deliver("notes/weekly.md", 11, 40, "s-weekly-stale", stale=True)
    rows = classes(story.audit(capsys))
    assert rows["s-standup"][0] == "unrelated"
    assert rows["s-weekly-stale"] == ("leak", "applied")


def test_kayaking_on_the_river_with_her_brother_is_the_users(tmp_path, monkeypatch, capsys):
    story = Story(tmp_path, monkeypatch, {"notes/river.md": RIVER}, "insights/forget-kayak.md",
                  palinode_file({"category": "insights"}, "Please forget that I go kayaking."))
    story.file(10)
    story.apply(11)
    story.deliver("notes/river.md", 11, 30, "s-river-stale", stale=True)
    report = story.audit(capsys)
    row = next(r for r in report["rows"] if r["session_id"] == "s-river-stale")
    assert (row["class"], row["state"]) == ("leak", "applied")
    assert "I go kayaking on the river with her brother" in row["sentence"]


SHOP = palinode_file({"category": "notes", "title": "Shops"}, "The sneaker shop on Elm Street closed.")
KENDALL = palinode_file({"category": "notes", "title": "Survey"}, "Kendall marsh reviewed the castle survey.")


def test_one_shared_word_charges_no_delivery(tmp_path, monkeypatch, capsys):
    story = Story(tmp_path, monkeypatch, {"notes/shops.md": SHOP, "notes/survey.md": KENDALL, "notes/shoes.md": SHOES})
    story.at(9, 30)
    (story.root / "insights").mkdir()
    (story.root / "insights/forget-ottoline.md").write_text(
        palinode_file({"category": "insights"}, "Please forget that I hired Ottoline Marsh.")
    )
    commit_at(story.mp, story.root, iso(9, 30), "palinode auto-save: insights/forget-ottoline.md", "insights")
    story.file(10)
    story.deliver("notes/shops.md", 10, 30, "s-shop")
    story.deliver("notes/survey.md", 10, 40, "s-survey")
    rows = classes(story.audit(capsys))
    assert rows["s-shop"][0] == "unrelated"
    assert rows["s-survey"][0] == "unrelated"
