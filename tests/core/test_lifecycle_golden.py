"""Byte-compatibility with Palinode 0.23 on the spec's worked examples."""
from __future__ import annotations

from datetime import datetime, timezone

import frontmatter
import pytest

from helpers import MOONRISE, Clock, git, make_git_store, palinode_file, subjects
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.storage.store import Store
from palinode_core.text.words import retraction_id

MOONRISE_META = {"id": "projects-moonrise-closeout", "category": "projects", "type": "ProjectSnapshot",
                 "created_at": "2025-06-01T10:00:00+00:00"}


def palinode_rewrite(text: str, **changes) -> str:
    """What Palinode's lifecycle ops write: python-frontmatter's dump + newline."""
    post = frontmatter.loads(text)
    for key, value in changes.items():
        if value is None:
            post.metadata.pop(key, None)
        else:
            post[key] = value
    return frontmatter.dumps(post) + "\n"


@pytest.fixture
def moonrise(tmp_path):
    root = make_git_store(tmp_path / "store", {
        "projects/moonrise-closeout.md": palinode_file(MOONRISE_META, MOONRISE),
    })
    return root


def test_retraction_id_matches_the_spec():
    assert retraction_id("I know Wilhelmina Cragg") == "bcb56233"
    assert retraction_id("  i KNOW wilhelmina   cragg ") == "bcb56233"


def test_retract_then_withdraw_writes_palinode_bytes(moonrise):
    clock = Clock()
    store = Store(moonrise, clock=clock)
    rel = "projects/moonrise-closeout.md"
    original = (moonrise / rel).read_text()

    plan = lifecycle.plan_retract(store, rel, "I know Wilhelmina Cragg", superseded_by="insights/forget-w.md")
    assert plan.status == "would_retract" and plan.mentions == 2 and plan.rid == "bcb56233"
    apply(store, plan)

    struck_body = MOONRISE.replace(
        "Handed the judging workflow to Wilhelmina Cragg after the June stage flood.",
        "~~Handed the judging workflow to Wilhelmina Cragg after the June stage flood.~~ "
        "[RETRACTED 2025-06-01 r:bcb56233].",
    ).replace(
        "Next steps: schedule retrospective, publish judging rubric, confirm pavilion contract renewal, "
        "decommission obsolete submission portals, rotate the shared credentials, document the escalation "
        "path Wilhelmina proposed during cleanup.",
        "~~Next steps: schedule retrospective, publish judging rubric, confirm pavilion contract renewal, "
        "decommission obsolete submission portals, rotate the shared credentials, document the escalation "
        "path Wilhelmina proposed during cleanup.~~ [RETRACTED 2025-06-01 r:bcb56233].",
    )
    assert struck_body.count("[RETRACTED") == 2
    expected = palinode_rewrite(original, retracted_prefs=["i know wilhelmina cragg"])
    expected = expected.replace(MOONRISE, struck_body)
    assert (moonrise / rel).read_text() == expected
    assert subjects(moonrise)[0] == (
        "palinode retract: projects/moonrise-closeout.md (2 mentions) <- insights/forget-w.md")
    # exactly the file and its sibling in the commit
    assert sorted(git(moonrise, "show", "--name-only", "--format=", "HEAD").split()) == [
        "projects/moonrise-closeout-history.md", rel]

    clock.when = datetime(2025, 6, 2, 9, 0, tzinfo=timezone.utc)
    undo = lifecycle.plan_unretract(store, rel, "I know Wilhelmina Cragg",
                                    reason='forget request withdrawn: "I know Wilhelmina Cragg"')
    assert undo.mentions == 2
    apply(store, undo)
    assert (moonrise / rel).read_text() == original
    assert (moonrise / "projects/moonrise-closeout-history.md").read_text() == (
        "---\ncategory: history\ncore: false\nstatus: archived\n---\n\n# History\n\n"
        '- [2025-06-01 11:00] Retracted 2 mention(s) [r:bcb56233]: "I know Wilhelmina Cragg" \u2014 superseded by '
        "insights/forget-w.md <!-- fact:projects-moonrise-closeout -->\n"
        '- [2025-06-02 09:00] Unretracted 2 mention(s) [r:bcb56233]: "I know Wilhelmina Cragg" (reason: forget '
        'request withdrawn: "I know Wilhelmina Cragg") <!-- fact:projects-moonrise-closeout -->\n'
    )
    assert subjects(moonrise)[0] == "palinode unretract: projects/moonrise-closeout.md (2 mentions)"


def test_lowercase_pref_has_no_entity_tokens_and_strikes_less(moonrise):
    store = Store(moonrise, clock=Clock())
    plan = lifecycle.plan_retract(store, "projects/moonrise-closeout.md", "i know  wilhelmina cragg")
    assert plan.mentions == 1


SNEAKERS_BODY = (
    "I like tea. Started collecting vintage\nsneakers in college. The end.\n\n"
    "- Bought vintage sneakers twice <!-- fact:abc123 -->\n"
    "1. Numbered vintage sneakers item.\n"
    "# vintage sneakers heading\n"
    "> Quoted vintage sneakers line."
)


