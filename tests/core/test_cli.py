"""``palinode-audit`` as a subprocess: JSON contract, exit codes, safety."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from helpers import MOONRISE, copy_sample_store, git, make_git_store, palinode_file, subjects


def run(*args: str, ok: bool = True, env: dict | None = None):
    import os
    proc = subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def jrun(*args: str):
    return json.loads(run("--json", *args).stdout)


@pytest.fixture
def sample(tmp_path):
    return copy_sample_store(tmp_path / "sample")


def test_scan_show_history(sample):
    scan = jrun("scan", str(sample))
    assert scan["memories"] == 7 and scan["errors"] == [] and scan["archived"] == 0
    show = jrun("show", str(sample), "people/bob.md")
    assert show["frontmatter"]["name"] == "Bob Martinez" and show["status"] == "active"
    assert show["frontmatter"]["last_updated"] == "2026-03-31"
    hist = jrun("history", str(sample), "people/bob.md")
    assert hist["entries"] == [] and hist["commits"][0]["subject"] == "initial"


def test_dry_run_writes_nothing_then_apply_and_undo(sample):
    before = (sample / "people/bob.md").read_bytes()
    plan = jrun("retract", str(sample), "people/bob.md", "--pref", "I know Stripe", "--dry-run")
    assert plan["status"] == "would_retract" and plan["applied"] is False and "+- ~~Stripe SDK" in plan["diff"]
    assert (sample / "people/bob.md").read_bytes() == before and len(subjects(sample)) == 1
    done = jrun("retract", str(sample), "people/bob.md", "--pref", "I know Stripe", "--yes")
    assert done["applied"] and len(done["commit"]) == 40 and done["status"] == "retracted"
    assert subjects(sample)[0] == "palinode retract: people/bob.md (2 mentions)"
    undone = jrun("unretract", str(sample), "people/bob.md", "--pref", "I know Stripe", "--yes")
    assert undone["mentions"] == 2
    assert (sample / "people/bob.md").read_bytes() == before
    arch = jrun("archive", str(sample), "people/bob.md", "--superseded-by", "people/alice.md", "--reason", "merged", "--yes")
    assert arch["applied"] and subjects(sample)[0] == "palinode supersede: people/bob.md -> people/alice.md"
    again = jrun("archive", str(sample), "people/bob.md", "--yes")
    assert again["status"] == "already_archived" and again["applied"] is False
    rest = jrun("restore", str(sample), "people/bob.md", "--yes")
    assert rest["field_changes"][0] == {"key": "status", "before": "archived", "after": "active"}


@pytest.mark.parametrize("bad", ["../x.md", "/etc/passwd", "people/../../etc/passwd", "~/x.md"])
def test_every_path_argument_is_guarded(sample, bad):
    (sample / "insights/forget-bob.md").write_text(palinode_file({"id": "f"}, "Please forget that I know Bob."))
    git(sample, "add", "-A")
    git(sample, "commit", "-qm", "request")
    s = str(sample)
    for args in (["show", s, bad], ["archive", s, bad], ["archive", s, "people/bob.md", "--superseded-by", bad],
                 ["restore", s, bad], ["retract", s, bad, "--pref", "I know Bob"],
                 ["retract", s, "people/bob.md", "--pref", "I know Bob", "--superseded-by", bad],
                 ["unretract", s, bad, "--pref", "I know Bob"], ["history", s, bad], ["trace", s, bad],
                 ["plan", s, bad, "--lexical"], ["apply", s, bad, "--lexical", "--yes"],
                 ["apply", s, "insights/forget-bob.md", "--lexical", "--yes", "--only", bad],
                 ["dismiss", s, bad, "--note", "x"], ["withdraw", s, bad], ["withdraw", s, bad, "--dry-run"]):
        proc = run(*args, ok=False)
        assert proc.returncode == 1 and proc.stdout == ""
        assert proc.stderr.startswith("palinode-audit: ") and proc.stderr.count("\n") == 1
    assert git(sample, "status", "--porcelain") == ""


def test_errors_are_one_line(tmp_path, sample):
    proc = run("scan", str(tmp_path / "nope"), ok=False)
    assert proc.returncode == 1 and "no store" in proc.stderr
    proc = run("show", str(sample), "people/nobody.md", ok=False)
    assert proc.returncode == 1 and "no memory at people/nobody.md" in proc.stderr
    proc = run("archive", str(sample), "people/bob.md", "--yes", ok=False, env={"PALINODE_AUDIT_READ_ONLY": "1"})
    assert proc.returncode == 1 and "read-only" in proc.stderr


def test_forget_commands_lexical(tmp_path):
    root = make_git_store(tmp_path / "s", {
        "projects/moonrise-closeout.md": palinode_file({"id": "projects-moonrise-closeout",
                                                        "created_at": "2025-05-01T00:00:00+00:00"}, MOONRISE),
        "people/w.md": palinode_file({"id": "people-w", "created_at": "2025-05-01T00:00:00+00:00"},
                                     "Met Wilhelmina Cragg at the fair; she judges the Moonrise panel."),
        "insights/forget-w.md": palinode_file({"id": "insights-forget-w", "created_at": "2025-06-01T00:00:00+00:00"},
                                              "Please forget that I know Wilhelmina Cragg."),
    })
    s = str(root)
    reqs = jrun("requests", s)["requests"]
    assert [(r["path"], r["pref"], r["state"]) for r in reqs] == [
        ("insights/forget-w.md", "I know Wilhelmina Cragg", "pending")]
    # BM25 alone: the request tops the hits and its relative floor drops the long
    # closeout (as in Palinode); the hybrid routing is covered by the model tests.
    plan = jrun("plan", s, "insights/forget-w.md", "--lexical", "--resolver", "palinode")
    assert {c["path"]: c["route"] for c in plan["candidates"]} == {"people/w.md": "archive"}
    flipped = jrun("plan", s, "insights/forget-w.md", "--lexical", "--floor", "0.5", "--resolver", "palinode")
    assert {c["path"]: c["route"] for c in flipped["candidates"]} == {"people/w.md": "strike"}
    shown = jrun("apply", s, "insights/forget-w.md", "--lexical", "--resolver", "palinode")
    assert shown["applied"] is False and len(subjects(root)) == 1
    applied = jrun("apply", s, "insights/forget-w.md", "--lexical", "--floor", "0.5", "--only", "people/w.md", "--yes", "--resolver", "palinode")
    assert not any(key.startswith("_") for key in applied)  # no internal keys in the JSON contract
    assert applied["deferred"] == [] and [c["subject"] for c in applied["commits"]] == [
        "palinode retract: people/w.md (1 mentions) <- insights/forget-w.md"]
    assert jrun("requests", s)["requests"][0]["state"] == "applied"
    residue = jrun("residue", s, "--pref", "I know Wilhelmina Cragg")
    assert residue["counts"] == {"struck": 1, "live": 2, "request": 1}
    assert jrun("integrity", s)["ok"] is True
    trace = jrun("trace", s, "people/w.md")
    assert trace["retractions"][0]["request"] == "insights/forget-w.md"
    dry = jrun("withdraw", s, "insights/forget-w.md", "--dry-run")
    assert [st["op"] for st in dry["steps"]] == ["unretract", "archive"]
    assert jrun("withdraw", s, "insights/forget-w.md", "--yes")["status"] == "withdrawn"
    assert jrun("requests", s)["requests"][0]["state"] == "withdrawn"
    hits = jrun("search", s, "Moonrise judging", "--lexical")
    assert hits["mode"] == "lexical" and hits["hits"][0]["path"] == "projects/moonrise-closeout.md"


def test_dismiss_records_in_ledger(tmp_path):
    root = make_git_store(tmp_path / "s", {"insights/f.md": palinode_file({"id": "f"}, "Please forget my shoe size.")})
    out = jrun("dismiss", str(root), "insights/f.md", "--note", "harmless", "--yes")
    assert out["dismissed"] and subjects(root)[0] == "palinode-audit ledger: dismiss insights/f.md"
    assert jrun("requests", str(root))["requests"][0]["state"] == "dismissed"
    proc = run("dismiss", str(root), "insights/nothing.md", "--note", "x", ok=False)
    assert proc.returncode == 1


def test_text_output_never_emits_escape_sequences(tmp_path):
    root = make_git_store(tmp_path / "s", {
        "p/evil.md": palinode_file({"id": "evil", "title": "\x1b]52;c;aGk=\x07 [bold red]x"}, "Body \x1b[2J\x9b31m end")})
    proc = run("show", str(root), "p/evil.md")
    assert "\x1b" not in proc.stdout and "\x9b" not in proc.stdout and "\x07" not in proc.stdout
    assert "\\x1b]52" in proc.stdout and "[bold red]" in proc.stdout
    data = json.loads(run("--json", "show", str(root), "p/evil.md").stdout)
    assert "Body \x1b[2J\x9b31m end" in data["body"]  # JSON keeps the data exactly


def test_index_reports_progress_lines_then_the_result(sample, tmp_path):
    proc = run("--json", "index", str(sample), "--lexical", "--progress", "--cache-dir", str(tmp_path / "ix"))
    progress = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith('{"progress"')]
    assert {"progress": "lexical", "done": 7, "total": 7} in progress
    assert progress[-1] == {"progress": "segmenting", "done": 7, "total": 7}  # then the unit index
    result = json.loads(proc.stdout[proc.stdout.index("{\n"):])  # the result follows the progress lines
    assert result["files"] == 7 and result["files_reindexed"] == 7 and result["mode"] == "lexical"
    again = json.loads(run("--json", "index", str(sample), "--lexical", "--cache-dir", str(tmp_path / "ix")).stdout)
    assert again["files_reindexed"] == 0 and again["chunks"] == result["chunks"] > 0


def test_scan_can_report_progress_and_use_another_cache(sample, tmp_path):
    proc = run("--json", "scan", str(sample), "--progress", "--cache-dir", str(tmp_path / "c"))
    assert proc.stdout.startswith('{"progress": "reading", "done": 0, "total": 7}')
    assert json.loads(proc.stdout[proc.stdout.index("{\n"):])["memories"] == 7
    assert (tmp_path / "c" / "scan.sqlite3").exists()
