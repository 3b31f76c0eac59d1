"""A saved plan is checked whole before anything runs (issue 38): never a
source of bytes put back, every path spelled as the store names it, every
field typed and bounded, every step something the request reaches, its
ledger fields consistent, its base commit still its base; and review-pack
names each pending request's files apart."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest
from helpers import Clock, git, make_git_store, palinode_file, subjects

from palinode_core.errors import PalinodeError
from palinode_core.forget import review
from palinode_core.forget.saved import Approved, checked, dumps, loads
from palinode_core.forget.selection import APPROVE_ALL, Choice
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.session import Session
from palinode_core.storage.store import Store
from palinode_core.text.markdown import Matcher, find_mentions
from palinode_core.text.words import retraction_id

FILES = {
    "insights/pref-bees.md": palinode_file({"id": "pref-bees"}, "I keep bees in the back garden."),
    "projects/weekly.md": palinode_file(
        {"id": "weekly"}, "The printer was fixed. I keep bees in the back garden. Invoices are due."
    ),
    "people/ann.md": palinode_file({"id": "ann"}, "Ann likes tea."),
    "insights/forget-bees.md": palinode_file({"id": "forget-bees"}, "Please forget that I keep bees."),
}
REQUEST = "insights/forget-bees.md"
INJECTED = "INJECTED: mallory was here\n"


def audit(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def refused(root: Path, plan_file: Path) -> str:
    """Apply ``plan_file`` with --yes: one line, no traceback, nothing written; the line."""
    before, log = snapshot(root), subjects(root)
    proc = audit("apply", str(root), "--plan", str(plan_file), "--yes", ok=False)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert snapshot(root) == before and subjects(root) == log and git(root, "status", "--porcelain") == ""
    return proc.stderr


@pytest.fixture
def store(tmp_path):
    return make_git_store(tmp_path / "a", FILES)


def saved(root: Path, out: Path, *only: str) -> dict:
    audit("plan", str(root), REQUEST, "--lexical", "--out", str(out), *(("--only", *only) if only else ()))
    return json.loads(out.read_text())


def session(root: Path, tmp_path: Path) -> Session:
    return Session.open(root, vectors=False, cache_dir=tmp_path / "cache", clock=Clock())


# -- finding 5: a plan's old text is never written back ----------------------------------------------


def test_a_plans_old_text_is_never_put_back_when_its_commit_fails(store, tmp_path):
    """git busy at the commit: what is put back is the file as read under the lock,
    never the plan's old_text, and a plan whose old_text is not its file is refused."""
    data = saved(store, tmp_path / "p.json")
    for step in data["steps"]:
        step["plan"]["old_text"] = INJECTED
    approved = loads(json.dumps(data))
    before = snapshot(store)
    live = session(store, tmp_path)

    def busy(name: str) -> None:
        if name.endswith("before_commit"):
            (store / ".git/index.lock").write_text("")

    with pytest.raises(PalinodeError, match="nothing was changed"):
        review.execute(live.store, approved, fault=busy)
    (store / ".git/index.lock").unlink(missing_ok=True)
    assert snapshot(store) == before and git(store, "status", "--porcelain") == ""
    assert not any(INJECTED in (store / rel).read_text() for rel in FILES)
    assert json.loads(audit("--json", "integrity", str(store)).stdout)["problems"] == []


def test_a_single_apply_puts_back_what_it_read(store):
    """The same at the operation's own depth: a plan whose old_text is not its file is refused."""
    s = Store(store, clock=Clock())
    plan = replace(lifecycle.plan_archive(s, "people/ann.md"), old_text=INJECTED)
    with pytest.raises(PalinodeError, match="not the file its fingerprint names"):
        apply(s, plan)
    assert (store / "people/ann.md").read_text() == FILES["people/ann.md"]


