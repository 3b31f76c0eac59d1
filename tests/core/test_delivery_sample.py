"""The labelled delivery sample (issues 39 and 40; tests/delivery_sample.py):
200 rows logged by Palinode 0.23's own RetrievalLogger while five requests
went through every change of state, each labelled by hand (tests/data/
delivery-sample: label.py holds the facts a person read, README.md the rules).
The store is built again here, in another folder than the one the log names.

Every row must be classed as labelled; the whole sample within 2 wrong is the
goal (issue 39). JUDGMENT_CASES names the memories the shared judgment
(forget.judgment) once read otherwise than a person does: the first test
checks the rest apart, so an audit mistake and a judgment one are told apart."""

from __future__ import annotations

import json
import shutil

import delivery_sample
import pytest

from palinode_core.session import Session

MAX_WRONG = 2
# Memories whose every row the judgment charged otherwise than labelled before one shared word of
# three stopped being a mention without a vector (forget.evidence.NO_VECTOR_SIM).
JUDGMENT_CASES = {
    "notes/sneaker-shop.md": (
        "'The sneaker shop on Elm Street closed.' is judged to carry 'I collect vintage sneakers' "
        "(one specific word of three, no one else named: score 0.62, proposed), so each of its 18 rows "
        "is charged to the request (before_request, exposure_window); a person reads a shop closing"
    ),
}


@pytest.fixture(scope="module")
def classed(tmp_path_factory):
    """(each row's record by session, the labels by session, the audit)."""
    root = tmp_path_factory.mktemp("sample") / "elsewhere" / "store"
    with pytest.MonkeyPatch.context() as patch:
        delivery_sample.build(root, patch.setenv)
    (root / ".audit").mkdir()
    shutil.copyfile(delivery_sample.DATA / "retrievals.jsonl", root / ".audit/retrievals.jsonl")
    labels = {item["session"]: item for item in json.loads((delivery_sample.DATA / "labels.json").read_text())}
    audit = Session.open(root, vectors=False).deliveries(show_queries=True)
    found = {r["session_id"]: r for r in audit.rows()}
    assert set(found) == set(labels) and len(labels) == 200
    return found, labels, audit


def mismatches(found: dict, labels: dict) -> list[str]:
    return [
        f"{s}: {r['timestamp']} {r['path'] or r['file_path']} ({r['revision_match']}): "
        f"{r['class']} for {r['request']}, labelled {labels[s]['class']} for {labels[s]['request']} "
        f"({labels[s]['why']}); sentence {r['sentence']!r}"
        for s, r in sorted(found.items())
        if (r["class"], r["request"]) != (labels[s]["class"], labels[s]["request"])
    ]


def test_every_row_is_classed_as_labelled_but_the_judgments_known_cases(classed):
    found, labels, audit = classed
    assert audit.matches.get("unknown", 0) == 0, (
        "the store no longer builds byte for byte as when the log was written (a receipt names a version it no "
        "longer has): write the log again, python -m tests.compat.write_delivery_sample (its labels still hold)"
    )
    rest = {s: r for s, r in found.items() if r["path"] not in JUDGMENT_CASES}
    assert len(rest) >= 180
    wrong = mismatches(rest, labels)
    assert not wrong, "\n".join(wrong)
    # the log was written with the store in another folder: its absolute paths are read through it
    absolute = sum(1 for r in found.values() if r["file_path"].startswith("/"))
    assert absolute > 100 and audit.log.moved == {delivery_sample.WRITTEN_AT: absolute}
    assert {r["class"] for r in rest.values()} == {
        "before_request", "exposure_window", "leak", "delivered_retracted", "withdrawn", "dismissed", "unrelated"
    }


def test_the_whole_sample_is_within_two_wrong(classed):
    found, labels, _audit = classed
    wrong = mismatches(found, labels)
    assert len(wrong) <= MAX_WRONG, "\n".join(wrong)
