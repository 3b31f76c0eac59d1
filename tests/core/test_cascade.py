"""Issue 43: semantic coverage without embedding every sentence. The cascade
(search.cascade) embeds a sample, screens every other sentence with cheap
vectors and embeds exactly only those it finds near an open request's
preference; a plan made then finds what a plan after a full index finds, a
memory written later is covered by the next plan, and an index of an older
layout or a damaged one is rebuilt and covered again.

Real model, real SQLite, the demo store at 60 memories (about 2,900 sentences);
the cascade's sizes are scaled down to that store (at its own sizes a store this
small is embedded whole)."""

from __future__ import annotations

import os
import sqlite3

import pytest
from helpers import git

from palinode_core.demo import build_demo_store
from palinode_core.search import cascade
from palinode_core.search.chunks import text_hash
from palinode_core.session import Session

pytestmark = [pytest.mark.model, pytest.mark.xdist_group("model")]


@pytest.fixture
def small_cascade(monkeypatch):
    monkeypatch.setattr(cascade, "BELOW", 0)  # always screen (the store is far below the real threshold)
    monkeypatch.setattr(cascade, "SAMPLE", 300)
    monkeypatch.setattr(cascade, "TOP_MIN", 300)
    monkeypatch.setattr(cascade, "TOP_SHARE", 0.0)


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    root = tmp_path_factory.mktemp("cascade") / "demo60"
    build_demo_store(root, size=60)
    return root


def _open(root, cache, embedder) -> Session:
    return Session.open(root, embedder=embedder, cache_dir=cache)


def _targets(session: Session) -> dict[str, list[tuple[str, str]]]:
    out = {}
    for state in session.request_states():
        if state.state in ("pending", "partial", "conflicted"):
            plan = session.plan(state.path)
            out[state.path] = sorted((c.path, c.route) for c in plan.candidates if c.route in ("archive", "strike"))
    return out


