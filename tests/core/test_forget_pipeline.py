"""The forget pipeline on a store built from the spec's fixture texts."""
from __future__ import annotations

import json

import pytest

from helpers import MOONRISE, Clock, git, make_git_store, palinode_file, subjects
from palinode_core.errors import StalePlan, UncommittedEdits
from palinode_core.forget import resolve, review
from palinode_core.forget.selection import REJECT, Choice
from palinode_core.session import Session
from palinode_core.undo import withdraw
from palinode_core.storage.config import ForgetKnobs
from palinode_core.search.index import SearchIndex
from palinode_core.storage.store import Store

model, one_worker = pytest.mark.model, pytest.mark.xdist_group("model")  # on every test that takes `opened`

FAIR = "Met Wilhelmina Cragg at the fair; she judges the Moonrise panel."


def fm(rel: str, created: str, **extra) -> dict:
    category, stem = rel.split("/")
    return {"id": f"{category}-{stem[:-3]}", "category": category, "created_at": created, **extra}


STORE_FILES = {
    "projects/moonrise-closeout.md": (MOONRISE, "2025-05-20T10:00:00+00:00"),
    "people/wilhelmina-fair.md": (FAIR, "2025-05-21T10:00:00+00:00"),
    "insights/pref-sneakers.md": ("I collect vintage sneakers and track new sneaker drops every week.",
                                  "2025-05-22T10:00:00+00:00"),
    "insights/pref-tea.md": ("I drink oolong tea every morning before work.", "2025-05-22T11:00:00+00:00"),
    "insights/forget-w.md": ("Please forget that I know Wilhelmina Cragg.", "2025-06-01T10:00:00+00:00"),
}


@pytest.fixture
def spec_store(tmp_path):
    files = {rel: palinode_file(fm(rel, created), body) for rel, (body, created) in STORE_FILES.items()}
    return make_git_store(tmp_path / "store", files)


@pytest.fixture
def opened(spec_store, embedder, tmp_path):
    store = Store(spec_store, clock=Clock())
    index = SearchIndex(store, embedder, cache_dir=tmp_path / "cache")
    index.update()
    assert index.vectors_ready
    return store, index


@model
@one_worker
def test_plan_routes_as_the_spec(opened):
    store, index = opened
    fplan = Session(store, resolver="palinode").plan("insights/forget-w.md", index=index)
    assert fplan.request.pref == "I know Wilhelmina Cragg" and fplan.request.rid == "bcb56233"
    targets = {c.path: c for c in fplan.targets}
    assert set(targets) == {"people/wilhelmina-fair.md", "projects/moonrise-closeout.md"}
    fair, moon = targets["people/wilhelmina-fair.md"], targets["projects/moonrise-closeout.md"]
    assert round(fair.coverage, 4) == 0.2857 and fair.route == "archive"
    assert round(moon.coverage, 4) == 0.0282 and moon.route == "strike"
    assert moon.plan.mentions == 2
    assert set(fair.shared_words) == {"wilhelmina", "cragg"}
    # the request itself is never a target
    assert all(c.path != "insights/forget-w.md" for c in fplan.candidates)


@model
@one_worker
def test_knobs_reroute_without_searching_again(opened):
    store, index = opened
    fplan = Session(store, resolver="palinode").plan("insights/forget-w.md", index=index)
    calls = []
    original = index.search
    index.search = lambda *a, **k: calls.append(a) or original(*a, **k)
    zero = resolve.route(store, fplan.resolution, fplan.knobs.with_overrides(min_target_coverage=0.0), store.scan().memories)
    assert {c.path: c.route for c in zero.targets}["projects/moonrise-closeout.md"] == "archive"
    high = resolve.route(store, fplan.resolution, fplan.knobs.with_overrides(min_target_coverage=0.5), store.scan().memories)
    assert {c.path: c.route for c in high.targets}["people/wilhelmina-fair.md"] == "strike"
    capped = resolve.route(store, fplan.resolution, fplan.knobs.with_overrides(max_targets=1), store.scan().memories)
    assert [c.route for c in capped.candidates].count("not_taken") == 1
    strict = resolve.route(store, fplan.resolution, fplan.knobs.with_overrides(min_shared_words=3), store.scan().memories)
    assert strict.targets == []
    assert calls == []


