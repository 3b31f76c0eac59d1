"""Requests in other words (issue 44, text.implied): what makes a sentence one, what it
points at, and the near misses it declines, each for its reason. The measured set is
bench/implied (dev and a frozen test part); these pin the rules."""
from __future__ import annotations

import time

import pytest

from palinode_core.text.implied import find_implied, last_statement, sentences

# text -> (kind, points, phrase) of its one finding; the finding is on the text's last sentence
FOUND = [
    ("I'd rather you stopped bringing up my divorce.", ("stop_mentioning", "object", "my divorce")),
    ("Don't mention the Berlin flat again.", ("stop_mentioning", "object", "the Berlin flat")),
    ("Please stop bringing up my old band in every music recommendation.", ("stop_mentioning", "object", "my old band")),
    ("User asked the assistant to stop mentioning their tattoo.", ("stop_mentioning", "object", "their tattoo")),
    ("No more references to my time at the seminary, please.", ("stop_mentioning", "object", "my time at the seminary")),
    ("They have asked that their time in rehab not be raised again.",
     ("stop_mentioning", "object", "their time in rehab")),
    ("I really don't want to talk about my weight anymore.", ("refusal", "object", "my weight")),
    ("Prefers not to discuss the failed bakery startup.", ("refusal", "object", "the failed bakery startup")),
    ("My gambling debts are off limits from now on.", ("refusal", "object", "My gambling debts")),
    ("User: Can we not talk about the miscarriage?", ("refusal", "object", "the miscarriage")),
    ("I'm not comfortable talking about my eating disorder, so please don't raise it.",
     ("refusal", "object", "my eating disorder")),
    ("You keep referencing my PhD dropout; please don't bring it up any more.",
     ("stop_mentioning", "object", "my PhD dropout")),
    ("That's not true anymore, I quit smoking last year.", ("correction", "object", "smoking")),
    ("I no longer live in Berlin.", ("correction", "object", "live in Berlin")),
    ("I'm not vegetarian anymore, so meat recipes are fine now.", ("correction", "object", "vegetarian")),
    ("User no longer works at Stripe.", ("correction", "object", "works at Stripe")),
    ("Update: I am no longer seeing Dr. Okafor for therapy.",
     ("correction", "object", "seeing Dr. Okafor for therapy")),
    ("Correction: I don't have a peanut allergy, that was my sister.", ("correction", "object", "have a peanut allergy")),
    ("My ex, Marco, moved back to Turin last spring. Please stop bringing that up.",
     ("stop_mentioning", "previous", None)),
    ("I smoke about ten cigarettes a day. That's not true anymore, I quit in January.",
     ("correction", "previous", None)),
    ("Assistant: Last time you mentioned your sister's wedding drama.\nUser: I'd rather not talk about it.",
     ("refusal", "previous", None)),
    ("I told you my landlord is suing me. Actually, please forget I mentioned that.", ("retraction", "previous", None)),
    ("Please stop bringing that up.", ("stop_mentioning", "outside", None)),
    ("That's no longer true.", ("correction", "outside", None)),
    ("User asked the assistant to forget everything about their previous job.",
     ("blanket", "scope", "everything about my previous job")),
]

