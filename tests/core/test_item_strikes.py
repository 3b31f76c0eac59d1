"""Strikes inside a list item that holds other sentences (issue 22), at the
edges an attacker's review found: sentence ends after titles and inside
quotes, an item about someone else, a fact comment, what a partly struck item
still says, and a redo that must strike only where the resolver cuts."""

from __future__ import annotations

import pytest
from helpers import Clock, git, make_git_store, palinode_file

from palinode_core.errors import PalinodeError
from palinode_core.forget.selection import Choice
from palinode_core.session import Session
from palinode_core.storage.store import Store
from palinode_core.text.markdown import marker_for, strike
from palinode_core.text.units import inner_span, item_sentences, memory_units

REQUEST = palinode_file({"id": "insights-forget-coffee"}, "Please forget that I love Zanzibar coffee.")
# enough else in the memory that it is struck, not archived whole
FILLER = ("The boiler service is booked for March. The gutter is leaking again. The bins go out on Tuesday. "
          "The printer contract was renewed in May. Legal approved the privacy notice.\n\n")


def planned(tmp_path, body: str):
    root = make_git_store(tmp_path / "s", {
        "notes/list.md": palinode_file({"id": "notes-list"}, FILLER + body),
        "insights/forget-coffee.md": REQUEST,
    })
    session = Session(Store(root, clock=Clock()), vectors=False)
    plan = session.plan("insights/forget-coffee.md", index=session.update_index())
    return root, session, plan, next((c for c in plan.candidates if c.path == "notes/list.md"), None)


@pytest.mark.parametrize("text, sentences", [
    ("Tea first. Mrs. Okafor, my landlord, loves Zanzibar coffee.",
     ["Tea first.", "Mrs. Okafor, my landlord, loves Zanzibar coffee."]),
    ("Tea first. Ana's friend, aged approx. 30, loves Zanzibar coffee.",
     ["Tea first.", "Ana's friend, aged approx. 30, loves Zanzibar coffee."]),
    ('Tea first. "I love Zanzibar coffee." My sister Ana hates her job.',
     ["Tea first.", '"I love Zanzibar coffee."', "My sister Ana hates her job."]),
    ("See e.g. the menu. J. R. Hartley loves tea!  Really? (Yes.) Done",
     ["See e.g. the menu.", "J. R. Hartley loves tea!", "Really?", "(Yes.)", "Done"]),
])
def test_a_list_items_sentences_end_where_a_reader_would_end_them(text, sentences):
    assert [text[a:b] for a, b in item_sentences(text)] == sentences


def test_a_title_or_an_abbreviation_never_cuts_someone_elses_sentence_out(tmp_path):
    _root, _s, _plan, cand = planned(tmp_path, "Notes.\n\n- Tea first. Mrs. Okafor, my landlord, loves Zanzibar coffee.\n")
    spans = cand.plan.spans if cand is not None and cand.plan is not None else ()
    assert not any(s.text == "Okafor, my landlord, loves Zanzibar coffee." for s in spans)
    assert cand is None or not cand.preapproved


def test_an_item_carrying_someone_elses_fact_is_not_taken_for_the_users(tmp_path):
    """Judged by its strongest sentence (Maria's), not by the weak "I had coffee."."""
    _root, _s, plan, cand = planned(tmp_path, "Notes.\n\n- Maria Okafor loves Zanzibar coffee. I had coffee. Tea.\n")
    assert cand is None or not cand.preapproved
    assert any(g["path"] == "notes/list.md" and "someone else" in g["reason"] for g in plan.to_dict()["guarded"])


def test_an_item_with_a_fact_comment_is_never_cut_inside():
    """Palinode's own fact supersede wraps such an item whole and would pair its tildes with ours."""
    body = "Notes.\n\n- Tea first. I love Zanzibar coffee. Then work. <!-- fact:k1 -->\n"
    unit = next(u for u in memory_units(body, {}) if u.kind == "list_item")
    at = unit.text.index("I love")
    assert inner_span(body, unit.span, at, at + len("I love Zanzibar coffee."), 0) is None
    assert inner_span(body, unit.span, 0, len("Tea first."), 0) is not None  # at its start it is the item's own form


def test_what_a_partly_struck_item_still_says_is_a_surviving_mention(tmp_path):
    root, session, plan, cand = planned(
        tmp_path, "Notes.\n\n- Tea first. I love Zanzibar coffee. Zanzibar coffee is great, I love it.\n"
    )
    first = cand.plan.spans[0]
    assert first.text == "I love Zanzibar coffee."
    session.apply_forget(plan, {"notes/list.md": Choice(spans=frozenset({first.index}))})
    session.refresh()
    leaks = session.leak_check("insights/forget-coffee.md")
    assert any(leak.path == "notes/list.md" and leak.kind == "unforgettable" and "Zanzibar coffee is great" in leak.text
               for leak in leaks), leaks


def test_overlapping_strikes_are_never_written():
    body = "I love Zanzibar coffee. More.\n"
    unit = next(u for u in memory_units(body, {}) if u.span is not None)
    inner = inner_span(body, unit.span, 2, 12, 1)
    with pytest.raises(PalinodeError, match="overlap"):
        strike(body, [unit.span, inner], marker_for("2025-06-01", "8057db09"))


