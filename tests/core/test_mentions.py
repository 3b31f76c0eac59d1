"""Issue 22 on a small store of its own (not the held-out bench, not the
thorough bench's templates), with the real model: pre-approval follows the
evidence, a memory about the preference is archived whole, partial mentions
wait for a person, guards are explained, and each plan says what recall would
still surface after it."""

from __future__ import annotations

import pytest
from helpers import Clock, make_git_store, palinode_file

from palinode_core.cli.output import render
from palinode_core.forget.evidence import Evidence, partial_mention
from palinode_core.forget.judgment import Judge, Preference
from palinode_core.session import Session
from palinode_core.text.units import clause_tail_span, clauses, memory_units

pytestmark = [pytest.mark.model, pytest.mark.xdist_group("model")]

FILLER = (
    "The quarterly budget review moved to Thursday afternoon. Finance wants the vendor invoices reconciled by Friday."
)
BODIES = {
    "insights/railway.md": (
        {"name": "The loft railway"},
        "Builds a model railway in the loft, an OO gauge layout. The layout has three stations and a viaduct "
        "over the stairs. Buys old locomotives at the swapmeet in Didcot. Railway modelling magazines pile up "
        "by the bed. The loft gets too hot for the glue in July.",
    ),
    "insights/trains-aside.md": ({}, "Spends winter evenings wiring points and signals for a miniature train set."),
    "projects/week.md": (
        {},
        f"{FILLER} I build a model railway in the loft, and the printer contract was renewed in May. "
        "Legal approved the updated privacy notice.",
    ),
    "projects/garage.md": (
        {},
        "The spare key is with the neighbour, and I build a model railway in the loft. "
        "The gutter is leaking. The bins go out on Tuesday. The boiler service is booked.",
    ),
    "projects/todo.md": (
        {},
        "Errands.\n\n- Fix the gate before the storm. I build a model railway in the loft.\n"
        "- Call the plumber about the leak.\n- Renew the parking permit.\n"
        "- Book the dentist.\n- Return the library books.\n",
    ),
    "research/note.md": (
        {"summary": "Legal, backups and the model railway."},
        "Legal approved the updated privacy notice. Backups are verified every Monday.",
    ),
    "insights/dinghy.md": ({}, "I sail a Mirror dinghy called Puffin on the reservoir."),
    "projects/harbour.md": ({}, f"{FILLER} Puffin needs new varnish before the regatta."),
    "people/ana-sousa.md": ({"type": "PersonMemory"}, "# Ana Sousa\n\nAna Sousa sails a Mirror dinghy called Puffin."),
    "projects/printer.md": ({}, "Puffin Print Works sent the proofs for the brochure."),
    "research/survey.md": ({}, "The model answers for the loft insulation survey came back."),
    "insights/forget-rail.md": ({}, "Please forget that I build a model railway in the loft."),
    "insights/forget-dinghy.md": ({}, "Please forget that I sail a Mirror dinghy called Puffin."),
}


@pytest.fixture
def store(tmp_path):
    files = {}
    for day, (rel, (meta, body)) in enumerate(BODIES.items(), start=1):
        meta = {
            "id": rel.replace("/", "-")[:-3],
            "category": rel.split("/")[0],
            "created_at": f"2025-05-{day:02d}T10:00:00+00:00",
            **meta,
        }
        files[rel] = palinode_file(meta, body)
    return make_git_store(tmp_path / "store", files), files


def _evidence(lexical: float, score: float) -> Evidence:
    return Evidence("sentence", 1, "x", ("w",) if lexical else (), (), lexical, 0.9, "user", score)


def test_no_shared_word_is_never_preapproved_or_strong_however_near():
    paraphrase = _evidence(0.0, 0.97)
    assert paraphrase.carries and not paraphrase.preapproved  # proposed, and a person decides
    assert _evidence(1.0, 0.97).preapproved and _evidence(1.0, 0.97).complete
    assert not _evidence(0.5, 0.7).preapproved


def test_the_memory_that_establishes_it_is_archived_preapproved_and_paraphrases_wait(store, embedder):
    root, _ = store
    session = Session.open(root, clock=Clock(), embedder=embedder)
    session.update_index()
    fplan = session.plan("insights/forget-rail.md")
    routes = {c.path: c for c in fplan.candidates}
    about = routes["insights/railway.md"]
    weak = [e for e in about.evidence if e.carries and not e.preapproved]
    assert weak, "the memory has a weaker sentence: without the rule it would wait"
    assert about.route == "archive" and about.preapproved
    aside = routes.get("insights/trains-aside.md")
    assert aside is None or not aside.preapproved
    assert all(not e.preapproved for c in fplan.candidates for e in c.evidence if not e.shared)


