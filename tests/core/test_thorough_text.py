"""The thorough resolver's text layer (no model): stems, clause strikes that
Palinode's reader undoes byte for byte, whose fact a sentence states, words
used inside names; and the palinode resolver's plans, unchanged."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import Clock, judged, make_git_store, palinode_file, whose_of

from palinode_core.forget.evidence import fuse
from palinode_core.forget.judgment import Judge
from palinode_core.forget.whose import memory_about
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.session import Session
from palinode_core.storage.store import Store
from palinode_core.text.markdown import marker_for, project, strike, struck_spans, unstrike
from palinode_core.text.stem import family, stem, stem_tokens
from palinode_core.text.units import clause_span, clauses, memory_units

DATA = Path(__file__).resolve().parents[1] / "data"
MARK = marker_for("2025-06-01", "0123abcd")
SWIM = "I swim at the lido on Sundays, and the printer contract was renewed in May."


@pytest.mark.parametrize(
    "words",
    [
        ("collect", "collecting", "collector", "collection", "collects"),
        ("sneaker", "sneakers"),
        ("swim", "swims", "swimming", "swimmer"),
        ("bee", "bees"),
        ("run", "running", "runner"),
        ("bake", "baking"),
    ],
)
def test_inflections_share_a_stem_and_practitioners_their_family(words):
    """An inflection stems alike; one who does it ("collector", "swimmer") is of its family."""
    base = stem(words[0])
    assert all(stem(w) == base or base in family(w) for w in words), {w: (stem(w), family(w)) for w in words}
    assert Judge(f"I {words[0]}").words(" ".join(words[1:])).lexical > 0


def test_unrelated_words_keep_apart():
    words = ("lido", "lid", "bee", "beer", "chess", "chest", "news", "new", "corner", "corn", "universe", "university")
    assert len({stem(w) for w in words}) == len(words)
    # "corner" may be one who corns by its ending, but it never shares a stem with "corn"
    assert Judge("I grow corn").words("The corner shop closes at nine.").shared == ("corner",)


def test_words_of_any_script_stay_whole():
    assert [w for w, _stem, _ in stem_tokens("Jürgen Müller moved to Zürich")] == [
        "Jürgen",
        "Müller",
        "moved",
        "to",
        "Zürich",
    ]
    assert [w for w, _stem, _ in stem_tokens("Ju\u0308rgen hört हिन्दी")] == ["Ju\u0308rgen", "hört", "हिन्दी"]
    assert stem("Ju\u0308rgen") == stem("Jürgen") == "jürgen"
    assert Judge("I learn Māori").words("Learning Māori at evening class.").lexical == 1.0


def _clause_strike(body: str) -> tuple[str, str]:
    units = [u for u in memory_units(body, {}) if u.strikeable]
    unit = next(u for u in units if "lido" in u.text)
    assert unit.span is not None
    parts = clauses(unit.text)
    assert len(parts) == 2
    span = clause_span(unit.span, parts[0].sep_end, 0)
    return strike(body, [span], MARK), span.text


@pytest.mark.parametrize(
    "body",
    [
        SWIM + "\n",
        "Weekly notes. The budget moved. " + SWIM + " Nothing else.\n",
        "Weekly notes. I swim at the\nlido on Sundays, and the printer contract\nwas renewed in May.\n",
        "Notes:\n\n- I swim at the lido on Sundays; the printer contract was renewed in May. <!-- fact:f1 -->\n",
    ],
)
def test_clause_strike_round_trips_through_palinodes_reader(body):
    struck, text = _clause_strike(body)
    assert text.startswith("I swim") and "printer" not in text
    spans = struck_spans(struck, "0123abcd")
    assert [s.text for s in spans] == [text]  # the reader finds the opener at the sentence start
    assert "printer contract" in project(struck) and "lido" not in project(struck)
    restored, count = unstrike(struck, "0123abcd")
    assert count == 1 and restored == body


def test_a_clause_strike_keeps_the_rest_of_the_sentence_outside_the_strike():
    struck, _ = _clause_strike(SWIM)
    assert (
        struck == "~~I swim at the lido on Sundays, and~~ [RETRACTED 2025-06-01 r:0123abcd]. "
        "the printer contract was renewed in May."
    )


def test_a_later_strike_for_another_request_and_both_undone_exactly(tmp_path):
    body = SWIM + " The printer contract expires next year.\n"
    struck, _ = _clause_strike(body)
    second = next(u for u in memory_units(struck, {}) if u.strikeable and "expires" in u.text)
    assert second.span is not None
    both = strike(struck, [second.span], marker_for("2025-06-02", "99999999"))
    assert {s.rid for s in struck_spans(both)} == {"0123abcd", "99999999"}
    once, _ = unstrike(both, "0123abcd")
    assert unstrike(once, "99999999")[0] == body


def test_clause_plan_applies_and_unretracts_to_the_same_bytes(tmp_path):
    rel = "projects/notes.md"
    original = palinode_file({"id": "projects-notes", "category": "projects"}, "Weekly notes. " + SWIM)
    root = make_git_store(tmp_path / "s", {rel: original})
    store = Store(root, clock=Clock())
    memory = store.load(rel)
    unit = next(u for u in memory_units(memory.body, memory.meta) if "lido" in u.text)
    assert unit.span is not None
    span = clause_span(unit.span, clauses(unit.text)[0].sep_end, 0)
    plan = lifecycle.plan_retract(store, rel, "I swim at the lido on Sundays", spans=(span,), regions=())
    assert plan.status == "would_retract" and plan.custom_spans
    apply(store, plan)
    text = (root / rel).read_text()
    assert "~~I swim at the lido on Sundays, and~~ [RETRACTED" in text and "the printer contract was renewed" in text
    undo = lifecycle.plan_unretract(store, rel, "I swim at the lido on Sundays")
    apply(store, undo)
    assert (root / rel).read_text() == original


def test_custom_spans_that_no_longer_match_the_body_strike_nothing(tmp_path):
    rel = "projects/notes.md"
    root = make_git_store(tmp_path / "s", {rel: palinode_file({"id": "n"}, SWIM)})
    store = Store(root, clock=Clock())
    memory = store.load(rel)
    unit = next(u for u in memory_units(memory.body, memory.meta) if u.strikeable)
    assert unit.span is not None
    moved = replace(clause_span(unit.span, clauses(unit.text)[0].sep_end, 0), text="Hostile text")
    plan = lifecycle.plan_retract(store, rel, "I swim at the lido", spans=(moved,), regions=())
    assert not plan.changes


@pytest.mark.parametrize(
    "text,subject",
    [
        ("I keep bees in the back garden.", "user"),
        ("Keeps bees in two hives behind the shed.", "user"),
        ("Has kept bees for six years.", "user"),
        ("Priya also keeps bees, on her allotment.", "other"),
        ("My colleague Priya keeps bees.", "other"),
        ("She keeps bees too.", "user"),  # a pronoun alone is no one else: in many stores "she" is the user
        ("Ines practises piano in the evenings as well.", "other"),
        ("Tomas Lind swims at the lido on Sundays too.", "other"),
        ("Practises piano most evenings after dinner.", "user"),
        ("Being estranged from the beekeepers made the show awkward.", "user"),  # a gerund, not a name
        ("Having bees means buying sugar every winter.", "user"),
        ("Hosting rotates monthly between members.", "user"),  # an activity, not a name
    ],
)
def test_whose_fact_a_sentence_states(text, subject):
    assert whose_of("I keep bees; I practise piano", text) == subject


def test_a_name_ending_in_ing_is_a_name_where_the_store_writes_it_as_one():
    from palinode_core.forget.judgment import StoreFacts

    judge = Judge("I keep bees", StoreFacts(named=lambda word: word == "manning"))
    assert judge.whose("Manning keeps bees behind the pub.").who == "other"
    assert judge.whose("Hosting keeps the members busy.").who == "user"


def test_a_pronoun_is_someone_else_only_in_a_memory_about_them_and_uncertain_after_a_name():
    judge = Judge("I keep bees")
    assert judge.whose("She keeps bees too.").who == "user" and judge.whose("She keeps bees too.").someone is None
    after = judge.whose("She keeps bees too.", antecedent="Priya")  # the user or Priya: a person decides
    assert after.who == "user" and after.someone == "Priya" and "Priya" in after.why
    assert judge.whose("She keeps bees too.", about="Priya Shah").who == "other"


def test_a_person_memory_about_someone_else():
    assert memory_about({"type": "PersonMemory"}, "Priya Shah", "people", frozenset()) == "Priya Shah"
    assert memory_about({"type": "PersonMemory"}, "me-profile", "people", frozenset()) is None
    assert memory_about({"type": "Insight"}, "Bees", "insights", frozenset()) is None
    # the user's own profile, titled with the user's name, is the user's
    assert memory_about({"type": "PersonMemory"}, "Ingrid Solberg", "people", frozenset({"ingrid", "solberg"})) is None


def test_a_word_inside_a_name_is_not_shared():
    judge = Judge("I collect vintage sneakers")
    words = judge.words("Vintage Sneakers Ltd invoiced us for the booth.")
    assert words.shared == () and set(words.name_use) == {"Vintage", "Sneakers"} and words.lexical == 0
    assert fuse(words.lexical, 0.6, bool(words.name_use)) == 0.0
    words = judge.words("Has been collecting vintage sneakers since college.")
    assert set(words.shared) == {"collecting", "vintage", "sneakers"} and words.lexical == 1.0


def test_scores_order_evidence_sensibly():
    assert fuse(1.0, 0.8) > 0.95
    assert fuse(0.33, 0.2) < 0.5  # one common word, far in meaning
    assert fuse(0.0, 0.9, False, None, 0.2) > fuse(0.0, 0.5, False, None, 0.2)
    assert fuse(0.0, 0.6, False, None, 0.62) == 0.0  # nearer another request's preference: not this one's
    assert 0.0 < fuse(0.0, 0.6, False, None, 0.58) < 0.5  # about as near: weak, proposed only by rank


def test_frontmatter_fields_and_unstrikeable_lines_are_units():
    units = memory_units(
        "# Bees\n\nNotes.\n\n| a | bees |\n|---|---|\n\n```\nb = 1\n```\n",
        {"name": "Bee log", "tags": ["bees", "hives"], "summary": ""},
    )
    kinds = [(u.kind, u.field) for u in units]
    assert ("heading", None) in kinds and ("table", None) in kinds and ("fence", None) in kinds
    assert ("frontmatter", "name") in kinds and ("frontmatter", "tags") in kinds
    assert ("frontmatter", "summary") not in kinds
    assert next(u.text for u in units if u.field == "tags") == "bees, hives"


def test_palinode_resolver_plans_are_unchanged_on_the_demo_store(tmp_path):
    """The palinode resolver plans every demo request exactly as main 0e5659a
    did (tests/data/make_palinode_plans.py recorded them, lexical search)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_plans", DATA / "make_palinode_plans.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    from palinode_core.demo import build_demo_store

    root = tmp_path / "demo"
    build_demo_store(root)
    now = module.plans(root)
    golden = json.loads((DATA / "palinode_plans.json").read_text())
    assert _recorded_fields(json.loads(json.dumps(now, sort_keys=True)), golden) == golden


