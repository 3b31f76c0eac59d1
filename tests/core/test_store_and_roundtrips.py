"""The real sample store Palinode wrote, round trips on every file, and the
apply contract: stale plans refused, the user's own work untouched."""
from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from helpers import SAMPLE_STORE, Clock, copy_sample_store, fixture_files, git, make_git_store, palinode_file, subjects
from palinode_core.ops import journal, lifecycle
from palinode_core.ops.apply import apply
from palinode_core.text.document import parse_document
from palinode_core.errors import GitError, PalinodeError, PathError, ReadOnlyError, StalePlan
from palinode_core.text.markdown import Matcher, find_mentions, marker_for, strike, unstrike
from palinode_core.storage.store import Store

SAMPLE_FILES = fixture_files(SAMPLE_STORE, at_least=7)  # fails collection loudly if the fixture is missing


def test_sample_store_scans_with_no_errors_and_no_data_changed(tmp_path):
    root = copy_sample_store(tmp_path / "sample")
    before = {rel: (root / rel).read_bytes() for rel in SAMPLE_FILES}
    scan = Store(root).scan()
    assert scan.errors == []
    assert sorted(scan.memories) == SAMPLE_FILES
    assert scan.counts()["memories"] == len(SAMPLE_FILES) == 7
    alice = scan.memories["people/alice.md"]
    assert alice.meta["category"] == "person" and alice.meta["entities"] == ["project/my-app"]
    assert alice.status == "active" and alice.title == "Alice Chen"
    assert {rel: (root / rel).read_bytes() for rel in SAMPLE_FILES} == before
    assert git(root, "status", "--porcelain") == ""


def _first_name(body: str) -> str:
    prose = "\n".join(l for l in body.splitlines() if not l.lstrip().startswith(("#", "|")))
    for word in re.findall(r"\b[A-Z][a-z]{3,}\b", prose):
        if word.lower() not in {"what", "this", "when", "goal", "date", "context", "decision", "insight"}:
            return word
    raise AssertionError("no name in body")


@pytest.mark.parametrize("rel", SAMPLE_FILES)
def test_retract_then_unretract_returns_original_bytes(tmp_path, rel):
    root = copy_sample_store(tmp_path / "sample")
    store = Store(root, clock=Clock())
    original = (root / rel).read_bytes()
    pref = f"I know {_first_name(store.load(rel).body)}"
    plan = lifecycle.plan_retract(store, rel, pref)
    assert plan.status == "would_retract" and plan.mentions >= 1
    apply(store, plan)
    assert (root / rel).read_bytes() != original
    apply(store, lifecycle.plan_unretract(store, rel, pref))
    assert (root / rel).read_bytes() == original
    assert subjects(root)[:2] == [f"palinode unretract: {rel} ({plan.mentions} mentions)",
                                  f"palinode retract: {rel} ({plan.mentions} mentions)"]


@pytest.mark.parametrize("rel", SAMPLE_FILES)
def test_archive_then_restore_changes_only_restore_fields(tmp_path, rel):
    root = copy_sample_store(tmp_path / "sample")
    store = Store(root, clock=Clock())
    original = (root / rel).read_text()
    apply(store, lifecycle.plan_archive(store, rel))
    apply(store, lifecycle.plan_restore(store, rel))
    after = (root / rel).read_text()
    before_doc, after_doc = parse_document(original), parse_document(after)
    assert after_doc.body == before_doc.body
    changed = {k for k in set(before_doc.meta) | set(after_doc.meta)
               if before_doc.meta.get(k) != after_doc.meta.get(k)}
    assert changed <= {"status", "restored_from", "restored_at"}
    assert after_doc.meta["status"] == "active" and after_doc.meta["restored_from"] == "archived"
    # every original frontmatter line is still there, in order
    original_lines = [l for l in original.split("---\n")[1].splitlines() if not l.startswith("status:")]
    after_lines = after.split("---\n")[1].splitlines()
    assert [l for l in after_lines if l in original_lines] == original_lines


# -- property: strike then unstrike is the identity ---------------------------
_word = st.sampled_from(["alpha", "beta", "Zed", "zed", "gamma", "tea", "~~old~~", "delta", "x", "1."])
_sentence = st.lists(_word, min_size=1, max_size=6).map(" ".join).flatmap(
    lambda s: st.sampled_from([".", "!", "?", ""]).map(lambda t: s + t))
_prose = st.lists(_sentence, min_size=1, max_size=4).flatmap(
    lambda ss: st.sampled_from([" ", "\n"]).map(lambda sep: sep.join(ss)))
