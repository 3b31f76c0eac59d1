"""The thorough resolver end to end on a small planted store with the real
model: it archives what states the preference, strikes only the clause that
carries it, touches no distractor and no sentence about someone else, keeps
every request's record, and records what it could not forget."""
from __future__ import annotations

import json

import pytest
from helpers import Clock, make_git_store, palinode_file

from palinode_core.session import Session

pytestmark = [pytest.mark.model, pytest.mark.xdist_group("model")]

FILLER = ("The quarterly budget review moved to Thursday afternoon. Finance wants the vendor invoices "
          "reconciled by Friday. The staging server was rebuilt after the disk failure.")
BODIES = {
    "insights/pref-bees.md": ({}, "I keep bees in the back garden."),
    "insights/pref-bees-2.md": ({"name": "Bees and hives"},
                                "Keeps bees in two hives behind the shed. Has kept bees for six years."),
    "projects/weekly.md": ({"tags": ["bees and hives"]},
                           f"# Weekly notes\n\n{FILLER} I keep bees in the back garden, and the printer contract "
                           "was renewed in May. Priya also keeps bees, on her allotment. Deployment freeze "
                           "starts on the twentieth.\n\n## Bees and hives\n\nNothing else this week."),
    "people/priya-shah.md": ({"type": "PersonMemory"},
                             "# Priya Shah\n\nColleague from the platform team. Keeps bees in two hives."),
    "projects/nursery.md": ({}, "Busy Bees Nursery sent the invoice for the autumn term."),
    "projects/bakery.md": ({}, "Bee Street Bakery closes early on Mondays."),
    "insights/pref-piano.md": ({}, "I practise piano in the evenings."),
    "research/note-1.md": ({}, FILLER),
    "research/note-2.md": ({}, "Legal approved the updated privacy notice. Backups are verified every Monday."),
    "insights/forget-piano.md": ({}, "Please forget that I practise piano in the evenings."),
    "insights/forget-bees.md": ({}, "Please forget that I keep bees."),
}
UNTOUCHED = ("people/priya-shah.md", "projects/nursery.md", "projects/bakery.md", "insights/pref-piano.md",
             "research/note-1.md", "research/note-2.md", "insights/forget-piano.md", "insights/forget-bees.md")


@pytest.fixture
def planted(tmp_path):
    files = {}
    for day, (rel, (meta, body)) in enumerate(BODIES.items(), start=1):
        cat = rel.split("/")[0]
        files[rel] = palinode_file({"id": rel.replace("/", "-")[:-3], "category": cat,
                                    "created_at": f"2025-05-{day:02d}T10:00:00+00:00", **meta}, body)
    return make_git_store(tmp_path / "store", files), files


def test_thorough_forgets_the_users_fact_and_nothing_else(planted, embedder):
    root, files = planted
    session = Session.open(root, clock=Clock(), embedder=embedder)
    session.update_index()
    fplan = session.plan("insights/forget-bees.md")
    assert fplan.resolver == "thorough"
    routes = {c.path: c for c in fplan.candidates}
    assert routes["insights/pref-bees.md"].route == "archive"
    assert "palinode" in routes["insights/pref-bees.md"].found_by  # Palinode finds the obvious one too
    weekly = routes["projects/weekly.md"]
    assert weekly.route == "strike" and weekly.preapproved
    assert any(e.subject == "other" for e in weekly.evidence) is False  # Priya's sentence is not proposed
    data = fplan.to_dict()
    assert all("found_by" in c for c in data["candidates"])
    session.apply_forget(fplan)

    for rel in UNTOUCHED:
        assert (root / rel).read_text() == files[rel], rel
    for rel in ("insights/pref-bees.md", "insights/pref-bees-2.md"):
        assert "status: archived" in (root / rel).read_text()
    text = (root / "projects/weekly.md").read_text()
    assert "~~I keep bees in the back garden, and~~ [RETRACTED" in text
    assert "the printer contract was renewed in May." in text  # the unrelated clause stays readable
    assert "Priya also keeps bees, on her allotment." in text and "~~Priya" not in text
    ledger = [json.loads(line) for line in (root / ".palinode-audit/ledger.jsonl").read_text().splitlines()]
    residue = [e for e in ledger if e["action"] == "residue" and e["request"] == "insights/forget-bees.md"]
    assert len(residue) == 1
    mentions = residue[0]["mentions"]
    kinds = {(m["path"], m["where"], m["kind"]) for m in mentions}
    assert ("projects/weekly.md", "heading", "unforgettable") in kinds
    assert ("projects/weekly.md", "frontmatter", "unforgettable") in kinds
    assert ("projects/weekly.md", "struck", "struck") in kinds
    assert not any(m["kind"] == "live" for m in mentions), mentions
    taken = [m for m in mentions if m["kind"] != "possible"]
    assert not any(m["path"] in ("projects/nursery.md", "people/priya-shah.md") for m in taken)
    # residue tells all: Priya's note was read as possibly a mention, and the record says why it is not one
    priya = [m for m in mentions if m["path"] == "people/priya-shah.md"]
    assert priya and all(m["kind"] == "possible" and "someone else's" in m["why"] for m in priya), priya


def test_palinode_resolver_on_the_same_store_is_palinodes(planted, embedder):
    root, _ = planted
    session = Session.open(root, clock=Clock(), embedder=embedder, resolver="palinode")
    session.update_index()
    fplan = session.plan("insights/forget-bees.md")
    assert fplan.resolver == "palinode"
    assert len(fplan.targets) <= fplan.knobs.max_targets + 1  # the cap Palinode applies
    assert all(c.found_by == ("palinode",) and not c.evidence for c in fplan.candidates)
    thorough = session.plan("insights/forget-bees.md", resolver="thorough")
    missed = [c for c in thorough.candidates if c.found_by == ("thorough",) and c.route in ("archive", "strike")]
    assert missed and all("Palinode misses it" in c.reason for c in missed)
