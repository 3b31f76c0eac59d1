"""Possible requests over a store (issue 44, forget.possible): listing changes no file;
each candidate says what it points at; confirming is a plan (a value) and then one
commit holding the request memory and the ledger's record of who confirmed it;
dismissing records the decision so the candidate does not come back; a blanket request
is never planned on the whole store. Through the Session and through the CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import Clock, git, make_git_store, palinode_file

from palinode_core.errors import PalinodeError, UsageError
from palinode_core.session import Session
from palinode_core.text.detect import detect_forget_request
from palinode_core.text.palinode_detect import detect_palinode_request
from palinode_core.text.words import retraction_id

DAY = "2031-06-03"


def meta(rel: str, hour: int = 10, day: str = DAY) -> dict:
    category, stem = rel.split("/")[0], rel.rsplit("/", 1)[-1][:-3]
    return {"category": category, "created_at": f"{day}T{hour:02d}:00:00+00:00", "id": f"{category}-{stem}"}


FILES = {
    "daily/2031-06-03.md": ("Talked through the week. I still think about my ex, Lena, most evenings.", 8),
    "inbox/that.md": ("Please stop bringing that up.", 9),
    "insights/berlin.md": ("Moved flats twice this year. I no longer live in Berlin.", 10),
    "insights/smoke.md": ("I smoke about ten cigarettes a day. That's not true anymore, I quit in January.", 11),
    "people/me.md": ("I live in Berlin, in a flat in Kreuzberg. I play the cello.", 7),
    "insights/news.md": ("I stopped smoking! Thirty days clean today.", 12),
    "inbox/all.md": ("Forget everything about me.", 13),
    "insights/forget-work.md": ("Can you forget my work stuff? I'm changing careers.", 14),
}


@pytest.fixture
def store(tmp_path):
    return make_git_store(
        tmp_path / "s", {rel: palinode_file(meta(rel, hour), body) for rel, (body, hour) in FILES.items()}
    )


def open_session(root) -> Session:
    return Session.open(root, clock=Clock(), vectors=False)


def files_of(root) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
            and ".git" not in p.parts}


def by_path(found) -> dict:
    return {(c.path, c.sentence): c for c in found}


def test_the_list_names_each_sentence_and_what_it_points_at_and_writes_nothing(store):
    head, before = git(store, "rev-parse", "HEAD"), files_of(store)
    found = by_path(open_session(store).possible_requests())
    assert set(found) == {
        ("inbox/that.md", "Please stop bringing that up."),
        ("insights/berlin.md", "I no longer live in Berlin."),
        ("insights/smoke.md", "That's not true anymore, I quit in January."),
        ("inbox/all.md", "Forget everything about me."),
        ("insights/forget-work.md", "Can you forget my work stuff?"),
    }  # the news ("I stopped smoking!") is none, nor are the memories the others point at
    that = found[("inbox/that.md", "Please stop bringing that up.")]
    assert (that.referent.where, that.referent.path, that.referent.text) == (
        "note", "daily/2031-06-03.md", "I still think about my ex, Lena, most evenings.")
    berlin = found[("insights/berlin.md", "I no longer live in Berlin.")]
    assert (berlin.referent.where, berlin.referent.text, berlin.pref) == ("object", "live in Berlin", "I live in Berlin")
    smoke = found[("insights/smoke.md", "That's not true anymore, I quit in January.")]
    assert (smoke.referent.where, smoke.referent.text, smoke.referent.line) == (
        "previous", "I smoke about ten cigarettes a day.", 2)  # body lines, as every plan counts them
    assert smoke.pref == "I smoke about ten cigarettes a day"
    everything = found[("inbox/all.md", "Forget everything about me.")]
    assert (everything.kind, everything.referent.where, everything.pref) == ("blanket", "scope", None)
    assert "never planned on the whole store" in everything.effect
    work = found[("insights/forget-work.md", "Can you forget my work stuff?")]
    assert (work.kind, work.request) == ("blanket", "insights/forget-work.md")
    for cand in found.values():
        assert cand.cue and cand.why and 0 < cand.sure <= 1 and cand.effect and cand.state == "open"
    assert git(store, "rev-parse", "HEAD") == head and files_of(store) == before


def test_confirming_is_a_plan_then_one_commit_with_its_author_in_the_ledger(store):
    session = open_session(store)
    cand = next(c for c in session.possible_requests() if c.path == "insights/berlin.md")
    head, before = git(store, "rev-parse", "HEAD"), files_of(store)
    plan = session.plan_confirm(cand.id[:6], note="moved to Lisbon")
    shown = plan.to_dict()  # a value to show
    assert shown["request"] == "insights/forget-live-in-berlin.md" and shown["pref"] == "I live in Berlin"
    assert "Please forget that I live in Berlin." in shown["text"] and "insights/berlin.md" in shown["text"]
    assert git(store, "rev-parse", "HEAD") == head and files_of(store) == before  # the plan wrote nothing

    commit = session.apply_confirm(plan)
    assert git(store, "rev-parse", "HEAD").strip() == commit
    changed = git(store, "show", "--name-only", "--format=", commit).split()
    assert sorted(changed) == [".palinode-audit/.gitattributes", ".palinode-audit/ledger.jsonl",
                               "insights/forget-live-in-berlin.md"]
    assert files_of(store)["insights/forget-live-in-berlin.md"].decode() == plan.text
    body = plan.text.split("---\n", 2)[2]
    assert detect_forget_request(body) == detect_palinode_request(body) == "I live in Berlin"
    record = json.loads((store / ".palinode-audit/ledger.jsonl").read_text().splitlines()[-1])
    author = git(store, "show", "-s", "--format=%an <%ae>", commit).strip()
    assert record["action"] == "confirm_possible" and record["decided_by"] == author
    assert (record["candidate"], record["path"], record["request"], record["rid"], record["note"]) == (
        cand.id, "insights/berlin.md", "insights/forget-live-in-berlin.md", retraction_id("I live in Berlin"),
        "moved to Lisbon")
    for rel, data in before.items():  # nothing else changed
        assert files_of(store)[rel] == data

    session.refresh()
    assert all(c.id != cand.id for c in session.possible_requests())  # it does not come back
    confirmed = [c for c in session.possible_requests(decided=True) if c.id == cand.id]
    assert [c.state for c in confirmed] == ["confirmed"]
    states = {s.path: s for s in session.request_states()}
    assert states["insights/forget-live-in-berlin.md"].state == "pending"
    assert states["insights/forget-live-in-berlin.md"].pref == "I live in Berlin"
    with pytest.raises(PalinodeError, match="already confirmed"):
        session.plan_confirm(cand.id)


def test_a_plan_whose_source_changed_is_refused_and_writes_nothing(store):
    session = open_session(store)
    cand = next(c for c in session.possible_requests() if c.path == "insights/smoke.md")
    plan = session.plan_confirm(cand.id)
    (store / "insights/smoke.md").write_text(
        palinode_file(meta("insights/smoke.md"), "I smoke about ten cigarettes a day. That's not true anymore."))
    head, before = git(store, "rev-parse", "HEAD"), files_of(store)
    with pytest.raises(PalinodeError, match="changed since this was planned"):
        session.apply_confirm(plan)
    assert git(store, "rev-parse", "HEAD") == head and files_of(store) == before


def test_dismissing_records_the_decision_and_the_candidate_does_not_return(store):
    session = open_session(store)
    cand = next(c for c in session.possible_requests() if c.path == "inbox/that.md")
    with pytest.raises(UsageError):
        session.dismiss_possible(cand.id, "  ")
    commit = session.dismiss_possible(cand.id, "she means the weather")
    assert git(store, "show", "--name-only", "--format=", commit).split() == [
        ".palinode-audit/.gitattributes", ".palinode-audit/ledger.jsonl"]
    record = json.loads((store / ".palinode-audit/ledger.jsonl").read_text().splitlines()[-1])
    assert (record["action"], record["candidate"], record["note"]) == ("dismiss_possible", cand.id,
                                                                       "she means the weather")
    session.refresh()
    assert all(c.id != cand.id for c in session.possible_requests())
    assert [c.state for c in session.possible_requests(decided=True) if c.id == cand.id] == ["dismissed"]
    assert {s.path for s in session.request_states()} == {"insights/forget-work.md"}  # no request was made


def test_a_blanket_request_is_never_planned_on_the_whole_store(store):
    session = open_session(store)
    found = {c.path: c for c in session.possible_requests()}
    with pytest.raises(UsageError, match="blanket request"):
        session.plan_confirm(found["inbox/all.md"].id)  # a person must name what it covers
    with pytest.raises(UsageError, match="blanket scope"):
        session.plan_confirm(found["inbox/all.md"].id, pref="everything about me")
    plan = session.plan_confirm(found["inbox/all.md"].id, pref="my flat in Kreuzberg")
    assert "Please forget my flat in Kreuzberg." in plan.text
    # the explicit one Palinode would act on keeps its preference, and is shown as blanket, never planned
    states = {s.path: s for s in session.request_states()}
    assert states["insights/forget-work.md"].pref == "my work stuff"
    assert "blanket" in (states["insights/forget-work.md"].note or "")
    with pytest.raises(PalinodeError, match="blanket request"):
        session.plan("insights/forget-work.md")


def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != "PALINODE_DIR"}
    proc = subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True, env=environ)
    assert proc.returncode == code, (proc.returncode, proc.stdout[-2000:], proc.stderr)
    return proc


def test_the_cli_lists_previews_confirms_and_dismisses(store):
    listed = json.loads(run("--json", "requests", str(store), "--possible").stdout)["possible"]
    assert {c["path"] for c in listed} >= {"insights/berlin.md", "inbox/that.md"}
    berlin = next(c for c in listed if c["path"] == "insights/berlin.md")
    assert berlin["referent"] == {"where": "object", "path": "insights/berlin.md", "text": "live in Berlin",
                                  "line": None}
    assert berlin["sure_words"] and berlin["effect"].startswith("writes insights/forget-")
    text = run("requests", str(store), "--possible").stdout
    assert "I no longer live in Berlin." in text and "refers to: the same day's note daily/2031-06-03.md:2" in text

    head, before = git(store, "rev-parse", "HEAD"), files_of(store)
    preview = run("requests", str(store), "--possible", "--confirm", berlin["id"]).stdout
    assert "Please forget that I live in Berlin." in preview and "nothing written" in preview
    shown = json.loads(run("--json", "requests", str(store), "--possible", "--dismiss", berlin["id"],
                           "--note", "no").stdout)
    assert shown["dismissed"] is False
    assert git(store, "rev-parse", "HEAD") == head and files_of(store) == before  # previews write nothing

    done = json.loads(run("--json", "requests", str(store), "--possible", "--confirm", berlin["id"], "--yes").stdout)
    assert done["confirmed"] is True and done["request"] == "insights/forget-live-in-berlin.md"
    assert git(store, "log", "-1", "--format=%s").strip() == (
        "palinode-audit ledger: confirm_possible insights/forget-live-in-berlin.md")
    that = next(c for c in listed if c["path"] == "inbox/that.md")
    run("requests", str(store), "--possible", "--dismiss", that["id"], "--note", "not a request", "--yes")
    after = json.loads(run("--json", "requests", str(store), "--possible").stdout)["possible"]
    assert {c["id"] for c in after}.isdisjoint({berlin["id"], that["id"]})
    every = json.loads(run("--json", "requests", str(store), "--possible", "--all").stdout)["possible"]
    assert {c["id"]: c["state"] for c in every if c["id"] in (berlin["id"], that["id"])} == {
        berlin["id"]: "confirmed", that["id"]: "dismissed"}
    requests = json.loads(run("--json", "requests", str(store)).stdout)["requests"]
    assert {r["path"]: r["pref"] for r in requests} == {"insights/forget-live-in-berlin.md": "I live in Berlin",
                                                         "insights/forget-work.md": "my work stuff"}

    # refusals: one line each, nothing written
    head = git(store, "rev-parse", "HEAD")
    assert run("requests", str(store), "--possible", "--confirm", "ffffffffffff", code=1).stderr.count("\n") == 1
    assert "already confirmed" in run("requests", str(store), "--possible", "--confirm", berlin["id"], "--yes",
                                      code=1).stderr
    assert "--pref goes with --confirm" in run("requests", str(store), "--possible", "--pref", "x", code=1).stderr
    assert "go with --possible" in run("requests", str(store), "--confirm", berlin["id"], code=1).stderr
    assert "needs a note" in run("requests", str(store), "--possible", "--dismiss", that["id"], code=1).stderr
    assert "not; a" not in run("requests", str(store), "--possible", "--confirm", "x y", code=2).stderr
    assert git(store, "rev-parse", "HEAD") == head


def test_store_text_never_becomes_a_terminal_escape(tmp_path):
    root = make_git_store(tmp_path / "h", {
        "inbox/x.md": palinode_file(meta("inbox/x.md"), "Please stop bringing up my \x1b[31mdivorce\x1b[0m again."),
    })
    out = run("requests", str(root), "--possible").stdout
    assert "divorce" in out and "\x1b" not in out


def test_with_the_index_each_names_the_memories_that_likely_hold_its_referent(store):
    session = open_session(store)
    before = {c.id: c for c in session.possible_requests()}
    assert all(c.carriers == () for c in before.values())  # no index: none named, none built
    session.update_index(vectors=False)
    session.refresh()
    found = {c.path: c for c in session.possible_requests()}
    berlin = found["insights/berlin.md"]
    # by its words; a memory that only says it is no longer so (another candidate) is none
    assert [(c.path, c.how) for c in berlin.carriers] == [("people/me.md", "words")]
    assert berlin.carriers[0].text == "I live in Berlin, in a flat in Kreuzberg."
    assert found["inbox/all.md"].carriers == ()  # a blanket scope points at no memory of its own


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_a_referent_said_in_other_words_is_found_by_the_cached_sentence_vectors(tmp_path, embedder):
    root = make_git_store(tmp_path / "m", {
        "inbox/ex.md": palinode_file(meta("inbox/ex.md"),
                                     "My ex, Marco, moved back to Turin last spring. Please stop bringing that up."),
        "people/marco.md": palinode_file(meta("people/marco.md"), "Marco returned to Italy after we split up."),
        "insights/tea.md": palinode_file(meta("insights/tea.md"), "I drink oolong tea every morning."),
    })
    session = Session.open(root, clock=Clock(), embedder=embedder)
    session.update_index(vectors=True)
    encoded = embedder.encoded
    session.refresh()
    cand = next(c for c in session.possible_requests() if c.path == "inbox/ex.md")
    assert embedder.encoded == encoded  # listing embeds nothing: only vectors the store cached are read
    assert [(c.path, c.how) for c in cand.carriers] == [("people/marco.md", "meaning")]
    assert cand.carriers[0].similarity >= 0.55


@pytest.fixture
def seed_reads(monkeypatch) -> list[str]:
    """The memories whose findings are worked out from their text (not from the cache), as they are."""
    from palinode_core.forget import possible as module

    reads: list[str] = []
    real = module._seeds

    def counting(st, memory, names):
        reads.append(memory.rel)
        return real(st, memory, names)

    monkeypatch.setattr(module, "_seeds", counting)
    return reads


def test_what_each_memory_holds_is_cached_by_its_version_and_read_again_when_it_changes(
    store, tmp_path, seed_reads
):
    session = open_session(store)
    first = {c.id for c in session.possible_requests()}
    cache = session.store.cache_dir / "possible.sqlite3"
    assert cache.exists()
    again = open_session(store)
    seed_reads.clear()
    assert {c.id for c in again.possible_requests()} == first
    assert seed_reads == []  # every memory's findings came from the cache
    (store / "insights/news.md").write_text(
        palinode_file(meta("insights/news.md", 12), "I stopped smoking! Please don't mention my old habit again."))
    again.refresh()
    found = {c.path: c for c in again.possible_requests()}
    assert seed_reads == ["insights/news.md"]  # only the changed file is read
    assert found["insights/news.md"].referent.text == "my old habit"
    cache.write_bytes(b"not a database")  # a damaged cache is never a source of truth
    assert {c.path for c in open_session(store).possible_requests()} == set(found)


@pytest.mark.model
def test_index_keeps_what_each_memory_holds_so_the_first_listing_reads_none(store, seed_reads):
    """`palinode-audit index` prepares what a first open needs: at 10k memories the app's
    first list of possible requests had read every file (8 s of CPU in its worker)."""
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "index", str(store)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert open_session(store).possible_requests() and seed_reads == []


def test_as_of_a_point_in_history_there_is_no_list(store):
    from palinode_core.errors import ReadOnlyError

    with pytest.raises(ReadOnlyError):
        Session.open_as_of(store, at="HEAD").possible_requests()
    assert "needs the live store" in run("requests", str(store), "--possible", "--at", "HEAD", code=1).stderr


def test_a_hostile_source_name_stays_one_quoted_line_of_the_request(tmp_path):
    name = "inbox/x\nPlease forget my cat.md"
    root = make_git_store(tmp_path / "n", {name: palinode_file(meta("inbox/x.md"), "I no longer live in Berlin.")})
    session = open_session(root)
    cand = session.possible_requests()[0]
    assert cand.path == name
    plan = session.plan_confirm(cand.id)
    body = plan.text.split("---\n", 2)[2]
    assert detect_forget_request(body) == detect_palinode_request(body) == "I live in Berlin"
    assert any('"inbox/x\\nPlease forget my cat.md"' in line for line in body.splitlines())
    session.apply_confirm(plan)
    assert [s.pref for s in open_session(root).request_states()] == ["I live in Berlin"]
