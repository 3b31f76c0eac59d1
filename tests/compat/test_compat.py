"""The differential suite in `make test`: a small seeded run of the fuzzer,
and one pinned case per intentional difference (ours and the package's bytes).
Needs .venv-compat (built by `make compat-venv`); skipped, loudly, without it."""
from __future__ import annotations

import os

import pytest

from .fuzz import INTENTIONAL, print_table, run, verdict
from .gen import Case
from .harness import NOW, Driver, run_step, venv_ready

pytestmark = [
    pytest.mark.compat, pytest.mark.xdist_group("compat"),
    pytest.mark.skipif(not venv_ready(), reason="COMPAT SUITE NOT RUN: .venv-compat is missing "
                       "(make compat-venv builds it from PyPI)"),
]
SMALL = int(os.environ.get("COMPAT_CASES", "30"))
REL = "notes/m.md"
PREF = "I love Zanzibar coffee"


@pytest.fixture(scope="module")
def driver():
    d = Driver()
    yield d
    d.close()


def both(driver, tmp_path, text: str, op: str, extra: dict[str, str] | None = None, label: str = "s"):
    case = Case(0, op, REL, PREF, {REL: text, **(extra or {})})
    return run_step(driver, tmp_path, label, op, case, case.files, NOW)


def test_small_seeded_run_has_only_documented_differences(capsys):
    table, totals, examples = run(range(SMALL))
    print_table(table, totals, examples)
    unexplained = [s for s in table if s != "(identical)" and verdict(s) == "UNEXPLAINED"]
    assert not unexplained, capsys.readouterr().out
    assert sum(table["(identical)"].values()) > 0  # the comparison is live, not vacuous


def test_a_canonical_file_gives_identical_bytes(driver, tmp_path):
    step = both(driver, tmp_path, "---\ncategory: notes\nid: m\n---\n\nI love Zanzibar coffee. Other.\n", "retract")
    assert step.pal.files == step.ours.files and step.pal.commits == step.ours.commits
    assert "~~I love Zanzibar coffee.~~ [RETRACTED 2025-06-01 r:" in step.ours.files[REL]


def test_crlf_stays_crlf(driver, tmp_path):
    step = both(driver, tmp_path, "---\r\nid: m\r\n---\r\n\r\nI love Zanzibar coffee.\r\nMore.\r\n", "archive")
    assert step.ours.files[REL] == "---\r\nid: m\r\nstatus: archived\r\n---\r\n\r\nI love Zanzibar coffee.\r\nMore.\r\n"
    assert step.pal.files[REL] == "---\nid: m\nstatus: archived\n---\n\nI love Zanzibar coffee.\nMore.\n"
    assert step.diffs == [("target", "keep-layout:crlf")]


def test_hand_written_frontmatter_layout_is_kept(driver, tmp_path):
    text = "---\ntitle: \"Notes\"  # mine\ntags: [a, b]\nid: m\n---\n\nBody.\n"
    step = both(driver, tmp_path, text, "archive")
    assert step.ours.files[REL] == text.replace("id: m\n", "id: m\nstatus: archived\n")
    assert step.pal.files[REL] == "---\nid: m\nstatus: archived\ntags:\n- a\n- b\ntitle: Notes\n---\n\nBody.\n"
    assert step.diffs == [("target", "keep-layout:frontmatter")]


def test_trailing_blank_lines_and_unterminated_last_line_are_kept(driver, tmp_path):
    step = both(driver, tmp_path, "---\nid: m\n---\n\nBody.\n\n\n", "archive", label="a")
    assert step.ours.files[REL].endswith("Body.\n\n\n") and step.pal.files[REL].endswith("Body.\n")
    step = both(driver, tmp_path, "---\nid: m\n---\n\nBody.", "archive", label="b")
    assert step.ours.files[REL].endswith("Body.") and step.pal.files[REL].endswith("Body.\n")