@model
@one_worker
def test_apply_writes_what_palinode_writes(opened):
    store, index = opened
    root = store.root
    fplan = Session(store, resolver="palinode").plan("insights/forget-w.md", index=index)
    result = review.apply_forget(store, fplan)
    assert not result.failed and len(result.commits) == 2
    fair = (root / "people/wilhelmina-fair.md").read_text()
    assert "status: archived\nsuperseded_by: insights/forget-w.md\n" in fair
    moon = (root / "projects/moonrise-closeout.md").read_text()
    assert moon.count("[RETRACTED 2025-06-01 r:bcb56233].") == 2
    assert "retracted_prefs:\n- i know wilhelmina cragg\n" in moon
    log = subjects(root)
    assert log[0].startswith("palinode-audit ledger: apply insights/forget-w.md")
    target_subjects = [c["subject"] for c in result.commits]
    assert sorted(target_subjects) == [
        "palinode retract: projects/moonrise-closeout.md (2 mentions) <- insights/forget-w.md",
        "palinode supersede: people/wilhelmina-fair.md -> insights/forget-w.md",
    ]
    assert (root / "people/wilhelmina-fair-history.md").read_text().endswith(
        '- [2025-06-01 11:00] Superseded by insights/forget-w.md (reason: forget request: "I know Wilhelmina Cragg") '
        "<!-- fact:people-wilhelmina-fair -->\n")
    assert (root / "projects/moonrise-closeout-history.md").read_text().endswith(
        '- [2025-06-01 11:00] Retracted 2 mention(s) [r:bcb56233]: "I know Wilhelmina Cragg" \u2014 superseded by '
        "insights/forget-w.md <!-- fact:projects-moonrise-closeout -->\n")
    body = git(root, "log", "-1", "--format=%B", result.commits[0]["commit"])
    assert "Forget-Request: insights/forget-w.md" in body and "Retraction-Id: bcb56233" in body
    ledger = [json.loads(l) for l in (root / ".palinode-audit/ledger.jsonl").read_text().splitlines()]
    assert ledger[-1]["action"] == "apply" and len(ledger[-1]["approved"]) == 2
    states = {s.path: s.state for s in Session(store).request_states()}
    assert states["insights/forget-w.md"] == "applied"
    # the request stays active: it is the retraction record
    assert store.load("insights/forget-w.md").status == "active"


@model
@one_worker
def test_selection_rejects_one_target_and_narrows_spans(opened):
    store, index = opened
    fplan = Session(store, resolver="palinode").plan("insights/forget-w.md", index=index)
    result = review.apply_forget(store, fplan, {"projects/moonrise-closeout.md": Choice(spans=frozenset({0})),
                                               "people/wilhelmina-fair.md": REJECT}, note="keep the fair note")
    assert result.rejected == ["people/wilhelmina-fair.md"]
    moon = store.load("projects/moonrise-closeout.md")
    assert moon.body.count("[RETRACTED") == 1
    assert "~~Handed the judging workflow to Wilhelmina Cragg" in moon.body
    assert store.load("people/wilhelmina-fair.md").status == "active"
    assert subjects(store.root)[1] == (
        "palinode retract: projects/moonrise-closeout.md (1 mentions) <- insights/forget-w.md")


@model
@one_worker
def test_stale_target_is_refused_during_apply(opened):
    """A stale target refuses the whole apply: no commit, no ledger record, the request still pending."""
    store, index = opened
    fplan = Session(store, resolver="palinode").plan("insights/forget-w.md", index=index)
    path = store.root / "projects/moonrise-closeout.md"
    path.write_text(path.read_text() + "\nAn agent appended this.\n")
    before = path.read_bytes()
    head = git(store.root, "rev-parse", "HEAD")
    with pytest.raises(StalePlan, match="projects/moonrise-closeout.md changed since"):
        review.apply_forget(store, fplan)
    assert path.read_bytes() == before and git(store.root, "rev-parse", "HEAD") == head
    assert not (store.root / ".palinode-audit/ledger.jsonl").exists()
    assert {s.path: s.state for s in Session(store).request_states()}["insights/forget-w.md"] == "pending"
    # planned again, the agent's uncommitted edit is named and the apply refuses to commit it as ours
    again = Session(store, resolver="palinode").plan("insights/forget-w.md", index=index)
    assert again.to_dict()["warnings"] == [
        "projects/moonrise-closeout.md has uncommitted edits: commit or stash them first; apply refuses"]
    with pytest.raises(UncommittedEdits, match="commit or stash your edits to projects/moonrise-closeout.md first"):
        review.apply_forget(store, again)
    assert git(store.root, "rev-parse", "HEAD") == head


