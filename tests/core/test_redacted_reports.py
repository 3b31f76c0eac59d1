"""`report --redact` over every request of the held-out planted bench (issue 25):
no content word of any preference, in any inflection, in any format, and no
absolute path; the normal report still tells everything. The bench's texts were
written for issue 22, not for this redaction."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT))
from bench.heldout.planted import build  # noqa: E402

from palinode_core.inspect.report_redact import VOCABULARY_KEYS  # noqa: E402
from palinode_core.text.stem import stem  # noqa: E402
from palinode_core.text.words import content_words  # noqa: E402

APPLIED = 6  # requests applied before the reports: operations, strikes, ledger records to redact


def cli(root, *args: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", args[0], str(root), *args[1:]],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench") / "planted"
    manifest = build(root, seed=3, fillers=20)
    for request in manifest.requests[:APPLIED]:
        cli(root, "apply", request, "--lexical", "--yes")
    return root, manifest


def vocabulary(report: dict) -> set[str]:
    """The report's own labels (states, kinds, routes): words it uses for every request."""
    found: set[str] = set()

    def walk(value, key=None):
        if isinstance(value, dict):
            for k, v in value.items():
                found.update(re.findall(r"[a-z0-9]+", k.lower()))
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and key in VOCABULARY_KEYS:
            found.update(re.findall(r"[a-z0-9]+", value.lower()))
    walk(report)
    return found


@pytest.mark.parametrize("fmt", ["json", "md", "html"])
def test_no_preference_word_survives_redaction(planted, fmt, tmp_path):
    root, manifest = planted
    labels = vocabulary(json.loads(cli(root, "report", "--since", "2000-01-01", "--redact", "--format", "json")))
    out = tmp_path / f"all.{fmt}"
    cli(root, "report", "--since", "2000-01-01", "--redact", "--format", fmt, "-o", str(out))
    texts = {"all": out.read_text()}
    for request in manifest.requests[:: max(1, len(manifest.requests) // 5)]:
        texts[request] = cli(root, "report", "--request", request, "--redact", "--format", fmt)
    for name, text in texts.items():
        if fmt == "html":  # the page's own stylesheet and tags are the template, not store text
            text = re.sub(r"<[^>]*>", " ", re.sub(r"(?s)<style>.*?</style>", " ", text))
        words = {stem(w) for w in re.findall(r"[a-z0-9]+", text.lower())} - {stem(w) for w in labels}
        assert str(root) not in text and str(root.parent) not in text, f"{name}: an absolute path"
        for request in manifest.requests:
            pref = manifest.pref_of[request]
            leaked = {w for w in content_words(pref) if stem(w) in words}
            assert not leaked, f"{fmt} report {name}: {sorted(leaked)} of {pref!r}"
    # still proves what happened: the rule ids, and the same sentence as the same hash
    from palinode_core.text.words import retraction_id
    assert all(retraction_id(manifest.pref_of[r]) in texts["all"] for r in manifest.requests)
    assert "hmac:" in texts["all"]


def test_the_normal_report_still_tells_everything(planted):
    root, manifest = planted
    report = json.loads(cli(root, "report", "--since", "2000-01-01", "--format", "json"))
    prefs = {r["pref"] for r in report["requests"]}
    assert prefs == {manifest.pref_of[r] for r in manifest.requests}
    assert report["store"] == root.name and "redacted" not in report
    applied = [r for r in report["requests"] if r["operations"]]
    assert len(applied) >= APPLIED - 1 and all(r["decisions"][0]["by"] for r in applied)