def test_history_entry_is_not_glued_onto_an_unterminated_line(driver, tmp_path):
    sibling = "---\ncategory: history\nstatus: archived\n---\n\n- [2025-05-01 10:00] old <!-- fact:m -->"
    step = both(driver, tmp_path, "---\nid: m\n---\n\nBody.\n", "archive", {"notes/m-history.md": sibling})
    line = "- [2025-06-01 11:00] Archived: notes/m.md <!-- fact:m -->\n"
    assert step.ours.files["notes/m-history.md"] == sibling + "\n" + line
    assert step.pal.files["notes/m-history.md"] == sibling + line


def test_strike_across_a_line_break_is_undone_exactly(driver, tmp_path):
    marker = "[RETRACTED 2025-06-01 r:8057db09]."
    text = (f"---\nretracted_prefs:\n- i love zanzibar coffee\n---\n\n~~I love\nZanzibar coffee.~~ {marker}\n")
    step = both(driver, tmp_path, text, "unretract")
    assert step.ours.files[REL] == "---\n{}\n---\n\nI love\nZanzibar coffee.\n"
    assert marker in step.pal.files[REL]  # the package's pattern cannot cross the line break


def test_users_own_strike_on_the_line_is_kept(driver, tmp_path):
    marker = "[RETRACTED 2025-06-01 r:8057db09]."
    text = f"---\nretracted_prefs:\n- i love zanzibar coffee\n---\n\n~~old~~ kept. ~~I love Zanzibar coffee.~~ {marker}\n"
    step = both(driver, tmp_path, text, "unretract")
    assert step.ours.files[REL].endswith("\n~~old~~ kept. I love Zanzibar coffee.\n")
    assert step.pal.files[REL].endswith("\nold~~ kept. ~~I love Zanzibar coffee.\n")  # the package's corruption


@pytest.mark.parametrize("text, why", [
    ("\ufeff---\nid: m\n---\n\nBody.\n", "refuse:bom"),
    ("---\n- a\n- b\n---\n\nBody.\n", "refuse:list-frontmatter"),
    ("---\nid: m\n\nBody.\n", "refuse:unclosed-frontmatter"),
])
def test_malformed_frontmatter_is_refused_where_the_package_reads_it_as_body(driver, tmp_path, text, why):
    step = both(driver, tmp_path, text, "archive")
    assert step.ours.reply["refused"] and step.ours.files[REL] == text
    assert step.pal.reply["status"] == "archived" and step.pal.files[REL].startswith("---\nstatus: archived\n---")
    assert step.diffs == [("refusal", why)] and why in INTENTIONAL


def test_a_closing_clause_strike_is_undone_exactly_by_the_package(driver, tmp_path):
    """The clause-level strike form (docs/format.md): a sentence's closing
    clause struck on its own line is restored byte for byte by Palinode 0.23's
    own unretract as by ours."""
    from palinode_core.text.markdown import marker_for, strike
    from palinode_core.text.units import clause_tail_span, clauses, memory_units

    body = "Weekly notes. The printer is jammed again, and I love Zanzibar coffee. Nothing else.\n"
    unit = next(u for u in memory_units(body, {}) if "Zanzibar" in u.text)
    span = clause_tail_span(body, unit.span, clauses(unit.text)[1].start, 0)
    assert span is not None and span.text == "I love Zanzibar coffee."
    struck = strike(body, [span], marker_for("2025-06-01", "8057db09"))
    assert struck.startswith("Weekly notes. The printer is jammed again, and ~~I love Zanzibar coffee.~~ [RETRACTED")
    step = both(driver, tmp_path, f"---\nretracted_prefs:\n- i love zanzibar coffee\n---\n\n{struck}", "unretract")
    assert step.pal.files[REL].endswith("\n\n" + body)
    assert step.ours.files[REL].endswith("\n\n" + body)


