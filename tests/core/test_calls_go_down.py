"""An apply goes only down the layers: the Session (the facade) calls forget,
ops and undo, and nothing they run calls back into session.py (no closure
handed down, no refresh of the facade's scan in the middle of a transaction).
Imports cannot show a call back up through a closure, so this watches the
calls themselves while the real writes run (docs/architecture.md)."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import test_possible
from helpers import Clock, make_git_store, palinode_file
from test_transactions import FILES, REQUEST

import palinode_core
from palinode_core.forget import review
from palinode_core.forget.txn import begin
from palinode_core.session import Session

CORE = Path(palinode_core.__file__).parent
BELOW = tuple(str(CORE / layer) + "/" for layer in ("forget", "ops", "undo"))
SESSION = str(CORE / "session.py")


def calls_back(work) -> list[str]:
    """Each call into session.py made while a function of forget/, ops/ or undo/ was running."""
    found: list[str] = []

    def watch(frame, event, _arg):
        if event != "call" or frame.f_code.co_filename != SESSION:
            return
        outer = frame.f_back
        while outer is not None:
            if outer.f_code.co_filename.startswith(BELOW):
                found.append(f"{frame.f_code.co_name} from {Path(outer.f_code.co_filename).name}:{outer.f_code.co_name}")
                return
            outer = outer.f_back

    sys.setprofile(watch)
    try:
        work()
    finally:
        sys.setprofile(None)
    return found


def calls_back_value(work):
    """What ``work`` returns, after asserting it made no call back into session.py."""
    kept = []
    assert calls_back(lambda: kept.append(work())) == []
    return kept[0]


def test_no_call_from_forget_ops_or_undo_back_into_the_session(tmp_path):
    root = make_git_store(tmp_path / "s", FILES)
    session = Session.open(root, vectors=False, clock=Clock(), resolver="palinode")
    session.update_index(vectors=False)
    fplan = session.plan(REQUEST, verified=False)
    assert fplan.actionable
    assert calls_back(lambda: session.apply_forget(fplan)) == []  # with its leak check, in the same commit
    assert session.decisions(REQUEST)[-1]["action"] == "residue"
    assert calls_back(lambda: session.apply(session.plan_undo(session.operations()[1]))) == []
    assert calls_back(lambda: session.apply_withdraw(session.plan_withdraw(REQUEST))) == []
    session.refresh()

    # a sentence struck by hand (the Residue screen's strike, `palinode-audit strike`)
    pref = session.decisions(REQUEST)[-1]["pref"]
    first, second = [m for m in session.residue(pref) if m.kind == "live"][:2]
    plan = session.plan_strike(REQUEST, first.path, first.line, first.text)
    assert calls_back(lambda: session.strike(plan, first.line, first.text)) == []
    assert session.decisions(REQUEST)[-1]["action"] == "strike"
    # and one stopped before its ledger record, completed by recover
    session.refresh()
    plan = session.plan_strike(REQUEST, second.path, second.line, second.text)
    txn = begin(session.store, review.strike_intent(session.store, plan, second.line, second.text, None), None)
    assert txn.run_step(0, plan)
    assert [r["result"] for r in calls_back_value(lambda: session.recover("complete"))] == ["completed"]
    assert session.decisions(REQUEST)[-1]["text"] == second.text

    fresh = Session.open(make_git_store(tmp_path / "t", FILES), vectors=False, clock=Clock(), resolver="palinode")
    fresh.update_index(vectors=False)
    approved = fresh.approve(fresh.plan(REQUEST, verified=False))
    assert calls_back(lambda: fresh.apply_saved(approved)) == []
    assert fresh.decisions(REQUEST)[-1]["action"] == "residue"


def test_confirming_a_possible_request_calls_only_down(tmp_path):
    files = {rel: palinode_file(test_possible.meta(rel, hour), body) for rel, (body, hour) in test_possible.FILES.items()}
    session = Session.open(make_git_store(tmp_path / "s", files), vectors=False, clock=Clock())
    cand = next(c for c in session.possible_requests() if c.path == "insights/berlin.md")
    plan = session.plan_confirm(cand.id, note="moved")
    assert calls_back(lambda: session.apply_confirm(plan)) == []
    assert session.decisions(plan.request)[-1]["action"] == "confirm_possible"


def test_every_module_and_function_the_apply_path_names_exists():
    """docs/architecture.md names the apply path module by module: each name is still there."""
    text = (CORE.parents[1] / "docs" / "architecture.md").read_text()
    named = re.findall(r"`([a-z_/]+\.py)` `([A-Za-z_.]+)`(?:, `([A-Za-z_]+)`)*", text)
    assert len(named) >= 15
    for module, name, *more in named:
        source = (CORE / module).read_text()
        for each in [name.split(".")[-1], *(m for m in more if m)]:
            assert re.search(rf"(def|class) {each}\b", source), f"{module} has no {each}"
