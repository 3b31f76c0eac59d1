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

from palinode_core.text.detect import detect_blanket, detect_forget_request
from palinode_core.text.palinode_detect import detect_palinode_request

CASES = Path(__file__).with_name("cases.yaml")


def ours(text: str) -> str | None:
    """Ours recognises a request by its preference, or, for a blanket one, by its scope."""
    return detect_forget_request(text) or detect_blanket(text)


def score(detect: Callable[[str], str | None], cases: list[dict]) -> dict:
    """A blanket request (k: blanket) counts as a request to recognise."""
    fired = [(c, detect(c["t"]) is not None) for c in cases]
    tp = sum(1 for c, f in fired if f and c["k"] != "neg")
    fp = [c for c, f in fired if f and c["k"] == "neg"]
    fn = [c for c, f in fired if not f and c["k"] != "neg"]
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
    blanket = [c for c in cases if c["k"] == "blanket"]
    lines = [
        "# Forget detection on the external set",
        "",
        f"{len(cases)} texts ({pos} requests, {len(blanket)} blanket requests, {len(cases) - pos - len(blanket)} not), "
        "from `cases.yaml` (sources noted there). Ours recognises a blanket request by its scope (a person "
        "chooses what it covers; it has no preference to plan), the others by their preference.",
        "",
        "| detector | precision | recall | false positives | misses |",
        "|---|---|---|---|---|",
    ]
    details = []
    for name, detect in (("ours", ours), ("Palinode 0.23", detect_palinode_request)):
        s = score(detect, cases)
        lines.append(f"| {name} | {s['precision']:.3f} | {s['recall']:.3f} | {len(s['fp'])} | {len(s['fn'])} |")
        for kind in ("fp", "fn"):
            for c in s[kind]:
                details.append(f"- {name}, {'false positive' if kind == 'fp' else 'miss'} ({c['src']}): `{c['t']!r}`")
    scoped = [(c["t"], detect_blanket(c["t"])) for c in blanket]
    lines += ["", "Blanket requests, each with the scope ours shows for a person to choose:", ""]
    lines += [f"- {t!r}: {scope!r}" for t, scope in scoped]
    text = "\n".join([*lines, "", *details, ""])
    args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
