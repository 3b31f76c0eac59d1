"""A reviewer's approval holds for what was shown (issue 24, finding 7): the
target's route and its file's content. A re-plan that routes it otherwise, or
a file changed since, makes it wait for the reviewer again; a draft naming
sentence numbers the plan does not have is looked at again, never applied
silently short."""

from __future__ import annotations

from helpers import Clock, git, make_git_store, palinode_file

from palinode_core.session import Session
from palinode_tui.drafts import Draft, TargetDraft

FILES = {
    "projects/weekly.md": palinode_file({"id": "weekly", "created_at": "2025-05-02T10:00:00+00:00"},
                                        "The printer was fixed. I keep bees in the back garden. Invoices are due."),
    "insights/forget-bees.md": palinode_file({"id": "forget-bees", "created_at": "2025-05-20T10:00:00+00:00"},
                                             "Please forget that I keep bees."),
}
REQUEST = "insights/forget-bees.md"


def _plan(root):
    session = Session.open(root, clock=Clock(), vectors=False)
    index = session.search_index()
    index.update_lexical(memories=session.memories)
    return session.plan(REQUEST, index=index)


def test_an_approval_does_not_survive_a_change_of_what_was_shown(tmp_path):
    root = make_git_store(tmp_path / "s", FILES)
    plan = _plan(root)
    cand = next(c for c in plan.actionable if c.path == "projects/weekly.md")
    draft = Draft(REQUEST, plan.request.rid)
    if draft.approved(cand):
        draft.toggle(cand)  # skip, then approve: an explicit approval of what is shown
    draft.toggle(cand)
    assert draft.approved(cand) is True and draft.mark(cand) != "changed"
    assert draft.reconcile(_plan(root)) == []  # the same plan again: the approval stands

    (root / "projects/weekly.md").write_text(FILES["projects/weekly.md"].replace("Invoices", "All invoices"))
    git(root, "commit", "-qam", "an edit since the review")
    again = _plan(root)
    assert draft.reconcile(again) == ["projects/weekly.md"]
    moved = next(c for c in again.actionable if c.path == "projects/weekly.md")
    assert draft.mark(moved) == "changed" and "projects/weekly.md" not in draft.selection(list(again.actionable))


def test_impossible_sentence_numbers_are_looked_at_again(tmp_path):
    root = make_git_store(tmp_path / "s", FILES)
    plan = _plan(root)
    cand = next(c for c in plan.actionable if c.path == "projects/weekly.md")
    draft = Draft(REQUEST, plan.request.rid, {"projects/weekly.md": TargetDraft.from_json(
        {"approved": True, "spans": [7, 9], "texts": [], "fingerprint": cand.plan.fingerprint})})
    assert draft.reconcile(plan) == ["projects/weekly.md"] and draft.mark(cand) == "changed"
