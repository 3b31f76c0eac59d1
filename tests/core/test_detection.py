"""Forget-request detection: Palinode's rules, its known misses fixed, no new
false positives. Each row: text -> expected pref (None = must not fire)."""
import pytest

from palinode_core.text.detect import detect_forget_request

CASES = [
    # Palinode's own forms
    ("Please forget that I collect sneakers.", "I collect sneakers"),
    ("please forget my home address", "my home address"),
    ("Kindly forget that I live in Berlin.", "I live in Berlin"),
    ("Can you forget my old phone number?", "my old phone number"),
    ("Could you please forget that I smoke?", "I smoke"),
    ("Would you forget my ex's name.", "my ex's name"),
    ("I'd like you to forget my birthday.", "my birthday"),
    ("I would like you to forget that I was in hospital.", "I was in hospital"),
    ("I want you to forget my salary.", "my salary"),
    ("I need you to forget about my divorce.", "my divorce"),
    ("Forget that I told you about my debt.", "I told you about my debt"),
    ("forget my gym schedule", "my gym schedule"),
    ("  Forget me mentioning the lawsuit.", "me mentioning the lawsuit"),
    ("Please forget the detail about me mediating the dispute.", "me mediating the dispute"),
    ("Please forget the details of my medical history.", "my medical history"),
    ("Please forget about my trip to Rome from your memory.", "my trip to Rome"),
    ("Please forget that I know Wilhelmina Cragg.", "I know Wilhelmina Cragg"),
    ("Please forget that I collect vintage sneakers. Thanks!", "I collect vintage sneakers"),
    ("Notes from today.\nPlease forget my allergy to peanuts.\nMore notes.", "my allergy to peanuts"),
    ("PLEASE FORGET MY LICENSE PLATE", "MY LICENSE PLATE"),
    ("Please forget that I'm vegan.", "I'm vegan"),
    ("Please forget that I’m vegan.", "I’m vegan"),
    ("please forget my  favourite   band!!!", "my  favourite   band"),
    ("Hey, could you forget my nickname from the memory?", "my nickname"),
    # fixed misses
    ("I’d like you to forget my address.", "my address"),
    ("I’d want you to forget that I play poker.", "I play poker"),
    ('kindly forget "my gym schedule".', "my gym schedule"),
    ("please forget “my old username”", "my old username"),
    ("Please forget 'my maiden name'.", "my maiden name"),
    ("Please forget everything about my ex.", "my ex"),
    ("Could you forget all stored details about my trip to Rome?", "my trip to Rome"),
    ("Please forget all details about my kids.", "my kids"),
    ("Please forget everything you know about my finances.", "my finances"),
    ("Forget all the information about my mortgage.", "my mortgage"),
    # conversational corrections: not memory requests
    ("Forget my last message, I meant Tuesday", None),
    ("Please forget my previous message.", None),
    ("forget my earlier question, it was wrong", None),
    ("Forget what I said about Tuesday.", None),
    ("Forget I said that.", None),
    ("Please forget my typo above", None),
    ("forget that, I meant the blue one", None),
    ("Forget it.", None),
    ("Please forget my message, I meant Friday not Monday.", None),
    # negations
    ("Please don't forget my birthday.", None),
    ("Never forget that I love you.", None),
    ("Please do not forget my appointment.", None),
    ("I would never want you to forget my name.", None),
    ("Don't ever forget my allergies.", None),
    # assistant echoes
    ("I'll forget that you collect sneakers.", None),
    ("Okay, I will forget your address.", None),
    ("Sure, I've forgotten that you smoke.", None),
    ("I can forget that for you.", None),
    # self-reports and third parties
    ("I always forget my keys.", None),
    ("I forget my password every week.", None),
    ("Sometimes I forget to eat lunch.", None),
    ("She asked me to please forget her number.", None),
    ("Please forget the meeting notes.", None),
    ("Please forget myself.", None),
    ("Can you forget him?", None),
    ("Wiki want you to forget my old address.", None),
    ("forgetting my keys again", None),
    ("The forget button is broken.", None),
    ("", None),
    ("Remember my birthday.", None),
    ("Please forget", None),
]


def test_the_table_is_large_and_balanced():
    positives = sum(1 for _, want in CASES if want)
    assert len(CASES) >= 60 and positives >= 25 and len(CASES) - positives >= 25


@pytest.mark.parametrize("text,want", CASES)
def test_detection(text, want):
    assert detect_forget_request(text) == want
