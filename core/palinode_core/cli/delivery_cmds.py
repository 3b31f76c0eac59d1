"""``deliveries``: was a forgotten preference delivered after it was
forgotten? Every row of Palinode's retrieval log, classified against each
request's state at the row's time (see inspect/deliveries.py). Rows are
streamed as they are judged, so a log of a million rows never sits in memory,
in JSON or as text."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..text.sanitize import printable
from .args import open_session
from .registry import Command

if TYPE_CHECKING:  # the audit itself is imported when the command runs: every other command starts faster
    from ..inspect.deliveries import DeliveryAudit
    from ..inspect.delivery_records import Part
    from ..inspect.retrieval_log import Row


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--request", metavar="PATH", help="only this forget request (default: every request)")
    p.add_argument(
        "--since",
        metavar="DATE",
        help="only rows logged from DATE on (a day: from its start; your time zone unless DATE names one)",
    )
    p.add_argument("--bundle", metavar="ID", help="only the rows of one delivery (the bundle id Palinode printed)")
    p.add_argument(
        "--show-queries",
        action="store_true",
        help="show each row's query and session (the asker's words: withheld by default, as Palinode's explain does)",
    )


def _json(audit: DeliveryAudit) -> Iterator[str]:
    yield '{"rows":['
    sep = "\n"
    for batch in audit.json_rows():
        yield sep + ",\n".join(batch)
        sep = ",\n"
    tail: dict[str, Any] = {
        "requests": audit.summary(),
        "revision_match": audit.matches,
        "log": audit.log.to_dict(),
        "withheld": audit.withheld(),
        "until": _instant(audit.until),
    }
    if audit.bundle is not None:
        tail["bundle"] = {
            "id": audit.bundle,
            "rows": audit.bundle_rows,
            "causes": audit.bundle_causes() if not audit.bundle_rows else [],
        }
    yield "\n]," + json.dumps(tail, ensure_ascii=True, indent=2)[1:] + "\n"


def _instant(epoch: float | None) -> str | None:
    """The instant rows were read up to, to the second, in the user's zone."""
    return None if epoch is None else datetime.fromtimestamp(int(epoch)).astimezone().isoformat()


def _explained(row: Row) -> str:
    """What Palinode's explain reads of the row: how it was asked for, the
    disposition, the resolved scope and the coverage (``—``: not recorded)."""
    coverage = row.coverage
    if coverage is None:
        covered = "—"
    else:
        reasons = coverage.get("reasons")
        covered = str(coverage.get("status") or "?") + (
            f" ({', '.join(reasons)})" if isinstance(reasons, list) and reasons else ""
        )
    scope = row.scope
    scoped = "—" if scope is None else (", ".join(scope) if scope else "no scope identity")
    how = ", ".join(x for x in (row.mode, row.source) if x) or "—"
    return f"{how}; {row.disposition or '—'}; scope {scoped}; coverage {covered}"


def _line(row: Row, part: Part, sentences: dict[str, str], shown: bool) -> str:
    r = part.judged
    where = f"{r['path'] or row.file_path}" + (f"#{row.chunk_id}" if row.chunk_id else "")
    version = f"{r['revision_match']} {r['commit'][:7]}" if r["commit"] else r["revision_match"]
    state = f" [{r['request']}: {r['state']}]" if r["state"] else ""
    asked = ""
    if shown:
        asked = "".join(
            (f" session {row.session_id}" if row.session_id else "", f' query "{row.query}"' if row.query else "")
        )
    text = printable(f"  {row.timestamp}  {r['class']:<19} {where} ({version}; {_explained(row)}){state}{asked}") + "\n"
    sentence = r["sentence"]
    if sentence:
        said = sentences.get(sentence)
        if said is None:  # the same sentence is delivered again and again: made inert once
            if len(sentences) >= 10_000:
                sentences.clear()
            said = sentences[sentence] = printable(f"      “{sentence}”") + "\n"
        text += said
    for other in r["also"]:
        text += printable(f"      also {other['class']} for {other['request']} ({other['state']})") + "\n"
    return text


def _text(audit: DeliveryAudit) -> Iterator[str]:
    shown = 0
    sentences: dict[str, str] = {}
    for row, part in audit.carrying():
        shown += 1
        yield _line(row, part, sentences, audit.show_queries)
    if not shown:
        yield "no delivery carried a forgotten preference\n"
    for path, entry in audit.summary().items():
        w = entry["window"]
        counts = ", ".join(f"{n} {c}" for c, n in entry["counts"].items())
        window = f"exposure window {w['from'] or 'unknown'} .. {w['to'] or 'not applied (still open)'}"
        yield printable(f"{path}: {counts}; {window}; {w['state'] or 'unknown'} now") + "\n"
        for stage in w["timeline"]:
            yield printable(f"    {stage['at']}  {stage['event']:<15} -> {stage['state']}") + "\n"
    matches = ", ".join(f"{n} {k}" for k, n in sorted(audit.matches.items())) or "none"
    yield f"{audit.log.rows} delivery row(s) read; versions: {matches}\n"
    if audit.until is not None:
        yield f"rows logged up to {_instant(audit.until)} (the instant shown)\n"
    if audit.bundle is not None and not audit.bundle_rows:
        yield printable(f"no delivery with bundle id {audit.bundle} in the log; the likely causes:") + "\n"
        for cause in audit.bundle_causes():
            holds = {True: "yes", False: "no", None: "cannot be checked"}[cause["holds"]]
            yield printable(f"  [{holds}] {cause['reason']}: {cause['detail']}") + "\n"
    withheld = audit.withheld()
    if withheld and shown:
        yield withheld["why"] + "\n"
    for note in audit.log.notes() + audit.log.problems:
        yield printable(note) + "\n"


def _deliveries(args: argparse.Namespace) -> dict[str, Any]:
    audit = open_session(args).deliveries(
        request=args.request, since=args.since, show_queries=args.show_queries, bundle=args.bundle
    )
    return {"stream": _json(audit) if args.json else _text(audit)}


COMMANDS = (
    Command(
        "deliveries",
        "each delivery in Palinode's retrieval log, judged against each forget request's state at its time "
        "(before it, in the exposure window, a leak while an apply stood, after a withdrawal or dismissal)",
        _deliveries,
        _args,
        as_of=True,
    ),
)
