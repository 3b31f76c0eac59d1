"""The CLI's text output is for people: tables, counts, a diff coloured only on
a terminal; store text never becomes an escape, with or without colour."""
from __future__ import annotations

import os
import pty
import subprocess
import sys

from helpers import MOONRISE, make_git_store, palinode_file

from palinode_core.cli.output import render

HOSTILE = "I know Wil\x1b]52;c;cGF5bG9hZA==\x07helmina \x1b[2J Cragg"


def _store(tmp_path, pref_text: str = "I know Wilhelmina Cragg"):
    return make_git_store(tmp_path / "s", {
        "insights/forget-w.md": palinode_file({"id": "insights-forget-w", "created_at": "2025-05-15T09:00:00+00:00"},
                                              f"Please forget that {pref_text}."),
        "projects/moonrise-closeout.md": palinode_file({"id": "projects-moonrise-closeout",
                                                        "created_at": "2025-04-04T15:00:00+00:00"}, MOONRISE),
    })


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "palinode_core", *args], capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": ""})


def test_plan_and_requests_print_tables_and_counts(tmp_path):
    store = tmp_path / "demo"
    assert _run("demo-store", str(store)).returncode == 0
    plan = _run("plan", str(store), "insights/forget-w.md", "--lexical", "--resolver", "palinode")
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    assert lines[0].startswith("Forget request insights/forget-w.md")
    header = next(line for line in lines if line.strip().startswith("rank"))
    assert header.split() == ["rank", "route", "memory", "coverage", "found", "by", "shared", "words"]
    row = next(line for line in lines if "people/wilhelmina-fair.md" in line and "archive" in line)
    assert "0.2857 vs 0.05" in row and "cragg, wilhelmina" in row
    assert "+superseded_by: insights/forget-w.md" in [line.strip() for line in lines]  # the diff
    assert lines[-1].endswith("nothing was written.")
    assert "{'op'" not in plan.stdout  # no Python dicts
    requests = _run("requests", str(store))
    assert requests.stdout.splitlines()[0].split() == ["state", "request", "preference", "archived", "struck", "last",
                                                       "decision"]
    assert requests.stdout.splitlines()[-1] == "1 applied, 5 pending, 1 withdrawn"
    assert _run("requests", str(_store(tmp_path))).stdout.splitlines()[-1] == "1 pending"


