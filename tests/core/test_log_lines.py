"""The retrieval log is read a block at a time (a readline per row was four
times its JSON parse): the lines it yields are exactly what reading it line by
line gives, whatever the block and the line limit, a too-long line is one None
and is never held whole, and the last line may lack its newline."""
from __future__ import annotations

import io
import random

import pytest

from palinode_core.inspect import retrieval_log


def by_readline(data: bytes, limit: int) -> list[bytes | None]:
    """The reference: readline with the limit, as the reader did before."""
    handle, out = io.BytesIO(data), []
    while True:
        line = handle.readline(limit + 1)
        if not line:
            return out
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = handle.readline(limit)
            out.append(None)
            continue
        out.append(line)


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64])
def test_block_reading_yields_what_reading_line_by_line_does(monkeypatch, block):
    rng = random.Random(block)
    monkeypatch.setattr(retrieval_log, "_BLOCK", block)
    for limit in (1, 4, 9):
        monkeypatch.setattr(retrieval_log, "MAX_LINE_BYTES", limit)
        for _ in range(300):
            data = bytes(rng.choice(b"ab\n") for _ in range(rng.randint(0, 40)))
            assert list(retrieval_log._lines(io.BytesIO(data))) == by_readline(data, limit), (data, limit)


def test_a_huge_line_is_skipped_without_being_held(monkeypatch):
    monkeypatch.setattr(retrieval_log, "_BLOCK", 1024)
    monkeypatch.setattr(retrieval_log, "MAX_LINE_BYTES", 100)
    data = b'{"a": 1}\n' + b"x" * 50_000 + b'\n{"b": 2}'
    assert list(retrieval_log._lines(io.BytesIO(data))) == [b'{"a": 1}\n', None, b'{"b": 2}']
