"""The Session: one store, its latest scan, request states computed once per
scan, and the store's config read again when its file changes."""
from __future__ import annotations

import json

import pytest

from helpers import git, make_git_store, palinode_file

from palinode_core.errors import PalinodeError
from palinode_core.session import Session

CONFIG = "consolidation:\n  forget:\n    max_targets: {n}\n    min_target_coverage: 0.2\n"


@pytest.fixture
def root(tmp_path):
    return make_git_store(tmp_path / "s", {
        "palinode.config.yaml": CONFIG.format(n=3),
        "insights/forget-tea.md": palinode_file({"id": "f"}, "Please forget that I drink oolong tea."),
        "people/me.md": palinode_file({"id": "me"}, "I drink oolong tea every morning."),
    })


def test_config_is_read_again_when_its_file_changes(root):
    session = Session.open(root)
    assert session.forget_knobs().max_targets == 3
    (root / "palinode.config.yaml").write_text(CONFIG.format(n=5) + "# a longer file\n")
    session.refresh({"palinode.config.yaml"})
    assert session.forget_knobs().max_targets == 5
    assert session.store.config.forget.min_target_coverage == 0.2


def test_a_broken_config_is_one_clear_error_read_with_the_defaults(root):
    """Issue 24, finding 8: what a fresh open would read (Palinode's defaults), said in
    config_error; writes wait until it is fixed."""
    session = Session.open(root)
    (root / "palinode.config.yaml").write_text("consolidation: [unclosed\n")
    assert session.reload_config()
    assert str(session.store.config_error).startswith("palinode.config.yaml cannot be read")
    assert session.store.config.forget.max_targets == 2
    with pytest.raises(PalinodeError, match="fix it before changing the store"):
        session.store.check_writable()
    (root / "palinode.config.yaml").write_text(CONFIG.format(n=4))
    assert session.reload_config() and session.forget_knobs().max_targets == 4


def test_request_states_are_computed_once_per_scan(root):
    session = Session.open(root)
    first = session.request_states()
    assert [s.state for s in first] == ["pending"]
    assert session.request_states() is first  # same scan: the cached list
    (root / "insights/forget-tea.md").write_text(palinode_file({"id": "f", "status": "archived"},
                                                               "Please forget that I drink oolong tea."))
    session.refresh({"insights/forget-tea.md"})
    again = session.request_states()
    assert again is not first and [s.state for s in again] == ["withdrawn"]


def test_an_as_yet_unscanned_session_scans_on_first_use(root):
    session = Session.open(root)
    assert session.latest is None
    assert set(session.memories) == {"insights/forget-tea.md", "people/me.md"}
    assert session.latest is not None


def test_the_leak_check_is_committed_with_the_decision_in_one_ledger_commit(root, tmp_path):
    """One transaction: the apply's record and the leak check of the store it left land together."""
    (root / "notes").mkdir()
    (root / "notes/tea.md").write_text(palinode_file({"id": "tea"}, "# I drink oolong tea\n\nShopping list.\n"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a heading that cannot be struck")
    session = Session.open(root, vectors=False, cache_dir=tmp_path / "cache")
    session.update_index()
    applied = session.apply_forget(session.plan("insights/forget-tea.md"))
    assert applied.commits and git(root, "rev-parse", "HEAD").strip() == applied.ledger_commit
    added = [line for line in git(root, "show", "--format=", applied.ledger_commit).splitlines()
             if line.startswith("+{")]
    records = [json.loads(line[1:]) for line in added]
    assert [r["action"] for r in records] == ["apply", "residue"]
    residue = records[1]
    assert residue["request"] == "insights/forget-tea.md"
    assert any(m["path"] == "notes/tea.md" and m["kind"] == "unforgettable" for m in residue["mentions"])


def test_a_forged_retract_commit_naming_another_file_does_not_change_a_state(root):
    """Only a strike by hand in a memory struck for the request now makes it partial."""
    git(root, "commit", "-q", "--allow-empty", "-m",
        "palinode retract: x.md (1 mentions)\n\nForget-Request: insights/forget-tea.md")
    session = Session.open(root, vectors=False)
    session.apply(session.plan_op("retract", "people/me.md", pref="I drink oolong tea"))
    [state] = Session.open(root, vectors=False).request_states()
    assert state.struck_targets == ("people/me.md",) and state.state == "applied"
