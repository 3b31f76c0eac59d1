"""Forget-request detection scored over a labelled table (issue 14): precision 1.00,
recall >= 0.97, exact extraction for every detected positive. The table and its
extraction rules live in detection_cases.yaml; a 1 MB hostile body stays fast."""
from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from palinode_core.text.detect import detect_forget_request

CASES = yaml.safe_load((Path(__file__).parent / "detection_cases.yaml").read_text(encoding="utf-8"))["cases"]


def score(cases=CASES, detect=detect_forget_request) -> dict:
    """Confusion counts; a positive detected with the wrong phrase counts as found
    (for recall) and is listed under ``wrong`` (extraction must be exact)."""
    tp = fp = fn = tn = 0
    wrong, missed, false = [], [], []
    for case in cases:
        got, want = detect(case["t"]), case["want"]
        if want is None:
            if got is None:
                tn += 1
            else:
                fp += 1
                false.append((case["t"], got))
        elif got is None:
            fn += 1
            missed.append(case["t"])
        else:
            tp += 1
            if got != want:
                wrong.append((case["t"], want, got))
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": tp / (tp + fp) if tp + fp else 1.0,
            "recall": tp / (tp + fn) if tp + fn else 1.0,
            "wrong": wrong, "missed": missed, "false": false}


def test_the_table_is_large_and_covers_each_kind():
    kinds = [c["k"] for c in CASES]
    assert len(CASES) >= 150
    assert kinds.count("pos") >= 50 and kinds.count("neg") >= 50 and kinds.count("ext") >= 30
    assert all((c["want"] is None) == (c["k"] == "neg") for c in CASES)
    assert len({c["t"] for c in CASES}) == len(CASES), "duplicate case"


def test_precision_recall_and_exact_extraction():
    s = score()
    print(f"\ndetection table: {len(CASES)} cases  tp={s['tp']} fp={s['fp']} fn={s['fn']} tn={s['tn']}  "
          f"precision={s['precision']:.3f} recall={s['recall']:.3f} wrong extraction={len(s['wrong'])}")
    assert s["precision"] == 1.0, s["false"]
    assert s["recall"] >= 0.97, s["missed"]
    assert not s["wrong"], s["wrong"]


def adversarial_body(size: int) -> str:
    """Every shape that has made a backtracking regex quadratic, plus forget tokens
    in every frame the detector looks at, none of them a complete request."""
    parts = ["\n" * 4000, " " * 4000, "." * 4000, "!?" * 2000, "x" * 4000, "\n \n\t" * 1000,
             "please forget my. " * 200, "forget forget " * 300, "Forget that I" + " " * 3000,
             "Could you forget " + "me, " * 500, "\n forget\n" * 400, "*" * 2000 + "`" * 2000,
             "- forget that\n" * 200, "e.g. " * 800, "please forget about me, " * 150]
    block = "".join(parts)
    return (block * (size // len(block) + 1))[:size]


@pytest.mark.parametrize("shape", ["mixed", "blank lines", "spaces then forget", "forget tokens", "corrections"])
def test_a_1mb_hostile_body_is_detected_in_seconds(shape):
    size = 1_000_000
    body = {"mixed": adversarial_body(size),
            "blank lines": "\n" * size + "forget",
            "spaces then forget": "please forget my" + " " * size + "x",
            "forget tokens": ("Please forget that I. " * (size // 22)),
            "corrections": ("Forget my last message, " * (size // 24))}[shape]
    start = time.process_time()
    got = detect_forget_request(body)
    elapsed = time.process_time() - start
    print(f"\n1 MB {shape}: {elapsed:.3f} s CPU")
    assert got is None  # none of these bodies holds a complete request
    # Generous: linear code takes about a second of CPU at worst here, quadratic hours.
    # CPU time, not wall: the test machine is shared and often loaded several times over.
    assert elapsed < 5.0