@model
@one_worker
def test_withdraw_restores_only_what_this_request_did(opened):
    store, index = opened
    root = store.root
    review.apply_forget(store, Session(store, resolver="palinode").plan("insights/forget-w.md", index=index))
    # a strike for the same pref made by someone else, not this request
    other = root / "insights/notes.md"
    other.write_text(palinode_file({"id": "insights-notes"}, "Wilhelmina Cragg called twice."))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "hand note")
    from palinode_core.ops import lifecycle
    from palinode_core.ops.apply import apply
    apply(store, lifecycle.plan_retract(store, "insights/notes.md", "I know Wilhelmina Cragg"))

    wplan = Session(store).plan_withdraw("insights/forget-w.md")
    ops = sorted((s.op, s.target) for s in wplan.steps)
    assert ops == [("archive", "insights/forget-w.md"), ("restore", "people/wilhelmina-fair.md"),
                   ("unretract", "projects/moonrise-closeout.md")]
    broad = Session(store).plan_withdraw("insights/forget-w.md", broad=True)
    assert ("unretract", "insights/notes.md") in {(s.op, s.target) for s in broad.steps}

    result = withdraw.apply_withdraw(store, wplan)
    assert result["status"] == "withdrawn" and len(result["commits"]) == 3
    assert (root / "projects/moonrise-closeout.md").read_text() == palinode_file(
        fm("projects/moonrise-closeout.md", STORE_FILES["projects/moonrise-closeout.md"][1]), MOONRISE)
    fair = store.load("people/wilhelmina-fair.md")
    assert fair.status == "active" and fair.meta["restored_from"] == "insights/forget-w.md"
    assert store.load("insights/notes.md").struck  # not this request's strike
    assert store.load("insights/forget-w.md").archived
    assert {s.path: s.state for s in Session(store).request_states()}["insights/forget-w.md"] == "withdrawn"
    assert 'Unretracted 2 mention(s) [r:bcb56233]: "I know Wilhelmina Cragg" (reason: forget request withdrawn: ' \
           '"I know Wilhelmina Cragg")' in (root / "projects/moonrise-closeout-history.md").read_text()


@model
@one_worker
def test_states_include_palinode_applied_and_dismissed(opened):
    store, index = opened
    root = store.root
    (root / "insights/forget-tea.md").write_text(palinode_file(
        fm("insights/forget-tea.md", "2025-06-01T12:00:00+00:00"), "Could you forget my oolong tea habit?"))
    (root / "insights/forget-sneakers.md").write_text(palinode_file(
        fm("insights/forget-sneakers.md", "2025-06-01T12:00:00+00:00"), "Please forget that I collect sneakers."))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "requests")
    # Palinode applied the tea request itself: only the frontmatter tells us
    from palinode_core.ops import lifecycle
    from palinode_core.ops.apply import apply
    apply(store, lifecycle.plan_archive(store, "insights/pref-tea.md", superseded_by="insights/forget-tea.md"))
    review.dismiss(store, "insights/forget-sneakers.md", note="I still collect them")
    states = {s.path: s for s in Session(store).request_states()}
    assert states["insights/forget-tea.md"].state == "applied"
    assert states["insights/forget-tea.md"].archived_targets == ("insights/pref-tea.md",)
    assert states["insights/forget-sneakers.md"].state == "dismissed"
    assert states["insights/forget-w.md"].state == "pending"