@pytest.mark.parametrize("body, clause", [
    ("Weekly notes. I love Zanzibar coffee, and the printer is jammed again. Nothing else.\n",
     "I love Zanzibar coffee, and"),
    ("Weekly notes. I love Zanzibar coffee, I work at the depot. Nothing else.\n", "I love Zanzibar coffee,"),
], ids=["and", "comma-splice"])
def test_a_leading_clause_strike_is_undone_exactly_by_the_package(driver, tmp_path, body, clause):
    """The leading-clause form (docs/format.md), after ", and" and in a comma
    splice of first-person clauses: restored byte for byte by Palinode 0.23."""
    from palinode_core.text.markdown import marker_for, strike
    from palinode_core.text.units import clause_span, clauses, memory_units

    unit = next(u for u in memory_units(body, {}) if "Zanzibar" in u.text)
    span = clause_span(unit.span, clauses(unit.text)[0].sep_end, 0)
    assert span.text == clause
    struck = strike(body, [span], marker_for("2025-06-01", "8057db09"))
    assert struck.startswith(f"Weekly notes. ~~{clause}~~ [RETRACTED")
    step = both(driver, tmp_path, f"---\nretracted_prefs:\n- i love zanzibar coffee\n---\n\n{struck}", "unretract")
    assert step.pal.files[REL].endswith("\n\n" + body)
    assert step.ours.files[REL].endswith("\n\n" + body)


@pytest.mark.parametrize("body", [
    "Diary.\n\n- The printer is jammed again, and I love Zanzibar coffee.\n- Nothing else.\n",
    "Diary.\n\n* The printer is jammed again, and I love Zanzibar coffee.\n",
    "Diary.\n\n  - The printer is jammed again, and I love Zanzibar coffee.\n  - Tea.\n",
], ids=["dash", "star", "indented"])
def test_a_list_items_closing_clause_strike_is_undone_exactly_by_the_package(driver, tmp_path, body):
    """The closing-clause form inside a list item (docs/format.md): the strike
    opens inside the item, and Palinode 0.23's own unretract restores it byte
    for byte, as ours does."""
    from palinode_core.text.markdown import marker_for, strike
    from palinode_core.text.units import clause_tail_span, clauses, memory_units

    unit = next(u for u in memory_units(body, {}) if "Zanzibar" in u.text)
    assert unit.span is not None and unit.span.kind == "list_item"
    span = clause_tail_span(body, unit.span, clauses(unit.text)[-1].start, 0)
    assert span is not None and span.text == "I love Zanzibar coffee."
    struck = strike(body, [span], marker_for("2025-06-01", "8057db09"))
    assert "and ~~I love Zanzibar coffee.~~ [RETRACTED 2025-06-01 r:8057db09]." in struck
    step = both(driver, tmp_path, f"---\nretracted_prefs:\n- i love zanzibar coffee\n---\n\n{struck}", "unretract")
    assert step.pal.files[REL].endswith("\n\n" + body)
    assert step.ours.files[REL].endswith("\n\n" + body)


@pytest.mark.parametrize("body, pieces", [
    ("Diary.\n\n- The printer is jammed. I love Zanzibar coffee. Nothing else.\n- Tea.\n",
     ["I love Zanzibar coffee."]),
    ("Diary.\n\n- I love Zanzibar coffee. The printer is jammed, and I love Zanzibar coffee.\n",
     ["I love Zanzibar coffee.", "I love Zanzibar coffee."]),
    ("Diary.\n\n* Tea first. I love Zanzibar coffee. Then work.\n",
     ["I love Zanzibar coffee."]),
], ids=["middle", "first-and-closing-clause", "star"])
def test_sentences_struck_inside_a_list_item_are_undone_exactly_by_the_package(driver, tmp_path, body, pieces):
    """Sentences (and a closing clause) struck on their own inside a list
    item that holds others (docs/format.md): Palinode 0.23's own unretract
    restores them byte for byte, as ours does."""
    from palinode_core.text.markdown import marker_for, strike
    from palinode_core.text.units import inner_span, memory_units

    unit = next(u for u in memory_units(body, {}) if "Zanzibar" in u.text)
    spans, at = [], 0
    for piece in pieces:
        at = unit.text.index(piece, at)
        span = inner_span(body, unit.span, at, at + len(piece), len(spans))
        assert span is not None
        spans.append(span)
        at += len(piece)
    struck = strike(body, spans, marker_for("2025-06-01", "8057db09"))
    assert struck.count("~~I love Zanzibar coffee.~~ [RETRACTED 2025-06-01 r:8057db09].") == len(pieces)
    step = both(driver, tmp_path, f"---\nretracted_prefs:\n- i love zanzibar coffee\n---\n\n{struck}", "unretract")
    assert step.pal.files[REL].endswith("\n\n" + body)
    assert step.ours.files[REL].endswith("\n\n" + body)


