"""A first plan need not wait for the unit index: while a first sync still
segments the store, a plan reads the memories not segmented yet whole, and
with no semantic arm skips those whose text holds none of the preference's
stems. It is the plan the finished index gives (the app shows it seconds
sooner on a fresh store)."""
from __future__ import annotations

import pytest

from palinode_core.demo import build_demo_store
from palinode_core.search.index import SEARCHABLE_BEHIND
from palinode_core.session import Session


def _fillers() -> dict[str, str]:
    """More memories than a plan waits to see segmented, none about anything asked."""
    from helpers import palinode_file

    return {f"research/note-{i:03d}.md": palinode_file({"id": f"note-{i}"}, f"Budget line {i} was approved.")
            for i in range(SEARCHABLE_BEHIND + 20)}


def _essence(plan: dict) -> dict:
    """The whole plan but its semantic coverage (units counted so far: the TUI plans again once all are)
    and how each candidate was found (read whole, not looked up)."""
    out = {k: v for k, v in plan.items() if k != "semantic"}
    out["candidates"] = [{k: v for k, v in c.items() if k != "arms"} for c in plan["candidates"]]
    return out


def test_a_plan_made_mid_sync_is_the_plan_of_the_finished_index(tmp_path):
    root = tmp_path / "demo"
    build_demo_store(root, size=300)
    from helpers import Clock

    session = Session.open(root, clock=Clock())
    requests = sorted(rel for rel, m in session.memories.items() if m.forget_pref and not m.archived)
    assert requests
    index = session.search_index()
    early: dict[str, dict] = {}
    behind: list[int] = []

    def searchable() -> None:
        behind.append(index.units.behind(session.memories))
        for rel in requests:
            early[rel] = session.plan(rel, index=index).to_dict()

    index.update_lexical(memories=session.memories, searchable=searchable)
    assert len(behind) == 1 and behind[0] > SEARCHABLE_BEHIND  # nothing segmented when it planned
    assert index.units.behind(session.memories) == 0
    for rel in requests:
        assert _essence(early[rel]) == _essence(session.plan(rel, index=index).to_dict()), rel


def test_a_mention_only_in_a_label_field_or_a_struck_item_is_read_mid_sync(tmp_path):
    from helpers import Clock, make_git_store, palinode_file

    files = _fillers()
    files["projects/label.md"] = palinode_file({"id": "label", "summary": "The Lisbon flat and its lease"},
                                               "Paperwork moved to the blue folder.")
    files["projects/list.md"] = palinode_file(
        {"id": "list"},
        "Errands.\n\n- ~~Call the bank.~~ [RETRACTED 2025-01-01 r:0123abcd]. I rent a flat in Lisbon.\n- Fix the gate.\n")
    files["insights/forget-lisbon.md"] = palinode_file({"id": "forget-lisbon"},
                                                       "Please forget that I rent a flat in Lisbon.")
    session = Session.open(make_git_store(tmp_path / "s", files), clock=Clock())
    index = session.search_index()
    early = {}
    index.update_lexical(memories=session.memories,
                         searchable=lambda: early.update(plan=session.plan("insights/forget-lisbon.md", index=index)))
    final = session.plan("insights/forget-lisbon.md", index=index)
    assert _essence(early["plan"].to_dict()) == _essence(final.to_dict())
    paths = {c.path for c in final.candidates}
    assert {"projects/label.md", "projects/list.md"} <= paths, paths


@pytest.mark.parametrize("pref,others", [
    # a stem's prefix is not the stem: "tea" is no hit for a memory about a team (nor its request)
    ("I drink oolong tea", {"insights/forget-team.md": "Please forget my team offsite schedule.",
                            "projects/team.md": "The team offsite moved to June."}),
    # "spy" is searched as "sp": "Spring" matched the probe, never the index
    ("I spy on birds", {"journal/later.md": "Spring cleaning is done."}),
    # no stem at all: nothing can carry it by words
    ("I like it", {"journal/later.md": "It rained all day."}),
])
def test_mid_sync_plans_list_only_what_the_finished_index_would(tmp_path, pref, others):
    from helpers import Clock, make_git_store, palinode_file

    files = {f"research/note-{i:03d}.md": palinode_file({"id": f"note-{i}", "created_at": "2025-01-01T10:00:00+00:00"},
                                                         f"Budget line {i} was approved.")
             for i in range(SEARCHABLE_BEHIND + 20)}
    files["insights/forget-it.md"] = palinode_file({"id": "forget-it", "created_at": "2025-02-01T10:00:00+00:00"},
                                                   f"Please forget that {pref}.")
    for rel, body in others.items():
        files[rel] = palinode_file({"id": rel.replace("/", "-")[:-3], "created_at": "2025-03-01T10:00:00+00:00"}, body)
    session = Session.open(make_git_store(tmp_path / "s", files), clock=Clock())
    index = session.search_index()
    early = {}
    index.update_lexical(memories=session.memories,
                         searchable=lambda: early.update(plan=session.plan("insights/forget-it.md", index=index)))
    assert _essence(early["plan"].to_dict()) == _essence(session.plan("insights/forget-it.md", index=index).to_dict())


