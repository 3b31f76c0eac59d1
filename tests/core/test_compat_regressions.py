"""Regressions for the divergences from palinode==0.23.0 that issue 13 lists as
bugs on our side; each expected text is what the package writes (checked by
the differential suite in tests/compat)."""
from __future__ import annotations

import pytest
from helpers import Clock, make_git_store
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.text.document import parse_document
from palinode_core.text.history import with_entry
from palinode_core.text.markdown import unstrike
from palinode_core.storage.store import Store
from palinode_core.session import Session
from palinode_core.text.words import retraction_id

REL = "notes/m.md"
PREF = "I love Zanzibar coffee"
RID = retraction_id(PREF)
MARK = f"[RETRACTED 2025-06-01 r:{RID}]."


def _store(tmp_path, text: str, extra: dict[str, str] | None = None) -> Store:
    root = make_git_store(tmp_path / "store", {REL: text, **(extra or {})})
    return Store(root, clock=Clock(), use_scan_cache=False)


def _apply(store: Store, plan: lifecycle.Plan) -> str:
    assert plan.status.startswith("would_"), plan.status
    apply(store, plan)
    return (store.root / REL).read_bytes().decode("utf-8")


def test_empty_braces_frontmatter_is_read_and_archived(tmp_path):
    # Palinode writes `---\n{}\n---` when an unretract empties the frontmatter
    store = _store(tmp_path, "---\n{}\n---\n\nCoffee notes.\n")
    assert _apply(store, lifecycle.plan_archive(store, REL)) == "---\nstatus: archived\n---\n\nCoffee notes.\n"


def test_unretract_that_empties_the_frontmatter_writes_empty_braces(tmp_path):
    store = _store(tmp_path, f"---\nretracted_prefs:\n- i love zanzibar coffee\n---\n\n~~I love Zanzibar coffee.~~ {MARK}\n")
    text = _apply(store, lifecycle.plan_unretract(store, REL, PREF))
    assert text == "---\n{}\n---\n\nI love Zanzibar coffee.\n"
    assert parse_document(text).meta == {}


@pytest.mark.parametrize("value", ["Archived", "ARCHIVED", '"archived "'])
def test_status_is_compared_exactly(tmp_path, value):
    store = _store(tmp_path, f"---\nstatus: {value}\n---\n\nBody.\n")
    assert lifecycle.plan_restore(store, REL).status == "not_archived"
    assert lifecycle.plan_archive(store, REL).status == "would_archive"


def test_update_policy_is_compared_exactly(tmp_path):
    store = _store(tmp_path, "---\nupdate_policy: Replace\n---\n\nI love Zanzibar coffee.\n")
    assert lifecycle.plan_retract(store, REL, PREF).status == "would_retract"


def test_scalar_retracted_prefs_is_not_a_record(tmp_path):
    store = _store(tmp_path, "---\nretracted_prefs: i love zanzibar coffee\n---\n\nI love Zanzibar coffee.\n")
    assert lifecycle.plan_unretract(store, REL, PREF).status == "not_retracted"
    text = _apply(store, lifecycle.plan_retract(store, REL, PREF))
    assert text == f"---\nretracted_prefs:\n- i love zanzibar coffee\n---\n\n~~I love Zanzibar coffee.~~ {MARK}\n"


def test_empty_flow_list_becomes_a_block_list(tmp_path):
    store = _store(tmp_path, "---\nretracted_prefs: []\n---\n\nI love Zanzibar coffee.\n")
    text = _apply(store, lifecycle.plan_retract(store, REL, PREF))
    assert text.startswith("---\nretracted_prefs:\n- i love zanzibar coffee\n---\n")


@pytest.mark.parametrize("opener", ["--- ", "----", "\n---", "  \n---"])
def test_frontmatter_openers_palinode_accepts(tmp_path, opener):
    text = f"{opener}\ntitle: I love Zanzibar coffee\n---\n\nI love Zanzibar coffee.\n"
    store = _store(tmp_path, text)
    plan = lifecycle.plan_retract(store, REL, PREF)
    assert plan.mentions == 1  # never the title inside the frontmatter
    out = _apply(store, plan)
    assert out == text.replace("title:", "retracted_prefs:\n- i love zanzibar coffee\ntitle:").replace(
        "\n\nI love Zanzibar coffee.", f"\n\n~~I love Zanzibar coffee.~~ {MARK}")


def test_crlf_history_sibling_keeps_its_frontmatter():
    sibling = "---\r\ncategory: history\r\nstatus: archived\r\n---\r\n\r\n# History\r\n\r\n- [x] old\r\n"
    out = with_entry(sibling, "- [2025-06-01 11:00] new <!-- fact:m -->\n")
    assert out == sibling + "- [2025-06-01 11:00] new <!-- fact:m -->\r\n"
    assert out.count("---") == 2