def test_an_entity_inside_another_name_is_that_name_and_a_sentence_start_is_no_name():
    pref = "I sing in the Kelso Gospel Choir"
    judge = Judge(pref)
    assert judge.words("Kelso Rugby Club booked the hall.").shared == ()
    assert set(judge.words("The Kelso Gospel Choir sang on Sunday.").shared) == {"Kelso", "Gospel", "Choir"}
    # "League. Sang" is two sentences, not one name holding the entity
    shared = judge.words("Read about the Hanseatic League. Sang with Kelso Gospel Choir.").shared
    assert {"Kelso", "Choir"} <= set(shared)
    assert partial_mention(("Kelso",), Preference.of(pref).entities, 0.2) == ("Kelso",)
    assert partial_mention(("Kelso",), Preference.of(pref).entities, 0.9) == ()


def test_partial_mentions_wait_for_a_person_and_guards_are_said_in_the_plan(store, embedder):
    root, files = store
    session = Session.open(root, clock=Clock(), embedder=embedder)
    session.update_index()
    fplan = session.plan("insights/forget-dinghy.md")
    routes = {c.path: c for c in fplan.candidates}
    harbour = routes["projects/harbour.md"]
    assert harbour.route == "strike" and not harbour.preapproved
    assert "partial mention (names Puffin" in harbour.reason
    assert [e.partial for e in harbour.evidence if e.carries] == [("Puffin",)]
    assert "projects/printer.md" not in routes  # no target: the guard that held it back is listed apart
    assert dict(fplan.guarded)["projects/printer.md"].startswith("shares Puffin only inside a name")
    assert {"path": "projects/printer.md", "reason": dict(fplan.guarded)["projects/printer.md"]} in (
        fplan.to_dict()["guarded"]
    )
    assert "about someone else" in routes["people/ana-sousa.md"].reason
    rail = session.plan("insights/forget-rail.md")
    survey = rail.candidate("research/survey.md")  # two shared words, another topic: it waits
    assert not survey.preapproved
    session.apply_forget(fplan)
    session.refresh()
    session.apply_forget(session.plan("insights/forget-rail.md"))
    for rel in ("projects/harbour.md", "projects/printer.md", "people/ana-sousa.md", "research/survey.md"):
        assert (root / rel).read_text() == files[rel], rel
    assert "status: archived" in (root / "insights/dinghy.md").read_text()


def test_each_plan_says_what_recall_would_still_surface_after_it(store, embedder):
    root, _ = store
    session = Session.open(root, clock=Clock(), embedder=embedder)
    session.update_index()
    fplan = session.plan("insights/forget-rail.md")
    surfacing = {s.path for s in fplan.surfacing}
    # the weak match waits for a person, so recall still hands it over; what the plan takes does not surface
    assert "research/survey.md" in surfacing
    assert not surfacing & {"insights/railway.md", "projects/week.md"}
    data = fplan.to_dict()
    assert any(
        r["path"] == "research/survey.md" and r["query_kind"] == "preference" for r in data["would_still_surface"]
    )
    text = render("plan", data, as_json=False)
    assert "Would still surface after the pre-approved targets" in text and "research/survey.md" in text
    assert session.plan("insights/forget-rail.md", verified=False).surfacing is None


def test_a_closing_clause_is_struck_alone_and_undone_exactly(store, embedder):
    root, files = store
    session = Session.open(root, clock=Clock(), embedder=embedder)
    session.update_index()
    garage = session.plan("insights/forget-rail.md").candidate("projects/garage.md")
    assert garage.route == "strike" and garage.preapproved and "clause strike keeps" in garage.reason
    assert [s.text for s in garage.plan.spans] == ["I build a model railway in the loft."]
    session.apply_forget(session.plan("insights/forget-rail.md"))
    text = (root / "projects/garage.md").read_text()
    assert "The spare key is with the neighbour, and ~~I build a model railway in the loft.~~ [RETRACTED" in text
    session.refresh()
    session.apply_withdraw(session.plan_withdraw("insights/forget-rail.md"))
    assert (root / "projects/garage.md").read_text() == files["projects/garage.md"]