def test_sneakers_example_exact_bytes_and_unforgotten_heading(tmp_path):
    root = make_git_store(tmp_path / "s", {"insights/sneaks.md": palinode_file({"id": "insights-sneaks"}, SNEAKERS_BODY)})
    store = Store(root, clock=Clock())
    plan = lifecycle.plan_retract(store, "insights/sneaks.md", "I collect vintage sneakers")
    assert [r.kind for r in plan.regions] == ["heading"]
    apply(store, plan)
    assert (root / "insights/sneaks.md").read_text() == (
        "---\nid: insights-sneaks\nretracted_prefs:\n- i collect vintage sneakers\n---\n\n"
        "I like tea. ~~Started collecting vintage\n"
        "sneakers in college.~~ [RETRACTED 2025-06-01 r:ea106bc2]. The end.\n\n"
        "- ~~Bought vintage sneakers twice~~ [RETRACTED 2025-06-01 r:ea106bc2]. <!-- fact:abc123 -->\n"
        "1. ~~Numbered vintage sneakers item.~~ [RETRACTED 2025-06-01 r:ea106bc2].\n"
        "# vintage sneakers heading\n"
        "~~> Quoted vintage sneakers line.~~ [RETRACTED 2025-06-01 r:ea106bc2].\n"
    )
    apply(store, lifecycle.plan_unretract(store, "insights/sneaks.md", "I collect vintage sneakers"))
    assert (root / "insights/sneaks.md").read_text() == palinode_file({"id": "insights-sneaks"}, SNEAKERS_BODY)


def test_user_strikethrough_on_the_same_line_survives_unretract(tmp_path):
    body = "We ~~thought~~ knew it. Alice lives in Paris. She likes tea."
    root = make_git_store(tmp_path / "s", {"people/a.md": palinode_file({"id": "a"}, body)})
    store = Store(root, clock=Clock())
    plan = lifecycle.plan_retract(store, "people/a.md", "I know Alice Lives")
    apply(store, plan)
    text = (root / "people/a.md").read_text()
    assert "We ~~thought~~ knew it. ~~Alice lives in Paris.~~ [RETRACTED 2025-06-01 r:" in text
    apply(store, lifecycle.plan_unretract(store, "people/a.md", "I know Alice Lives"))
    assert (root / "people/a.md").read_text() == palinode_file({"id": "a"}, body)


def test_archive_and_restore_on_canonical_file_match_palinode(tmp_path):
    meta = {"id": "insights-pref-tea", "category": "insights", "created_at": "2025-05-01T08:00:00+00:00"}
    root = make_git_store(tmp_path / "s", {"insights/pref-tea.md": palinode_file(meta, "I drink oolong tea daily.")})
    clock = Clock()
    store = Store(root, clock=clock)
    rel = "insights/pref-tea.md"
    original = (root / rel).read_text()
    plan = lifecycle.plan_archive(store, rel, superseded_by="insights/forget-tea.md",
                                  reason='forget request: "I drink tea"')
    apply(store, plan)
    assert (root / rel).read_text() == palinode_rewrite(original, status="archived",
                                                        superseded_by="insights/forget-tea.md")
    assert subjects(root)[0] == "palinode supersede: insights/pref-tea.md -> insights/forget-tea.md"
    assert (root / "insights/pref-tea-history.md").read_text().endswith(
        '- [2025-06-01 11:00] Superseded by insights/forget-tea.md (reason: forget request: "I drink tea") '
        "<!-- fact:insights-pref-tea -->\n")
    archived = (root / rel).read_text()

    clock.when = datetime(2025, 6, 2, 9, 0, tzinfo=timezone.utc)
    apply(store, lifecycle.plan_restore(store, rel))
    assert (root / rel).read_text() == palinode_rewrite(
        archived, status="active", superseded_by=None, restored_from="insights/forget-tea.md",
        restored_at="2025-06-02T09:00:00+00:00")
    assert subjects(root)[0] == "palinode restore: insights/pref-tea.md <- insights/forget-tea.md"
    assert "Restored: insights/pref-tea.md (was superseded by insights/forget-tea.md)" in (
        root / "insights/pref-tea-history.md").read_text()


def test_plain_archive_subject_and_line(tmp_path):
    root = make_git_store(tmp_path / "s", {"insights/x.md": palinode_file({"id": "insights-x"}, "x")})
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_archive(store, "insights/x.md", reason="stale", actor="lint"))
    assert subjects(root)[0] == "palinode archive: insights/x.md (actor: lint)"
    assert "Archived: insights/x.md (reason: stale) [actor: lint] <!-- fact:insights-x -->" in (
        root / "insights/x-history.md").read_text()
    again = lifecycle.plan_archive(store, "insights/x.md")
    assert again.status == "already_archived" and not again.changes
    apply(store, lifecycle.plan_restore(store, "insights/x.md"))
    assert subjects(root)[0] == "palinode restore: insights/x.md"
    assert "Restored: insights/x.md (was archived)" in (root / "insights/x-history.md").read_text()


def test_commit_prefix_comes_from_store_config(tmp_path):
    root = make_git_store(tmp_path / "s", {
        "insights/x.md": palinode_file({"id": "x"}, "x"),
        "palinode.config.yaml": "git:\n  commit_prefix: memory\n",
    })
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_archive(store, "insights/x.md"))
    assert subjects(root)[0] == "memory archive: insights/x.md"


def test_history_sibling_of_status_file_and_legacy_sibling(tmp_path):
    root = make_git_store(tmp_path / "s", {
        "projects/foo-status.md": palinode_file({"id": "projects-foo-status"}, "Alice Smith joined."),
        "projects/foo-history.md": "---\ncategory: history\n---\n\n# History\n\n- [2030-01-01 00:00] old <!-- fact:x -->\n",
    })
    store = Store(root, clock=Clock())
    plan = lifecycle.plan_retract(store, "projects/foo-status.md", "I know Alice Smith")
    assert plan.history_rel == "projects/foo-history.md"
    apply(store, plan)
    text = (root / "projects/foo-history.md").read_text()
    assert text.startswith("---\ncategory: history\nstatus: archived\n---\n")
    assert text.count("\n- [") == 2
