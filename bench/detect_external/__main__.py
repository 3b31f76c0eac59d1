"""Forget-request detection on an external set (issue 22): precision and recall of
ours and of Palinode 0.23's detector (replayed) on `cases.yaml`, real text not
written for this code. Never part of the test suite.

    python -m bench.detect_external [--out bench/detect_external/RESULTS.md]
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import yaml

from palinode_core.text.detect import detect_forget_request
from palinode_core.text.palinode_detect import detect_palinode_request

CASES = Path(__file__).with_name("cases.yaml")


def score(detect: Callable[[str], str | None], cases: list[dict]) -> dict:
    fired = [(c, detect(c["t"]) is not None) for c in cases]
    tp = sum(1 for c, f in fired if f and c["k"] == "pos")
    fp = [c for c, f in fired if f and c["k"] == "neg"]
    fn = [c for c, f in fired if not f and c["k"] == "pos"]
    return {
        "precision": tp / (tp + len(fp)) if tp + len(fp) else 1.0,
        "recall": tp / (tp + len(fn)) if tp + len(fn) else 1.0,
        "fp": fp,
        "fn": fn,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=CASES.with_name("RESULTS.md"))
    args = parser.parse_args()
    cases = yaml.safe_load(CASES.read_text(encoding="utf-8"))["cases"]
    pos = sum(1 for c in cases if c["k"] == "pos")
    lines = [
        "# Forget detection on the external set",
        "",
        f"{len(cases)} texts ({pos} requests, {len(cases) - pos} not), from `cases.yaml` (sources noted there).",
        "",
        "| detector | precision | recall | false positives | misses |",
        "|---|---|---|---|---|",
    ]
    details = []
    for name, detect in (("ours", detect_forget_request), ("Palinode 0.23", detect_palinode_request)):
        s = score(detect, cases)
        lines.append(f"| {name} | {s['precision']:.3f} | {s['recall']:.3f} | {len(s['fp'])} | {len(s['fn'])} |")
        for kind in ("fp", "fn"):
            for c in s[kind]:
                details.append(f"- {name}, {'false positive' if kind == 'fp' else 'miss'} ({c['src']}): `{c['t']!r}`")
    text = "\n".join([*lines, "", *details, ""])
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