KILL = textwrap.dedent("""
    import os, sys
    from palinode_core.forget import review
    from palinode_core.forget.saved import loads
    from palinode_core.storage.store import Store
    root, plan = sys.argv[1:3]
    def fault(name):
        if name == "step_0:after_file_write":
            os._exit(9)
    try:
        review.execute(Store(root), loads(open(plan).read()), fault=fault)
    except Exception as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
""")


def test_a_plans_old_text_is_never_put_back_by_recover_rollback(store, tmp_path):
    data = saved(store, tmp_path / "p.json")
    for step in data["steps"]:
        step["plan"]["old_text"] = INJECTED
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(data))
    before = snapshot(store)
    killed = subprocess.run([sys.executable, "-c", KILL, str(store), str(forged)], capture_output=True, text=True)
    assert killed.returncode == 9 or "nothing was changed" in killed.stderr, killed.stderr  # stopped, or refused
    audit("recover", str(store), "--rollback", "--yes")
    assert snapshot(store) == before and git(store, "status", "--porcelain") == ""
    assert json.loads(audit("--json", "integrity", str(store)).stdout)["problems"] == []


# -- finding 6: every path spelled as the store names it ----------------------------------------------

SPELLINGS = [
    "projects/./weekly.md",
    "projects//weekly.md",
    "./projects/weekly.md",
    "projects/weekly.md/",
    "projects\\weekly.md",
    "projects/../projects/weekly.md",
    "/projects/weekly.md",
    "projects/weekly.md\x00",
    "projects/week\nly.md",
    "PROJECTS/weekly.md",
]


@pytest.mark.parametrize("spelling", SPELLINGS)
def test_a_target_spelled_another_way_is_refused_before_anything_runs(store, tmp_path, spelling):
    data = saved(store, tmp_path / "p.json", "projects/weekly.md")
    step = data["steps"][0]
    step["target"] = step["plan"]["target"] = spelling
    out = tmp_path / "odd.json"
    out.write_text(json.dumps(data))
    assert "week" in refused(store, out)
    states = json.loads(audit("--json", "requests", str(store)).stdout)["requests"]
    assert [s["state"] for s in states if s["path"] == REQUEST] == ["pending"]


def test_an_absolute_target_is_refused(store, tmp_path):
    data = saved(store, tmp_path / "p.json", "projects/weekly.md")
    step = data["steps"][0]
    step["target"] = step["plan"]["target"] = str(store / "projects/weekly.md")
    out = tmp_path / "odd.json"
    out.write_text(json.dumps(data))
    refused(store, out)


def test_a_request_spelled_another_way_is_refused(store, tmp_path):
    data = saved(store, tmp_path / "p.json")
    data["request"]["path"] = "insights/./forget-bees.md"
    out = tmp_path / "odd.json"
    out.write_text(json.dumps(data))
    refused(store, out)


def test_an_operation_never_commits_a_path_spelled_another_way(store):
    s = Store(store, clock=Clock())
    plan = lifecycle.plan_retract(s, "projects/weekly.md", "I keep bees", superseded_by=REQUEST)
    with pytest.raises(PalinodeError, match="not spelled as the store names it"):
        apply(s, replace(plan, target="projects/./weekly.md"))
    assert snapshot(store) == {rel: text.encode() for rel, text in sorted(FILES.items())}
    assert subjects(store) == ["initial"] and git(store, "status", "--porcelain") == ""


def test_a_folder_listing_decides_the_spelling(tmp_path):
    """On a case-insensitive file system ``people/ANN.md`` opens ``people/ann.md``: the listing says it is not its name."""
    from palinode_core.storage.paths import spelled_on_disk

    root = make_git_store(tmp_path / "s", {"People/Ann.md": "x\n"})
    assert spelled_on_disk(root, "People/Ann.md") and spelled_on_disk(root, "missing/x.md")
    assert not spelled_on_disk(root, "people/Ann.md") and not spelled_on_disk(root, "People/ANN.md")


