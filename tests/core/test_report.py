"""The audit report: for every demo request, in json (validated against
docs/report-schema.json), markdown and one self-contained HTML file that a
real headless Chromium renders; store text stays inert in every format."""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import jsonschema
import pytest

from helpers import ROOT, git

from palinode_core.demo import build_demo_store
from palinode_core.errors import PalinodeError
from palinode_core.forget.selection import REJECT
from palinode_core.inspect.report_md import md
from palinode_core.session import Session

SCHEMA = json.loads((ROOT / "docs" / "report-schema.json").read_text(encoding="utf-8"))
HOSTILE = ('Wilhelmina Cragg left a note: <script>alert("x")</script> <img src="http://evil.invalid/x.png"> '
           '</td></table><h1>fake heading</h1> [link](http://evil.invalid) \x1b[31mred\x1b[0m.')
NOTES = {
    "sneakers": "approved: plainly about the preference",
    "ottoline": "rejected: the pavilion contract is business <b>keep</b> it",
    "tea": "dismissed: the tea club needs the order history",
    "w": "approved after checking the fair notes",
    "flag": "flagged: Moonrise still names Wilhelmina",
    "flag_target": "flagged: archived, but check the fair notes",
}


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """The demo store after a reviewer approved, dismissed and flagged,
    plus a hostile memory that mentions a forgotten preference."""
    with pytest.MonkeyPatch.context() as mp:
        base = tmp_path_factory.mktemp("report")
        mp.setenv("XDG_CACHE_HOME", str(base / "xdg-cache"))
        for key, value in {"GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.test",
                           "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.test"}.items():
            mp.setenv(key, value)
        root = base / "demo"
        build_demo_store(root)
        # Palinode's resolver: the story below pins its routing words (coverage vs floor)
        session = Session.open(root, vectors=False, resolver="palinode")
        session.update_index(vectors=False)
        session.apply_forget(session.plan("insights/forget-sneakers.md"), None, note=NOTES["sneakers"])
        # rejecting every target is no apply (it would write nothing): the reviewer dismisses the request
        with pytest.raises(PalinodeError, match="every target is rejected"):
            session.apply_forget(session.plan("insights/forget-ottoline.md"), {"people/ottoline-marsh.md": REJECT},
                                 note=NOTES["ottoline"])
        session.dismiss("insights/forget-ottoline.md", NOTES["ottoline"])
        session.dismiss("insights/forget-tea.md", NOTES["tea"])
        session.refresh()
        session.apply_forget(session.plan("insights/forget-w.md"), None, note=NOTES["w"])
        session.refresh()
        live = next(m for m in session.residue("I know Wilhelmina Cragg") if m.kind == "live")
        session.flag(live.path, live.line, live.kind, live.text, NOTES["flag"], request_path="insights/forget-w.md")
        session.flag("people/wilhelmina-fair.md", 11, "archived", "Met Wilhelmina Cragg at the fair",
                     NOTES["flag_target"], request_path="insights/forget-w.md")
        # an undo from the Undo list (no trailers): Palinode's strike of the weekly plan taken back
        struck = next(o for o in session.operations() if o.op == "retract" and o.path == "projects/weekly-plan.md")
        session.apply(session.plan_undo(struck))
        (root / "people/hostile.md").write_text(f"---\ncategory: people\n---\n\n{HOSTILE}\n", encoding="utf-8")
        git(root, "add", "people/hostile.md")
        git(root, "commit", "-qm", "palinode auto-save: people/hostile.md")
        yield root