_line = st.one_of(
    _prose,
    _sentence.map(lambda s: f"- {s}"),
    _sentence.map(lambda s: f"* {s} <!-- fact:f1 -->"),
    _sentence.map(lambda s: f"# {s}"),
    _sentence.map(lambda s: f"| {s} |"),
    _sentence.map(lambda s: f"> {s}"),
    _sentence.map(lambda s: f"1. {s}"),
    st.just("```"), st.just(""),
)
_body = st.lists(_line, min_size=1, max_size=10).map("\n".join)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_body, trailing=st.sampled_from(["", "\n", "\n\n"]), pick=st.integers(0, 2**16))
# found by hypothesis: the strike's "~~" before a user's "~~old~~" makes "~~~~old~~", which reads as a fence
@example(body="~~old~~\n~~old~~ Zed.", trailing="", pick=0)
# and a user's "~~old~~" at the start of a hard-wrapped sentence's second line read as its opener
@example(body="~~old~~ Zed. alpha\n~~old~~ Zed.", trailing="", pick=3)
def test_strike_then_unstrike_is_identity(body, trailing, pick):
    body = body + trailing
    matcher = Matcher.for_pref("I know Zed Tea")
    spans, _ = find_mentions(body, matcher)
    chosen = [s for s in spans if (pick >> (s.index % 16)) & 1] or spans
    struck = strike(body, chosen, marker_for("2025-06-01", "0badc0de"))
    assert struck.count("[RETRACTED") == len(chosen) + body.count("[RETRACTED")
    restored, count = unstrike(struck, "0badc0de")
    assert count == len(chosen)
    assert restored == body


# -- the apply contract ---------------------------------------------------------
@pytest.fixture
def small(tmp_path):
    return make_git_store(tmp_path / "s", {
        "people/ann.md": palinode_file({"id": "people-ann"}, "Ann Lee likes tea. Ann Lee runs."),
        "people/bob.md": palinode_file({"id": "people-bob"}, "Bob."),
    })


def test_stale_plan_is_refused_and_nothing_written(small):
    store = Store(small, clock=Clock())
    plan = lifecycle.plan_archive(store, "people/ann.md")
    (small / "people/ann.md").write_text((small / "people/ann.md").read_text() + "edited by agent\n")
    edited = (small / "people/ann.md").read_bytes()
    head = git(small, "rev-parse", "HEAD")
    with pytest.raises(StalePlan):
        apply(store, plan)
    assert (small / "people/ann.md").read_bytes() == edited
    assert not (small / "people/ann-history.md").exists()
    assert git(small, "rev-parse", "HEAD") == head


def test_users_staged_and_unstaged_work_survives(small):
    (small / "people/bob.md").write_text("staged change\n")
    git(small, "add", "people/bob.md")
    (small / "notes.md").write_text("untracked\n")
    (small / "people/bob.md").write_text("staged change\nplus unstaged\n")
    status_before = git(small, "status", "--porcelain")
    cached_before = git(small, "diff", "--cached")
    diff_before = git(small, "diff")
    store = Store(small, clock=Clock())
    done = apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee"))
    assert done.commit
    assert git(small, "status", "--porcelain") == status_before
    assert git(small, "diff", "--cached") == cached_before
    assert git(small, "diff") == diff_before
    apply(store, lifecycle.plan_inverse(store, done.plan.op, done.plan.target, pref=done.plan.pref, counterpart=done.plan.superseded_by))
    assert git(small, "status", "--porcelain") == status_before
    assert git(small, "diff", "--cached") == cached_before


def test_read_only_store_refuses_every_mutation(small, monkeypatch):
    store = Store(small, read_only=True, clock=Clock())
    plan = lifecycle.plan_archive(store, "people/ann.md")  # planning is reading
    with pytest.raises(ReadOnlyError):
        apply(store, plan)
    monkeypatch.setenv("PALINODE_AUDIT_READ_ONLY", "1")
    with pytest.raises(ReadOnlyError):
        apply(Store(small), plan)
    assert git(small, "status", "--porcelain") == ""


def test_missing_identity_refuses_before_anything_is_written(small, monkeypatch, tmp_path):
    for key in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL"):
        monkeypatch.delenv(key)
    git_cfg = small / ".git" / "config"
    git_cfg.write_text(re.sub(r"\[user\][^\[]*", "", git_cfg.read_text()))
    monkeypatch.setenv("HOME", str(tmp_path / "nohome"))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "none"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("EMAIL", "")
    store = Store(small, clock=Clock())
    before = (small / "people/ann.md").read_bytes()
    with pytest.raises(GitError, match="identity"):
        apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    assert (small / "people/ann.md").read_bytes() == before
    assert not (small / "people/ann-history.md").exists()