def _commit_daily(root, day: str, text: str) -> str:
    """A daily memory holding ``text``, written and committed as another program would."""
    (root / "daily").mkdir(exist_ok=True)
    memory = f"---\nid: daily-{day}\ncategory: daily\n---\n\n{text}\n"
    (root / "daily" / f"{day}.md").write_text(memory, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a new memory")
    return text


def _nearest(session: Session, pref: str, k: int = 20) -> list[str]:
    index = session.search_index()
    near = index.units.near(pref, index.cached_blobs([pref])[0])
    return sorted(near, key=lambda h: -near[h])[:k]


def test_a_plan_after_the_cascade_finds_what_a_plan_after_a_full_index_finds(demo, tmp_path, embedder, small_cascade):
    full = _open(demo, tmp_path / "full", embedder)
    full.update_index(full=True)
    embedded, units = full.search_index().units.coverage()
    assert embedded == units > 2000

    quick = _open(demo, tmp_path / "quick", embedder)
    quick.update_index()
    index = quick.search_index()
    embedded, units = index.units.coverage()
    assert embedded < units * 0.8  # the cascade left most sentences unembedded ...
    prefs = quick.open_prefs()
    assert len(prefs) >= 3 and index.units.covered_prefs(prefs) == set(prefs)
    wanted = kept = 0
    for pref in prefs:  # ... and kept the exact model's nearest 20 of each preference (the measure)
        exact = _nearest(full, pref)
        wanted += len(exact)
        kept += len(set(exact) & set(index.units.near(pref, index.cached_blobs([pref])[0])))
    assert wanted >= 40 and kept >= 0.98 * wanted, (kept, wanted)
    plans = _targets(quick)
    assert plans == _targets(full) and any(plans.values())
    plan = quick.plan(sorted(plans)[0])
    assert plan.semantic is not None and plan.semantic.complete and plan.semantic.covered
    assert "the cheap pass found the rest far from it" in plan.semantic.describe()
    # said as such: this plan's meaning is complete; the comparison plan's chunk search is by words
    from palinode_core.cli.output import _plan_text
    from palinode_core.cli.textout import Text

    shown = Text(colour=False, width=120)
    _plan_text(shown, plan.to_dict())
    said = "\n".join(shown.lines)
    assert "meaning: semantic evidence for every sentence near the preference" in said, said
    assert "Palinode's search: lexical" in said and "not every chunk has a vector yet" in said, said


def test_a_memory_written_after_the_cascade_is_covered_by_the_next_plan(demo, tmp_path, embedder, small_cascade):
    root = tmp_path / "store"
    git(demo.parent, "clone", "-q", str(demo), str(root))
    session = _open(root, tmp_path / "cache", embedder)
    session.update_index()
    written = _commit_daily(
        root, "2026-12-01", "Our household now runs on Taiwanese leaf brewed twice a day, a ritual I keep."
    )

    later = _open(root, tmp_path / "cache", embedder)
    index = later.update_index(vectors=False)  # what a CLI plan does: the lexical index only
    assert not index.has_vector(written)
    request = next(s.path for s in later.request_states() if s.pref == "my oolong tea habit")
    before = index.units.coverage()[0]
    plan = later.plan(request, embed=True)
    assert index.has_vector(written)
    assert plan.semantic is not None and plan.semantic.complete
    # the new memory's sentences, not the store's: covered in seconds
    assert 0 < index.units.coverage()[0] - before < 50


def _to_schema_6(db_path) -> None:
    """The unit tables as the release before the cascade wrote them."""
    db = sqlite3.connect(db_path)
    db.executescript(
        "DROP TABLE unit_texts; DROP TABLE pref_scans;"
        "CREATE TABLE unit_texts (hash TEXT PRIMARY KEY, refs INTEGER NOT NULL, embedded INTEGER NOT NULL)"
        " WITHOUT ROWID;"
        "CREATE TABLE pref_scans (pref TEXT PRIMARY KEY, vec BLOB NOT NULL);"
        "PRAGMA user_version = 6;"
    )
    db.commit()
    db.close()


@pytest.mark.parametrize("damage", ["older layout", "garbled file"])
def test_an_index_of_an_older_layout_or_damaged_is_rebuilt_and_covered_again(
    demo, tmp_path, embedder, small_cascade, damage
):
    session = _open(demo, tmp_path / "cache", embedder)
    session.update_index()
    db_path = session.search_index().cache_dir / "index.sqlite3"
    session.search_index().close()
    if damage == "older layout":
        _to_schema_6(db_path)
    else:
        for suffix in ("-wal", "-shm"):
            if os.path.exists(f"{db_path}{suffix}"):
                os.remove(f"{db_path}{suffix}")
        db_path.write_bytes(os.urandom(4096))

    again = _open(demo, tmp_path / "cache", embedder)
    index = again.update_index()
    prefs = again.open_prefs()
    assert index.units.covered_prefs(prefs) == set(prefs)
    embedded, units = index.units.coverage()
    assert 0 < embedded < units
    db = sqlite3.connect(db_path)
    assert db.execute("PRAGMA user_version").fetchone()[0] == 7
    unscreened = db.execute("SELECT count(*) FROM unit_texts WHERE embedded = 0 AND screened = 0").fetchone()[0]
    assert unscreened == 0
    for pref in prefs:
        assert index.units.covered(pref)
    assert text_hash(prefs[0]) in {r[0] for r in db.execute("SELECT pref FROM pref_scans WHERE covered")}


def test_an_update_after_the_cascade_covered_every_request_embeds_only_what_was_written_since(
    demo, tmp_path, embedder, small_cascade, monkeypatch
):
    """The app's first update on a store `index` covered: the memory written since is
    embedded, and the store's unembedded texts are not listed (at 10k: 0.7 s holding the
    index's lock, which a plan made meanwhile waited on)."""
    monkeypatch.setattr(cascade, "BELOW", 50)  # fewer written since than this: embedded without a screening
    root = tmp_path / "store"
    git(demo.parent, "clone", "-q", str(demo), str(root))
    _open(root, tmp_path / "cache", embedder).update_index()
    written = _commit_daily(
        root, "2026-12-02", "A weekly pot of Taiwanese leaf is brewed here twice a day, a ritual kept."
    )

    later = _open(root, tmp_path / "cache", embedder)
    index = later.update_index(vectors=False)
    before = index.units.coverage()[0]
    listed = []
    listing = index.units.texts_missing_vectors
    index.units.texts_missing_vectors = lambda *a, **k: listed.append(1) or listing(*a, **k)  # a spy: still runs
    later.update_index()
    assert listed == []
    assert index.has_vector(written)
    assert 0 < index.units.coverage()[0] - before < 50
    prefs = later.open_prefs()
    assert index.units.covered_prefs(prefs) == set(prefs)
    request = next(s.path for s in later.request_states() if s.pref == "my oolong tea habit")
    plan = later.plan(request)
    assert plan.semantic is not None and plan.semantic.complete


def test_everything_left_is_embedded_in_a_low_priority_child_the_index_then_reads(
    demo, tmp_path, embedder, monkeypatch
):
    """`embed_everything(isolate=True)`, what the app runs once plans are covered: the many
    sentences the cascade left are embedded by `palinode-audit index --full` in a child
    process, so the app's plans and UI do not compete with half an hour of embedding."""
    session = _open(demo, tmp_path / "cache", embedder)
    index = session.update_index(vectors=False)
    embedded, units = index.units.coverage()
    assert units - embedded > 1000
    monkeypatch.setattr(cascade, "BELOW", 1)  # the child, at its own sizes, embeds this small store whole
    assert index.embed_everything(isolate=True)
    embedded, units = index.units.coverage()
    assert embedded == units
    assert index.stats.embedded_this_session == 0  # the child embedded them all, this process none
    assert index.vectors_ready


def test_a_plan_says_complete_only_when_every_memory_it_read_had_vectors(tmp_path, embedder):
    """From an attacker's review: a plan on an index not yet brought up to date (the app plans on
    its published index while its worker is busy) reads a memory written since whole, with no
    vector, and had said "meaning: complete"; once indexed, that memory was a target."""
    from helpers import make_git_store, palinode_file

    filler = "The quarterly budget review moved to Thursday afternoon. The staging server was rebuilt."
    files = {
        "insights/pref-bees.md": palinode_file({"id": "pref-bees", "created_at": "2025-05-01T10:00:00+00:00"},
                                               "I keep bees in the back garden."),
        "insights/forget-bees.md": palinode_file({"id": "forget-bees", "created_at": "2025-05-20T10:00:00+00:00"},
                                                 "Please forget that I keep bees."),
    }
    for i in range(5):
        files[f"research/note-{i:03d}.md"] = palinode_file(
            {"id": f"note-{i}", "created_at": "2025-05-03T10:00:00+00:00"}, f"Note {i}. {filler}")
    root = make_git_store(tmp_path / "s", files)
    session = _open(root, tmp_path / "cache", embedder)
    index = session.update_index()
    session.prepare_plans()
    assert session.plan("insights/forget-bees.md", index=index).semantic.complete
    (root / "projects").mkdir()
    (root / "projects" / "hive.md").write_text(palinode_file(
        {"id": "hive", "created_at": "2025-05-10T10:00:00+00:00"},
        f"{filler} I tend several hives of honeybees behind the house."))
    session.refresh()
    plan = session.plan("insights/forget-bees.md", index=index)  # the index as it was: not updated
    assert plan.semantic is not None and not plan.semantic.complete and plan.semantic.waiting == 1
    assert "written since the index was brought up to date" in plan.semantic.describe()
    session.update_index()
    after = session.plan("insights/forget-bees.md", index=index)
    assert after.semantic is not None and after.semantic.complete
    assert "projects/hive.md" in {c.path for c in after.candidates if c.route in ("archive", "strike")}