def report(root: Path, *args: str, fmt: str = "json", out: Path | None = None) -> str:
    cmd = [sys.executable, "-m", "palinode_core", "report", str(root), *args, "--format", fmt]
    if out is not None:
        cmd += ["-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def requests_of(root: Path) -> list[str]:
    return sorted(s.path for s in Session.open(root, vectors=False).request_states())


@pytest.fixture(scope="module")
def reports(reviewed):
    """Each demo request's JSON report, from the CLI, once for every test here."""
    return {path: json.loads(report(reviewed, "--request", path)) for path in requests_of(reviewed)}


def test_json_report_per_request_validates_and_tells_the_story(reports):
    validator = jsonschema.Draft202012Validator(SCHEMA)
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    by_path = {}
    for path, data in reports.items():
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.path))
        assert not errors, [f"{list(e.path)}: {e.message}" for e in errors]
        [by_path[path]] = data["requests"]
    assert len(by_path) == 7
    sneakers = by_path["insights/forget-sneakers.md"]
    assert sneakers["resolver"]["by"] == "palinode-audit (reviewed)" and sneakers["resolver"]["search_mode"] == "lexical"
    assert sneakers["resolver"]["knobs_source"] == "ledger" and sneakers["state"] == "applied"
    [target] = sneakers["targets"]
    assert target["decision"] == "approved" and target["decided_by"] == "Test Author <author@example.test>" and target["route"] == "archive"
    assert target["coverage"] > 0.05 and "sneakers" in target["evidence"]["shared_words"]
    assert target["evidence"]["reason"].startswith("coverage") and target["evidence"]["rank"] >= 1
    assert sneakers["filed"]["date"].startswith("2025-05-16") and sneakers["decisions"][0]["note"] == NOTES["sneakers"]
    assert sneakers["operations"][0]["actor"] == "palinode-audit" and "+status: archived" in sneakers["operations"][0]["diff"]
    ottoline = by_path["insights/forget-ottoline.md"]
    assert ottoline["state"] == "dismissed" and [d["action"] for d in ottoline["decisions"]] == ["dismiss"]
    assert ottoline["operations"] == [] and ottoline["decisions"][0]["note"] == NOTES["ottoline"]
    tea = by_path["insights/forget-tea.md"]
    assert tea["state"] == "dismissed" and [d["action"] for d in tea["decisions"]] == ["dismiss"]
    assert tea["decisions"][0]["note"] == NOTES["tea"] and tea["decisions"][0]["by"] == "Test Author <author@example.test>"
    w = by_path["insights/forget-w.md"]
    assert [d["action"] for d in w["decisions"]] == ["apply", "residue", "flag", "flag"]  # the leak check follows each apply
    assert {t["path"]: t for t in w["targets"]}["people/wilhelmina-fair.md"]["flags"] == [NOTES["flag_target"]]
    assert any(m["path"] == "people/hostile.md" and m["kind"] == "live" for m in w["residue"]["mentions"])
    poker = by_path["insights/forget-poker.md"]
    assert poker["resolver"]["by"] == "palinode (automatic, unreviewed)"
    assert poker["resolver"]["knobs"]["min_target_coverage"] == 0.05
    strike = {t["path"]: t for t in poker["targets"]}["projects/weekly-plan.md"]
    assert strike["decision"] == "automatic" and strike["evidence"]["struck"] == ["Fridays are poker nights with friends."]
    assert "[r:5456db7c]" in strike["evidence"]["history_line"]
    [undo] = poker["undos"]
    assert undo["kind"] == "undo" and undo["op"] == "unretract" and undo["path"] == "projects/weekly-plan.md"
    lines = undo["diff"].splitlines()
    assert any(x.startswith("-") and "~~Fridays are poker nights with friends.~~" in x for x in lines)
    assert any(x.startswith("+") and "Fridays are poker nights" in x and "~~" not in x for x in lines)
    assert poker["residue"]["counts"].get("live") == 1 and "struck" not in poker["residue"]["counts"]
    gym = by_path["insights/forget-gym.md"]
    assert gym["state"] == "withdrawn" and {u["kind"] for u in gym["undos"]} == {"withdrawal"}
    assert [u["op"] for u in gym["undos"]] == ["restore", "archive"]
    assert by_path["insights/forget-berlin.md"]["targets"] == [] and by_path["insights/forget-berlin.md"]["state"] == "pending"


