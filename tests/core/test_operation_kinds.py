"""Operation kinds are one table (storage.records.OPERATION_KINDS): every relation
of a kind (its inverse, its direction, its route, its subject word, its colour)
is read from its row, so a new kind costs one row, a planner and a test."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import get_args

from helpers import ROOT, make_git_store, palinode_file

from palinode_core.ops import lifecycle
from palinode_core.ops.subjects import SUBJECT_RE, parse_subject
from palinode_core.storage.records import OPERATION_KINDS, OpKind, PlanOp


def test_every_kind_has_one_row_and_every_row_a_planner():
    assert set(OPERATION_KINDS) == set(get_args(OpKind))
    assert {k.plans_as for k in OPERATION_KINDS.values()} == set(get_args(PlanOp)) == set(lifecycle.PLANNERS)
    for kind in OPERATION_KINDS.values():
        inverse = OPERATION_KINDS[kind.inverse]
        assert inverse.direction != kind.direction and inverse.changes == kind.changes, kind
        assert (kind.route is None) == (kind.direction == "backward"), kind
        assert parse_subject(f"P {kind.name}: notes/a.md", "P").kind is kind
    assert SUBJECT_RE.match("P expire: notes/a.md") is None  # no row, no kind


# A kind the table did not have, added as a developer would add one: a row (before
# anything reads the table) and a planner. Nothing else in the core or the app is edited.
NEW_KIND = r'''
import json, sys
from dataclasses import replace

from palinode_core.storage import records

records.OPERATION_KINDS["expire"] = records.OperationKind(
    "expire", "expire", "restore", "forward", "archive", "status", "bright_red")

from palinode_core.ops import lifecycle
from palinode_core.storage.paths import subject_path


def plan_expire(store, target, args):
    """An archive whose commit and history line say the memory expired."""
    plan = lifecycle.plan_archive(store, target, reason=args.reason, trailers=args.trailers)
    if not plan.changes:
        return plan
    subject = f"{store.config.commit_prefix} expire: {subject_path(plan.target)}"
    return replace(plan, commit_subject=subject, history_line=plan.history_line.replace("Archived:", "Expired:"))


lifecycle.PLANNERS["expire"] = plan_expire

from palinode_core.api import Session
from palinode_tui.render import OPERATION_STYLE

session = Session.open(sys.argv[1], vectors=False)
out = {"colour": OPERATION_STYLE.get("expire")}
plan = session.plan_op("expire", "notes/ferry.md", reason="the timetable changed")
out["subject"] = plan.commit_subject
session.apply(plan)
expired = session.operations()[0]
out["listed"] = [expired.op, expired.kind.direction, expired.kind.route]
undo = session.plan_undo(expired)
out["undo"] = [undo.op, undo.status]
session.apply(undo)
expired = next(o for o in session.operations() if o.op == "expire")
out["undone"] = expired.undone
redo = session.plan_redo(expired)
out["redo"] = [redo.commit_subject, redo.status]
session.apply(redo)
ops = session.operations()
out["after_redo"] = [ops[0].op, ops[0].trailers.get("Redoes") == expired.commit]
out["archived"] = session.load("notes/ferry.md").archived
print(json.dumps(out))
'''


def test_a_new_kind_is_one_row_and_a_planner(tmp_path):
    """The row gives the subject pattern, planning by name, the operations list,
    what undoes it (and that it was undone), its redo and the app's colour."""
    root = make_git_store(tmp_path / "store", {
        "notes/ferry.md": palinode_file({"id": "ferry"}, "The ferry leaves at nine on weekdays."),
    })
    script = tmp_path / "new_kind.py"
    script.write_text(NEW_KIND)
    proc = subprocess.run([sys.executable, str(script), str(root)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["colour"] == "bright_red"
    assert re.fullmatch(r"\S+ expire: notes/ferry\.md", out["subject"])
    assert out["listed"] == ["expire", "forward", "archive"]
    assert out["undo"] == ["restore", "would_restore"]  # its row's inverse
    assert out["undone"] is True  # the restore undid it: it changed the file as the inverse does
    assert out["redo"][0] == out["subject"] and out["redo"][1] == "would_archive"
    assert out["after_redo"] == ["expire", True] and out["archived"] is True


def test_the_documented_table_is_the_table():
    text = (ROOT / "docs" / "records.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| `(\w+)` \| (\w+) \| (\w*) ?\| (\w+) \|$", text, re.M)
    assert {r[0]: (r[1], r[2], r[3], r[4] or None, r[5]) for r in rows} == {
        k.name: (k.plans_as, k.inverse, k.direction, k.route, k.changes) for k in OPERATION_KINDS.values()
    }
