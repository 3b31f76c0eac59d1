"""A reviewer strikes one chosen sentence by hand for a request (the Residue
screen's strike): exactly that sentence, the request's marker, one commit,
also in a memory already retracted for the preference; what cannot be
struck is refused with the reason. Lexical only: no search is involved."""
from __future__ import annotations

import pytest

from helpers import MOONRISE, Clock, git, make_git_store, palinode_file, subjects
from palinode_core.errors import PalinodeError
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.session import Session
from palinode_core.storage.store import Store

MOON = "projects/moonrise-closeout.md"
W = "insights/forget-w.md"
PREF = "I know Wilhelmina Cragg"
HANDED = "Handed the judging workflow to Wilhelmina Cragg after the June stage flood."
MARKER = "[RETRACTED 2025-06-01 r:bcb56233]."


@pytest.fixture
def session(tmp_path) -> Session:
    root = make_git_store(tmp_path / "store", {
        MOON: palinode_file({"id": "projects-moonrise-closeout"}, MOONRISE),
        W: palinode_file({"id": "insights-forget-w"}, "Please forget that I know Wilhelmina Cragg."),
        "projects/board.md": palinode_file({"id": "projects-board"}, "## Wilhelmina Cragg panel\n\nOther text."),
        "projects/status.md": palinode_file({"id": "projects-status", "update_policy": "replace"},
                                            "Wilhelmina Cragg runs the status page."),
    })
    return Session(Store(root, clock=Clock()))


def live(session: Session, path: str) -> list:
    return [m for m in session.residue(PREF) if m.kind == "live" and m.path == path]


def test_strikes_exactly_the_chosen_sentence_then_another_under_the_same_id(session):
    root = session.root
    before = (root / MOON).read_text()
    first, second = live(session, MOON)
    assert first.text == HANDED and second.text.startswith("Next steps:")
    applied = session.apply(session.plan_strike(W, MOON, first.line, first.text))
    after = (root / MOON).read_text()
    assert after == before.replace(HANDED, f"~~{HANDED}~~ {MARKER}").replace(
        "---\n\n", "retracted_prefs:\n- i know wilhelmina cragg\n---\n\n", 1)
    assert subjects(root) == [f"palinode retract: {MOON} (1 mentions) <- {W}", "initial"]
    assert git(root, "show", "-s", "--format=%(trailers:key=Forget-Request,valueonly)", applied.commit).strip() == W
    assert git(root, "show", "--stat", "--format=", applied.commit).count("|") == 2  # the memory and its history

    session.refresh()
    [left] = live(session, MOON)  # Palinode would refuse a second retract; the reviewer may strike it
    assert left.text == second.text
    session.apply(session.plan_strike(W, MOON, left.line, left.text))
    again = (root / MOON).read_text()
    assert again == after.replace(second.text, f"~~{second.text}~~ {MARKER}")
    assert again.count("i know wilhelmina cragg") == 1  # the record keeps the pref once
    unstruck = lifecycle.plan_unretract(session.store, MOON, PREF)  # one undo takes both strikes back
    assert unstruck.mentions == 2 and unstruck.new_text == before


def test_what_cannot_be_struck_is_refused_with_the_reason(session):
    heading = next(m for m in session.residue(PREF) if m.path == "projects/board.md")
    assert heading.kind == "unforgettable"
    with pytest.raises(PalinodeError, match="heading, table, code block or frontmatter cannot be struck"):
        session.plan_strike(W, heading.path, heading.line, heading.text)
    status = next(m for m in session.residue(PREF) if m.path == "projects/status.md")
    with pytest.raises(PalinodeError, match="living document"):
        session.plan_strike(W, status.path, status.line, status.text)
    first = live(session, MOON)[0]
    with pytest.raises(PalinodeError, match="changed since it was read"):
        session.plan_strike(W, MOON, first.line + 1, first.text)
    assert subjects(session.root) == ["initial"]


def test_palinode_still_refuses_a_second_retract(session):
    store = session.store
    apply(store, lifecycle.plan_retract(store, MOON, PREF))
    assert lifecycle.plan_retract(store, MOON, PREF).status == "already_retracted"


@pytest.mark.parametrize("body", [
    "~~old~~ The cat sleeps. ~~ I live in Berlin. ~~old~~ Berlin is home. Berlin is home.",
    "~~old~~ The cat sleeps. The cat sleeps. ~~ Berlin is home. ~~old~~",
    "I live in Berlin. ~~old~~ ~~old~~ Tea. ~~ \n I live in Berlin.",
    "x ~~ y. ~~ x ~~ y. The cat sleeps. ~~ \n Berlin is home.",
    "~~ ~~old~~ ~~old~~ x ~~ y. \n ~~ I live in Berlin.",
    "The cat sleeps. ~~old~~ x ~~ y. Note: ~~ Berlin is home.",
])
def test_unretract_beside_a_dangling_tilde_pair_restores_the_original(body):
    """Issue 24, finding 9: a sentence that begins with (or holds) the user's own unpaired
    ``~~`` is struck as ``~~~~…~~``; its unstrike pairs our tildes, not the user's."""
    from palinode_core.text.markdown import Matcher, find_mentions, marker_for, strike, unstrike
    from palinode_core.text.words import retraction_id

    pref = "I live in Berlin"
    spans, _ = find_mentions(body, Matcher.for_pref(pref))
    struck = strike(body, spans, marker_for("2025-06-01", retraction_id(pref)))
    assert struck != body
    assert unstrike(struck, retraction_id(pref))[0] == body


def test_unretract_round_trips_random_bodies_with_unpaired_tildes():
    import random

    from palinode_core.text.markdown import Matcher, find_mentions, marker_for, strike, unstrike
    from palinode_core.text.words import retraction_id

    pref = "I live in Berlin"
    matcher, rid = Matcher.for_pref(pref), retraction_id(pref)
    pieces = ["I live in Berlin.", "Berlin is home.", "The cat sleeps.", "~~", "~~old~~", "Note:", "x ~~ y.", "Tea."]
    rng = random.Random(24)
    tried = 0
    for _ in range(5000):
        body = " ".join(rng.choice(pieces) for _ in range(rng.randint(2, 7)))
        spans, _ = find_mentions(body, matcher)
        if spans:
            tried += 1
            assert unstrike(strike(body, spans, marker_for("2025-06-01", rid)), rid)[0] == body, body
    assert tried > 2000
