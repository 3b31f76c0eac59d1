"""The command line decides what the app decides (issue 41): single sentences
and clause cuts of a strike (--span PATH:N, numbered as the plan prints them),
rejected targets (--reject), and closing a partial request whose plan has
nothing left to apply (--close). Every refusal writes nothing."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import git, make_git_store, palinode_file

from palinode_core.session import Session

REQ, NOTES = "insights/forget-bees.md", "notes/allotment.md"
KEEP = "I keep bees behind the shed."
CLAUSE = "I keep bees near the hedge too."
BODY = ("Weekly notes from the allotment. I keep bees behind the shed. The tomatoes did well this year. "
        "The compost needs turning, and I keep bees near the hedge too. The fence is broken. The shed roof leaks. "
        "Seed orders are due. The path needs weeding. Water butts are full. The gate hinge squeaks.")
LEDGER = ".palinode-audit/ledger.jsonl"


@pytest.fixture
def store(tmp_path) -> Path:
    """One strike target with two units: a sentence [0] and a clause cut [1], both pre-approved."""
    return make_git_store(tmp_path / "s", {
        NOTES: palinode_file({"id": "notes-allotment", "created_at": "2025-05-01T00:00:00+00:00"}, BODY),
        REQ: palinode_file({"id": "insights-forget-bees", "created_at": "2025-06-01T00:00:00+00:00"},
                           "Please forget that I keep bees."),
    })


def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True)
    assert proc.returncode == code, (proc.returncode, proc.stdout[-2000:], proc.stderr)
    return proc


def ledger(root: Path) -> list[dict]:
    path = root / LEDGER
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def state(root: Path) -> str:
    [request] = json.loads(run("--json", "requests", str(root)).stdout)["requests"]
    return request["state"]


def test_the_plan_numbers_each_unit_and_span_approves_exactly_one(store):
    text = run("plan", str(store), REQ, "--lexical").stdout
    assert f"[0] sentence line 6 (pre-approved): {KEEP}" in text
    assert f"[1] clause line 6 (pre-approved): {CLAUSE}" in text
    dry = run("apply", str(store), REQ, "--lexical", "--span", f"{NOTES}:1").stdout
    assert "with --span, --yes would apply notes/allotment.md (units 1) and defer nothing" in dry and git(store, "log", "--oneline").count("\n") == 1

    run("apply", str(store), REQ, "--lexical", "--span", f"{NOTES}:1", "--yes")
    body = (store / NOTES).read_text()
    assert f"~~{CLAUSE[:-1]}" in body and f"~~{KEEP}" not in body and KEEP in body
    [record] = [r for r in ledger(store) if r["action"] != "residue"]  # the leak check is recorded with it
    assert record["action"] == "apply" and [a["spans"] for a in record["approved"]] == [[1]]
    assert record["decided_by"] == "Test Author <author@example.test>"


@pytest.mark.parametrize("args, says", [
    (["--span", f"{NOTES}:7"], "has no unit 7 (its units: 0, 1)"),
    (["--span", f"{NOTES}"], "--span takes PATH:N"),
    (["--span", "insights/forget-bees.md:0"], "is not a strike of this plan"),
    (["--only", NOTES, "--reject", NOTES], "both approved and rejected"),
])
def test_a_span_the_plan_does_not_have_is_refused_and_nothing_written(store, args, says):
    head = git(store, "rev-parse", "HEAD")
    proc = run("apply", str(store), REQ, "--lexical", *args, "--yes", code=2)
    assert says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert git(store, "rev-parse", "HEAD") == head and ledger(store) == []


def test_reject_records_the_rejection(store):
    proc = run("apply", str(store), REQ, "--lexical", "--reject", NOTES, "--yes", code=1)
    assert "every target is rejected (dismiss the request to record that)" in proc.stderr
    run("dismiss", str(store), REQ, "--note", "the bees are my neighbour's", "--yes")
    assert state(store) == "dismissed"


def test_a_partial_request_with_nothing_left_is_closed_and_then_applied(store, tmp_path):
    """Both units struck by hand (Residue's S): partial, and nothing remains to apply."""
    session = Session.open(store, vectors=False)
    for text in (KEEP, CLAUSE):
        mention = next(m for m in session.residue("I keep bees") if m.kind == "live" and text[:-1] in m.text)
        session.strike(session.plan_strike(REQ, mention.path, mention.line, mention.text), mention.line,
                       mention.text)
        session.refresh()
    assert state(store) == "partial"
    proc = run("apply", str(store), REQ, "--lexical", "--yes", code=1)
    assert "nothing to apply" in proc.stderr  # as before: an apply has nothing to approve
    head = git(store, "rev-parse", "HEAD")
    dry = run("apply", str(store), REQ, "--lexical", "--close").stdout
    assert "re-run with --yes to close it" in dry and git(store, "rev-parse", "HEAD") == head

    run("apply", str(store), REQ, "--lexical", "--close", "--yes")
    assert state(store) == "applied"
    closing = ledger(store)[-1]
    assert closing["action"] == "apply" and closing["approved"] == [] and closing["complete"] is True
    assert closing["note"] == "closed: nothing remained to apply"
    assert closing["decided_by"] == "Test Author <author@example.test>"


def test_close_is_refused_while_something_remains_or_for_a_pending_request(store):
    proc = run("apply", str(store), REQ, "--lexical", "--close", "--yes", code=2)
    assert "is pending: only a partial request with nothing left to apply is closed" in proc.stderr
    session = Session.open(store, vectors=False)
    mention = next(m for m in session.residue("I keep bees") if m.kind == "live" and KEEP[:-1] in m.text)
    session.strike(session.plan_strike(REQ, mention.path, mention.line, mention.text), mention.line, mention.text)
    assert state(store) == "partial"
    head = git(store, "rev-parse", "HEAD")
    proc = run("apply", str(store), REQ, "--lexical", "--close", "--yes", code=2)
    assert "still has 1 live mention(s) (notes/allotment.md:8)" in proc.stderr
    assert git(store, "rev-parse", "HEAD") == head and state(store) == "partial"


def test_a_hand_strike_stopped_before_its_record_is_completed_by_recover(store):
    """The strike and its decision are one transaction: a stop between the commit and the ledger record is
    found by `recover`, which writes the record naming who struck it."""
    from palinode_core.forget import review
    from palinode_core.forget.txn import begin

    session = Session.open(store, vectors=False)
    mention = next(m for m in session.residue("I keep bees") if m.kind == "live" and KEEP[:-1] in m.text)
    plan = session.plan_strike(REQ, mention.path, mention.line, mention.text)
    entry = review.strike_intent(session.store, plan, mention.line, mention.text, None)
    txn = begin(session.store, entry, None)
    assert txn.run_step(0, plan)  # the commit landed; the process stops before the ledger record
    assert ledger(store) == []
    proc = run("recover", str(store), "--complete", "--yes")
    assert "completed" in proc.stdout
    [record] = ledger(store)
    assert (record["action"], record["path"], record["text"]) == ("strike", NOTES, mention.text)
    assert record["decided_by"] == "Test Author <author@example.test>" and record["approved"][0]["commit"]


def test_strike_and_flag_one_mention_from_the_command_line_as_residue_does(store):
    """Residue's S and f without the app: the mention as residue lists it (PATH:LINE, --text when the line holds
    several); each a decision in the ledger with who made it; an ambiguous or wrong mention writes nothing."""
    head = git(store, "rev-parse", "HEAD")
    proc = run("strike", str(store), REQ, f"{NOTES}:6", "--yes", code=2)
    assert "holds 2 live mention(s)" in proc.stderr and "--text picks one" in proc.stderr
    assert run("strike", str(store), REQ, f"{NOTES}:9", "--yes", code=2).stderr.count("\n") == 1
    dry = run("strike", str(store), REQ, f"{NOTES}:6", "--text", "I keep bees behind").stdout
    assert "would_strike" in dry and f"text: {KEEP}" in dry and "~~" in dry
    assert git(store, "rev-parse", "HEAD") == head and ledger(store) == []

    run("strike", str(store), REQ, f"{NOTES}:6", "--text", "I keep bees behind", "--yes")
    [record] = ledger(store)
    assert (record["action"], record["text"], record["decided_by"]) == ("strike", KEEP, "Test Author <author@example.test>")
    assert f"~~{KEEP}~~" in (store / NOTES).read_text() and state(store) == "partial"

    run("flag", str(store), REQ, f"{NOTES}:8", "--text", "The compost", "--note", "a clause: cut it by hand", "--yes")
    flag = ledger(store)[-1]
    assert (flag["action"], flag["request"], flag["note"]) == ("flag", REQ, "a clause: cut it by hand")


def test_residue_and_leaks_agree_on_frontmatter_mentions(tmp_path):
    """Issue 41: a preference named in a memory's name: or summary: is a surviving mention for Residue as for
    `leaks` (striking cannot reach frontmatter: unforgettable)."""
    root = make_git_store(tmp_path / "fm", {
        "projects/garden.md": palinode_file(
            {"id": "projects-garden", "name": "Keeping bees at home", "summary": "the hives I keep, and bees",
             "created_at": "2025-05-01T00:00:00+00:00"},
            "The allotment plan for spring. Compost, seeds and the fence."),
        REQ: palinode_file({"id": "insights-forget-bees", "created_at": "2025-06-01T00:00:00+00:00"},
                           "Please forget that I keep bees."),
    })
    residue = json.loads(run("--json", "residue", str(root), "--pref", "I keep bees").stdout)["mentions"]
    leaks = json.loads(run("--json", "leaks", str(root), REQ, "--lexical").stdout)
    leaked = {(m["path"], m["line"]) for m in leaks["checks"][0]["mentions"] if m["path"] == "projects/garden.md"}
    shown = {(m["path"], m["line"]) for m in residue if m["path"] == "projects/garden.md"}
    assert leaked and shown == leaked
    assert {m["kind"] for m in residue if m["path"] == "projects/garden.md"} == {"unforgettable"}
    assert any(m["text"].startswith("name: Keeping bees") for m in residue)


def test_report_to_dash_is_standard_output_not_a_file_named_dash(store, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "report", str(store), "--request", REQ, "--format",
                           "md", "-o", "-"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("# Forget audit report")
    assert not (tmp_path / "-").exists()