def test_unretract_after_a_long_whitespace_run():
    body = "First sentence." + " " * 300 + f"~~I love Zanzibar coffee.~~ {MARK}\n"
    assert unstrike(body, RID) == ("First sentence." + " " * 300 + "I love Zanzibar coffee.\n", 1)


def test_unretract_after_a_tilde_yaml_fence_line():
    # the walker toggles on any fence line, so ```` ``` ```` opens and `~~~yaml` closes
    body = f"```\ncode\n~~~yaml\n~~I love Zanzibar coffee.~~ {MARK}\n"
    assert unstrike(body, RID) == ("```\ncode\n~~~yaml\nI love Zanzibar coffee.\n", 1)


def test_hand_made_strike_is_not_paired_with_a_tilde_paragraphs_above():
    body = f"~~Old plan.~~ Kept.\n\nSome words ~~I love Zanzibar coffee.~~ {MARK}\n"
    assert unstrike(body, RID) == ("~~Old plan.~~ Kept.\n\nSome words I love Zanzibar coffee.\n", 1)


def test_restore_of_a_case_variant_is_refused_as_palinode_does(tmp_path):
    store = _store(tmp_path, "---\nstatus: Archived\n---\n\nBody.\n")
    assert store.load(REL).archived is False
    # Palinode's lifecycle eligibility lowercases it (core/lifecycle.py); only the
    # archive/restore ops and the search exclusion compare exactly
    assert store.load(REL).retired_reason == "status:archived"


def _subjects(store: Store) -> list[str]:
    return [c.subject for c in store.git.log()]


def test_archive_flags_live_dependents_in_a_commit_of_their_own(tmp_path):
    dep = "---\nbacked_by:\n- notes/m\ncategory: insights\n---\n\nRests on m.\n"
    store = _store(tmp_path, "---\nid: m\n---\n\nBody.\n", {
        "insights/dep.md": dep,
        "insights/asleep.md": "---\nbacked_by: notes/m.md\nstatus: archived\n---\n\nArchived: skipped.\n",
        "archive/old.md": "---\nbacked_by: [notes/m]\n---\n\nUnder archive/: never a dependent.\n"})
    plan = lifecycle.plan_archive(store, REL)
    assert [f.rel for f in plan.flags] == ["insights/dep.md"]
    assert plan.to_dict()["dependents"][0]["path"] == "insights/dep.md"  # previewed
    applied = apply(store, plan)
    assert applied.flags_commit and applied.flags_error is None
    assert (store.root / "insights/dep.md").read_text() == dep.replace(
        "category: insights\n", "category: insights\nstale_backing:\n- ref: notes/m\n  op: archive\n"
        "  at: '2025-06-01T11:00:00+00:00'\n  reason: 'Archived: notes/m.md'\n")
    assert _subjects(store)[:2] == ["palinode backed_by review: notes/m archive -> 1 dependent(s)",
                                    "palinode archive: notes/m.md"]
    # one flag per source: a second retirement of m flags nothing new
    assert not lifecycle.plan_retract(store, REL, "body notes").flags


def test_retract_flags_dependents_with_the_opaque_reason(tmp_path):
    store = _store(tmp_path, "---\nid: m\n---\n\nI love Zanzibar coffee.\n",
                   {"insights/dep.md": "---\nbacked_by: [notes/m]\n---\n\nRests on m.\n"})
    apply(store, lifecycle.plan_retract(store, REL, PREF))
    text = (store.root / "insights/dep.md").read_text()
    assert f"  reason: retracted 1 mention(s) r:{RID}\n" in text and "Zanzibar" not in text


def test_restore_rechecks_its_own_backing(tmp_path):
    store = _store(tmp_path, "---\nbacked_by:\n- insights/src\n- insights/gone\n- insights/live\nstatus: archived\n---\n\nBody.\n", {
        "insights/src.md": "---\nstatus: archived\nsuperseded_by: insights/new.md\n---\n\nOld.\n",
        "insights/live.md": "---\nstatus: active\n---\n\nLive.\n"})
    text = _apply(store, lifecycle.plan_restore(store, REL))
    assert text == (
        "---\nbacked_by:\n- insights/src\n- insights/gone\n- insights/live\nrestored_at: '2025-06-01T11:00:00+00:00'\n"
        "restored_from: archived\nstatus: active\nstale_backing:\n- ref: insights/src\n  op: restore-check\n"
        "  at: '2025-06-01T11:00:00+00:00'\n  reason: insights/src is archived, superseded by insights/new.md\n"
        "- ref: insights/gone\n  op: restore-check\n  at: '2025-06-01T11:00:00+00:00'\n"
        "  reason: insights/gone is missing\n---\n\nBody.\n")
    history = (store.root / "notes/m-history.md").read_text()
    assert history.endswith("Restored: notes/m.md (was archived); stale backing: insights/src, insights/gone"
                            " <!-- fact:m -->\n")