def _recorded_fields(value, golden):
    """``value`` with only the keys the golden recorded: fields added since
    (e.g. a plan's backed_by ``dependents``) are new information, not a change."""
    if isinstance(value, dict) and isinstance(golden, dict):
        return {k: _recorded_fields(v, golden[k]) for k, v in value.items() if k in golden}
    if isinstance(value, list) and isinstance(golden, list) and len(value) == len(golden):
        return [_recorded_fields(v, g) for v, g in zip(value, golden, strict=True)]
    return value
    assert any(c["route"] == "archive" for p in golden.values() for c in p["candidates"])


@pytest.mark.parametrize(
    "item, pref, whose",
    [
        # its first sentence reads like "Priya keeps bees": the sentence carrying the preference is the user's
        (
            "Rehearses part-songs with forty other men. I sing tenor in a male voice choir.",
            "I sing tenor in a male voice choir",
            "user",
        ),
        ("Fix the gate. Ana Sousa wants to rent a flat in Rotterdam.", "I rent a flat in Rotterdam", "other"),
        ("I fixed the gate. Ana Sousa wants to rent a flat in Rotterdam.", "I rent a flat in Rotterdam", "other"),
        ("I rent a flat in Rotterdam.", "I rent a flat in Rotterdam", "user"),
    ],
)
def test_a_list_item_is_judged_by_the_sentences_carrying_the_preference(item, pref, whose):
    unit = next(u for u in memory_units(f"Notes.\n\n- {item}\n", {}) if u.kind == "list_item")
    assert Judge(pref).judge(unit, similarity=0.9).subject == whose


