"""``deliveries``: was a forgotten preference delivered after it was
forgotten? Every row of Palinode's retrieval log, classified (see
inspect/deliveries.py). Rows are streamed as they are judged, so a log of a
million rows never sits in memory, in JSON or as text."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..text.sanitize import printable
from .args import open_session
from .registry import Command

if TYPE_CHECKING:  # the audit itself is imported when the command runs: every other command starts faster
    from ..inspect.deliveries import DeliveryAudit
    from ..inspect.retrieval_log import Row


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--request", metavar="PATH", help="only this forget request (default: every request)")
    p.add_argument("--since", metavar="DATE", help="only rows logged on or after DATE")


def _json(audit: DeliveryAudit) -> Iterator[str]:
    yield '{"rows":['
    sep = "\n"
    for batch in _batches(audit.json_rows()):
        yield sep + ",\n".join(batch)
        sep = ",\n"
    tail = {"requests": audit.summary(), "revision_match": audit.matches, "log": audit.log.to_dict()}
    yield "\n]," + json.dumps(tail, ensure_ascii=True, indent=2)[1:] + "\n"


def _batches(lines: Iterator[str], size: int = 256) -> Iterator[list[str]]:
    """Lines in lists of ``size``: a million rows joined one by one cost more than encoding them."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def _line(row: Row, r: dict[str, Any], sentences: dict[str, str]) -> str:
    where = f"{r['path'] or row.file_path}" + (f"#{row.chunk_id}" if row.chunk_id else "")
    who = ", ".join(x for x in (row.session_id and f"session {row.session_id}", row.mode) if x)
    query = f' query "{row.query}"' if row.query else ""
    version = f"{r['revision_match']} {r['commit'][:7]}" if r["commit"] else r["revision_match"]
    text = printable(f"  {row.timestamp}  {r['class']:<19} {where} ({version}; {who}){query}") + "\n"
    sentence = r["sentence"]
    if sentence:
        shown = sentences.get(sentence)
        if shown is None:  # the same sentence is delivered again and again: made inert once
            if len(sentences) >= 10_000:
                sentences.clear()
            shown = sentences[sentence] = printable(f"      “{sentence}”") + "\n"
        text += shown
    return text


def _text(audit: DeliveryAudit) -> Iterator[str]:
    shown = 0
    sentences: dict[str, str] = {}
    for row, judged in audit.carrying():
        shown += 1
        yield _line(row, judged, sentences)
    if not shown:
        yield "no delivery carried a forgotten preference\n"
    for path, entry in audit.summary().items():
        w = entry["window"]
        counts = ", ".join(f"{n} {c}" for c, n in entry["counts"].items())
        window = f"exposure window {w['from'] or 'unknown'} .. {w['to'] or 'not applied (still open)'}"
        yield printable(f"{path}: {counts}; {window}") + "\n"
    matches = ", ".join(f"{n} {k}" for k, n in sorted(audit.matches.items())) or "none"
    yield f"{audit.log.rows} delivery row(s) read; versions: {matches}\n"
    for note in audit.log.notes() + audit.log.problems:
        yield printable(note) + "\n"


def _deliveries(args: argparse.Namespace) -> dict[str, Any]:
    audit = open_session(args).deliveries(request=args.request, since=args.since)
    return {"stream": _json(audit) if args.json else _text(audit)}


COMMANDS = (
    Command(
        "deliveries",
        "each delivery in Palinode's retrieval log: delivered before, during or after a forget (a leak)",
        _deliveries,
        _args,
        as_of=True,
    ),
)
