"""A first plan need not wait for the unit index: while a first sync still
segments the store, a plan reads the memories not segmented yet whole, and
with no semantic arm skips those whose text holds none of the preference's
stems. It is the plan the finished index gives (the app shows it seconds
sooner on a fresh store)."""
from __future__ import annotations

from palinode_core.demo import build_demo_store
from palinode_core.search.index import SEARCHABLE_BEHIND
from palinode_core.session import Session


def _essence(plan: dict) -> list:
    return [
        (c["path"], c["route"], c["preapproved"],
         [(e["text"], e["score"], e["carries"], tuple(e["shared_words"])) for e in c.get("evidence", [])])
        for c in plan["candidates"]
    ] + [sorted(map(str, plan["would_still_surface"] or []))]


def test_a_plan_made_mid_sync_is_the_plan_of_the_finished_index(tmp_path):
    root = tmp_path / "demo"
    build_demo_store(root, size=300)
    session = Session.open(root)
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
    from helpers import make_git_store, palinode_file

    files = {f"research/note-{i:03d}.md": palinode_file({"id": f"note-{i}"}, f"Budget line {i} was approved.")
             for i in range(SEARCHABLE_BEHIND + 20)}
    files["projects/label.md"] = palinode_file({"id": "label", "summary": "The Lisbon flat and its lease"},
                                               "Paperwork moved to the blue folder.")
    files["projects/list.md"] = palinode_file(
        {"id": "list"},
        "Errands.\n\n- ~~Call the bank.~~ [RETRACTED 2025-01-01 r:0123abcd]. I rent a flat in Lisbon.\n- Fix the gate.\n")
    files["insights/forget-lisbon.md"] = palinode_file({"id": "forget-lisbon"},
                                                       "Please forget that I rent a flat in Lisbon.")
    session = Session.open(make_git_store(tmp_path / "s", files))
    index = session.search_index()
    early = {}
    index.update_lexical(memories=session.memories,
                         searchable=lambda: early.update(plan=session.plan("insights/forget-lisbon.md", index=index)))
    final = session.plan("insights/forget-lisbon.md", index=index)
    assert _essence(early["plan"].to_dict()) == _essence(final.to_dict())
    paths = {c.path for c in final.candidates}
    assert {"projects/label.md", "projects/list.md"} <= paths, paths
