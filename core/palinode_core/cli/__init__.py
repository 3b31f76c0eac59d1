"""``palinode-audit``: every action of the app, scriptable, JSON on ``--json``.

Errors exit non-zero with one line on stderr (2 for arguments that do not fit
the store, 1 for any other refusal; 2 also when an apply or withdraw stopped
part-way); nothing is ever half-written.
"""

from __future__ import annotations

import argparse
import os
import sys

from ..errors import PalinodeError, UsageError
from . import audit_cmds, delivery_cmds, forget_cmds, review_cmds, store_cmds, trust_cmds
from .args import as_of_args
from .output import error_line, render
from .registry import Command

COMMANDS: dict[str, Command] = {
    c.name: c
    for module in (store_cmds, forget_cmds, review_cmds, audit_cmds, delivery_cmds, trust_cmds)
    for c in module.COMMANDS
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="palinode-audit", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON (the scripting contract)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, spec in COMMANDS.items():
        p = sub.add_parser(name, help=spec.help, description=spec.help)
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
        if spec.takes_store:
            p.add_argument("store", help="the store's root folder")
        spec.configure(p)
        if spec.as_of:
            as_of_args(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        data = COMMANDS[args.command].run(args)
    except UsageError as exc:  # arguments that do not fit the store: exit 2, as argparse's own usage errors
        print(error_line(str(exc)), file=sys.stderr)
        return 2
    except PalinodeError as exc:
        print(error_line(str(exc)), file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(error_line(str(exc) or exc.__class__.__name__), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("palinode-audit: interrupted", file=sys.stderr)
        return 130
    if "raw" in data or "stream" in data:  # rendered output, already inert (every store string escaped)
        try:
            for chunk in data["stream"] if "stream" in data else (data["raw"],):
                sys.stdout.write(chunk)
            sys.stdout.flush()
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (PalinodeError, OSError, ValueError) as exc:  # raised while streaming: what was written stands
            print(error_line(str(exc) or exc.__class__.__name__), file=sys.stderr)
            return 1
        return 0
    point = getattr(args, "as_of_point", None)
    if point is not None:
        data = {"as_of": point.to_dict(), **data}
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    try:
        print(render(args.command, data, args.json, colour), flush=True)
    except BrokenPipeError:  # the reader (a pager, `head`) stopped early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 2 if data.get("failed") else 0  # apply/withdraw stopped part-way
