"""Issue 43: `index` says how long it will take from a rate it measured, shows
loading the model as a step of its own, and, interrupted, says a rerun resumes
where it stopped (and it does)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest
from helpers import ROOT, make_git_store, palinode_file

from palinode_core.cli import args as cli_args
from palinode_core.search import vectors
from palinode_core.search.chunks import text_hash
from palinode_core.search.embed import Embedder
from palinode_core.session import Session

WORDS = [
    "bees",
    "garden",
    "oolong",
    "tea",
    "cello",
    "Berlin",
    "nurse",
    "hiking",
    "fair",
    "judge",
    "tomato",
    "kettle",
    "river",
    "lamp",
]


def _store(tmp_path, memories: int, sentences: int):
    """Memories of short distinct sentences (many units, few and small chunks)."""
    files = {}
    for m in range(memories):
        body = " ".join(
            f"Note {m}-{s}: the {WORDS[(m + s) % len(WORDS)]} has {s * 7 % 13} {WORDS[s % len(WORDS)]}s."
            for s in range(sentences)
        )
        files[f"notes/n{m:03d}.md"] = palinode_file(
            {"id": f"n{m:03d}", "created_at": "2025-05-01T10:00:00+00:00"}, body
        )
    files["insights/forget-bees.md"] = palinode_file(
        {"id": "forget-bees", "created_at": "2025-05-20T10:00:00+00:00"}, "Please forget that I keep bees."
    )
    return make_git_store(tmp_path / "store", files)


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_the_model_load_is_a_step_of_its_own_and_each_phase_counts_from_zero(tmp_path):
    root = _store(tmp_path, 6, 40)
    reports: list[tuple[str, int, int]] = []
    session = Session.open(root, embedder=Embedder())
    session.update_index(lambda phase, done, total: reports.append((phase, done, total)))
    embedding = [r for r in reports if r[0] in ("model", "vectors", "sentences")]
    assert embedding[:3] == [("model", 0, 1), ("model", 1, 1), ("vectors", 0, embedding[2][2])]
    sentences = [r for r in reports if r[0] == "sentences"]
    # those sharing a stem with the request and the rest are one phase: one total, counted up once
    assert sentences[0][1] == 0 and len({total for _, _, total in sentences}) == 1
    assert [done for _, done, _ in sentences] == sorted(done for _, done, _ in sentences)
    assert sentences[-1][1] == sentences[-1][2] >= 6 * 40
    embedded, units = session.search_index().units.coverage()
    assert embedded == units == 6 * 40 + 1


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_calls_come_in_no_order_of_length_so_the_rate_so_far_is_the_rate_of_what_is_left(embedder, monkeypatch):
    import sqlite3

    monkeypatch.setattr(vectors, "CALL", 4)  # many calls in one window
    texts = [" ".join(["word"] * (1 + i % 23)) + f" {i}" for i in range(96)]
    cache = vectors.VectorCache(sqlite3.connect(":memory:", check_same_thread=False), threading.RLock(), embedder)
    lengths: list[float] = []
    encode = embedder.encode

    def measured(batch: list[str]):
        lengths.append(sum(map(len, batch)) / len(batch))
        return encode(batch)

    monkeypatch.setattr(embedder, "encode", measured)
    assert cache.embed_pairs([(text_hash(t), t) for t in texts]) == 96
    assert len(lengths) == 24
    # each call holds texts of alike length (little padding) ...
    assert max(lengths) - min(lengths) > 20
    # ... but longest-first would make the first calls the slowest and the ETA a multiple of the truth
    first_half, second_half = lengths[:12], lengths[12:]
    assert abs(sum(first_half) / 12 - sum(second_half) / 12) < 0.25 * (sum(lengths) / 24)


def test_the_progress_line_closes_before_the_model_step_and_the_eta_uses_the_measured_rate(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    progress = cli_args.TerminalProgress()
    progress.enabled = True
    progress("segmenting", 10, 10)
    progress("model", 0, 1)
    progress("model", 1, 1)
    progress("sentences", 1000, 9000)  # resumed: 1,000 were embedded by an earlier run
    time.sleep(0.5)
    progress("sentences", 1500, 9000)
    progress.close()
    lines = err.getvalue().split("\n")
    assert lines[0].startswith("\rsegmenting: 10/10")  # closed before anything else is said
    assert lines[1].startswith("\rmodel: loaded in 0.")
    eta = lines[2].rsplit("ETA ", 1)[1].split()[0]
    minutes, seconds = map(int, eta.split(":"))
    # 500 texts in ~0.5 s: 7,500 left take ~7.5 s (the 1,000 done before this run are no rate)
    assert 3 <= minutes * 60 + seconds <= 9, lines[2]


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_an_interrupted_index_says_a_rerun_resumes_and_the_rerun_does(tmp_path):
    root = _store(tmp_path, 30, 90)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "core"), str(ROOT)]),
        "PALINODE_AUDIT_MODEL_CACHE": os.environ.get("PALINODE_AUDIT_MODEL_CACHE", str(tmp_path / "model")),
    }
    cmd = [sys.executable, "-m", "palinode_core", "--json", "index", str(root)]
    proc = subprocess.Popen([*cmd, "--progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stdout is not None
    for line in proc.stdout:
        report = json.loads(line) if line.startswith('{"progress"') else {}
        if report.get("progress") == "sentences" and report["done"] > 0:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == (
        "palinode-audit: interrupted; what it indexed and embedded is kept: run it again to resume where it stopped"
    )
    assert "Traceback" not in err
    again = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    assert result["sentences_embedded"] == result["sentences"] == 30 * 90 + 1  # and the request's
    assert 0 < result["embedded"] < 30 * 90  # only what the first run had not committed