def test_colour_only_on_a_terminal_and_store_escapes_stay_inert(tmp_path):
    store = _store(tmp_path, HOSTILE)
    piped = _run("requests", str(store))
    assert "\x1b" not in piped.stdout and "\\x1b]52" in piped.stdout
    # on a real pseudo-terminal our colours appear, the store's escapes still do not
    leader, follower = pty.openpty()
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "plan", str(store), "insights/forget-w.md",
                           "--lexical"], stdout=follower, stderr=subprocess.PIPE,
                          env={k: v for k, v in os.environ.items() if k != "NO_COLOR"})
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    out = b"".join(chunks).decode()
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[1m" in out  # our heading style
    assert "\x1b]" not in out and "\x1b[2J" not in out  # no OSC, no clear-screen from the store
    assert "\\x1b]52" in out


def test_render_escapes_every_store_string_before_colouring():
    data = {"request": "r\x1b[31m.md", "pref": HOSTILE, "rid": "00000000", "search_mode": "lexical",
            "search_notice": None, "knobs": {"search_k": 10, "min_shared_words": 1, "max_targets": 2,
                                             "min_target_coverage": 0.05},
            "candidates": [{"path": "a\x9b2J.md", "rank": 1, "arms": "bm25", "shared_words": ["x\x1b"],
                            "coverage": 0.5, "floor": 0.05, "route": "archive", "reason": "why\x07",
                            "plan": {"changes": True, "diff": "+line \x1b]0;title\x07\n"}}]}
    for colour in (False, True):
        text = render("plan", data, as_json=False, colour=colour)
        stripped = text.replace("\x1b[0m", "")
        for code in ("\x1b[1m", "\x1b[32m", "\x1b[31m", "\x1b[36m", "\x1b[2m", "\x1b[33m"):
            stripped = stripped.replace(code, "")
        assert "\x1b" not in stripped and "\x9b" not in stripped and "\x07" not in stripped


def test_the_thorough_plan_says_its_knobs_set_only_palinodes_plan(tmp_path):
    """The knobs in the header (floor, max targets) decide Palinode's plan shown
    beside the thorough one, not the thorough targets: said, and true."""
    import json

    store = tmp_path / "demo"
    assert _run("demo-store", str(store)).returncode == 0
    text = _run("plan", str(store), "insights/forget-w.md", "--lexical", "--max-targets", "1")
    assert "the knobs below set only Palinode's plan beside it" in text.stdout.splitlines()[1]
    plans = [json.loads(_run("--json", "plan", str(store), "insights/forget-w.md", "--lexical", *extra).stdout)
             for extra in ([], ["--max-targets", "1", "--floor", "0.9"])]
    thorough = [[(c["path"], c["route"]) for c in plan["candidates"] if "thorough" in c["found_by"]] for plan in plans]
    assert thorough[0] == thorough[1] and len(thorough[0]) > 1
    fair = [next(c["reason"] for c in plan["candidates"] if c["path"] == "people/wilhelmina-fair.md") for plan in plans]
    assert "Palinode would strike it" in fair[1] and "Palinode would strike it" not in fair[0]  # its floor moved


def test_requests_name_who_decided_last_and_why(tmp_path):
    store = tmp_path / "demo"
    assert _run("demo-store", str(store)).returncode == 0
    note = "a duplicate of berlin \x1b[2J\napplied    insights/forget-berlin.md  I live in Berlin  1  0"
    assert _run("dismiss", str(store), "insights/forget-tea.md", "--note", note, "--yes").returncode == 0
    lines = _run("requests", str(store)).stdout.splitlines()
    assert lines[0].split()[-2:] == ["last", "decision"]
    tea = next(line for line in lines if "insights/forget-tea.md" in line)
    assert tea.startswith("dismissed") and "Test Author: a duplicate of berlin \\x1b[2J\\napplied    insights/forget-berlin.md" in tea
    assert not any(line.startswith("applied    insights/forget-berlin") for line in lines)  # no forged row
    assert "dismiss 20" in tea and "<" not in tea and "\x1b" not in tea  # the name; the email is in --json
    gym = next(line for line in lines if "insights/forget-gym.md" in line)
    assert gym.endswith("withdraw 2025-05-14 Palinode Demo")


def test_evidence_reasons_and_spans_name_the_same_file_line(tmp_path):
    """A person opens the file at the line the plan names: evidence, the reason
    and the strike all count lines as the file does (the frontmatter included)."""
    import json

    store = tmp_path / "demo"
    assert _run("demo-store", str(store)).returncode == 0
    plan = json.loads(_run("--json", "plan", str(store), "insights/forget-w.md", "--lexical").stdout)
    for cand in plan["candidates"]:
        lines = (store / cand["path"]).read_text().splitlines()
        for ev in cand.get("evidence", []):
            if ev["kind"] == "frontmatter":
                assert lines[ev["line"] - 1].startswith(f"{ev['field']}:")
            else:
                assert ev["text"] in lines[ev["line"] - 1], (cand["path"], ev)
        for span in cand.get("spans", []):
            assert span["text"] in lines[span["line"] - 1]
    fair = next(c for c in plan["candidates"] if c["path"] == "people/wilhelmina-fair.md")
    line = fair["evidence"][0]["line"]
    assert line > 5 and f"best evidence sentence line {line} " in fair["reason"]


def test_generic_text_never_prints_a_python_repr(tmp_path):
    """Commands without their own table (show, history, a preview) print nested
    values for a person: a commit's trailers, yes/no, never {'...': ...} or True."""
    store = tmp_path / "demo"
    assert _run("demo-store", str(store)).returncode == 0
    history = _run("history", str(store), "insights/pref-gym.md").stdout
    assert "trailers=(Forget-Request: insights/forget-gym.md; Retraction-Id: cd329b06;" in history
    preview = _run("retract", str(store), "people/me-profile.md", "--pref", "I live in Berlin",
                   "--superseded-by", "insights/forget-berlin.md").stdout
    assert "changes: yes" in preview and "selected=yes" in preview
    for text in (history, preview, _run("show", str(store), "insights/pref-gym.md").stdout):
        assert not any(token in text for token in ("{'", "['", "True", "False")), text
    # a frontmatter value holding newlines cannot print lines of its own
    pref = store / "insights/pref-gym.md"
    pref.write_text(pref.read_text().replace("type: Insight", 'type: Insight\nzz: "x\\nstruck: yes\\u2028retired: by you"'))
    shown = _run("show", str(store), "insights/pref-gym.md").stdout
    assert "zz=x\\nstruck: yes\\u2028retired: by you" in shown
    assert [line for line in shown.splitlines() if line.startswith(("struck:", "retired:"))] == ["struck: no", "retired: "]
