"""Blanket requests (issue 44): "forget everything about me" names no preference but a
scope, everything about the user or a whole area of their life, for a person to choose;
a request that names one fact is no blanket one."""
import pytest

from palinode_core.text.detect import blanket_scope, detect_blanket, detect_forget_request

BLANKET = [
    ("Forget everything about me.", "everything about me"),
    ("Please forget everything you know about me.", "everything you know about me"),
    ("forget everything you know about me", "everything you know about me"),
    ("Could you forget everything you've learned about me?", "everything you've learned about me"),
    ("Wipe whatever you have stored about me and start fresh.", "whatever you have stored about me"),
    ("Erase all the personal details you have on me.", "all the personal details you have on me"),
    ("Can you forget my work stuff? I'm changing careers.", "my work stuff"),
    ("I want you to forget all my health information.", "all my health information"),
    ("Please forget all of it, every detail about my family.", "every detail about my family"),
    ("Kindly forget everything you have about my old job.", "everything you have about my old job"),
    ("Hi Claude, please delete all my personal data.", "all my personal data"),
]
NOT_BLANKET = [
    "Please forget everything about my ex.",  # one person: a preference, planned as usual
    "please forget my bank details",
    "Please forget my home address.",
    "Is it possible to make you forget everything about me?",  # a question about forgetting
    "What if I asked you to forget everything about me?",
    "She asked me to forget everything about her.",  # someone else's words
    'Client connects: "I\'m new, forget everything about me"',  # a quoted mention
    "Forget everything you know about meaning or relatedness; only literal matches count.",
    "Don't forget everything about me.",
    "Forget about me...",
    "Please clear the cache and delete all my temporary files.",
    "I always forget everything about my keys.",
]


@pytest.mark.parametrize(("text", "scope"), BLANKET)
def test_a_blanket_request_is_recognised_with_its_scope(text, scope):
    assert detect_blanket(text) == scope


@pytest.mark.parametrize("text", NOT_BLANKET)
def test_a_request_for_one_fact_or_no_request_is_no_blanket_one(text):
    assert detect_blanket(text) is None


def test_a_whole_user_scope_has_no_preference_to_plan():
    # never planned on the whole store: the explicit detector names no preference for it
    assert detect_forget_request("Please forget everything about me.") is None
    assert detect_forget_request("Forget everything you know about me.") is None


def test_an_area_keeps_palinodes_preference_and_is_marked_blanket():
    # Palinode 0.23 detects "my work stuff" and would act on it: the preference (and its rid) stay
    assert detect_forget_request("Can you forget my work stuff?") == "my work stuff"
    assert blanket_scope("my work stuff") == "my work stuff"


def test_a_1mb_body_of_almost_blanket_requests_is_read_in_seconds():
    import time

    body = "Please forget everything you know about " * 25_000 + "x"
    start = time.process_time()
    assert detect_blanket(body) is None
    assert time.process_time() - start < 5.0