def test_a_redo_strikes_only_where_the_resolver_cuts(tmp_path):
    """The struck sentence was edited out of its item since; the same words in
    someone else's sentence elsewhere are not struck in its place."""
    body = ("We bought bread. Maria thinks I love Zanzibar coffee.\n\n"
            "- Tea first. I love Zanzibar coffee. Then work.\n- Fix the gate.\n- Call the plumber.\n")
    root, session, plan, cand = planned(tmp_path, body)
    item_piece = next(s for s in cand.plan.spans if s.text == "I love Zanzibar coffee." and s.kind == "clause")
    session.apply_forget(plan, {"notes/list.md": Choice(spans=frozenset({item_piece.index}))})
    op = next(o for o in Session(Store(root), vectors=False).operations() if o.op == "retract")
    session = Session(Store(root, clock=Clock()), vectors=False)
    session.apply(session.plan_undo(op))
    text = (root / "notes/list.md").read_text().replace("- Tea first. I love Zanzibar coffee. Then work.", "- Tea first. Then work.")
    (root / "notes/list.md").write_text(text)
    git(root, "commit", "-qam", "edited")
    session = Session(Store(root, clock=Clock()), vectors=False)
    with pytest.raises(PalinodeError, match="cannot find exactly the sentence it struck"):
        session.plan_redo(next(o for o in session.operations() if o.op == "retract" and o.undone_by))
    assert "~~" not in (root / "notes/list.md").read_text()


# "Caring for Dad ..." shares two of three words of the preference: a paragraph's sentence
# that near in meaning is pre-approved; inside a list item it must be judged the same way.
DAD_ITEM = (
    "Week.\n\n- Caring for Dad since the Parkinson's diagnosis has meant dropping to a four-day week. "
    "The gutter is leaking again. I care for my father who has Parkinson's and lives two streets away.\n"
)


def _dad_plan(tmp_path, embedder=None):
    root = make_git_store(tmp_path / "s", {
        "notes/list.md": palinode_file({"id": "notes-list"}, FILLER + DAD_ITEM),
        "insights/forget-dad.md": palinode_file(
            {"id": "insights-forget-dad"}, "Please forget that I care for my father who has Parkinson's."),
    })
    session = Session.open(root, clock=Clock(), embedder=embedder) if embedder else Session(Store(root, clock=Clock()), vectors=False)
    plan = session.plan("insights/forget-dad.md", index=session.update_index())
    cand = next(c for c in plan.candidates if c.path == "notes/list.md")
    return session, cand


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_a_sentence_inside_a_list_item_is_judged_by_its_own_meaning(tmp_path, embedder):
    session, cand = _dad_plan(tmp_path, embedder)
    by_text = {s.text: s.index for s in cand.plan.spans}
    caring = "Caring for Dad since the Parkinson's diagnosis has meant dropping to a four-day week."
    assert caring in by_text and "The gutter is leaking again." not in by_text
    assert by_text[caring] in cand.plan.selected  # its own vector: near enough to act on
    db = session.search_index()._db
    rows = db.execute("SELECT kind FROM units WHERE text = ?", (caring,)).fetchall()
    assert rows == [("item_sentence",)]  # a row for its vector, not a unit of its own
    assert db.execute("SELECT embedded FROM unit_texts t JOIN units u ON u.hash = t.hash WHERE u.text = ?",
                      (caring,)).fetchone() == (1,)


def test_without_vectors_a_list_items_sentence_sharing_some_words_waits(tmp_path):
    _session, cand = _dad_plan(tmp_path)
    caring = next(s for s in cand.plan.spans if s.text.startswith("Caring for Dad"))
    assert caring.index not in cand.plan.selected


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_a_list_items_sentences_never_take_the_places_of_the_nearest_sentences(tmp_path, embedder):
    """A list item's sentences have vectors of their own, but only a unit can be proposed:
    the nearest few below the cut (weak proposals) are counted among units."""
    hives = ["The two hives sit behind the shed.", "The old hives sit behind the garage.",
             "Two hives were mended last week.", "The three hives sit near the pond.",
             "The small hives sit behind the shed.", "The old hives were rebuilt last week.",
             "The three hives sit behind the shed.", "The hives sit behind the garage.",
             "The two hives were repaired last week.", "The small hives sit behind the garage."]
    body = "Chores.\n\n" + "".join(f"- Varroa treatment is due. {t} The smoker needs new fuel.\n" for t in hives)
    root = make_git_store(tmp_path / "s", {
        "notes/chores.md": palinode_file({"id": "notes-chores"}, body),
        "notes/garden.md": palinode_file(
            {"id": "notes-garden"},
            "Log.\n\nThe orchard trees were pruned. The hives need new frames. The allotment needs a new fence.\n"),
        "insights/forget-bees.md": palinode_file({"id": "insights-forget-bees"}, "Please forget that I keep bees."),
    })
    session = Session.open(root, clock=Clock(), embedder=embedder)
    plan = session.plan("insights/forget-bees.md", index=session.update_index())
    garden = next(c for c in plan.candidates if c.path == "notes/garden.md")
    assert [(e.text, e.weak) for e in garden.evidence if e.carries] == [("The hives need new frames.", 1)]
    assert not garden.preapproved