def test_a_closing_clause_across_a_line_break_or_beside_another_strike_is_offered_whole():
    for body in (
        "Notes. The key is with the neighbour, and I build\na model railway in the loft.\n",
        "~~Old.~~ kept. The key is with the neighbour, and I build a model railway in the loft.\n",
    ):
        unit = next(u for u in memory_units(body, {}) if "railway" in u.text)
        assert clause_tail_span(body, unit.span, clauses(unit.text)[-1].start, 0) is None


def test_residue_counts_a_label_naming_the_preference(store, embedder):
    root, _ = store
    session = Session.open(root, clock=Clock(), embedder=embedder)
    session.update_index()
    session.apply_forget(session.plan("insights/forget-rail.md"))
    session.refresh()
    leaks = session.leak_check("insights/forget-rail.md")
    assert any(
        leak.path == "research/note.md"
        and leak.where == "frontmatter"
        and leak.kind == "unforgettable"
        and leak.text.startswith("summary: ")
        for leak in leaks
    ), leaks


def test_a_sentence_of_a_list_item_is_struck_alone_and_undone_exactly(store, embedder):
    """A list item holding other sentences is not struck whole (that would
    take "Fix the gate" too): the sentence carrying the preference is struck
    on its own, pre-approved by its own words, and a withdrawal restores the
    file byte for byte."""
    root, files = store
    session = Session.open(root, clock=Clock(), embedder=embedder)
    session.update_index()
    todo = session.plan("insights/forget-rail.md").candidate("projects/todo.md")
    assert todo.route == "strike" and todo.preapproved
    assert "a sentence of a list item struck on its own" in todo.reason
    assert [(s.text, s.collateral) for s in todo.plan.spans] == [("I build a model railway in the loft.", None)]
    session.apply_forget(session.plan("insights/forget-rail.md"))
    text = (root / "projects/todo.md").read_text()
    assert "- Fix the gate before the storm. ~~I build a model railway in the loft.~~ [RETRACTED" in text
    session.refresh()
    session.apply_withdraw(session.plan_withdraw("insights/forget-rail.md"))
    assert (root / "projects/todo.md").read_text() == files["projects/todo.md"]


def test_a_list_items_sentence_beside_a_strikethrough_is_offered_whole():
    from palinode_core.text.units import inner_span

    for body in (
        "Errands.\n\n- ~~Old.~~ kept. Fix the gate. I build a model railway in the loft.\n",
        "Errands.\n\n- ~~Old.~~\n- Fix the gate. I build a model railway in the loft.\n",
    ):
        unit = next(u for u in memory_units(body, {}) if "Fix the gate" in u.text)
        at = unit.text.index("I build")
        assert inner_span(body, unit.span, at, len(unit.text), 0) is None, body


def _dated_store(tmp_path, bodies: dict[str, str], embedder) -> Session:
    """A store of these bodies, one memory a day in June 2025 (a request dated after what it forgets)."""
    files = {
        rel: palinode_file(
            {
                "id": rel.replace("/", "-")[:-3],
                "category": rel.split("/")[0],
                "created_at": f"2025-06-{day:02d}T10:00:00+00:00",
            },
            body,
        )
        for day, (rel, body) in enumerate(bodies.items(), start=1)
    }
    return Session.open(make_git_store(tmp_path / "store", files), clock=Clock(), embedder=embedder)


def test_a_paraphrase_in_the_middle_band_is_proposed_and_waits(tmp_path, embedder):
    # real-model cosines to the preference 0.45-0.46: below the old proposal cut (0.47), above
    # today's (0.42, set on bench/thorough); no word shared, so a person decides
    bodies = {
        "insights/rowing.md": "I row on the river on Saturdays with the club.",
        "insights/boat.md": "Takes a narrow boat out with an oar at the end of each week.",
        "insights/crew.md": "Trains with a crew in a long boat at the weekend.",
        "projects/house.md": f"{FILLER} The boiler service is booked for the weekend.",
        "insights/forget-row.md": "Please forget that I row on the river on Saturdays.",
    }
    session = _dated_store(tmp_path, bodies, embedder)
    session.update_index()
    fplan = session.plan("insights/forget-row.md")
    routes = {c.path: c for c in fplan.candidates}
    for rel in ("insights/boat.md", "insights/crew.md"):
        (ev,) = [e for e in routes[rel].evidence if e.carries]
        assert not ev.shared and 0.42 <= max(ev.similarity, ev.neighbour_similarity or 0) < 0.47
        assert not ev.preapproved and not routes[rel].preapproved
    assert routes["insights/rowing.md"].preapproved
    house = routes.get("projects/house.md")  # filler 0.37 near: at most a weak proposal, waiting for a person
    assert house is None or (not house.preapproved and all(e.weak for e in house.evidence if e.carries))


