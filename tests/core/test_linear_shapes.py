"""Every function that reads store text is linear on the hostile shapes of
issue 24 (runs of blank lines, spaces, space-and-newline lines, a sentence cut
by 40,000 spaces, nested list lines, Palinode's detector's 621-byte stall) and
on random text: at 10x the input, at most 12x the CPU time (best of 3, in the
same run). And one 621-byte adversarial memory costs a scan of a store less
than twice the same store without it."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest
from helpers import Clock, make_git_store, palinode_file

from palinode_core.search.unit_index import entity_words
from palinode_core.session import Session
from palinode_core.storage.store import Store
from palinode_core.text.detect import detect_blanket, detect_forget_request
from palinode_core.text.implied import find_implied, last_statement
from palinode_core.text.markdown import Matcher, find_mentions
from palinode_core.text.palinode_detect import detect_palinode_request
from palinode_core.text.units import clauses, inner_spans, item_sentences, memory_units
from palinode_core.undo.restrike import _inner_places

STALL = "Please forget that I" + " " * 600 + "x"  # 621 bytes: 129 s in Palinode's own regexes


def _random_text(n: int) -> str:
    rng = random.Random(n)
    atoms = ["forget", "please", "I", "my", " ", "  ", "\n", "\n\n", ".", ";", ",", "- ", "  - ", "~~", "x", "and"]
    out, size = [], 0
    while size < n:
        atom = rng.choice(atoms)
        out.append(atom)
        size += len(atom)
    return "".join(out)[:n]


SHAPES: dict[str, Callable[[int], str]] = {
    "blank lines": lambda n: "\n" * n + "forget",
    "spaces": lambda n: "Please forget that I" + " " * n + "x",
    "space and newline lines": lambda n: " \n" * (n // 2) + "I live in Berlin.",
    "a sentence cut by spaces": lambda n: "I live in" + " " * n + "Berlin.",
    "nested list lines": lambda n: "".join("  " * (i % 40) + "- I live in Berlin\n" for i in range(n // 50)),
    "semicolons in a space run": lambda n: (" " * 50 + ";") * (n // 51),
    "random": _random_text,
    "one list item of many sentences": lambda n: "- " + "I love Zanzibar coffee. " * (n // 24),
    "a run of Titlecase words": lambda n: ("Mum Dad Bees Garden " * (n // 20 + 1))[:n],
    "requests in other words": lambda n: ("Please stop bringing up my divorce. I no longer live in Berlin. " * n)[:n],
}
READERS: dict[str, Callable[[str], object]] = {
    "palinode detector": detect_palinode_request,
    "implied requests": find_implied,
    "blanket requests": detect_blanket,
    "the same day's note": last_statement,
    "our detector": detect_forget_request,
    "clauses": clauses,
    "units": lambda text: memory_units(text, {}),
    "mentions": lambda text: find_mentions(text, Matcher.for_pref("I live in Berlin")),
    "list item sentences": item_sentences,
    "strikes inside list items": lambda text: _item_strikes(text),
    "redo's places": lambda text: _inner_places([u.span for u in memory_units(text, {}) if u.span is not None]),
    "the unit index's entity words": entity_words,
}


def _item_strikes(body: str) -> None:
    """Every sentence of every list item struck on its own, as the thorough resolver would."""
    for unit in memory_units(body, {}):
        if unit.span is not None and unit.kind == "list_item":
            inner_spans(body, unit.span, item_sentences(unit.text), 0)


def _best(fn: Callable[[], object], reps: int = 3) -> float:
    times = []
    for _ in range(reps):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


_TRIES = 3  # a loaded machine can slow one measure; a superlinear reader is slow on every try (~100x, not 14x)


def _ratio(read: Callable[[str], object], small: str, large: str) -> float:
    floor = 0.002  # below a couple of milliseconds the clock, not the input, decides
    return (_best(lambda: read(large)) + floor) / (_best(lambda: read(small)) + floor)


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_ten_times_the_text_costs_at_most_twelve_times_the_time(shape, reader):
    read, make = READERS[reader], SHAPES[shape]
    small, large = make(20_000), make(200_000)
    ratio = _ratio(read, small, large)
    for _ in range(_TRIES - 1):
        if ratio <= 12:
            break
        ratio = min(ratio, _ratio(read, small, large))
    assert ratio <= 12, f"{reader} on {shape}: 10x the input took {ratio:.1f}x the time"


def test_one_adversarial_memory_does_not_stall_a_scan(tmp_path):
    files = {f"notes/n{i:03d}.md": palinode_file({"id": f"n{i}"}, f"Note {i} about the garden.") for i in range(150)}
    plain = make_git_store(tmp_path / "plain", files)
    hostile = make_git_store(tmp_path / "hostile", {**files, "notes/stall.md": palinode_file({"id": "s"}, STALL)})

    def scan(root) -> Callable[[], object]:
        return lambda: Store(root, use_scan_cache=False).scan()  # every memory parsed, every time

    ratio = _best(scan(hostile)) / _best(scan(plain))
    assert ratio <= 2, f"a 621-byte memory made the scan {ratio:.1f}x slower"


def _plan_cpu(root) -> float:
    """CPU seconds of a first lexical plan of the store (its unit index built first, as `plan` does)."""
    start = time.process_time()
    session = Session.open(root, clock=Clock(), vectors=False)
    index = session.search_index()
    index.update_lexical(memories=session.memories)
    session.plan("insights/forget-bees.md", index=index)
    index.close()
    return time.process_time() - start


def test_a_run_of_titlecase_words_plans_at_most_five_times_prose_of_its_size(tmp_path):
    """2 MB of Titlecase words took 52.6 s to plan against 2.9 s for prose: the unit index took
    each name's entity word after copying all the text before it (quadratic, allocation-bound)."""
    size = 2_000_000
    rng = random.Random(15)
    words = ["alpha", "bravo", "delta", "echo", "golf", "hotel", "kilo", "lima", "and", "the", "was", "in",
             "keep", "bees", "garden"]
    prose, n = [], 0
    while n < size:
        sentence = " ".join(rng.choice(words) for _ in range(12)).capitalize() + "."
        prose.append(sentence)
        n += len(sentence) + 1
    bodies = {
        "prose": " ".join(prose)[:size],
        "a name run": ("Mum Dad Ann Bob " * (size // 16 + 1))[:size],
        "Titlecase words carrying the preference's": " ".join(w.title() for w in rng.choices(words, k=size // 6))[:size],
    }
    request = palinode_file({"id": "forget-bees"}, "Please forget that I keep bees in the garden.")
    took = {}
    for name, body in bodies.items():
        root = make_git_store(tmp_path / name.replace(" ", "-").replace("'", ""),
                              {"notes/big.md": palinode_file({"id": "big"}, body), "insights/forget-bees.md": request})
        took[name] = _plan_cpu(root)
    for name, cpu in took.items():
        assert cpu <= 5 * took["prose"], f"{name}: {cpu:.1f} s of CPU, prose {took['prose']:.1f} s"


def test_a_strike_plan_of_many_sentences_is_shown_in_linear_time():
    """A memory of 333,000 one-sentence lines (2 MB) is one plan striking them all: each span
    was looked up in the tuple of struck ones (quadratic: 20 s of a 2 MB plan's CPU)."""
    from palinode_core.ops.plan import Plan
    from palinode_core.text.markdown import Span

    def plan(n: int) -> Plan:
        spans = tuple(Span(i, "sentence", 6 * i, 6 * i + 5, 6 * i + 5, "Bees.", "", i + 1, False, None)
                      for i in range(n))
        return Plan("retract", "notes/big.md", "would_retract", "", "", "", "notes/big-history.md", spans=spans,
                    selected=tuple(range(n)))

    small, large = plan(5_000), plan(50_000)
    ratio = (_best(large.to_dict) + 0.002) / (_best(small.to_dict) + 0.002)
    assert ratio <= 12, f"10x the spans took {ratio:.1f}x the time"
