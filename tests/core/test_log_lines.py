"""The retrieval log is read a block at a time (a readline per row was four
times its JSON parse): the lines it yields, numbered, are exactly the lines
holding more than blanks that reading it line by line gives, whatever the block
and the line limit; a too-long line is one None and is never held whole, and
the last line may lack its newline."""
from __future__ import annotations

import gzip
import io
import json
import random
import time
from datetime import UTC, datetime, timedelta

import pytest

from palinode_core.inspect import retrieval_log


def by_readline(data: bytes, limit: int) -> list[tuple[int, bytes | None]]:
    """The reference: every line read whole, numbered; blank ones left out."""
    out: list[tuple[int, bytes | None]] = []
    for number, line in enumerate(io.BytesIO(data), start=1):
        if line.strip():
            out.append((number, None if len(line.rstrip(b"\n")) > limit else line))
    return out


@pytest.mark.parametrize("block", [1, 2, 3, 7, 64])
def test_block_reading_yields_what_reading_line_by_line_does(monkeypatch, block):
    rng = random.Random(block)
    monkeypatch.setattr(retrieval_log, "_BLOCK", block)
    for limit in (1, 4, 9):
        monkeypatch.setattr(retrieval_log, "MAX_LINE_BYTES", limit)
        for _ in range(300):
            data = bytes(rng.choice(b"ab\n \r\n") for _ in range(rng.randint(0, 40)))
            assert list(retrieval_log._lines(io.BytesIO(data))) == by_readline(data, limit), (data, limit)


def test_a_huge_line_is_skipped_without_being_held(monkeypatch):
    monkeypatch.setattr(retrieval_log, "_BLOCK", 1024)
    monkeypatch.setattr(retrieval_log, "MAX_LINE_BYTES", 100)
    data = b'{"a": 1}\n' + b"x" * 50_000 + b'\n{"b": 2}'
    assert list(retrieval_log._lines(io.BytesIO(data))) == [(1, b'{"a": 1}\n'), (2, None), (3, b'{"b": 2}')]


# Palinode's row as its RetrievalLogger writes it, without the receipt's fields: the barest real row.
ROW = b'{"timestamp": "2025-06-01T10:00:00+00:00", "file_path": "notes/garden.md", "session_id": "s1"}\n'


def _cpu_reading(tmp_path, name: str, data: bytes) -> tuple[float, retrieval_log.LogReport]:
    """CPU seconds to read ``data`` as the log ``name`` (best of 2): a loaded machine's waiting is not the reader's."""
    root = tmp_path / name.replace(".", "-")
    (root / ".audit").mkdir(parents=True)
    (root / ".audit" / name).write_bytes(data)
    best = float("inf")
    for _ in range(2):
        report = retrieval_log.LogReport()
        started = time.process_time()
        for _row in retrieval_log.read_rows(root, report):
            pass
        best = min(best, time.process_time() - started)
    return best, report


def test_a_blank_line_costs_less_than_a_row_of_the_same_bytes(tmp_path):
    size = 2 << 20
    rows, _ = _cpu_reading(tmp_path, "retrievals.jsonl", ROW * (size // len(ROW)))
    for blank in (b"\n", b" \n", b"\r\n", b"\t \t\n"):
        took, report = _cpu_reading(tmp_path / repr(blank)[2:-1].replace("\\", "_"), "retrievals.jsonl",
                                    blank * (size // len(blank)) + ROW)
        assert report.rows == 1 and report.problem_count == 0
        assert took <= rows + 0.01, f"{blank!r} lines: {took:.3f} s for {size} bytes; real rows {rows:.3f} s"


@pytest.mark.parametrize("line", [b"\n", b"x\n", b"{\n", b"{}\n"])
def test_a_gzip_bomb_is_read_only_to_a_bound_and_said_once(tmp_path, line):
    """4 KiB of gzip holding 4 MiB of blank or garbage lines (13 s of CPU before)."""
    bomb = gzip.compress(line * ((4 << 20) // len(line)), 9)
    assert len(bomb) < 8 << 10
    took, report = _cpu_reading(tmp_path, "retrievals.jsonl.1.gz", bomb)
    assert took < 1.0, f"{line!r}: {took:.2f} s of CPU for a {len(bomb)}-byte .gz"
    said = [n for n in report.notes() if "expand" in n]  # said even past the problem lines kept
    assert len(said) == 1 and said[0].startswith(".audit/retrievals.jsonl.1.gz: stopped reading"), report.notes()


def test_a_rotated_log_as_palinode_writes_it_is_read_whole(tmp_path):
    """Rows as Palinode logs them (microsecond times) with one query and one mode throughout: 19x in gzip."""
    rng = random.Random(38)
    start = datetime(2025, 6, 1, tzinfo=UTC)
    rows = "".join(json.dumps({
        "timestamp": (start + timedelta(seconds=30 * i, microseconds=rng.randrange(10**6))).isoformat(),
        "file_path": f"notes/n{rng.randrange(300)}.md", "chunk_id": None, "mode": "explicit",
        "source": "palinode_search", "query": "what did I say about the garden", "rank": rng.randrange(10),
        "score": 0.5, "session_id": f"s{i // 40}"}, separators=(",", ":")) + "\n" for i in range(20_000)).encode()
    _, report = _cpu_reading(tmp_path, "retrievals.jsonl.1.gz", gzip.compress(rows, 9))
    assert report.rows == 20_000 and not report.problems


def test_a_line_is_json_exactly_when_json_loads_takes_it():
    """The reader's shortcuts (no parse for a line no value begins, the C scanner on UTF-8) change no answer."""
    atoms = [b"{", b"}", b"[", b"]", b'"', b"a", b"1", b"-", b" ", b"\t", b"\r", b"\xef\xbb\xbf", b"\x00", b"\xff",
             b"\xfe", b"\xed\xa0\x80", b":", b",", b"true", b"NaN", b'"k"', b"\x0c", b"\xc3\xa9"]
    scan = json.JSONDecoder().scan_once
    rng = random.Random(12)

    def outcome(parse, line):
        try:
            return repr(parse(line))
        except (ValueError, RecursionError):
            return "refused"

    for _ in range(30_000):
        line = b"".join(rng.choice(atoms) for _ in range(rng.randint(1, 8)))
        if line.strip():
            assert outcome(lambda b: retrieval_log._json_line(b, scan), line) == outcome(json.loads, line), line
