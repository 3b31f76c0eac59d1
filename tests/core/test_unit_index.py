"""The unit index (issue 21): a plan is a lookup. A fresh store plans lexically
without loading the model and says how much semantic evidence it lacks; the
index keeps every unit of every version, re-segments only what changed,
resumes after an interrupt, and once vectors exist the semantic arm reads
every unit through stored similarities that stay current as vectors arrive."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from helpers import Clock, git, make_git_store, palinode_file

from palinode_core.errors import Cancelled
from palinode_core.search.index import SearchIndex
from palinode_core.search.unit_index import SIM_FLOOR
from palinode_core.session import Session
from palinode_core.storage.store import Store
from palinode_core.text.stem import stems

FILLER = ("The quarterly budget review moved to Thursday afternoon. Finance wants the vendor invoices "
          "reconciled by Friday. The staging server was rebuilt after the disk failure.")


def _files(n_filler: int = 30) -> dict[str, str]:
    files = {
        "insights/pref-bees.md": palinode_file({"id": "pref-bees", "created_at": "2025-05-01T10:00:00+00:00"},
                                               "I keep bees in the back garden."),
        "projects/weekly.md": palinode_file({"id": "weekly", "created_at": "2025-05-02T10:00:00+00:00"},
                                            f"{FILLER} I keep bees in the back garden. The printer was fixed."),
        "insights/forget-bees.md": palinode_file({"id": "forget-bees", "created_at": "2025-05-20T10:00:00+00:00"},
                                                 "Please forget that I keep bees."),
    }
    for i in range(n_filler):
        files[f"research/note-{i:03d}.md"] = palinode_file(
            {"id": f"note-{i}", "created_at": "2025-05-03T10:00:00+00:00"}, f"Note {i}. {FILLER}")
    return files


class _NoModel:
    """An embedder that must never be asked to load: a plan reads cached vectors only."""

    installed = True  # the vectors extra is there; only its model must not be loaded
    ready = False
    notice = None
    encoded = 0

    def load(self) -> bool:
        raise AssertionError("planning loaded the embedding model")

    def encode(self, texts):  # pragma: no cover - load() fails first
        raise AssertionError("planning embedded text")


def test_a_fresh_store_plans_lexically_without_the_model_and_says_what_is_missing(tmp_path):
    root = make_git_store(tmp_path / "s", _files())
    session = Session.open(root, clock=Clock(), embedder=_NoModel())  # type: ignore[arg-type]
    index = session.search_index()
    index.update_lexical(memories=session.memories)  # what `plan` does first: no vectors
    fplan = session.plan("insights/forget-bees.md", index=index)
    routes = {c.path: c.route for c in fplan.targets}
    assert routes == {"insights/pref-bees.md": "archive", "projects/weekly.md": "strike"}
    assert fplan.semantic is not None and not fplan.semantic.complete and not fplan.semantic.query
    assert "palinode-audit index" in (fplan.notice or "")
    assert set(fplan.provisional) == set(routes)  # the semantic arm may still change them
    assert fplan.to_dict()["semantic"]["complete"] is False


def test_units_are_kept_per_version_and_only_changed_files_are_segmented_again(tmp_path):
    root = make_git_store(tmp_path / "s", _files())
    index = SearchIndex(Store(root), _NoModel(), cache_dir=tmp_path / "c")  # type: ignore[arg-type]
    index.update_lexical()
    assert index.units.stats.added == 33 and index.units.stats.versions == 33
    hits = {t for _fp, t in index.units.lexical_hits(["bee"])}
    assert hits == {"I keep bees in the back garden.", "Please forget that I keep bees."}

    (root / "research/note-007.md").write_text(palinode_file({"id": "note-7"}, "Note 7. The hives swarmed."))
    (root / "research/note-008.md").unlink()
    index.update_lexical()
    assert (index.units.stats.added, index.units.stats.dropped, index.units.stats.versions) == (1, 2, 32)
    assert "Note 7." in {t for _fp, t in index.units.lexical_hits(stems("note"))}
    assert {t for _fp, t in index.units.lexical_hits(stems("hives"))} == {"The hives swarmed."}
    embedded, total = index.units.coverage()
    assert embedded == 0 and total > 0


def test_an_interrupted_sync_keeps_what_it_did_and_resumes(tmp_path, monkeypatch):
    from palinode_core.search import unit_index

    monkeypatch.setattr(unit_index, "COMMIT_EVERY", 5)
    root = make_git_store(tmp_path / "s", _files())
    store = Store(root)
    memories = store.scan().memories
    index = SearchIndex(store, _NoModel(), cache_dir=tmp_path / "c")  # type: ignore[arg-type]
    seen = []

    def stop_after_twelve(phase: str, done: int, total: int) -> None:
        seen.append(done)

    real = index.units._write

    def write_then_cancel(batch):
        real(batch)
        if len(index.units.known()) >= 10:
            index._cancel.set()

    monkeypatch.setattr(index.units, "_write", write_then_cancel)
    with pytest.raises(Cancelled):
        index.units.sync(memories, stop_after_twelve)
    kept = len(index.units.known())
    assert 10 <= kept < 33
    index._cancel.clear()
    monkeypatch.setattr(index.units, "_write", real)
    index.units.sync(memories)
    assert index.units.stats.added == 33 - kept  # only the rest


def test_a_lexical_plan_never_imports_numpy_or_torch(tmp_path):
    root = make_git_store(tmp_path / "s", _files(5))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    probe = ("import runpy, sys\nsys.argv = ['palinode-audit', '--json', 'plan', sys.argv[1], "
             "'insights/forget-bees.md', '--lexical']\ntry:\n    runpy.run_module('palinode_core', run_name='__main__')\n"
             "except SystemExit:\n    pass\nprint(sorted(m for m in ('numpy', 'torch', 'sentence_transformers', 'onnxruntime') "
             "if m in sys.modules), file=sys.stderr)\n")
    proc = subprocess.run([sys.executable, "-c", probe, str(root)], capture_output=True, text=True, env=env,
                          check=True)
    assert json.loads(proc.stdout)["candidates"]
    assert proc.stderr.strip().splitlines()[-1] == "[]"


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_the_semantic_arm_reads_every_unit_and_stays_current_as_vectors_arrive(tmp_path, embedder):
    files = _files(10)
    files["people/keeper.md"] = palinode_file(
        {"id": "keeper", "created_at": "2025-05-04T10:00:00+00:00"},
        f"{FILLER} Honey from my own hives goes to the neighbours every summer.")
    root = make_git_store(tmp_path / "s", files)
    session = Session.open(root, clock=Clock(), embedder=embedder)
    session.update_index()  # every chunk and unit embedded
    scanned = session.search_index()._db.execute("SELECT COUNT(*) FROM pref_scans").fetchone()[0]
    assert scanned == 1  # the request's similarities were stored by the index: the first plan only looks them up
    fplan = session.plan("insights/forget-bees.md")
    assert fplan.semantic is not None and fplan.semantic.complete and not fplan.provisional
    keeper = next(c for c in fplan.candidates if c.path == "people/keeper.md")  # no shared word: by meaning
    assert "semantic" in keeper.arms
    near = session.search_index().units.near("I keep bees", session.search_index().vectors(["I keep bees"])[0].tobytes())
    assert near and min(near.values()) >= SIM_FLOOR

    # a new memory embedded later joins the stored similarities in the same transaction
    (root / "people/apiary.md").write_text(palinode_file(
        {"id": "apiary", "created_at": "2025-05-05T10:00:00+00:00"},
        "My apiary of three beehives needs checking before the winter."))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "apiary")
    session.refresh()
    session.update_index()
    again = session.plan("insights/forget-bees.md")
    assert "people/apiary.md" in {c.path for c in again.candidates}


@pytest.mark.parametrize("body, pref", [
    ("I time my laps with a timer.", "I like timing"),  # "time" is filler to the stemmer's stopwords, "timing" is not
    ("I time my laps.", "I like timing"),
    ("Teaching the team to make tea.", "my oolong tea habit"),  # a word starting like a stem is not it
])
def test_the_index_finds_every_unit_lexical_evidence_counts_and_no_other(tmp_path, body, pref):
    """The lookup and the evidence agree exactly: a unit sharing a counted stem
    is found (filler words included), and one whose words only start like a
    stem is neither found nor counted."""
    from palinode_core.forget.judgment import Judge, lookup_stems
    from palinode_core.forget.leak import leak_check
    from palinode_core.forget.requests import request_at

    root = make_git_store(tmp_path / "s", {
        "notes/a.md": palinode_file({"id": "a"}, body),
        "insights/forget.md": palinode_file({"id": "f"}, f"Please forget that {pref}."),
    })
    session = Session(Store(root, clock=Clock()), vectors=False)
    index = session.update_index()
    request = request_at(session.store, "insights/forget.md")
    words = Judge(pref).words(body)
    counted = bool(words.shared or words.loose)
    found = {fp for fp, _text in index.units.lexical_hits(lookup_stems(Judge(pref).pref.stems))}
    assert (session.memories["notes/a.md"].fingerprint in found) == counted
    with_index = {leak.path for leak in leak_check(request, session.memories, index)}
    without = {leak.path for leak in leak_check(request, session.memories, None)}
    assert with_index == without


def test_a_file_changed_after_the_scan_is_not_indexed_under_the_scans_fingerprint(tmp_path, monkeypatch):
    """The text the index reads must be the version the scan fingerprinted; a
    file changed in between is left for the next sync (which reads it anew)."""
    from palinode_core.storage import child

    monkeypatch.setattr(child, "ISOLATE_ABOVE", 0)  # a first scan as of a big store: summaries only
    root = make_git_store(tmp_path / "s", {"notes/a.md": palinode_file({"id": "a"}, "I drink oolong tea every morning.")})
    store = Store(root, clock=Clock())
    scan = store.scan()
    original = (root / "notes/a.md").read_text()
    (root / "notes/a.md").write_text(original.replace("oolong tea", "black coffee"))
    index = SearchIndex(store, None)
    index.units.sync(scan.memories)
    (root / "notes/a.md").write_text(original)  # put back (an undo): same fingerprint as the scan's
    index.units.sync(Store(root, clock=Clock()).scan().memories)
    assert {fp for fp, _ in index.units.lexical_hits({"oolong"})} == {scan.memories["notes/a.md"].fingerprint}


def test_a_memory_the_index_does_not_hold_is_read_whole_by_plans_and_checks(tmp_path, monkeypatch):
    """A note an agent keeps appending to changes between every scan and sync:
    it is never indexed under a stale fingerprint, and still never missed."""
    from palinode_core.forget.leak import leak_check
    from palinode_core.forget.requests import request_at
    from palinode_core.storage import child

    monkeypatch.setattr(child, "ISOLATE_ABOVE", 0)
    root = make_git_store(tmp_path / "s", {
        "notes/a.md": palinode_file({"id": "a"}, "I drink oolong tea every morning."),
        "insights/forget.md": palinode_file({"id": "f"}, "Please forget that I drink oolong tea."),
    })
    store = Store(root, clock=Clock())
    for round_ in range(3):
        scan = store.scan()
        with (root / "notes/a.md").open("a") as fh:
            fh.write(f"Line {round_}.\n")
        index = SearchIndex(store, None)
        index.units.sync(scan.memories)
        request = request_at(store, "insights/forget.md")
        with_index = {leak.path for leak in leak_check(request, scan.memories, index)}
        assert "notes/a.md" in with_index
        index.close()


def test_a_failed_write_to_stdout_is_not_written_twice(monkeypatch):
    from palinode_core.cli import _write_batched

    class Failing:
        def __init__(self):
            self.got = []

        def isatty(self):
            return False

        def write(self, text):
            self.got.append(text)
            raise OSError("disk full")

        def flush(self):
            pass

    out = Failing()
    monkeypatch.setattr(sys, "stdout", out)
    with pytest.raises(OSError):
        _write_batched((f"row {i}\n" for i in range(10)), size=10)
    assert len(out.got) == 1  # the block that failed, once


def test_a_lone_surrogate_is_shown_not_written():
    from palinode_core.text.sanitize import printable

    assert printable("session \ud800x") == "session \\ud800x"
    printable("session \ud800x").encode("utf-8")  # writable to any UTF-8 stream


def test_a_list_items_sentences_are_embedded_with_the_item_as_likely_evidence(tmp_path):
    """Each sentence of an item holding several has a vector row of its own (no terms), embedded
    in the first batch when the item holds a pending request's word, and not counted as a unit."""
    files = _files(3)
    files["projects/list.md"] = palinode_file(
        {"id": "list", "created_at": "2025-05-04T10:00:00+00:00"},
        "Jobs.\n\n- The gutter leaks. Keeping the bees fed takes sugar in winter.\n- Tea first.\n")
    root = make_git_store(tmp_path / "s", files)
    session = Session.open(root, clock=Clock(), embedder=_NoModel())  # type: ignore[arg-type]
    index = session.search_index()
    index.update_lexical(memories=session.memories)
    likely, rest = index.units.texts_missing_vectors(stems("I keep bees"))
    likely_texts = {t for _h, t in likely}
    assert "Keeping the bees fed takes sugar in winter." in likely_texts
    assert "The gutter leaks." in likely_texts  # the item holds the word: all its sentences come first
    assert "Tea first." in {t for _h, t in rest}  # an item of one sentence is its own unit only
    db = index._db
    kinds = dict(db.execute("SELECT text, kind FROM units WHERE text IN (?, ?)",
                            ("The gutter leaks.", "Keeping the bees fed takes sugar in winter.")).fetchall())
    assert set(kinds.values()) == {"item_sentence"}
    hits = {t for _fp, t in index.units.lexical_hits(stems("I keep bees"))}
    assert "Keeping the bees fed takes sugar in winter." not in hits  # no terms: the item is the hit
    # a plan made now says the item's memory may change once those vectors are in
    fplan = session.plan("insights/forget-bees.md", index=index)
    assert "projects/list.md" in fplan.provisional