# A request Palinode's regex took ("Wiki want" holds "i want you to forget") and
# applied, which our detector declines: it must still be listed, traced and withdrawable.
REQ = "notes/req.md"
PAL_PREF = "my old address"
PAL_RID = retraction_id(PAL_PREF)


@pytest.fixture
def palinode_applied(tmp_path):
    store = _store(tmp_path, "---\nstatus: archived\nsuperseded_by: notes/req.md\n---\n\nMy old address is 4 Elm Row.\n", {
        REQ: "---\ncategory: notes\n---\n\nWiki want you to forget my old address.\n",
        "notes/struck.md": (f"---\nretracted_prefs:\n- my old address\n---\n\n"
                            f"~~The old address was on Elm Row.~~ [RETRACTED 2025-06-01 r:{PAL_RID}]. Kept.\n"),
        "notes/struck-history.md": ("---\ncategory: history\ncore: false\nstatus: archived\n---\n\n# History\n\n"
                                    f'- [2025-06-01 11:00] Retracted 1 mention(s) [r:{PAL_RID}]: "my old address"'
                                    " \u2014 superseded by notes/req.md <!-- fact:struck -->\n")})
    return store


def test_a_request_only_palinode_takes_is_listed(palinode_applied):
    store = palinode_applied
    assert store.load(REQ).forget_pref is None  # ours declines it
    states = {s.path: s for s in Session(store).request_states()}
    assert states[REQ].note == "applied by Palinode; not a request by our rules"
    assert states[REQ].pref == PAL_PREF and states[REQ].state == "applied"
    assert states[REQ].archived_targets == (REL,) and states[REQ].struck_targets == ("notes/struck.md",)


def test_a_request_only_palinode_takes_is_traced_and_withdrawable(palinode_applied):
    store = palinode_applied
    assert Session(store).trace(REL).to_dict()["retired_by"]["request"] == REQ
    assert Session(store).trace("notes/struck.md").to_dict()["retractions"][0]["request"] == REQ
    wplan = Session(store).plan_withdraw(REQ)
    assert sorted((s.op, s.target) for s in wplan.steps) == [
        ("archive", REQ), ("restore", REL), ("unretract", "notes/struck.md")]


@pytest.mark.parametrize("text", ["----\nA note opening with a rule.\n", "\n---\nno closer\n"])
def test_a_loose_opener_without_a_closer_is_body_as_before(text):
    doc = parse_document(text)
    assert doc.fm_text is None and doc.body == text


def test_a_forget_plan_flags_dependents_its_scan_says_cite_the_target(tmp_path, monkeypatch):
    """A forget plan lists the memories that cite anything from the scan's
    summaries (no git grep): a dependent read from the scan cache, one not
    committed yet, and none whose body only says the word ``backed_by``."""
    from helpers import Clock, make_git_store, palinode_file

    from palinode_core.session import Session
    from palinode_core.storage import cache as scan_cache

    monkeypatch.setattr(scan_cache, "RACY_SECONDS", 0.0)  # files written a moment ago are cached

    def memory(rel: str, body: str, **meta: object) -> str:
        return palinode_file({"id": rel.split("/")[-1][:-3], "category": rel.split("/")[0],
                              "created_at": "2025-05-01T10:00:00+00:00", **meta}, body)

    files = {
        "insights/pref-bees.md": memory("insights/pref-bees.md", "I keep bees in the back garden."),
        "projects/honey.md": memory("projects/honey.md", "Rests on the bees note.", backed_by=["insights/pref-bees"]),
        "projects/words.md": memory("projects/words.md", "Our notes use backed_by: insights/pref-bees for links."),
        "insights/forget-bees.md": memory("insights/forget-bees.md", "Please forget that I keep bees in the back garden."),
    }
    root = make_git_store(tmp_path / "store", files)
    cache = tmp_path / "cache"
    Session.open(root, vectors=False, cache_dir=cache, clock=Clock()).memories  # fills the scan cache
    (root / "research").mkdir()
    (root / "research/untracked.md").write_text(
        memory("research/untracked.md", "Also rests on it.", backed_by="insights/pref-bees.md"))
    session = Session.open(root, vectors=False, cache_dir=cache, clock=Clock())
    assert session.memories["projects/honey.md"].reload is not None  # read back from the cache, not parsed
    plan = session.plan("insights/forget-bees.md")
    [target] = [c for c in plan.candidates if c.path == "insights/pref-bees.md"]
    assert target.route == "archive"
    assert sorted(f.rel for f in target.plan.flags) == ["projects/honey.md", "research/untracked.md"]