def test_scopes_pref_and_date_range(reviewed):
    by_pref = json.loads(report(reviewed, "--pref", "i play POKER on fridays"))
    assert [r["path"] for r in by_pref["requests"]] == ["insights/forget-poker.md"]
    ranged = json.loads(report(reviewed, "--since", "2025-05-15", "--until", "2025-05-17"))
    assert [r["path"] for r in ranged["requests"]] == ["insights/forget-sneakers.md", "insights/forget-tea.md",
                                                       "insights/forget-w.md"]
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "report", str(reviewed), "--request",
                           "people/alice-chen.md"], capture_output=True, text=True)
    assert proc.returncode == 1 and "not a forget request" in proc.stderr
    inside = subprocess.run([sys.executable, "-m", "palinode_core", "report", str(reviewed), "--pref", "x",
                             "--format", "md", "-o", str(reviewed / "report.md")], capture_output=True, text=True)
    assert inside.returncode == 1 and "inside the store" in inside.stderr and not (reviewed / "report.md").exists()
    # as of before the reviews, there was nothing to report for sneakers but the request
    before = git(reviewed, "log", "--format=%H", "--grep=ledger: apply insights/forget-sneakers.md").strip()
    then = json.loads(subprocess.run([sys.executable, "-m", "palinode_core", "report", str(reviewed), "--request",
                                      "insights/forget-sneakers.md", "--format", "json", "--at", before + "~2"],
                                     capture_output=True, text=True, check=True).stdout)
    assert then["as_of"]["commit"] == git(reviewed, "rev-parse", before + "~2").strip()
    assert then["requests"][0]["state"] == "pending" and then["requests"][0]["decisions"] == []


def test_markdown_report_escapes_store_text(reviewed, reports):
    for path, full in reports.items():
        text = report(reviewed, "--request", path, fmt="md")
        data = full["requests"][0]
        assert f"## Request {md(path)}" in text
        for target in data["targets"]:
            assert md(target["path"]) in text
        for decision in data["decisions"]:
            assert md(decision["note"] or "") in text
        assert not re.search(r"(?<!\\)<(script|img|h1|/td)", text) and not re.search(r"(?<!\\)\]\(http", text)
        assert "\x1b" not in text
    w = report(reviewed, "--request", "insights/forget-w.md", fmt="md")
    assert r"\<script\>alert" in w and "\\x1b" in w


class _Dom(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.struck: list[str] = []
        self.tags: set[str] = set()
        self.attrs: set[str] = set()
        self._del = 0

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs.update(name for name, _ in attrs)
        if tag in ("del", "s"):
            self._del += 1
            self.struck.append("")

    def handle_endtag(self, tag):
        if tag in ("del", "s"):
            self._del -= 1

    def handle_data(self, data):
        self.text.append(data)
        if self._del:
            self.struck[-1] += data


HTML_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "section", "dl", "dt", "dd", "p",
             "table", "thead", "tbody", "tr", "th", "td", "code", "pre", "span", "del", "br"}
HTML_ATTRS = {"lang", "charset", "http-equiv", "content", "name", "class"}
# the charts: shapes and text only (no <use>, <image>, <foreignObject>, href or style attribute)
SVG_TAGS = {"svg", "rect", "line", "circle", "polyline", "text"}
SVG_ATTRS = {"viewbox", "width", "height", "role", "aria-label", "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r",
             "points", "fill", "stroke", "stroke-width", "font-size", "text-anchor"}


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        pytest.skip("SKIPPED LOUDLY: no chromium on PATH, so the HTML report was not checked in a real browser "
                    "(`make test` installs it with apt-get when run as root; otherwise `apt-get install chromium`)")
    return found