def test_a_case_variant_target_is_refused_on_a_case_insensitive_file_system(store, tmp_path):
    (tmp_path / "Probe").write_text("")
    if not (tmp_path / "probe").exists():
        pytest.skip("the file system here is case-sensitive: the listing check is tested on its own above")
    data = saved(store, tmp_path / "p.json", "projects/weekly.md")
    step = data["steps"][0]
    step["target"] = step["plan"]["target"] = "Projects/Weekly.md"
    out = tmp_path / "case.json"
    out.write_text(json.dumps(data))
    assert "not spelled as the store names it" in refused(store, out)


# -- finding 10: checked whole ------------------------------------------------------------------------


def _deep(depth: int) -> object:
    value: object = []
    for _ in range(depth):
        value = [value]
    return value


MALFORMED = {
    "ledger_empty": lambda d: d.update(ledger={}),
    "ledger_unknown_field": lambda d: d["ledger"].update(extra=1),
    "ledger_failed": lambda d: d["ledger"].update(failed=[{"path": "x.md", "reason": "made up"}]),
    "ledger_note_huge": lambda d: d["ledger"].update(note="n" * 100_000),
    "ledger_knobs": lambda d: d["ledger"]["knobs"].update(search_k="ten"),
    "deep_request": lambda d: d.update(request="@"),  # spliced in as text: json.dumps itself recurses
    "deep_field_change": lambda d: d["steps"][0]["plan"]["field_changes"].append(
        {"key": "x", "before": _deep(100), "after": None}
    ),
    "spans_text": lambda d: d["steps"][0]["plan"].update(spans="x"),
    "selected_text": lambda d: d["steps"][0]["plan"].update(selected=["a"]),
    "mentions_negative": lambda d: d["steps"][0]["plan"].update(mentions=-1),
    "trailers_list": lambda d: d["steps"][0]["plan"].update(trailers=[]),
    "plan_unknown_field": lambda d: d["steps"][0]["plan"].update(owner="mallory"),
    "step_names_another_target": lambda d: d["steps"][0].update(target="people/ann.md"),
    "sha256_short": lambda d: d["steps"][0].update(sha256="abc"),
    "resolver": lambda d: d.update(resolver="mine"),
    "rid": lambda d: d["request"].update(rid="00000000"),
    "base_commit_text": lambda d: d.update(base_commit="HEAD~3"),
    "planned_at_naive": lambda d: d.update(planned_at="2025-06-01T11:00:00"),
}


@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_a_malformed_plan_file_is_one_line(store, tmp_path, shape):
    data = saved(store, tmp_path / "p.json")
    MALFORMED[shape](data)
    out = tmp_path / "bad.json"
    out.write_text(json.dumps(data).replace('"@"', "[" * 200_000 + "]" * 200_000))
    line = refused(store, out)
    assert "plan file" in line and "KeyError" not in line and "RecursionError" not in line


LEDGER_FORGERIES = {
    "route": lambda d: next(t for t in d["ledger"]["targets"] if t["path"] == d["steps"][0]["target"]).update(
        route="unforgotten"
    ),
    "unlisted": lambda d: d["ledger"].update(
        targets=[t for t in d["ledger"]["targets"] if t["path"] != d["steps"][0]["target"]]
    ),
    "rejected_and_applied": lambda d: d["ledger"].update(rejected=[d["steps"][0]["target"]]),
    "deferred_unknown": lambda d: d["ledger"].update(deferred=["people/ann.md"]),
}


@pytest.mark.parametrize("forgery", sorted(LEDGER_FORGERIES))
def test_ledger_fields_that_disagree_with_the_steps_are_refused(store, tmp_path, forgery):
    data = saved(store, tmp_path / "p.json")
    LEDGER_FORGERIES[forgery](data)
    out = tmp_path / "forged.json"
    out.write_text(json.dumps(data))
    assert "ledger fields" in refused(store, out)


