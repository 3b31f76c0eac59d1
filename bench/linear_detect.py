"""Forget detection is linear on hostile memory text (issue 11 item 9): each shape
below is timed at 200 KB and at 2 MB in the same run (CPU time, best of 5); the 10x input must cost at
most 12x the time. Never part of the test suite.

    python -m bench.linear_detect
"""
from __future__ import annotations

import sys
import time

from palinode_core.text.detect import detect_forget_request

# Shapes that make a backtracking regex rescan a run from every start position, and
# forget tokens that pass the cheap checks and fail late (bare, correction, code...).
SHAPES = {
    "blank lines": lambda n: "\n" * n + "forget",
    "blank lines, forget on each": lambda n: ("\n\n forget\n" * n)[:n],
    "spaces": lambda n: "please forget my" + " " * n + "x",
    "spaces between lines": lambda n: (" \n \t\n" * n)[:n] + "Forget that I",
    "repeated dots": lambda n: "Please forget that I" + "." * n + "x",
    "repeated !?": lambda n: "forget my " + "!?" * (n // 2) + "x",
    "long word": lambda n: "please forget my " + "x" * n,
    "backticks and stars": lambda n: "please forget my " + ("`*_" * n)[:n],
    "e.g. dots": lambda n: "Please forget that I " + ("e.g. " * n)[:n],
    "forget forget": lambda n: ("forget forget " * n)[:n],
    "please forget me.": lambda n: ("please forget me. " * n)[:n],
    "please forget that I.": lambda n: ("Please forget that I. " * n)[:n],
    "forget my last message,": lambda n: ("Forget my last message, " * n)[:n],
    "wrapped requests": lambda n: ("please forget that\nI\n" * n)[:n],
    "quoted wrapped": lambda n: ("> could you forget\n> me\n" * n)[:n],
    "headings": lambda n: ("# please forget that I smoke\n" * n)[:n],
    "inside one fence": lambda n: "```\n" + ("please forget that I smoke\n" * n)[:n],
    "speaker labels": lambda n: ("Assistant: please forget my address\n" * n)[:n],
}


def best_of(fn, reps: int = 5) -> float:
    """Best CPU time of ``reps`` runs: on a shared machine wall time mostly measures
    the neighbours; CPU time of this process is what the input costs."""
    best = float("inf")
    for _ in range(reps):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best


def main() -> int:
    # 200 KB and 2 MB: both past the CPU caches, so the ratio is the algorithm's.
    small, big = 200_000, 2_000_000
    worst = 0.0
    print(f"{'shape':32} {'200 KB':>9} {'2 MB':>9} {'ratio':>6}  result")
    for name, make in SHAPES.items():
        a, b = make(small), make(big)
        t_small = best_of(lambda a=a: detect_forget_request(a))
        t_big = best_of(lambda b=b: detect_forget_request(b))
        # Below a few milliseconds the ratio is timer noise; floor the small run there.
        ratio = t_big / max(t_small, 5e-3)
        worst = max(worst, ratio)
        got = detect_forget_request(b)
        shown = "None" if got is None else repr(got[:30])
        print(f"{name:32} {t_small * 1000:8.1f}ms {t_big * 1000:8.1f}ms {ratio:6.2f}  {shown}")
    ok = worst <= 12
    print(f"worst 10x ratio: {worst:.2f} (goal <= 12): {'met' if ok else 'NOT MET'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