@pytest.mark.parametrize(
    "pref,text,word",
    [
        ("I keep a pony", "The ponies need their hooves trimmed before the show.", "ponies"),
        ("I fly kites", "Flies to Lisbon most months for work.", "Flies"),
        ("I spy on birds", "Spied on a heron from the hide at dawn.", "Spied"),
    ],
)
def test_a_short_y_stem_inflected_is_still_read_by_a_lexical_plan(tmp_path, pref, text, word):
    # the probe that decides which units get lexical evidence looked for "pony" in "ponies"
    files = {
        "projects/yard.md": palinode_file({"id": "yard"}, f"Yard notes. {text} The gate is fixed."),
        "insights/forget-it.md": palinode_file({"id": "forget-it"}, f"Please forget that {pref}."),
    }
    from palinode_core.session import Session

    session = Session.open(make_git_store(tmp_path / "s", files), clock=Clock(), vectors=False)
    session.update_index()
    fplan = session.plan("insights/forget-it.md")
    yard = fplan.candidate("projects/yard.md")
    assert any(word in e.shared for e in yard.evidence), yard.evidence


@pytest.mark.parametrize(
    "text, complete, named",
    [  # complete: it carries every word of the preference
        ("Caring for a parent with Parkinson's is Ana's full-time job.", False, True),
        ("Father has Parkinson's, according to Tomas.", False, True),
        ("Father Brown, the parish priest, has Parkinson's and needs care.", False, True),
        ("'Caring for my father with Parkinson's broke me,' Ines said.", True, True),
        ("Having lunch with Maria, she said she cares for her father.", False, True),
        ("Caring for Dad since the Parkinson's diagnosis has meant a four-day week.", False, False),
        ("I care for my father who has Parkinson's; Dad's tablets are sorted on Saturdays.", True, False),
        ("I care for my father who has Parkinson's at the Royal Women's Hospital.", True, False),  # a venue
        ("I care for my father who has Parkinson's in Naples, and I said so.", True, False),
        ("I care for my father who has Parkinson's and carry a card that says so.", True, False),
        ("I care for my father who has Parkinson's with Ingrid Holm.", True, False),  # a name run: only for some words
        ("Cares for father, who has Parkinson's, with Ingrid Holm.", True, False),  # every word: the name is company
        # an attacker's review: a listener is not a speaker, a shop or a place is not an owner
        ("I told Sarah I care for my father who has Parkinson's.", True, False),
        ("I care for my father who has Parkinson's and buy his oat milk at Sainsbury's.", True, False),
        ("My New Year's resolution: I care for my father who has Parkinson's.", True, False),
        ("I care for my father who has Parkinson's, and Tom's dog keeps him company.", True, False),
        ("According to my notes, I care for my father who has Parkinson's.", True, False),
        ("Caring for a father with Parkinson's is Tom\u2019s life now.", True, True),  # a curly apostrophe
        ("Caring for a father with Parkinson's is \u00c9lodie's life now.", True, True),
        ("I care for my father who has Parkinson's, says my wife.", True, True),
        ('"I care for my father who has Parkinson\'s," Tom explained.', True, True),
        ("Cares for father with Parkinson's, Tomas SAYS.", True, True),
        # a transcript: the speaker label says whose "I" it is; a memory's own label does not
        ("Tom: I care for my father who has Parkinson's.", True, True),
        ("Tom Reyes: my father has Parkinson's and I care for him.", True, True),
        ("User: I care for my father who has Parkinson's.", True, False),
        ("Update: I care for my father who has Parkinson's now.", True, False),
        ("Note to self: I care for my father who has Parkinson's.", True, False),
        ("Tom: the hives need checking. I care for my father who has Parkinson's.", True, False),
    ],
)
def test_a_sentence_naming_someone_else_or_reporting_their_words(text, complete, named):
    """Someone else's (never proposed) or maybe theirs (proposed, never pre-approved)."""
    ev = judged("I care for my father who has Parkinson's", text, sim=0.9)
    assert (ev.lexical >= 1.0) is complete, ev
    assert (ev.subject == "other" or ev.someone_named) is named, ev