def test_failed_commit_rolls_back_both_files(small):
    """git refuses the commit itself, after both files were written: both come back byte for byte."""
    store = Store(small, clock=Clock())
    # a first retraction gives ann.md a history sibling, so both files have bytes to restore
    apply(store, lifecycle.plan_retract(store, "people/ann.md", "I know Ann Lee"))
    paths = [small / "people/ann.md", small / "people/ann-history.md"]
    before = [p.read_bytes() for p in paths]
    head = git(small, "rev-parse", "HEAD")
    lock = small / ".git/refs/heads/main.lock"
    seen: dict[str, list[bytes]] = {}

    def hold_the_branch_lock(step):
        # preflight has passed and the files are written; now git cannot move the branch
        if step == "before_commit":
            seen["written"] = [p.read_bytes() for p in paths]
            lock.write_text("")
    plan = lifecycle.plan_archive(store, "people/ann.md")
    try:
        with pytest.raises(PalinodeError, match=r"not committed: .*main\.lock.*nothing was changed"):
            apply(store, plan, fault=hold_the_branch_lock)
    finally:
        lock.unlink(missing_ok=True)
    assert seen["written"][0] != before[0] and seen["written"][1] != before[1]  # the writes really happened
    assert [p.read_bytes() for p in paths] == before
    assert git(small, "rev-parse", "HEAD") == head
    assert journal.pending(store) == []
    # the index holds no half-staged copy of the failed commit either
    assert git(small, "diff", "--cached", "--name-only") == ""


def test_fault_after_write_before_commit_leaves_files_rolled_back(small):
    store = Store(small, clock=Clock())
    before = (small / "people/ann.md").read_bytes()

    def boom(step):
        if step == "before_commit":
            raise OSError(28, "No space left on device")
    with pytest.raises(Exception, match="nothing was changed"):
        apply(store, lifecycle.plan_archive(store, "people/ann.md"), fault=boom)
    assert (small / "people/ann.md").read_bytes() == before
    assert git(small, "status", "--porcelain") == ""


@pytest.mark.parametrize("bad", ["../outside.md", "/etc/passwd", "people/../../x.md", "a\x00b.md"])
def test_paths_are_guarded(small, bad):
    store = Store(small)
    with pytest.raises(PathError):
        lifecycle.plan_archive(store, bad)
    with pytest.raises(PathError):
        lifecycle.plan_archive(store, "people/ann.md", superseded_by=bad)


def test_symlink_escaping_store_is_reported_not_followed(small, tmp_path):
    secret = tmp_path / "secret.md"
    secret.write_text("---\nid: secret\n---\nsecret text\n")
    (small / "people/link.md").symlink_to(secret)
    scan = Store(small).scan()
    assert [e.path for e in scan.errors] == ["people/link.md"]
    assert "outside the store" in scan.errors[0].reason
    with pytest.raises(PathError):
        Store(small).load("people/link.md")


def test_undo_is_a_plan_recorded_like_any_other(small):
    store = Store(small, clock=Clock())
    done = apply(store, lifecycle.plan_archive(store, "people/ann.md", superseded_by="people/bob.md"))
    undo = lifecycle.plan_inverse(store, done.plan.op, done.plan.target, pref=done.plan.pref, counterpart=done.plan.superseded_by, reason="wrong target")
    assert undo.op == "restore" and "status" in undo.diff()
    apply(store, undo)
    assert subjects(store.root)[0] == "palinode restore: people/ann.md <- people/bob.md"
    assert store.load("people/ann.md").meta["restored_from"] == "people/bob.md"


_probe_word = st.sampled_from(["Zed", "zed", "ZED", "teas", "tea", "Tea.", "xZed", "zedx", "know", "K\u212anow"])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_body, extra=st.lists(_probe_word, max_size=3), pref=st.sampled_from(
    ["I know Zed Tea", "my tea habit", "I know ZED", "that I drink tea"]))
def test_the_residue_prefilter_never_skips_a_mention(body, extra, pref):
    """A memory the prefilter skips must have nothing find_mentions reports."""
    body = body + " " + " ".join(extra)
    matcher = Matcher.for_pref(pref)
    spans, regions = find_mentions(body, matcher)
    if spans or regions:
        assert matcher.could_match(body)