def _tamper(db, how: str, unit_ids: list[int]) -> None:
    marks = ",".join("?" * len(unit_ids))
    if how == "terms deleted":
        db.execute(f"DELETE FROM unit_terms WHERE rowid IN ({marks})", unit_ids)
    elif how == "terms altered":
        db.executemany("UPDATE unit_terms SET stems = 'printer', entities = '' WHERE rowid = ?", [(i,) for i in unit_ids])
    elif how == "unit rows deleted":
        db.execute(f"DELETE FROM unit_terms WHERE rowid IN ({marks})", unit_ids)
        db.execute(f"DELETE FROM units WHERE id IN ({marks})", unit_ids)
    elif how == "unit rows moved to another version":
        db.execute(f"UPDATE units SET fingerprint = '{'0' * 64}' WHERE id IN ({marks})", unit_ids)


@pytest.mark.parametrize("how", ["terms deleted", "terms altered", "unit rows deleted",
                                 "unit rows moved to another version"])
def test_a_tampered_unit_index_hides_no_live_mention_from_plan_or_leaks(tmp_path, how):
    """The unit index is a cache in the user's folder: a row it lacks or holds wrongly never
    makes a live mention vanish. What a lookup leaves out is checked against the file's bytes;
    rows that do not match them are rebuilt, and said once."""
    import sqlite3

    root = make_git_store(tmp_path / "s", _files(5))

    def cli(*args: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", args[0], str(root), *args[1:]],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    def found() -> tuple[dict[str, str], set[str]]:
        plan = cli("plan", "insights/forget-bees.md", "--lexical")
        leaks = cli("leaks", "insights/forget-bees.md")
        return ({c["path"]: c["route"] for c in plan["candidates"]},
                {m["path"] for m in leaks["checks"][0]["mentions"] if m["kind"] == "live"})

    expected = ({"insights/pref-bees.md": "archive", "projects/weekly.md": "strike"},
                {"insights/pref-bees.md", "projects/weekly.md"})
    assert found() == expected

    def tamper() -> None:
        db = sqlite3.connect(Store(root).cache_dir / "index.sqlite3")
        ids = [i for (i,) in db.execute("SELECT id FROM units WHERE fingerprint IN (SELECT fingerprint FROM unit_versions)"
                                        " AND text LIKE '%I keep bees in the back garden.%'")]
        assert len(ids) == 2
        _tamper(db, how, ids)
        db.commit()
        db.close()

    tamper()
    leaks = cli("leaks", "insights/forget-bees.md")
    assert {m["path"] for m in leaks["checks"][0]["mentions"] if m["kind"] == "live"} == expected[1], how
    assert "did not match the file" in leaks["notice"]
    tamper()
    plan = cli("plan", "insights/forget-bees.md", "--lexical")
    assert {c["path"]: c["route"] for c in plan["candidates"]} == expected[0], how
    assert "did not match the file" in plan["resolver_notice"]
    assert found() == expected, how
    leaks = cli("leaks", "insights/forget-bees.md")
    assert leaks["notice"] is None  # the rows were rebuilt: nothing left to rebuild


def test_the_tamper_checks_word_starts_are_the_fewest_that_find_every_word():
    """Each word start costs git grep a pass over the store: one that a shorter one
    starts is dropped; every inflection of a stem still starts with a kept one."""
    from palinode_core.forget.gather import _prefixes
    from palinode_core.text.stem import stem

    words = ["living", "lives", "liver", "liverpool", "berlin", "berliners", "bees", "beet", "flies", "fly",
             "flying", "using", "used", "dying", "skies", "sky", "roses", "rosé", "cries", "crying"]
    stems = frozenset(stem(w) for w in words)
    kept = _prefixes(stems)
    assert not any(a != b and b.isascii() and b.startswith(a) for a in kept for b in kept), kept
    for word in words:
        assert any(word.startswith(start) for start in kept), (word, stem(word), kept)
    assert not {"beet", "liver", "liverpool"} & set(kept)  # begun by "bee" and "liv": no pass of their own
    assert _prefixes(frozenset({"ros", "rosé"})) == ["ros", "rosé"]  # another script's start is read, never dropped
    assert "be" not in _prefixes(frozenset({"bee"}))  # a two-letter start would read most of a store


FILLER = ("The quarterly budget review moved to Thursday afternoon. Finance wants the vendor invoices "
          "reconciled by Friday. The staging server was rebuilt after the disk failure.")


@pytest.mark.parametrize("pref, mention", [
    ("I like the Hauptstraße", "I like the Hauptstraße."),  # folds to "strasse": the bytes spell "ß"
    ("I like to fly", "I like to fly."),  # stem "fli": no prefix of "fly"
    ("I like to cry", "I like to cry."),
    ("I am dying to travel", "I am dying to travel."),  # stem "die"
    ("I like roses and rosé", "We opened a bottle of rosé with the neighbours."),  # "rosé" after "ros"
    ("I like the Hauptstrasse", "I like the Hauptstrasse."),  # controls
    ("I like to swim", "I like to swim."),
])
def test_a_tampered_index_hides_no_mention_a_word_start_does_not_show(tmp_path, pref, mention):
    """From an attacker's review: the tamper check looked for a stem's start, and some words do
    not start with it (Snowball's y->i and exceptional forms, letters whose case folding spells
    ASCII), or a start in another script was dropped for an ASCII one beginning it."""
    import sqlite3

    files = {
        "insights/pref.md": palinode_file({"id": "pref", "created_at": "2025-05-01T10:00:00+00:00"}, f"{pref}."),
        "projects/weekly.md": palinode_file({"id": "weekly", "created_at": "2025-05-02T10:00:00+00:00"},
                                            f"{FILLER} {mention} The printer was fixed."),
        "insights/forget.md": palinode_file({"id": "forget", "created_at": "2025-05-20T10:00:00+00:00"},
                                            f"Please forget that {pref[0].lower()}{pref[1:]}."),
    }
    for i in range(5):
        files[f"research/note-{i:03d}.md"] = palinode_file(
            {"id": f"note-{i}", "created_at": "2025-05-03T10:00:00+00:00"}, f"Note {i}. {FILLER}")
    root = make_git_store(tmp_path / "s", files)

    def live() -> set[str]:
        proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", "leaks", str(root),
                               "insights/forget.md"], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return {m["path"] for m in json.loads(proc.stdout)["checks"][0]["mentions"] if m["kind"] == "live"}

    assert "projects/weekly.md" in live()
    db = sqlite3.connect(Store(root).cache_dir / "index.sqlite3")
    db.execute("DELETE FROM unit_terms")  # every unit's terms gone: the lookup lists nothing
    db.commit()
    db.close()
    assert "projects/weekly.md" in live(), "a live mention vanished"