def test_below_the_cut_only_the_nearest_in_meaning_are_proposed_weak_and_wait(tmp_path, embedder):
    """Below the paraphrase cut (0.42) meaning is as near as noise ("The boiler service is booked
    for the weekend." is 0.37 from rowing on Saturdays): only the WEAK_TOP nearest sentences read
    (and among the store's nearest by rank) are proposed, labelled weak in order, never
    pre-approved; a heading never. A weak sentence inside the memory about the preference does
    not stop its archive being pre-approved."""
    from palinode_core.forget.evidence import P_ZERO, WEAK_NEAR, WEAK_TOP

    bodies = {
        "insights/rowing.md": "I row on the river on Saturdays with the club.",
        "insights/about.md": "Rows on the river every weekend. Rows with the club on Saturdays. "
        "Has a sore back most Sunday evenings.",  # nearness 0.352 (real model)
        "projects/boiler.md": "The boiler service is booked for the weekend.",  # 0.367
        "projects/dog.md": "Walks the dog along the canal at the weekend.",  # 0.344
        # 0.380 but a heading: a weak heading would be reported "unforgotten" for nothing
        "projects/plan.md": f"# Training at the weekend\n\n{FILLER}",
        "projects/budget.md": FILLER,
        "insights/forget-row.md": "Please forget that I row on the river on Saturdays.",
    }
    session = _dated_store(tmp_path, bodies, embedder)
    session.update_index()
    fplan = session.plan("insights/forget-row.md")
    weak = sorted((e.weak, c.path, e) for c in fplan.candidates for e in c.evidence if e.carries and e.weak)
    assert [(n, rel) for n, rel, _ in weak] == [(1, "projects/boiler.md"), (2, "projects/dog.md"), (3, "insights/about.md")]
    assert len(weak) <= WEAK_TOP
    nearness = [max(ev.similarity, ev.neighbour_similarity or 0) for _n, _rel, ev in weak]
    assert nearness == sorted(nearness, reverse=True)
    for _n, _rel, ev in weak:
        assert not ev.shared and WEAK_NEAR <= max(ev.similarity, ev.neighbour_similarity or 0) < P_ZERO
        assert not ev.preapproved
    boiler = fplan.candidate("projects/boiler.md")
    assert boiler.route == "strike" and not boiler.preapproved and "weak: the nearest in meaning" in boiler.reason
    about = fplan.candidate("insights/about.md")
    assert about.route == "archive" and about.preapproved, about.reason
    assert "projects/plan.md" not in {c.path for c in fplan.candidates}
    from palinode_core.forget.verify import recall_queries  # a weak proposal is no recall query of its own

    assert [kind for kind, _q in recall_queries(fplan)] == ["preference", "topic"]
    text = render("plan", fplan.to_dict(), as_json=False)
    assert "(weak: among the nearest in meaning, below the usual cut)" in text


def test_a_weak_sentence_never_decides_a_memorys_route(tmp_path, embedder):
    """As near as noise, a weak sentence is only ever a strike of its own, left unselected: it
    neither turns a pre-approved strike into an archive that waits nor makes a memory of two
    sentences "about" the preference (found by an attacker's review)."""
    bodies = {
        "insights/rowing.md": "I row on the river on Saturdays with the club.",
        "projects/mixed.md": "I row on the river on Saturdays with the club. The boiler service is booked for "
        "the weekend. Legal approved the updated privacy notice.",
        "projects/two.md": "The boiler service is booked for the weekend. The plumber's number is on the fridge.",
        "projects/budget.md": FILLER,
        "insights/forget-row.md": "Please forget that I row on the river on Saturdays.",
    }
    session = _dated_store(tmp_path, bodies, embedder)
    session.update_index()
    fplan = session.plan("insights/forget-row.md")
    mixed = fplan.candidate("projects/mixed.md")
    assert any(e.weak for e in mixed.evidence)  # the boiler sentence is weak here
    assert mixed.route == "strike" and mixed.preapproved, mixed.reason
    assert [s.text for s in mixed.plan.spans if s.index in mixed.plan.selected] == [
        "I row on the river on Saturdays with the club."
    ]
    two = fplan.candidate("projects/two.md")
    assert two is not None and two.route == "strike" and not two.preapproved, two and two.reason