@pytest.mark.parametrize("pref,raw", [
    # a YAML escape spells in a label field a word the file's bytes do not
    ("I rent a flat in Lisbon", '---\nid: esc\nsummary: "The \\x4cisbon lease"\n---\n\nPaperwork filed.\n'),
    # a boolean in a label list reads as True
    ("my story is true", "---\nid: yes-tag\ntags: [yes, drafts]\n---\n\nPaperwork filed.\n"),
    # a float that overflows reads as inf
    ("I keep inf values", "---\nid: big\ntags: [1.0e+400]\n---\n\nPaperwork filed.\n"),
    # spelled in the bytes, inside a longer word only: the index holds no such stem either
    ("I rent a flat in Lisbon", "---\nid: inside\n---\n\nThe xlisbonx code and the flatbread.\n"),
])
def test_a_word_yaml_makes_is_read_mid_sync_as_the_index_reads_it(tmp_path, monkeypatch, pref, raw):
    """Mid-sync, a memory is first looked at as bytes (nothing parsed): it is
    read whole where YAML could make a word its bytes do not spell, and the
    plan is still exactly the finished index's."""
    from helpers import Clock, make_git_store, palinode_file

    from palinode_core.storage import cache

    monkeypatch.setattr(cache, "RACY_SECONDS", 0.0)  # the memories come from the scan cache: texts not read

    files = _fillers()
    files["projects/odd.md"] = raw
    files["insights/forget-it.md"] = palinode_file({"id": "forget-it"}, f"Please forget that {pref}.")
    root = make_git_store(tmp_path / "s", files)
    Session.open(root, clock=Clock(), cache_dir=tmp_path / "c").memories  # fills the scan cache
    session = Session.open(root, clock=Clock(), cache_dir=tmp_path / "c")
    assert not session.memories["projects/odd.md"].text_read
    index = session.search_index()
    early = {}
    index.update_lexical(memories=session.memories,
                         searchable=lambda: early.update(plan=session.plan("insights/forget-it.md", index=index)))
    final = session.plan("insights/forget-it.md", index=index)
    assert _essence(early["plan"].to_dict()) == _essence(final.to_dict())
    listed = "projects/odd.md" in {c.path for c in final.candidates} | {p for p, _why in final.guarded}
    assert listed == ("inside" not in raw), final.to_dict()["candidates"]


def test_a_big_first_index_is_searchable_before_a_child_segments_the_sentences(tmp_path, monkeypatch):
    """Above the isolation threshold (2,000 files in the app) a child process
    indexes the chunks alone; the first plan runs then, while a second child
    segments the sentences, and it is the finished index's plan."""
    from helpers import Clock

    from palinode_core.search import index as search_index

    monkeypatch.setattr(search_index, "ISOLATE_ABOVE", 100)  # the 300-memory demo store counts as big
    root = tmp_path / "demo"
    build_demo_store(root, size=300)
    session = Session.open(root, clock=Clock(), cache_dir=tmp_path / "cache")
    requests = sorted(rel for rel, m in session.memories.items() if m.forget_pref and not m.archived)
    index = session.search_index()
    early: dict[str, dict] = {}
    seen: list[tuple[int, int]] = []
    phases: list[str] = []

    def searchable() -> None:
        chunks = index._db.execute("SELECT COUNT(DISTINCT path) FROM chunks").fetchone()[0]
        seen.append((chunks, index.units.behind(session.memories)))
        for rel in requests:
            early[rel] = session.plan(rel, index=index).to_dict()

    index.update_lexical(lambda phase, done, total: phases.append(phase), memories=session.memories,
                         isolate=True, searchable=searchable)
    [(chunks, behind)] = seen
    assert chunks == len(session.memories) and behind > SEARCHABLE_BEHIND  # every chunk, no sentence yet
    assert "segmenting" in phases and index.units.behind(session.memories) == 0
    for rel in requests:
        assert _essence(early[rel]) == _essence(session.plan(rel, index=index).to_dict()), rel
