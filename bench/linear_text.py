"""The text parsers on hostile input at two sizes: CPU time at 10x the input
must stay within 12x (linear, with room for noise). Not part of make test.

    python -m bench.linear_text
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))

from test_linear_text import hostile_bodies, parse_everything  # noqa: E402


def cpu(body: str, rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        parse_everything(body)
        best = min(best, time.process_time() - started)
    return best


def main() -> int:
    small, large = hostile_bodies(100_000), hostile_bodies(1_000_000)
    worst = 0.0
    print(f"{'shape':36s} {'100 KB':>9s} {'1 MB':>9s} {'ratio':>7s}")
    for shape in sorted(small):
        a, b = cpu(small[shape]), cpu(large[shape])
        ratio = b / max(a, 1e-3)  # below a millisecond the ratio is noise
        worst = max(worst, ratio)
        print(f"{shape:36s} {a * 1000:8.1f}ms {b * 1000:8.1f}ms {ratio:7.2f}")
    print(f"worst ratio {worst:.2f} (goal <= 12)")
    return 0 if worst <= 12 else 1


if __name__ == "__main__":
    raise SystemExit(main())