def test_a_short_clause_of_its_own_is_kept_and_a_relative_the_preference_names_is_the_users(tmp_path, embedder):
    """ "..., and I am a carpenter." states something else (one word of its own, pointing back at
    nothing): the strike stops before it. "My mum ..." is the user's own fact when the
    preference is itself about the user's mum; a named person's mum stays theirs."""
    bodies = {
        "insights/mum.md": ({}, "My mum grows dahlias in Leeds."),
        "projects/chat.md": (
            {},
            "Chat notes. My mum grows dahlias in Leeds, and I am a carpenter. The bins go out on Tuesday.",
        ),
        "people/kim-lee.md": ({"type": "PersonMemory"}, "# Kim Lee\n\nKim Lee says her mum grows dahlias in Leeds."),
        "insights/forget-mum.md": ({}, "Please forget that my mum grows dahlias in Leeds."),
    }
    files = {
        rel: palinode_file(
            {
                "id": rel.replace("/", "-")[:-3],
                "category": rel.split("/")[0],
                "created_at": f"2025-05-{day:02d}T10:00:00+00:00",
                **meta,
            },
            body,
        )
        for day, (rel, (meta, body)) in enumerate(bodies.items(), start=1)
    }
    session = Session.open(make_git_store(tmp_path / "store", files), clock=Clock(), embedder=embedder)
    session.update_index()
    fplan = session.plan("insights/forget-mum.md")
    mum = fplan.candidate("insights/mum.md")
    assert mum.route == "archive" and mum.preapproved
    chat = fplan.candidate("projects/chat.md")
    assert chat.route == "strike" and chat.preapproved and "clause strike keeps 'I am a carpenter.'" in chat.reason
    assert [s.text for s in chat.plan.spans] == ["My mum grows dahlias in Leeds, and"]
    kim = fplan.candidate("people/kim-lee.md")
    assert kim is None or not kim.preapproved


def test_which_short_clauses_point_back():
    from palinode_core.forget.narrow import leans_back

    assert not leans_back("I am a carpenter.") and not leans_back("the printer contract was renewed in May.")
    assert leans_back("and love it") and leans_back("my wife does too") and leans_back("so do they")
    assert Preference.of("my mum grows dahlias").relation == "mum" and Preference.of("I grow dahlias").relation is None
    assert Judge("I grow dahlias").whose("My mum grows dahlias.").who == "other"
    dahlias = Judge("my mum grows dahlias")
    assert dahlias.whose("My mum grows dahlias.").who == "user"
    assert dahlias.whose("My mum works as a nurse.").who == "other"  # not the pref
    assert dahlias.whose("My sister grows dahlias.").who == "other"
    assert leans_back("and adore him")
    assert dahlias.whose("What kind of music do you like?").who == "other"
    assert dahlias.whose("Do you know I like music?").who == "user"
    # a comma splice of first-person clauses is cut; a leading adverb or subordinate clause is not
    assert [c.text for c in clauses("I'm a teacher, I like reading, I am married.")] == [
        "I'm a teacher",
        "I like reading",
        "I am married.",
    ]
    assert len(clauses("Yesterday, I went to Berlin.")) == len(clauses("When I lived in Leeds, I rented one.")) == 1


def test_a_cut_at_a_lists_and_waits_for_a_person():
    """ "I love hiking, camping, and fishing": cut at its ", and", a strike for hiking
    takes camping too; read as one clause, a strike of "cooking relaxes me" in "At home,
    cooking relaxes me, and running keeps me fit" takes the running. Neither reading is
    made silently: such a cut is proposed, never pre-approved."""
    from palinode_core.text.units import may_close_a_list

    def closes(sentence: str) -> list[bool]:
        return [may_close_a_list(sentence, c) for c in clauses(sentence)]

    assert [c.text for c in clauses("I love hiking, camping, and fishing with my dad.")] == [
        "I love hiking, camping",
        "fishing with my dad.",
    ]
    assert closes("I love hiking, camping, and fishing with my dad.") == [True, False]
    assert closes("At home, cooking relaxes me, and running keeps me fit.") == [True, False]
    assert closes("Since March, I live in Berlin, and my sister Anna is a nurse.") == [False, False]
    assert closes("They keep bees in the back garden, and the new laptop arrives on Tuesday.") == [False, False]
    assert closes("I enjoy reading; swimming, hiking, and biking.") == [False, True, False]
    for sentence in (
        "On weekends, Tom cooks, and I clean the flat.",
        "Honestly, work is stressful, and I sleep badly.",
        "I love hiking, camping, and I also play the guitar.",
        "Usually, my partner drives, and we share.",
    ):
        assert closes(sentence) == [False, False], sentence  # no list goes on with a subject of its own