def _forged(root: Path, tmp_path: Path, step) -> Path:
    """A plan file made with the tool's own library: a real plan of the request,
    one step replaced by ``step(store)`` and listed in the ledger as a target."""
    live = session(root, tmp_path)
    approved = live.approve(live.plan(REQUEST))
    plan, route = step(live.store)  # at the plan's own time: the session's clock
    targets = [*(t for t in approved.ledger["targets"] if t["path"] != plan.target), {"path": plan.target, "rank": 9, "route": route, "shared_words": [],
                                            "coverage": 0.5, "reason": "forged"}]
    forged = replace(approved, steps=((plan, route),), ledger={**approved.ledger, "targets": targets})
    out = tmp_path / "forged.json"
    out.write_text(dumps(forged))
    return out


TRAILERS = {"Forget-Request": REQUEST, "Retraction-Id": retraction_id("I keep bees")}


def test_a_library_made_plan_archiving_an_unrelated_memory_is_refused(store, tmp_path):
    out = _forged(store, tmp_path, lambda s: (lifecycle.plan_archive(
        s, "people/ann.md", superseded_by=REQUEST, reason='forget request: "I keep bees"', trailers=TRAILERS), "archive"))
    assert "archives people/ann.md, which shares no word" in refused(store, out)


def test_a_library_made_plan_striking_an_unrelated_sentence_is_refused(store, tmp_path):
    def strike_printer(s: Store):
        body = s.load("projects/weekly.md").body
        span = find_mentions(body, Matcher.for_pref("the printer was fixed"))[0][0]
        assert span.text == "The printer was fixed."
        return lifecycle.plan_retract(s, "projects/weekly.md", "I keep bees", superseded_by=REQUEST, selected={0},
                                      trailers=TRAILERS, spans=(replace(span, index=0),), regions=()), "strike"

    out = _forged(store, tmp_path, strike_printer)
    assert "strikes 'The printer was fixed.'" in refused(store, out)


def test_a_library_made_archive_with_another_reason_is_refused(store, tmp_path):
    out = _forged(store, tmp_path, lambda s: (lifecycle.plan_archive(
        s, "insights/pref-bees.md", superseded_by=REQUEST, reason="owner: mallory", trailers=TRAILERS), "archive"))
    assert "is not what a forget of" in refused(store, out)


def test_a_plan_is_not_applied_again_after_its_strike_was_undone(store, tmp_path):
    out = tmp_path / "p.json"
    saved(store, out, "projects/weekly.md")
    audit("apply", str(store), "--plan", str(out), "--yes")
    struck = git(store, "log", "-1", "--format=%H", "--", "projects/weekly.md").strip()
    audit("undo", str(store), struck, "--yes")
    assert (store / "projects/weekly.md").read_text() == FILES["projects/weekly.md"]  # the bytes as planned again
    assert "a commit since the plan was made" in refused(store, out)


@pytest.mark.parametrize("base", ["0" * 40, None])
def test_a_base_commit_this_clone_does_not_hold_is_refused(store, tmp_path, base):
    data = saved(store, tmp_path / "p.json")
    data["base_commit"] = base
    out = tmp_path / "based.json"
    out.write_text(json.dumps(data))
    refused(store, out)


def test_a_plan_dated_after_today_is_refused(store, tmp_path):
    data = saved(store, tmp_path / "p.json")
    data["planned_at"] = "9999-01-01T00:00:00+00:00"
    out = tmp_path / "future.json"
    out.write_text(json.dumps(data))
    assert "after today" in refused(store, out)


def test_a_plan_file_checked_whole_still_applies(store, tmp_path):
    out = tmp_path / "p.json"
    saved(store, out)
    assert checked(Store(store), loads(out.read_text())).request == REQUEST
    done = json.loads(audit("--json", "apply", str(store), "--plan", str(out), "--yes").stdout)
    assert done["applied"] is True and git(store, "status", "--porcelain") == ""