@model
@one_worker
def test_residue_integrity_and_trace(opened):
    store, index = opened
    root = store.root
    (root / "projects/board.md").write_text(palinode_file({"id": "projects-board"},
        "## Wilhelmina Cragg panel\n\n| judge | Wilhelmina Cragg |\n\nOther text."))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "board")
    review.apply_forget(store, Session(store, resolver="palinode").plan("insights/forget-w.md", index=index))
    kinds = {}
    for m in Session(store).residue("I know Wilhelmina Cragg"):
        kinds.setdefault(m.kind, []).append(m.path)
    assert kinds["struck"] == ["projects/moonrise-closeout.md"] * 2
    assert kinds["archived"] == ["people/wilhelmina-fair.md"]
    assert sorted(kinds["unforgettable"]) == ["projects/board.md", "projects/board.md"]
    assert kinds["request"] == ["insights/forget-w.md"]
    assert Session(store).integrity() == []
    # a hand edit that drops the record leaves orphan markers: flagged
    moon = root / "projects/moonrise-closeout.md"
    moon.write_text(moon.read_text().replace("retracted_prefs:\n- i know wilhelmina cragg\n", ""))
    assert [p.kind for p in Session(store).integrity()] == ["marker_without_record"]
    tr = Session(store).trace("people/wilhelmina-fair.md").to_dict()
    assert tr["chain_forward"] == ["insights/forget-w.md"]
    assert tr["retired_by"]["pref"] == "I know Wilhelmina Cragg" and tr["retired_by"]["coverage"] == 0.2857
    assert tr["commits"][0]["trailers"]["Forget-Request"] == "insights/forget-w.md"
    assert any("Superseded by insights/forget-w.md" in h["text"] for h in tr["history"])
    back = Session(store).trace("insights/forget-w.md").to_dict()
    assert [b["path"] for b in back["chain_backward"]] == ["people/wilhelmina-fair.md"]


def test_chain_cycles_and_dangling_links(tmp_path):
    root = make_git_store(tmp_path / "s", {
        "a/one.md": palinode_file({"status": "archived", "superseded_by": "a/two.md"}, "one"),
        "a/two.md": palinode_file({"status": "archived", "superseded_by": "a/three.md"}, "two"),
        "a/three.md": palinode_file({"status": "archived", "superseded_by": "a/one.md"}, "three"),
        "b/x.md": palinode_file({"status": "archived", "superseded_by": "b/gone.md"}, "x"),
    })
    store = Store(root)
    tr = Session(store).trace("a/one.md").to_dict()
    assert tr["chain_forward"] == ["a/two.md", "a/three.md", "a/one.md"] and tr["chain_note"].startswith("cycle")
    assert Session(store).trace("b/x.md").to_dict()["chain_note"] == "dangling: b/gone.md does not exist"
    assert any(p.kind == "dangling_superseded_by" for p in Session(store).integrity())


@model
@one_worker
def test_resolution_boundary_skips_memories_created_after_the_request(opened):
    store, index = opened
    root = store.root
    (root / "people/wilhelmina-later.md").write_text(palinode_file(
        fm("people/wilhelmina-later.md", "2025-07-01T10:00:00+00:00"), "Wilhelmina Cragg visited again."))
    index.update()
    fplan = Session(store, resolver="palinode").plan("insights/forget-w.md", ForgetKnobs(max_targets=5), index=index)
    later = fplan.candidate("people/wilhelmina-later.md")
    assert later.route == "skipped" and "after the request" in later.reason


def test_another_request_is_never_a_target(tmp_path, clock):
    """Two requests sharing a word: Palinode would archive the other request's
    record; ours lists it as a retraction record and leaves it alone."""
    root = make_git_store(tmp_path / "s", {
        "insights/forget-oboe.md": palinode_file({"id": "insights-forget-oboe", "created_at": "2025-05-20T09:00:00+00:00"},
                                                 "Please forget that I play the oboe."),
        "insights/forget-poker.md": palinode_file({"id": "insights-forget-poker",
                                                   "created_at": "2025-05-01T09:00:00+00:00"},
                                                  "Please forget that I play poker with my oboe teacher."),
        "people/me.md": palinode_file({"id": "people-me", "created_at": "2025-04-01T09:00:00+00:00"},
                                      "I play the oboe in a quartet."),
    })
    store = Store(root, clock=clock)
    session = Session(store, vectors=False, resolver="palinode")
    index = session.update_index()
    plan = session.plan("insights/forget-oboe.md", index=index)
    poker = plan.candidate("insights/forget-poker.md")
    assert poker.route == "skipped" and poker.plan is None
    assert "retraction record is never a target" in poker.reason
    assert "people/me.md" in [c.path for c in plan.targets]
    review.apply_forget(store, plan)
    assert store.load("insights/forget-poker.md").status == "active"
