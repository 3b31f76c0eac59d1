"""Every parser that reads memory text runs in linear time on hostile input:
a 1 MB adversarial memory is parsed, searched for mentions, and its strikes
found and undone in seconds, not hours (issue 11, item 9; the 10x-input ratio
is measured by bench/linear_text.py)."""
from __future__ import annotations

import time

import pytest

from palinode_core.storage.memory import Summary
from palinode_core.text.document import parse_document
from palinode_core.text.markdown import Matcher, find_mentions, struck_spans, unstrike

MARKER = "~~I collect sneakers.~~ [RETRACTED 2025-06-01 r:ea106bc2]. "


def hostile_bodies(size: int) -> dict[str, str]:
    return {
        "blank lines": "\n" * size,
        "a run of spaces inside a sentence": "I collect " + " " * size + "sneakers.",
        "tildes": "~" * size,
        "open strikes": "~~x " * (size // 4),
        "one long word": "a" * size,
        "thousands of markers on one line": MARKER * (size // len(MARKER)),
        "trailing dots": "I collect sneakers" + "." * size,
        "fence toggles": "```\n" * (size // 4),
        "table pipes": "| a " * (size // 4),
        "headings": "# I collect sneakers\n" * (size // 21),
    }


def parse_everything(body: str) -> None:
    doc = parse_document(f"---\nid: x\n---\n\n{body}\n")
    Summary.of("x.md", doc)
    find_mentions(doc.body, Matcher.for_pref("I collect vintage sneakers"))
    struck_spans(doc.body)
    unstrike(doc.body, "ea106bc2")


@pytest.mark.parametrize("shape", sorted(hostile_bodies(10)))
def test_a_one_megabyte_hostile_memory_parses_in_seconds(shape):
    body = hostile_bodies(1_000_000)[shape]
    started = time.process_time()  # CPU time: a loaded machine's waiting is not the parser's
    parse_everything(body)
    assert time.process_time() - started < 10.0, shape


@pytest.mark.parametrize("text, pref", [
    ("Mum " * 40000 + "keep bees.", "I keep bees in the garden"),  # one run of 40,000 Titlecase words
    ("Bees " * 40000, "I love Bees"),  # every word of the run is the preference's own name
    ("Tom Tom's is " * 20000, "I keep bees"),
    ("says " * 40000 + "Tom", "I keep bees"),
    ("a-" * 40000 + " said", "I keep bees"),  # a hyphen or apostrophe in a token is no new speaker
    ("a'" * 40000 + " said", "I keep bees"),
])
def test_whose_fact_a_sentence_states_is_linear(text, pref):
    """The someone-else guard and the name runs of lexical evidence judge each run once."""
    from palinode_core.forget.judgment import Judge
    from palinode_core.text.units import Unit

    judge = Judge(pref)
    start = time.process_time()
    judge.judge(Unit("sentence", text, 1), similarity=0.9)
    judge.people(text)
    assert time.process_time() - start < 5.0  # quadratic took minutes at this size
