"""The differential fuzzer: ``python -m tests.compat.fuzz --cases 2000``.

Prints a table of divergence signatures per operation and exits non-zero
when a signature is neither an intentional difference (docs/format.md,
"Intentional differences") nor a known open bug listed below.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from .harness import Driver, run_case

# Each intentional difference, by signature prefix, with its reason (the same
# list, in prose, is docs/format.md's "Intentional differences").
INTENTIONAL = {
    "keep-layout:frontmatter": "we edit only the keys an operation is about; the package re-dumps the "
                               "whole frontmatter (sorted keys, block lists, comments lost)",
    "keep-layout:crlf": "a CRLF file stays CRLF; the package writes its frontmatter with LF",
    "keep-layout:crlf-history": "a CRLF history sibling stays CRLF (its frontmatter found, our line "
                                "appended in CRLF); the package rewrites the whole sibling with LF",
    "keep-layout:dependent": "a flagged dependent gets its stale_backing entry in its own layout; the "
                             "package re-dumps the dependent's whole frontmatter and strips its body",
    "keep-layout:trailing-blank-lines": "we keep a file's own trailing blank lines; the package strips them",
    "keep-layout:unterminated-last-line": "we keep a last line without newline as it is; the package adds one",
    "refuse:bom": "a BOM file is refused; the package reads its frontmatter as body and re-dumps it",
    "refuse:list-frontmatter": "a list frontmatter is refused; the package drops it to an empty mapping",
    "refuse:unclosed-frontmatter": "an unclosed frontmatter is refused; the package treats it as body",
    "unretract:strike-across-line-break": "we undo a strike that spans a line break; the package's "
                                          "unstrike pattern cannot cross lines and leaves it struck",
    "unretract:user-strike-on-line": "we undo only the walker's strike; the package's pattern starts at "
                                     "the user's own earlier ~~ and corrupts the line",
    "history:no-glue-onto-unterminated-line": "the package glues its entry onto a sibling's unterminated "
                                              "last line; we end that line first",
}

# Bugs on our side issue 13 lists that are still open, with why.
KNOWN_OPEN: dict[str, str] = {}


def verdict(signature: str) -> str:
    if any(signature.startswith(k) for k in INTENTIONAL):
        return "intentional"
    if any(signature.startswith(k) for k in KNOWN_OPEN):
        return "known-open"
    return "UNEXPLAINED"


def run(seeds: range, show: int = 3, verbose: bool = False) -> tuple[dict, dict, list]:
    table: dict[str, Counter] = defaultdict(Counter)
    totals: Counter = Counter()
    examples: dict[str, list] = defaultdict(list)
    driver = Driver()
    try:
        with tempfile.TemporaryDirectory(prefix="compat-") as tmp:
            for seed in seeds:
                for step in run_case(driver, seed, Path(tmp)):
                    totals[step.label.split("(")[0] + ("(of pal)" if "of pal" in step.label else
                                                        "(of ours)" if "of ours" in step.label else "")] += 1
                    label = step.label
                    if not step.diffs:
                        table["(identical)"][label] += 1
                    for _part, sig in step.diffs:
                        table[sig][label] += 1
                        if len(examples[sig]) < show:
                            examples[sig].append((seed, label))
    finally:
        driver.close()
    return table, totals, [(s, examples[s]) for s in table]


def print_table(table: dict, totals: Counter, examples: list, out=sys.stdout) -> None:
    labels = sorted(totals)
    width = max([len(s) for s in table] + [20])
    print(f"{'signature':<{width}}  {'verdict':<12}" + "".join(f"{lab:>18}" for lab in labels), file=out)
    print(f"{'(steps run)':<{width}}  {'':<12}" + "".join(f"{totals[lab]:>18}" for lab in labels), file=out)
    for sig in sorted(table, key=lambda s: (s != "(identical)", verdict(s), s)):
        v = "" if sig == "(identical)" else verdict(sig)
        print(f"{sig:<{width}}  {v:<12}" + "".join(f"{table[sig][lab]:>18}" for lab in labels), file=out)
    bad = [(s, e) for s, e in examples if s != "(identical)" and verdict(s) != "intentional"]
    for sig, ex in bad:
        print(f"  {sig}: seeds {', '.join(f'{seed} ({lab})' for seed, lab in ex)}", file=out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--start", type=int, default=0)
    args = ap.parse_args(argv)
    started = time.monotonic()
    table, totals, examples = run(range(args.start, args.start + args.cases))
    print_table(table, totals, examples)
    unexplained = sorted(s for s in table if s != "(identical)" and verdict(s) == "UNEXPLAINED")
    print(f"\n{args.cases} cases, {sum(totals.values())} steps in {time.monotonic() - started:.0f} s; "
          f"unexplained signatures: {len(unexplained)}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
