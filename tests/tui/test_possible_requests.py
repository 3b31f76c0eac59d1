"""Review's possible requests (issue 44), driven through Pilot on a real git store: the
list shows each request in other words with its sentence, memory, referent, how sure
and what confirming would do; Enter decides; confirming previews the request memory
and writes it (with the ledger's record) in one commit only when confirmed; dismissing
records a note and the candidate does not return; cancelling writes nothing."""
from __future__ import annotations

from textual.widgets import Input, Static

from helpers import Clock, git, make_git_store, palinode_file, subjects
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.screens.review_possible import DecideModal
from palinode_tui.widgets import ConfirmModal, KeyedTable, NoteModal
from tui.conftest import errors, settle

SIZE = (120, 36)
DAY = "2031-06-03"
FILES = {
    "daily/2031-06-03.md": ("Talked through the week. I still think about my ex, Lena, most evenings.", 8),
    "inbox/that.md": ("Please stop bringing that up.", 9),
    "insights/berlin.md": ("Moved flats twice this year. I no longer live in Berlin.", 10),
    "inbox/all.md": ("Forget everything about me.", 11),
    "insights/news.md": ("I stopped smoking! Thirty days clean today.", 12),
}


def store(tmp_path):
    return make_git_store(tmp_path / "store", {
        rel: palinode_file({"category": rel.split("/")[0], "id": rel.replace("/", "-")[:-3],
                            "created_at": f"{DAY}T{hour:02d}:00:00+00:00"}, body)
        for rel, (body, hour) in FILES.items()
    })


def app_for(root, tmp_path, **kw) -> PalinodeApp:
    return PalinodeApp(root, embedder=None, clock=Clock(), cache_dir=tmp_path / "cache", watch=False, vectors=False,
                       **kw)


def files_of(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
            and ".git" not in p.parts}


async def open_review(app, pilot) -> ReviewScreen:
    await settle(app, pilot)
    await pilot.press("2")
    await settle(app, pilot)
    review = app.screen
    assert isinstance(review, ReviewScreen)
    return review


async def select(app, pilot, review: ReviewScreen, path: str) -> None:
    table = review.query_one("#possible", KeyedTable)
    table.focus()
    table.select_key(next(c.id for c in review.possible if c.path == path))
    await settle(app, pilot)


async def test_confirm_and_dismiss_a_possible_request_in_review(tmp_path):
    root = store(tmp_path)
    app = app_for(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        assert {c.path for c in review.possible} == {"inbox/that.md", "insights/berlin.md", "inbox/all.md"}
        assert review.query_one("#possible").display
        head, before = git(root, "rev-parse", "HEAD"), files_of(root)

        await select(app, pilot, review, "inbox/that.md")
        detail = str(review.query_one("#possible-detail", Static).render())
        assert "Please stop bringing that up." in detail and "inbox/that.md:2" in detail
        assert "the same day's note daily/2031-06-03.md:2" in detail and "Lena" in detail
        assert "confirming would" in detail

        # Enter, then cancel: nothing is written
        await select(app, pilot, review, "insights/berlin.md")
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DecideModal)
        assert app.screen.query_one("#decide-pref", Input).value == "I live in Berlin"
        await pilot.press("escape")
        await settle(app, pilot)
        assert git(root, "rev-parse", "HEAD") == head and files_of(root) == before

        # confirm: the plan is shown first (still nothing written), then applied in one commit
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert isinstance(app.screen, ConfirmModal)
        assert "Please forget that I live in Berlin." in str(app.screen.query_one("#confirm-body Static").render())
        assert git(root, "rev-parse", "HEAD") == head and files_of(root) == before
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert errors(app) == []
        assert subjects(root)[0] == "palinode-audit ledger: confirm_possible insights/forget-live-in-berlin.md"
        assert sorted(git(root, "show", "--name-only", "--format=", "HEAD").split()) == [
            ".palinode-audit/.gitattributes", ".palinode-audit/ledger.jsonl", "insights/forget-live-in-berlin.md"]
        assert "Please forget that I live in Berlin." in (root / "insights/forget-live-in-berlin.md").read_text()
        await settle(app, pilot)
        assert "insights/forget-live-in-berlin.md" in review.query_one("#requests", KeyedTable).keys
        assert "insights/berlin.md" not in {c.path for c in review.possible}

        # dismiss, with a note: recorded, and the candidate is not listed again
        await select(app, pilot, review, "inbox/that.md")
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.click("#dismiss")
        await settle(app, pilot)
        assert isinstance(app.screen, NoteModal)
        await pilot.press(*"she meant the weather", "enter")
        await settle(app, pilot)
        assert subjects(root)[0] == "palinode-audit ledger: dismiss_possible inbox/that.md"
        assert {c.path for c in review.possible} == {"inbox/all.md"}

        # a blanket request: nothing is written until a person names the fact
        head = git(root, "rev-parse", "HEAD")
        await select(app, pilot, review, "inbox/all.md")
        await pilot.press("enter")
        await settle(app, pilot)
        assert app.screen.query_one("#decide-pref", Input).value == ""
        await pilot.click("#confirm")
        await settle(app, pilot)
        assert isinstance(app.screen, DecideModal)  # refused in place: name the fact first
        await pilot.press("escape")
        await settle(app, pilot)
        assert git(root, "rev-parse", "HEAD") == head
        assert errors(app) == []


async def test_read_only_lists_possible_requests_but_decides_none(tmp_path):
    root = store(tmp_path)
    app = app_for(root, tmp_path, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        assert len(review.possible) == 3
        await select(app, pilot, review, "insights/berlin.md")
        await pilot.press("enter")
        await settle(app, pilot)
        assert not isinstance(app.screen, (DecideModal, ConfirmModal, NoteModal))
        assert subjects(root) == ["initial"]


async def test_a_store_without_possible_requests_shows_no_list(tmp_path):
    root = make_git_store(tmp_path / "plain", {
        "insights/tea.md": palinode_file({"id": "insights-tea"}, "I drink oolong tea every morning."),
    })
    app = app_for(root, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        review = await open_review(app, pilot)
        assert review.possible == []
        assert not review.query_one("#possible").display