def test_someone_elses_words_are_never_taken_even_carrying_every_word(tmp_path):
    """Lexical evidence only (no model): every word of "I keep bees" in each, but two report someone."""
    body = (
        "Notes.\n\nThe boiler is booked for March. Keeps bees there, says Tom. The gutter leaks. "
        "Keeping bees is Tom's hobby, not mine. The bins go out on Tuesday. Keeps bees on the roof.\n"
    )
    root = make_git_store(
        tmp_path / "s",
        {
            "notes/week.md": palinode_file({"id": "notes-week"}, body),
            "insights/forget-bees.md": palinode_file({"id": "insights-forget-bees"}, "Please forget that I keep bees."),
        },
    )
    session = Session(Store(root, clock=Clock()), vectors=False)
    plan = session.plan("insights/forget-bees.md", index=session.update_index())
    cand = next(c for c in plan.candidates if c.path == "notes/week.md")
    chosen = {s.text for s in cand.plan.spans if s.index in cand.plan.selected}
    assert chosen == {"Keeps bees on the roof."}
    # someone else's words (a reporting verb with another speaker): not the user's fact, never a target
    assert not any(e.text == "Keeps bees there, says Tom." for e in cand.evidence)
    judged_there = Judge("I keep bees").whose("Keeps bees there, says Tom.")
    assert judged_there.who == "other" and "Tom" in judged_there.why