def test_a_target_that_is_no_longer_utf8_is_named(store, tmp_path):
    out = tmp_path / "p.json"
    saved(store, out, "projects/weekly.md")
    (store / "projects/weekly.md").write_bytes(b"---\nid: weekly\n---\n\nThe printer \xff was fixed. I keep bees.\n")
    git(store, "commit", "-qam", "a byte no UTF-8")
    for args in (("--yes",), ()):
        proc = audit("apply", str(store), "--plan", str(out), *args, ok=False)
        assert proc.returncode == 1 and proc.stderr.count("\n") == 1, proc.stderr
        assert "projects/weekly.md" in proc.stderr and "plan it again" in proc.stderr
    s = Store(store, clock=Clock())
    plan = lifecycle.plan_archive(Store(store), "people/ann.md")
    (store / "people/ann.md").write_bytes(b"---\nid: ann\n---\n\nAnn \xff likes tea.\n")
    with pytest.raises(PalinodeError, match=r"people/ann\.md cannot be read as a memory \(not valid UTF-8"):
        apply(s, plan)


# -- low: a choice of sentences the plan does not have; a step that changes nothing ---------------------


def test_a_choice_of_sentences_the_plan_does_not_have_is_refused_not_dropped(store, tmp_path):
    """A damaged or crafted review draft's span numbers: the apply had dropped the target
    and the ledger called the apply complete."""
    live = session(store, tmp_path)
    fplan = live.plan(REQUEST)
    selection = {c.path: Choice(spans=frozenset({99})) if c.route == "strike" else APPROVE_ALL for c in fplan.actionable}
    assert any(c.route == "strike" for c in fplan.actionable)
    with pytest.raises(PalinodeError, match="no proposed sentence numbered 99"):
        live.apply_forget(fplan, selection)
    assert subjects(store) == ["initial"] and not (store / ".palinode-audit/ledger.jsonl").exists()


def test_a_step_that_changes_nothing_is_refused(store, tmp_path):
    live = session(store, tmp_path)
    approved = live.approve(live.plan(REQUEST))
    plan, route = approved.steps[0]
    idle: Approved = replace(approved, steps=((replace(plan, new_text=plan.old_text), route), *approved.steps[1:]))
    with pytest.raises(PalinodeError, match="changes nothing"):
        review.execute(live.store, idle)
    assert subjects(store) == ["initial"]


# -- finding 11: review-pack keeps requests that share a preference apart --------------------------


def test_review_pack_keeps_two_requests_with_one_preference_apart(tmp_path):
    twin = palinode_file({"id": "forget-bees-2"}, "Please forget that I keep bees.")
    root = make_git_store(tmp_path / "s", {**FILES, "people/forget-bees-too.md": twin})
    folder = tmp_path / "pack"
    out = json.loads(audit("--json", "review-pack", str(root), "--out", str(folder), "--lexical").stdout)
    entries = {e["request"]: e for e in out["requests"]}
    assert set(entries) == {REQUEST, "people/forget-bees-too.md"}
    assert len({e["rid"] for e in entries.values()}) == 1  # Palinode's id: the preference's
    files = [e["plan"] for e in entries.values() if e["plan"]]
    assert len(files) == 2 and len(set(files)) == 2
    for request, entry in entries.items():
        assert json.loads((folder / entry["plan"]).read_text())["request"]["path"] == request
        assert (folder / f"{entry['id']}.md").is_file() and entry["id"] != entry["rid"]
        assert all(c in "0123456789abcdef" for c in entry["id"])  # what the apply workflow accepts as a rid
    comment = (folder / "comment.md").read_text()
    assert all(f"rid `{e['id']}`" in comment for e in entries.values())
    assert "people/forget-bees-too" not in comment and "forget-bees" not in comment


def test_review_pack_names_a_lone_request_by_its_rid(store, tmp_path):
    folder = tmp_path / "pack"
    (entry,) = json.loads(audit("--json", "review-pack", str(store), "--out", str(folder), "--lexical").stdout)[
        "requests"]
    assert entry["id"] == entry["rid"] and entry["plan"] == f"{entry['rid']}.plan.json"