def test_html_report_renders_in_headless_chromium(reviewed, reports, tmp_path):
    browser = _chromium()
    for path, full in reports.items():
        data = full["requests"][0]
        page = tmp_path / (Path(path).stem + ".html")
        report(reviewed, "--request", path, fmt="html", out=page)
        html_text = page.read_text(encoding="utf-8")
        assert not re.search(r"<(script|img|iframe|link|object)\b", html_text, re.I)
        assert not re.search(r"<[^>]*\s(src|href|on\w+)=", html_text, re.I)
        proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom",
                               page.as_uri()], capture_output=True, text=True, timeout=120,
                              env={**os.environ, "HOME": str(tmp_path)})
        assert proc.returncode == 0 and "<body>" in proc.stdout, proc.stderr[-2000:]
        dom = _Dom()
        dom.feed(proc.stdout)
        text = " ".join(dom.text)
        assert "Request" in text and data["pref"] in text
        for target in data["targets"]:
            assert target["path"] in text, (path, target["path"])
            if target["decision"]:
                assert target["decision"] in text
            for sentence in target["evidence"]["struck"]:
                assert sentence in dom.struck, sentence
        for decision in data["decisions"]:
            assert decision["action"] in text and (decision["note"] or "") in text, decision
        for mention in data["residue"]["mentions"]:
            if mention["kind"] == "struck":
                assert mention["text"] in dom.struck
        # hostile store text arrived as text: no element, no resource, no handler came from it
        assert dom.tags <= HTML_TAGS | SVG_TAGS, dom.tags
        assert dom.attrs <= HTML_ATTRS | SVG_ATTRS, dom.attrs
        if path == "insights/forget-w.md":
            assert '<script>alert("x")</script>' in text and "<h1>fake heading</h1>" in text
            assert "\\x1b[31mred" in text
        if path == "insights/forget-poker.md":
            assert "Fridays are poker nights with friends." in dom.struck


def _rendered(browser: str, page: Path, tmp_path: Path) -> str:
    proc = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    assert proc.returncode == 0 and "<body>" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def test_html_report_draws_a_request_life_and_forgetting_over_time(reviewed, reports, tmp_path):
    """Issue 41: inline SVG, in a real browser: one mark per dated event of a request (filed, each decision,
    each operation, each undo), each naming what it was and who; over several requests, running totals."""
    browser = _chromium()
    page = tmp_path / "w.html"
    report(reviewed, "--request", "insights/forget-w.md", fmt="html", out=page)
    data = reports["insights/forget-w.md"]["requests"][0]
    dom_text = _rendered(browser, page, tmp_path)
    chart = re.search(r"<h3>Its life</h3>\s*(<svg.*?</svg>)", dom_text, re.S)
    assert chart, "no chart of the request's life"
    marks = re.findall(r"<circle[^>]*>\s*<title>(.*?)</title>", chart.group(1), re.S)
    assert len(marks) == 1 + len(data["decisions"]) + len(data["operations"]) + len(data["undos"])
    assert any("filed by" in m for m in marks)
    for decision in data["decisions"]:
        assert any(f"{decision['action']} by {decision['by']}" in html.unescape(m) for m in marks), decision
    for op in data["operations"]:
        assert any(op["path"] in m for m in marks), op
    assert "Forgetting over time" not in dom_text  # one request: its life only

    year = tmp_path / "year.html"
    report(reviewed, "--since", "2025-01-01", fmt="html", out=year)
    everything = json.loads(report(reviewed, "--since", "2025-01-01"))["requests"]
    dom_text = _rendered(browser, year, tmp_path)
    over = re.search(r"<h2>Forgetting over time</h2>\s*(<svg.*?</svg>)", dom_text, re.S)
    assert over, "no chart of forgetting over time"
    totals = dict(re.findall(r"<polyline[^>]*>\s*<title>(\w+): (\d+)</title>", over.group(1)))
    assert int(totals["filed"]) == sum(1 for r in everything if r["filed"])
    assert int(totals["applied"]) == sum(1 for r in everything if r["operations"])
    assert int(totals["struck"]) == sum(1 for r in everything for o in r["operations"] if o["op"] == "retract")
    dom = _Dom()
    dom.feed(dom_text)
    assert {"svg", "circle", "polyline"} <= dom.tags <= HTML_TAGS | SVG_TAGS
    assert dom.attrs <= HTML_ATTRS | SVG_ATTRS, dom.attrs


