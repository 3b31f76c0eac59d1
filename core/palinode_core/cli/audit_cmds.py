"""Audit across time: a memory's timeline, the diff between two points, and
the report anyone can read (json, md, html)."""

from __future__ import annotations

import argparse
from typing import Any

from ..inspect.report_out import FORMATS, render_report, write_report
from .args import open_session, path_arg, require
from .registry import Command


def _timeline(args: argparse.Namespace) -> dict[str, Any]:
    session = open_session(args)
    return {"path": session.store.resolve(args.path)[0], "points": [p.to_dict() for p in session.timeline(args.path)]}


def _diff_args(p: argparse.ArgumentParser) -> None:
    path_arg(p)
    p.add_argument("--from", dest="old", required=True, metavar="REV", help="the earlier point (any git revision)")
    p.add_argument("--to", dest="new", default="HEAD", metavar="REV", help="the later point (default HEAD)")


def _diff(args: argparse.Namespace) -> dict[str, Any]:
    return open_session(args).diff_between(args.path, args.old, args.new)


def _report_args(p: argparse.ArgumentParser) -> None:
    scope = p.add_mutually_exclusive_group(required=True)
    scope.add_argument("--request", metavar="PATH", help="one forget request")
    scope.add_argument("--pref", metavar="TEXT", help="every request for this preference")
    scope.add_argument("--since", metavar="DATE", help="every request filed on or after DATE (with --until)")
    p.add_argument("--until", metavar="DATE", help="every request filed on or before DATE (the whole day)")
    p.add_argument("--format", choices=FORMATS, help="default: json with --json, else md")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write the report here instead of printing it (- prints it, as without -o)",
    )
    p.add_argument("--redact", action="store_true", help="rule ids and hashes instead of preference text")


def _report(args: argparse.Namespace) -> dict[str, Any]:
    require(
        args.until is None or (args.request is None and args.pref is None),
        "--until goes with --since (a date range), not with --request or --pref",
    )
    session = open_session(args)
    report = session.report(
        request=args.request, pref=args.pref, since=args.since, until=args.until, redacted=args.redact
    )
    fmt = args.format or ("json" if args.json else "md")
    if args.output in (None, "-"):  # "-" is standard output, as for most tools: never a file named "-"
        return {"raw": render_report(report, fmt)}
    return write_report(session.root, report, fmt, args.output)


COMMANDS = (
    Command("timeline", "each commit that changed a memory, the operation it was and who made it", _timeline, path_arg),
    Command("diff", "how a memory and its history changed between two points", _diff, _diff_args),
    Command(
        "report",
        "an audit report per forget request (json, md or one self-contained html file)",
        _report,
        _report_args,
        as_of=True,
    ),
)
