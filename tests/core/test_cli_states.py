"""The review is the truth (issue 12): every request-state transition through
``palinode-audit``, refusals that write nothing (no commit, no ledger record,
the state as it was), undone operations marked, and redo re-applying exactly
what was approved."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import MOONRISE, Clock, git, make_git_store, palinode_file

from palinode_core.forget.selection import Choice
from palinode_core.session import Session
from palinode_core.storage.store import Store
from palinode_core.text.markdown import struck_spans

REQ = "insights/forget-w.md"
NOTE, FAIR, MOON = "notes/lunch.md", "people/w.md", "projects/moonrise-closeout.md"
LEDGER = ".palinode-audit/ledger.jsonl"


def fm(id_: str, created: str) -> dict:
    return {"id": id_, "created_at": created}


@pytest.fixture
def store(tmp_path) -> Path:
    """Lexical search with the thorough resolver plans three pre-approved
    targets: two archives and one strike."""
    return make_git_store(tmp_path / "s", {
        MOON: palinode_file(fm("projects-moonrise-closeout", "2025-05-01T00:00:00+00:00"), MOONRISE),
        FAIR: palinode_file(fm("people-w", "2025-05-01T00:00:00+00:00"),
                            "Met Wilhelmina Cragg at the fair; she judges the Moonrise panel."),
        NOTE: palinode_file(fm("notes-lunch", "2025-05-01T00:00:00+00:00"),
                            "Lunch with Wilhelmina Cragg was fun. She ordered the soup."),
        REQ: palinode_file(fm("insights-forget-w", "2025-06-01T00:00:00+00:00"),
                           "Please forget that I know Wilhelmina Cragg."),
    })


def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True)
    assert proc.returncode == code, (proc.returncode, proc.stdout[-2000:], proc.stderr)
    return proc


def jrun(*args: str) -> dict:
    return json.loads(run("--json", *args).stdout)


def state(root: Path) -> str:
    [request] = jrun("requests", str(root))["requests"]
    return request["state"]


def apply(root: Path, *extra: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    return run("--json", "apply", str(root), REQ, "--lexical", "--yes", *extra, code=code)


def ops(root: Path) -> dict[tuple[str, str], dict]:
    """The newest operation of each (op, path)."""
    out: dict[tuple[str, str], dict] = {}
    for o in jrun("operations", str(root))["operations"]:
        out.setdefault((o["op"], o["path"]), o)
    return out


def snapshot(root: Path) -> tuple[str, str, str]:
    """What a refusal must leave as it was: the commit count, the ledger and the worktree."""
    ledger = root / LEDGER
    return (git(root, "rev-list", "--count", "HEAD"), ledger.read_text() if ledger.exists() else "",
            git(root, "status", "--porcelain"))


def refused(root: Path, args: list[str], code: int, *words: str) -> str:
    before, was = snapshot(root), state(root)
    proc = run(*args, code=code)
    assert proc.stdout == "" and proc.stderr.startswith("palinode-audit: ") and proc.stderr.count("\n") == 1
    assert all(w in proc.stderr for w in words), proc.stderr
    assert snapshot(root) == before and state(root) == was
    return proc.stderr


def test_only_naming_no_target_is_a_usage_error_that_writes_nothing(store):
    line = refused(store, ["apply", str(store), REQ, "--lexical", "--yes", "--only", "nope.md", NOTE], 2,
                   "nope.md", NOTE, FAIR, MOON, "nothing was changed")
    assert "not a target" in line and state(store) == "pending"
    assert git(store, "rev-list", "--count", "HEAD") == "1\n" and not (store / LEDGER).exists()


def test_every_state_transition_and_what_each_refusal_leaves(store):
    s = str(store)
    assert state(store) == "pending"
    # the user's own edit to a target: the plan warns, the apply refuses and commits nothing of theirs
    (store / NOTE).write_text((store / NOTE).read_text() + "My own note.\n")
    plan = jrun("plan", s, REQ, "--lexical")
    assert plan["warnings"] == [f"{NOTE} has uncommitted edits: commit or stash them first; apply refuses"]
    assert f"warning: {NOTE} has uncommitted edits" in run("plan", s, REQ, "--lexical").stdout
    refused(store, ["apply", s, REQ, "--lexical", "--yes"], 1, f"commit or stash your edits to {NOTE} first")
    git(store, "checkout", "--", NOTE)
    assert jrun("plan", s, REQ, "--lexical")["warnings"] == []

    # pending -> partial: a subset approved, the rest left for later
    done = json.loads(apply(store, "--only", FAIR).stdout)
    assert [c["path"] for c in done["commits"]] == [FAIR] and sorted(done["deferred"]) == [NOTE, MOON]
    assert state(store) == "partial"
    # a refusal while partial changes neither the state nor the ledger
    (store / MOON).write_text((store / MOON).read_text() + "Draft.\n")
    refused(store, ["apply", s, REQ, "--lexical", "--yes"], 1, f"commit or stash your edits to {MOON} first")
    git(store, "checkout", "--", MOON)

    # partial -> applied: the rest approved
    apply(store)
    assert state(store) == "applied"
    # nothing left to apply: refused, no empty ledger record
    refused(store, ["apply", s, REQ, "--lexical", "--yes"], 1, "nothing to apply", "no target would change")

    # applied -> partial -> pending: undo one operation, then every one
    applied = ops(store)
    run("undo", s, applied[("retract", MOON)]["commit"][:10], "--yes")
    assert state(store) == "partial"
    run("undo", s, applied[("supersede", FAIR)]["commit"], "--yes")
    run("undo", s, applied[("supersede", NOTE)]["commit"], "--yes")
    [request] = jrun("requests", s)["requests"]
    assert request["state"] == "pending" and request["last_decision"]["action"] == "apply"  # its history stays
    assert request["archived_targets"] == [] and request["struck_targets"] == []
    marked = {c: o for o in jrun("operations", s)["operations"] for c in [o["commit"]]}
    for key in (("retract", MOON), ("supersede", FAIR), ("supersede", NOTE)):
        original = marked[applied[key]["commit"]]
        assert original["undone_by"] and original["undone_at"] and original["redone_by"] is None
        undo = marked[original["undone_by"]]
        assert undo["path"] == key[1] and undo["trailers"]["Undoes"] == original["commit"]
    listing = run("operations", s).stdout
    assert listing.count("undone ") == 3
    refused(store, ["undo", s, applied[("retract", MOON)]["commit"]], 1, "already undone", "redo it instead")

    # pending -> partial -> applied: redo re-applies what was approved
    run("redo", s, applied[("retract", MOON)]["commit"], "--yes")
    assert state(store) == "partial"
    run("redo", s, applied[("supersede", FAIR)]["commit"], "--yes")
    run("redo", s, applied[("supersede", NOTE)]["commit"], "--yes")
    assert state(store) == "applied"
    refused(store, ["redo", s, applied[("supersede", NOTE)]["commit"]], 1, "already redone")
    refused(store, ["redo", s, "abcdef12"], 2, "no archive, restore, retract or unretract in commit abcdef12")

    # applied in full: a dismissal would hide what stands; withdraw first
    refused(store, ["dismiss", s, REQ, "--note", "n", "--yes"], 2, "withdraw it first")
    # applied -> withdrawn
    assert jrun("withdraw", s, REQ, "--yes")["status"] == "withdrawn"
    assert state(store) == "withdrawn"
    head = git(store, "rev-parse", "HEAD")
    again = jrun("withdraw", s, REQ, "--yes")  # nothing left: says so, records nothing
    assert "nothing to withdraw, nothing recorded" in again["message"] and again["ledger_commit"] is None
    assert git(store, "rev-parse", "HEAD") == head
    assert jrun("integrity", s)["ok"] is True and git(store, "status", "--porcelain") == ""


@pytest.mark.parametrize("first", ["nothing", "part"])
def test_any_state_can_be_dismissed(store, first):
    if first == "part":
        apply(store, "--only", NOTE)
        assert state(store) == "partial"
    run("dismiss", str(store), REQ, "--note", "not this one", "--yes")
    assert state(store) == "dismissed"
    # a leak check or a flag recorded later decides nothing: still dismissed
    run("leaks", str(store), REQ, "--lexical", "--record")
    assert state(store) == "dismissed"


def same_but_the_date(a: str, b: str) -> bool:
    """The CLI runs on today's clock, the first apply on the test's."""
    date = re.compile(r"RETRACTED \d{4}-\d{2}-\d{2}")
    return date.sub("RETRACTED D", a) == date.sub("RETRACTED D", b)


def narrowed_store(tmp_path: Path, body: str) -> tuple[Path, Session]:
    root = make_git_store(tmp_path / "n", {
        "people/ann.md": palinode_file(fm("people-ann", "2025-05-01T00:00:00+00:00"), body),
        "insights/forget-ann.md": palinode_file(fm("insights-forget-ann", "2025-06-01T00:00:00+00:00"),
                                                "Please forget that I know Ann Lee."),
    })
    return root, Session(Store(root, clock=Clock()), vectors=False)


_REST = " We bought bread. The bus was late. The park was green. Music played loud. Ann Lee likes oolong tea."
REDO_BODIES = {
    "palinode": "I met Ann Lee at school. Ann Lee likes oolong tea. The weather held; Ann Lee ran home.",
    "thorough": "I know Ann Lee from school, but the bakery closed early." + _REST,
    "thorough-closing": "The bakery closed early, but I know Ann Lee from school." + _REST,
    "thorough-list-item": "Errands.\n\n- The bakery closed early, but I know Ann Lee from school.\n-"
    + "\n-".join(_REST.split(".")[:-1]) + ".\n",
    "thorough-list-item-sentence": "Errands.\n\n- The bakery closed early. I know Ann Lee from school. We left.\n-"
    + "\n-".join(_REST.split(".")[:-1]) + ".\n",
}


@pytest.mark.parametrize("case", list(REDO_BODIES))
def test_redo_strikes_exactly_the_approved_spans(tmp_path, case):
    """One sentence of three approved (Palinode's walker), or a leading or
    closing clause, of a sentence or a list item (the thorough resolver): the
    undo unstrikes it, the redo strikes that again and nothing more, and a
    file changed under it refuses the redo."""
    resolver = case.split("-")[0]
    body = REDO_BODIES[case]
    root, session = narrowed_store(tmp_path, body)
    knobs = session.forget_knobs().with_overrides(min_target_coverage=0.9)
    plan = session.plan("insights/forget-ann.md", knobs, index=session.update_index(), resolver=resolver)
    cand = plan.candidate("people/ann.md")
    assert cand.route == "strike" and len(cand.plan.spans) >= 2
    chosen = cand.plan.spans[0] if resolver == "thorough" else cand.plan.spans[1]
    if resolver == "thorough":
        assert chosen.kind == "clause"
    session.apply_forget(plan, {"people/ann.md": Choice(spans=frozenset({chosen.index}))})
    applied_text = (root / "people/ann.md").read_text()
    struck_then = [s.text for s in struck_spans(applied_text)]
    assert struck_then == [chosen.text]
    op = next(o for o in session.operations() if o.op == "retract")
    run("undo", str(root), op.commit, "--yes")
    assert "~~" not in (root / "people/ann.md").read_text()
    dry = jrun("redo", str(root), op.commit, "--dry-run")
    assert dry["applied"] is False and dry["mentions"] == 1 and dry["trailers"]["Redoes"] == op.commit
    run("redo", str(root), op.commit, "--yes")
    assert same_but_the_date((root / "people/ann.md").read_text(), applied_text)
    assert {s.path: s.state for s in Session(Store(root)).request_states()}["insights/forget-ann.md"] == "applied"
    # undone again, then the sentence it struck is edited away: the redo is refused, nothing written
    redo = next(o for o in Session(Store(root)).operations() if o.op == "retract")
    run("undo", str(root), redo.commit, "--yes")
    (root / "people/ann.md").write_text((root / "people/ann.md").read_text().replace(chosen.text[:12], "Someone"))
    git(root, "commit", "-qam", "hand edit")
    head = git(root, "rev-parse", "HEAD")
    proc = run("redo", str(root), redo.commit, "--yes", code=1)
    assert "cannot find exactly the sentence it struck" in proc.stderr and git(root, "rev-parse", "HEAD") == head


def test_undoing_one_of_two_strikes_under_the_same_id_unstrikes_only_its_own(tmp_path):
    """A sentence struck by hand (Residue's S: again=True) joins an approved
    strike under the same id: undoing either commit unstrikes only what that
    commit struck, and the other stays in force (not silently undone too)."""
    root, session = narrowed_store(tmp_path, "I met Ann Lee at school. The soup was cold. Ann Lee likes oolong tea.")
    knobs = session.forget_knobs().with_overrides(min_target_coverage=0.9)
    plan = session.plan("insights/forget-ann.md", knobs, index=session.update_index(), resolver="palinode")
    first = plan.candidate("people/ann.md").plan.spans[0]
    session.apply_forget(plan, {"people/ann.md": Choice(spans=frozenset({first.index}))})
    line = next(i for i, t in enumerate((root / "people/ann.md").read_text().splitlines(), 1) if "oolong" in t)
    session = Session(Store(root, clock=Clock()), vectors=False)
    session.apply(session.plan_strike("insights/forget-ann.md", "people/ann.md", line, "Ann Lee likes oolong tea."))
    by_hand, approved = [o for o in session.operations() if o.op == "retract"]
    for undone, kept in ((by_hand, approved), (approved, by_hand)):
        session = Session(Store(root, clock=Clock()), vectors=False)
        undo = session.plan_undo(session.operation(undone.commit))
        assert undo.mentions == 1
        session.apply(undo)
        text = (root / "people/ann.md").read_text()
        assert [s.text for s in struck_spans(text)] == [
            "I met Ann Lee at school." if kept is approved else "Ann Lee likes oolong tea."]
        assert "- i know ann lee" in text  # the record stays while a strike of the pref does
        marks = {o.commit: o for o in Session(Store(root)).operations()}
        assert marks[undone.commit].undone and not marks[kept.commit].undone
        run("redo", str(root), undone.commit, "--yes")
        assert len(struck_spans((root / "people/ann.md").read_text())) == 2


def test_a_sentence_struck_by_hand_leaves_an_unapplied_request_partial(tmp_path):
    """Residue's S strikes one sentence for a pending request: nothing the
    review planned was approved, so the request is partial, not applied."""
    root, session = narrowed_store(tmp_path, "I met Ann Lee at school. The soup was cold. Ann Lee likes oolong tea.")
    (root / "notes").mkdir()
    (root / "notes/b.md").write_text(palinode_file(fm("notes-b", "2025-05-01T00:00:00+00:00"),
                                                   "Ann Lee called about the fair."))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "another memory")
    session = Session(Store(root, clock=Clock()), vectors=False)
    assert [s.state for s in session.request_states()] == ["pending"]
    line = next(i for i, t in enumerate((root / "people/ann.md").read_text().splitlines(), 1) if "oolong" in t)
    session.apply(session.plan_strike("insights/forget-ann.md", "people/ann.md", line, "Ann Lee likes oolong tea."))
    assert [s.state for s in Session(Store(root)).request_states()] == ["partial"]


def test_undoing_an_unretract_strikes_again_only_what_it_unstruck(tmp_path):
    """One sentence of two approved and struck, then unretracted (Palinode's
    way, or ours): its undo strikes that sentence again, not every mention."""
    root, session = narrowed_store(tmp_path, "I met Ann Lee at school. The soup was cold. Ann Lee likes oolong tea.")
    knobs = session.forget_knobs().with_overrides(min_target_coverage=0.9)
    plan = session.plan("insights/forget-ann.md", knobs, index=session.update_index(), resolver="palinode")
    first = plan.candidate("people/ann.md").plan.spans[0]
    session.apply_forget(plan, {"people/ann.md": Choice(spans=frozenset({first.index}))})
    struck = (root / "people/ann.md").read_text()
    session = Session(Store(root, clock=Clock()), vectors=False)
    session.apply(session.plan_op("unretract", "people/ann.md", pref="I know Ann Lee"))
    unretract = next(o for o in session.operations() if o.op == "unretract")
    undo = session.plan_undo(unretract)
    assert undo.mentions == 1
    session.apply(undo)
    assert (root / "people/ann.md").read_text() == struck