def test_written_report_never_overwrites_unless_asked(reviewed, tmp_path):
    """The app's export writes through Session.write_report: an existing file is kept unless overwrite is asked."""
    session = Session.open(reviewed, vectors=False)
    out = tmp_path / "forget-w-report.md"
    done = session.write_report(out, "md", request="insights/forget-w.md")
    assert done["written"] == str(out.resolve()) and done["format"] == "md" and done["targets"] >= 1
    assert "insights/forget-w.md" in out.read_text()
    out.write_text("mine", encoding="utf-8")
    with pytest.raises(PalinodeError, match="already exists"):
        session.write_report(out, "md", request="insights/forget-w.md")
    assert out.read_text() == "mine"
    session.write_report(out, "json", overwrite=True, request="insights/forget-w.md")
    assert json.loads(out.read_text())["requests"][0]["path"] == "insights/forget-w.md"
    with pytest.raises(PalinodeError, match="unknown report format"):
        session.write_report(tmp_path / "x.pdf", "pdf", request="insights/forget-w.md")
    assert not (tmp_path / "x.pdf").exists()


def test_a_report_written_over_a_hard_link_to_a_memory_leaves_the_memory_alone(reviewed, tmp_path):
    memory = reviewed / "insights/forget-w.md"
    before = memory.read_bytes()
    out = tmp_path / "linked.html"
    os.link(memory, out)
    Session.open(reviewed, vectors=False).write_report(out, "html", overwrite=True, request="insights/forget-w.md")
    assert memory.read_bytes() == before and out.read_text().startswith("<!DOCTYPE html>")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".palinode-report-")]


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_the_verdict_comes_first_in_plain_words(tmp_path, fmt):
    """Issue 23: the Markdown and HTML reports say what is still live before any detail,
    with times a reader needs (no fractions of a second)."""
    import re
    import subprocess
    import sys

    from palinode_core.demo import build_demo_store

    root = tmp_path / "demo"
    build_demo_store(root)
    text = subprocess.run([sys.executable, "-m", "palinode_core", "report", str(root), "--since", "2000-01-01",
                           "--format", fmt], capture_output=True, text=True, check=True).stdout
    verdict = text.index("Verdict")
    first_request = text.index("Request <code>insights/" if fmt == "html" else "Request insights/")
    assert verdict < first_request
    section = text[verdict:first_request]
    assert "insights/forget-poker.md is applied: nothing live remains" in section
    assert re.search(r"insights/forget-w\.md is pending: \d+ live mention\(s\) still recalled", section)
    assert not re.search(r"generated:?\s*(</dt><dd>)?\S*\d{2}:\d{2}:\d{2}\.\d", text)


def test_a_plan_under_review_reports_the_sentences_the_reviewer_chose(tmp_path):
    """A pending request's report under review lists, per strike target, the
    sentences the reviewer kept (not the resolver's default), none for a skipped
    target, and holds nothing once the request was edited since it was planned."""
    from palinode_core.api import UnderReview

    root = tmp_path / "demo"
    build_demo_store(root)
    session = Session.open(root, cache_dir=tmp_path / "cache", vectors=False)
    session.update_index()
    plan = session.plan("insights/forget-w.md", verified=False)
    strike = next(c for c in plan.actionable if c.route == "strike" and c.plan is not None and c.plan.selected)
    default = [sp.text for sp in strike.plan.spans if sp.index in strike.plan.selected]

    def struck(marks, spans=None) -> list[str]:
        report = session.report(request="insights/forget-w.md", review=UnderReview(plan, marks, spans or {}))
        [row] = report["requests"]
        assert row["under_review"] is not None
        return next(t for t in row["targets"] if t["path"] == strike.path)["evidence"]["struck"]

    assert struck({strike.path: "approved"}) == default
    assert struck({strike.path: "approved"}, {strike.path: frozenset()}) == []
    assert struck({strike.path: "skipped"}) == []
    # the request edited since: its plan under review is not the request's any more
    req = root / "insights/forget-w.md"
    req.write_text(req.read_text().replace("Wilhelmina Cragg", "Ottoline Marsh"))
    again = Session.open(root, cache_dir=tmp_path / "cache", vectors=False)
    [row] = again.report(request="insights/forget-w.md", review=UnderReview(plan, {}, {}))["requests"]
    assert row["under_review"] is None and row["targets"] == []
