"""Writes the labelled delivery sample's log (tests/delivery_sample.py) with
Palinode 0.23's own RetrievalLogger, run once and committed:

    .venv/bin/python -m tests.compat.write_delivery_sample

The store is built at delivery_sample.WRITTEN_AT (its search rows' absolute
paths name it, so the test reads them as a moved store's) and every row is
logged at its moment: ``read`` a whole-file read (relative path, no receipt),
``current`` a search with a file_sha256 receipt of the file as it is then,
``stale`` the same of the file as first written (a replica never updated),
``index`` a search with an index-section receipt, ``plain`` a search with none."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import delivery_sample  # noqa: E402
from helpers import palinode_file  # noqa: E402

from .test_deliveries import Logger  # noqa: E402


def main() -> None:
    root = Path(delivery_sample.WRITTEN_AT)
    shutil.rmtree(root.parent, ignore_errors=True)
    root.parent.mkdir(parents=True)
    first = {
        path: palinode_file({"category": path.split("/")[0]}, text).encode()
        for path, text in delivery_sample.MEMORIES.items()
    }
    logger: list[Logger] = []
    written: list[dict[str, str]] = []

    def deliver(row: dict[str, str]) -> None:
        if not logger:
            logger.append(Logger(root))
        log = logger[0]
        path, when, kind, session = row["path"], row["when"], row["kind"], row["session"]
        if kind == "read":
            log.read(path, when, session)
        elif kind == "stale":
            now = (root / path).read_bytes()
            (root / path).write_bytes(first[path])
            try:
                log.deliver(path, when, session, "file_sha256", query="what do I do on weekends")
            finally:
                (root / path).write_bytes(now)
        else:
            receipt = {"current": "file_sha256", "index": "index", "plain": None}[kind]
            log.deliver(path, when, session, receipt, query="what do I do on weekends")
        written.append(row)

    try:
        delivery_sample.build(root, lambda key, value: os.environ.__setitem__(key, value), deliver)
    finally:
        if logger:
            logger[0].close()
    delivery_sample.DATA.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(root / ".audit/retrievals.jsonl", delivery_sample.DATA / "retrievals.jsonl")
    lines = (delivery_sample.DATA / "retrievals.jsonl").read_text().splitlines()
    assert len(lines) == len(written) == 200, (len(lines), len(written))
    for number, (row, line) in enumerate(zip(written, lines, strict=True), start=1):
        assert json.loads(line)["session_id"] == row["session"]
        row["line"] = str(number)
    (delivery_sample.DATA / "rows.json").write_text(json.dumps(written, indent=1) + "\n")
    print(f"wrote {len(written)} rows to {delivery_sample.DATA}")


if __name__ == "__main__":
    main()
