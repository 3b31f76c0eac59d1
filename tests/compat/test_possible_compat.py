"""A confirmed possible request (issue 44) read by Palinode 0.23 itself: its own
detector takes the written memory for a forget request of exactly the confirmed
preference (so its retraction id is the one our strikes carry), its parser reads the
frontmatter, and its lifecycle keeps the request live, so recall and the agent see the
retraction record."""

from __future__ import annotations

import json
import os
import subprocess

import pytest
from helpers import Clock, make_git_store, palinode_file

from palinode_core.session import Session
from palinode_core.text.words import retraction_id

from .harness import GIT_ENV, venv_python, venv_ready

pytestmark = [
    pytest.mark.compat,
    pytest.mark.xdist_group("compat"),
    pytest.mark.skipif(
        not venv_ready(), reason="COMPAT TEST NOT RUN: .venv-compat is missing (make compat-venv builds it from PyPI)"
    ),
]

READ = r"""
import json, sys
from datetime import datetime, timezone
from palinode.consolidation.forget import detect_forget_request
from palinode.consolidation.retract import retraction_id
from palinode.core.lifecycle import eligibility
from palinode.core.parser import parse_markdown
out = {}
for rel, text in json.loads(sys.stdin.read()).items():
    meta, _chunks = parse_markdown(text)
    body = text.split("---\n", 2)[2]
    pref = detect_forget_request(body)
    out[rel] = {"whole": detect_forget_request(text), "body": pref, "rid": retraction_id(pref) if pref else None,
                "category": meta.get("category"), "type": meta.get("type"),
                "eligibility": str(eligibility(meta, path=rel, now=datetime.now(timezone.utc)))}
print(json.dumps(out))
"""

MEMORIES = {
    "insights/berlin.md": "Moved flats twice this year. I no longer live in Berlin.",
    "inbox/ex.md": "My ex, Marco, moved back to Turin last spring. Please stop bringing that up.",
    "inbox/divorce.md": "I'd rather you stopped bringing up my divorce.",
    "people/user.md": "They struggle with panic attacks on flights. They said they'd rather this wasn't discussed.",
    "inbox/flat.md": "Don't mention the Berlin flat again.",
}


def palinode_reads(files: dict[str, str]) -> dict:
    env = {**os.environ, **GIT_ENV, "PYTHONPATH": ""}
    proc = subprocess.run([str(venv_python()), "-c", READ], input=json.dumps(files), capture_output=True, text=True,
                          env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_palinode_reads_each_confirmed_request_as_a_forget_request_of_its_preference(tmp_path):
    root = make_git_store(tmp_path / "s", {
        rel: palinode_file({"category": rel.split("/")[0], "created_at": "2031-06-03T10:00:00+00:00"}, body)
        for rel, body in MEMORIES.items()
    })
    session = Session.open(root, clock=Clock(), vectors=False)
    written: dict[str, str] = {}
    prefs: dict[str, str] = {}
    for cand in session.possible_requests():
        plan = session.plan_confirm(cand.id)
        session.apply_confirm(plan)
        session.refresh()
        written[plan.request] = (root / plan.request).read_text(encoding="utf-8")
        prefs[plan.request] = plan.pref
    assert len(written) == len(MEMORIES)
    read = palinode_reads(written)
    for rel, pref in prefs.items():
        assert read[rel]["body"] == pref and read[rel]["whole"] == pref, (rel, read[rel])
        assert read[rel]["rid"] == retraction_id(pref)
        assert (read[rel]["category"], read[rel]["type"]) == ("insights", "Insight")
        assert "retired" not in read[rel]["eligibility"]  # a live record: recall and the agent see it
    assert {s.path: s.pref for s in session.request_states()} == prefs  # and ours reads the same