def test_a_clause_strike_at_a_lists_and_is_proposed_not_preapproved(tmp_path):
    bodies = {
        "projects/weekend.md": "Weekend notes. I love hiking, camping, and fishing with my dad. The van is booked.",
        "projects/berlin.md": "Notes from the move. Since March, I love hiking in the Alps, and my sister Anna is a "
        "nurse. The flat has two rooms. The bins go out on Tuesday.",
        "insights/forget-hiking.md": "Please forget that I love hiking.",
    }
    files = {
        rel: palinode_file({"id": rel.replace("/", "-")[:-3], "created_at": f"2025-05-{day:02d}T10:00:00+00:00"}, body)
        for day, (rel, body) in enumerate(bodies.items(), start=1)
    }
    session = Session.open(make_git_store(tmp_path / "store", files), clock=Clock(), vectors=False)
    fplan = session.plan("insights/forget-hiking.md")
    weekend = fplan.candidate("projects/weekend.md")
    assert weekend.route == "strike" and not weekend.preapproved
    assert "may close a list: the reviewer chooses" in weekend.reason
    berlin = fplan.candidate("projects/berlin.md")  # a clause of its own after the "and": cut, pre-approved
    assert berlin.route == "strike" and berlin.preapproved
    assert [s.text for s in berlin.plan.spans] == ["Since March, I love hiking in the Alps, and"]


def test_a_list_items_sentence_opened_by_a_dash_begins_like_a_sentence(tmp_path):
    """A list flattened onto one line ("... unpaid. - The bins moved, and I
    ...") still has sentences: the closing clause is cut and pre-approved. A
    sentence opening on a number stays the reviewer's call."""
    bodies = {
        "projects/flat.md": "Diary.\n\n- The invoice is unpaid. - The bins moved to Tuesdays, and I build a model "
        "railway in the loft. The van is booked.\n- Call the plumber.\n- Renew the permit.\n",
        "projects/odd.md": "Diary.\n\n- The invoice is unpaid. 30, and I build a model railway in the loft. "
        "The van is booked.\n- Call the plumber.\n- Renew the permit.\n",
        "insights/forget-rail.md": "Please forget that I build a model railway in the loft.",
    }
    files = {
        rel: palinode_file({"id": rel.replace("/", "-")[:-3], "created_at": f"2025-05-{day:02d}T10:00:00+00:00"}, body)
        for day, (rel, body) in enumerate(bodies.items(), start=1)
    }
    session = Session.open(make_git_store(tmp_path / "store", files), clock=Clock(), vectors=False)
    fplan = session.plan("insights/forget-rail.md")
    flat = fplan.candidate("projects/flat.md")
    assert flat.route == "strike" and flat.preapproved, flat.reason
    assert [s.text for s in flat.plan.spans] == ["I build a model railway in the loft."]
    assert "does not begin like a sentence" not in flat.reason
    odd = fplan.candidate("projects/odd.md")
    assert "does not begin like a sentence" in odd.reason and not odd.preapproved


def test_clauses_stay_linear_on_lists_of_any_separator():
    """A 1 MB list of ", and" separators (tabs among them) is cut in seconds of CPU, not
    the minutes a quadratic search back for each list's comma took."""
    import time

    from palinode_core.text.units import may_close_a_list

    for separator in (",\tand x", ", and x", ",  and I x"):
        n = 1_000_000 // len(separator)
        text = "I like a, b" + separator * n + "."
        started = time.process_time()  # CPU time: a loaded machine's waiting is not the parser's
        parts = clauses(text)
        flagged = sum(may_close_a_list(text, c) for c in parts)
        assert time.process_time() - started < 10.0, separator
        assert len(parts) == n + 1 and flagged == (0 if separator.endswith("I x") else 1)