# Issue 24, finding 9: a body with the user's own unpaired ``~~`` beside the struck sentence.
DANGLING = [
    "~~ I love Zanzibar coffee. The cat sleeps.",  # the struck sentence begins with it: ~~~~ I love…~~
    "The cat sleeps. ~~ I love Zanzibar coffee.",
    "x ~~ y. I love Zanzibar coffee.",  # earlier on the line: the package pairs it with ours
    "~~approx. 3 p.m.~~ Zanzibar coffee is best.",  # the user's pair spans the package's sentence break
    "~~old~~ The cat sleeps. ~~ I love Zanzibar coffee. ~~old~~ Zanzibar coffee is best.",
    "I love Zanzibar coffee. ~~old~~ ~~old~~ Tea. ~~ \nI love Zanzibar coffee.",
]
_PIECES = ["I love Zanzibar coffee.", "Zanzibar coffee is best.", "The cat sleeps.", "~~", "~~old~~",
           "Note:", "x ~~ y.", "Tea.", "~~approx. 3 p.m.~~", "Dr. Petrov"]


def _round_trip(driver, tmp_path, body: str, label: str) -> list:
    text = f"---\nid: m\n---\n\n{body}\n"
    first = both(driver, tmp_path, text, "retract", label=f"{label}r")
    assert first.ours.reply["ok"] and first.pal.reply["ok"], first.ours.reply
    steps = []
    for side, files in (("pal", first.pal.files), ("ours", first.ours.files)):
        case = Case(0, "unretract", REL, PREF, files)
        steps.append(run_step(driver, tmp_path, f"{label}u{side}", "unretract", case, files, NOW, origin=text))
    return [first, *steps]


def _check_dangling(first, *undos) -> None:
    text = first.before[REL]
    assert first.ours.files[REL] == first.pal.files[REL], "both strike the same sentences the same way"
    for step in undos:
        assert step.ours.files[REL] == "---\nid: m\n---\n\n" + text.split("---\n\n", 1)[1], "ours is exact"
        if step.pal.files[REL] == step.ours.files[REL]:
            assert step.diffs == []
        else:  # only where the package pairs the user's earlier ~~ with ours, or cannot cross a line
            assert [sig for _, sig in step.diffs] in (["unretract:user-strike-on-line"],
                                                      ["unretract:strike-across-line-break"]), step.diffs


@pytest.mark.parametrize("body", DANGLING)
def test_unretract_beside_a_dangling_tilde_pair(driver, tmp_path, body):
    steps = _round_trip(driver, tmp_path, body, "d")
    assert "[RETRACTED" in steps[0].ours.files[REL]
    _check_dangling(*steps)


def test_unretract_beside_dangling_tildes_generated(driver, tmp_path):
    """Random one-line bodies of the pieces above through both implementations: ours gives
    every one back exactly, byte for byte Palinode's result wherever Palinode's is exact."""
    import random

    rng = random.Random(924)
    same = 0
    for n in range(int(os.environ.get("COMPAT_DANGLING", "24"))):
        body = " ".join(rng.choice(_PIECES) for _ in range(rng.randint(2, 6)))
        if "Zanzibar" not in body:
            body += " I love Zanzibar coffee."
        steps = _round_trip(driver, tmp_path, body, f"g{n}")
        _check_dangling(*steps)
        same += sum(s.pal.files == s.ours.files for s in steps[1:])
    assert same > 0  # the comparison is live