# near misses: nothing to find, each for a reason
DECLINED = [
    "I stopped smoking! Thirty days clean today.",  # news
    "Big day: I quit my job at the agency to start freelancing.",
    "Assistant: Don't mention it, happy to help.",  # politeness, and the assistant's words
    "Thanks for the recipe! No, really, don't mention it, it was nothing.",
    "He thanked me for the lift and I said don't mention it.",
    "Told Dana to stop bringing up the budget in standup; it derails the meeting.",  # someone else is asked
    "Mum asked me to stop bringing up politics at Sunday lunch.",
    "Don't mention the surprise party to Sam before Friday.",  # a secret kept from someone
    "My manager would rather not talk about promotions until Q3.",  # someone else's wish, for now
    "Priya doesn't want to talk about her divorce at work, so I steer clear of it.",
    "When writing the newsletter, never mention competitor names.",  # an instruction, not about the user
    "Forget my last post, I found the typo in the config.",  # the conversation
    "Please forget that I mentioned anything, it works now.",
    "What if I asked you to forget about my ex? Would you actually do it?",  # hypothetical
    "If I ever tell you to stop mentioning my diet, how would that work?",
    "Suppose I no longer lived in Berlin, what would change in my tax setup?",
    "The café on Elm Street no longer serves oat milk.",  # not the user
    "Tom no longer works at Stripe; he joined a climate startup.",
    "My sister isn't vegetarian anymore, so Christmas dinner is easier.",
    "I no longer remember where I put the spare charger.",  # not a fact retired
    "I'm not sure anymore whether the dentist is on Tuesday or Thursday.",
    "I can't keep up with the group chat anymore.",
    "I'd rather not drive at night if there's a train option.",  # a preference
    "I don't want to talk to my landlord until the deposit is back.",
    "Please keep mentioning my marathon goal when I skip runs, it helps.",
    "My therapist says I should stop bringing up the past in every argument.",  # reported
    "In the novel, Ada begs Tom never to mention the war again.",
    "That API endpoint is no longer supported; use v2.",
]


@pytest.mark.parametrize(("text", "want"), FOUND)
def test_a_request_in_other_words_is_found_with_what_it_points_at(text, want):
    found = find_implied(text)
    assert len(found) == 1, [(f.kind, f.sentence.said) for f in found]
    got = found[0]
    assert (got.kind, got.points, got.phrase) == want
    assert got.sentence.said.strip() == sentences(text)[-1].said.strip()
    assert got.cue and got.why and 0 < got.sure <= 1


@pytest.mark.parametrize("text", DECLINED)
def test_a_near_miss_is_declined(text):
    assert find_implied(text) == [], [(f.kind, f.why, f.sentence.said) for f in find_implied(text)]


def test_the_sentence_before_is_the_referent_and_a_retraction_needs_a_fact_of_the_users():
    found = find_implied("I'm thinking about leaving my husband. Scratch that, I shouldn't have said it.")
    assert found[0].antecedent is not None
    assert found[0].antecedent.said == "I'm thinking about leaving my husband."
    # nothing of the user's was said before: talk about the conversation, not a request
    assert find_implied("I can't tell you that. Please forget I said anything and enjoy your meal.") == []


def test_a_name_is_the_users_only_when_the_store_says_so():
    text = "Mara said she doesn't want to talk about her layoff from Stripe anymore."
    assert find_implied(text) == []  # someone else's wish
    found = find_implied(text, frozenset({"mara"}))
    assert [(f.kind, f.phrase, f.voice) for f in found] == [("refusal", "her layoff from Stripe", "name")]


def test_a_transcript_line_is_its_speakers():
    text = "Assistant: please never bring that up again\nUser: I no longer live in Leeds."
    found = find_implied(text)
    assert [(f.kind, f.sentence.speaker, f.sentence.said) for f in found] == [
        ("correction", "user", "I no longer live in Leeds.")
    ]


def test_the_same_days_note_points_at_its_last_sentence_about_the_user():
    note = "Groceries done. I lost most of my savings in a crypto crash this spring. What a week?"
    assert last_statement(note).said == "I lost most of my savings in a crypto crash this spring."
    assert last_statement("Talked through the week. Weather was fine.").said == "Weather was fine."
    assert last_statement("Ok.") is None


@pytest.mark.parametrize("unit", [
    "Please stop bringing up my divorce. ",
    "I no longer live in Berlin. That's not true anymore, ",
    "don't mention ",
    " " * 60 + "no longer",
    "\n",
    "User: that's wrong\n",
    "Dr. ",
])
def test_a_one_megabyte_hostile_body_is_read_in_seconds(unit):
    body = (unit * (1_000_000 // len(unit) + 1))[:1_000_000]
    start = time.process_time()
    find_implied(body)
    last_statement(body)
    assert time.process_time() - start < 10.0
