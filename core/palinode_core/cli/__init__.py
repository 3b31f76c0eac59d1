"""``palinode-audit``: every action of the app, scriptable, JSON on ``--json``.

Errors exit non-zero with one line on stderr (2 for arguments that do not fit
the store, 1 for any other refusal; 2 also when an apply or withdraw stopped
part-way); nothing is ever half-written.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import io
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from ..errors import PalinodeError, UsageError
from . import args as cli_args
from . import audit_cmds, completion_cmds, delivery_cmds, forget_cmds, review_cmds, store_cmds, team_cmds, trust_cmds
from .args import as_of_args
from .examples import epilog
from .output import error_line, render
from .registry import Command

COMMANDS: dict[str, Command] = {
    c.name: c
    for module in (
        store_cmds,
        forget_cmds,
        review_cmds,
        audit_cmds,
        delivery_cmds,
        team_cmds,
        trust_cmds,
        completion_cmds,
    )
    for c in module.COMMANDS
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="palinode-audit",
        description=(__doc__ or "").splitlines()[0],
        epilog="The store argument may be left out when PALINODE_DIR names the store.",
    )
    parser.add_argument("--json", action="store_true", help="print JSON (the scripting contract)")
    _verbosity_args(parser, False)
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, spec in COMMANDS.items():
        p = sub.add_parser(
            name,
            help=spec.help,
            description=spec.help,
            epilog=epilog(name),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
        _verbosity_args(p, argparse.SUPPRESS)
        if spec.takes_store:
            p.add_argument("store", help="the store's root folder")
        spec.configure(p)
        if spec.as_of:
            as_of_args(p)
    return parser


def _verbosity_args(p: argparse.ArgumentParser, default: object) -> None:
    """-q and -v, before the command or after it."""
    noise = p.add_mutually_exclusive_group()
    noise.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=default,
        help="no notes, no progress on stderr (errors and warnings about what was read stay)",
    )
    noise.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="also each git command run, and the time taken"
    )


class _Version(argparse.Action):
    """--version: the one version both distributions share (palinode_core/VERSION)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **_kw: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: object, **_kw: object) -> None:
        from .. import __version__

        print(f"palinode-audit {__version__}")  # on stdout, as argparse's own version action
        parser.exit()


def _command_at(argv: list[str]) -> int | None:
    """Where the subcommand is: the first word that is not a global option."""
    return next((i for i, word in enumerate(argv) if not word.startswith("-")), None)


def _unknown_command(argv: list[str]) -> str | None:
    """One line for a mistyped subcommand, with the nearest ones."""
    at = _command_at(argv)
    if at is None or argv[at] in COMMANDS:
        return None
    near = difflib.get_close_matches(argv[at], list(COMMANDS), n=3, cutoff=0.5)
    hint = f"; did you mean {' or '.join(repr(n) for n in near)}?" if near else "; see palinode-audit --help"
    return f"unknown command {argv[at]!r}{hint}"


def _parses(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | None:
    with contextlib.redirect_stderr(io.StringIO()):
        try:
            return parser.parse_args(argv)
        except SystemExit:
            return None


def _with_default_store(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``PALINODE_DIR`` stands in for a store argument left out, as for the app:
    used when the words given do not parse, or parse only by taking some other
    argument for a store folder that does not exist."""
    home = os.environ.get("PALINODE_DIR")
    at = _command_at(argv)
    if not home or at is None or not COMMANDS[argv[at]].takes_store or "-h" in argv or "--help" in argv:
        return argv
    given = _parses(parser, argv)
    if given is not None and Path(given.store).expanduser().is_dir():
        return argv
    filled = [*argv[: at + 1], home, *argv[at + 1 :]]
    return filled if _parses(parser, filled) is not None else argv


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    unknown = _unknown_command(argv)
    if unknown is not None:
        print(error_line(unknown), file=sys.stderr)
        return 2
    parser = build_parser()
    args = parser.parse_args(_with_default_store(parser, argv))
    listed = _list_dests(parser)
    for dest, value in vars(args).items():
        if isinstance(value, list) and dest not in listed:  # argparse's reading of "--" (`--at=--`): no value
            parser.error(f"{dest.replace('_', '-')}: '--' is not a value")
    if args.quiet and args.verbose:
        parser.error("-q and -v do not go together")
    cli_args.VERBOSITY = -1 if args.quiet else 1 if args.verbose else 0
    started = time.monotonic()
    try:
        return _run(args)
    finally:
        if cli_args.VERBOSITY > 0:
            print(f"palinode-audit: {args.command} took {time.monotonic() - started:.2f} s", file=sys.stderr)


# What an interrupted command keeps: `index` commits as it goes (vectors every 256 texts).
_RESUMES = {"index": "; what it indexed and embedded is kept: run it again to resume where it stopped"}

# Commands that judge the whole store (a plan's recall check, leaks, residue, a report):
# a file they could not read is one they cannot vouch for.
_CHECKS_THE_STORE = frozenset({"plan", "apply", "leaks", "residue", "report", "deliveries", "requests"})


def _unread(args: argparse.Namespace) -> list[str]:
    session = getattr(args, "opened", None)
    if args.command not in _CHECKS_THE_STORE or session is None or session.latest is None:
        return []
    return [e.path for e in session.latest.errors]


def _say_unread(unread: list[str]) -> None:
    """Last, where it is read: whatever the output above says, these files were not checked."""
    if unread:
        shown = ", ".join(unread[:5]) + (f" and {len(unread) - 5} more" if len(unread) > 5 else "")
        print(
            error_line(f"{len(unread)} file(s) could not be read, so were not checked: {shown} (scan says why)"),
            file=sys.stderr,
        )


def _list_dests(parser: argparse.ArgumentParser) -> set[str]:
    """The options of every command that take several values (``--only A B``)."""
    out: set[str] = set()
    for action in parser._actions:
        if action.nargs in ("+", "*") or isinstance(action, argparse._AppendAction):
            out.add(action.dest)
        if isinstance(action, argparse._SubParsersAction):
            for sub in set(action.choices.values()):
                out |= _list_dests(sub)
    return out


def _run(args: argparse.Namespace) -> int:
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
        print(f"palinode-audit: interrupted{_RESUMES.get(args.command, '')}", file=sys.stderr)
        return 130
    # what was read is not what it seems: said even under -q, which silences only notes and progress
    if getattr(args, "not_git", None) is not None:
        print(
            error_line(
                f"{args.not_git} is not a git repository: read as plain files; "
                "no history, so no operation, undo or trace (Palinode's store always is one)"
            ),
            file=sys.stderr,
        )
    unread = _unread(args)
    if unread and "raw" not in data and "stream" not in data:
        data = {**data, "unread": unread}
    if getattr(args, "config_warning", None):
        print(error_line(args.config_warning), file=sys.stderr)
    if getattr(args, "unfinished", None):
        print(
            error_line(f"{args.unfinished}: what was read is the half-finished worktree; finish or abort it with git"),
            file=sys.stderr,
        )
    if "raw" in data or "stream" in data:  # rendered output, already inert (every store string escaped)
        try:
            _write_batched(data["stream"] if "stream" in data else (data["raw"],))
        except BrokenPipeError:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (PalinodeError, OSError, ValueError) as exc:  # raised while streaming: what was written stands
            print(error_line(str(exc) or exc.__class__.__name__), file=sys.stderr)
            return 1
        _say_unread(unread)
        return 0
    point = getattr(args, "as_of_point", None)
    if point is not None:
        data = {"as_of": point.to_dict(), **data}
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    try:
        print(render(args.command, data, args.json, colour, getattr(args, "exact", False)), flush=True)
    except BrokenPipeError:  # the reader (a pager, `head`) stopped early: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    _say_unread(unread)
    if args.command == "integrity" and data.get("ok") is False:
        return 1  # errors found: a script or a CI step stops, as on git fsck's
    return 2 if data.get("failed") else 0  # apply/withdraw stopped part-way


def _write_batched(chunks: Iterable[str], size: int = 1 << 16, every: float = 0.2) -> None:
    """Write a stream in blocks of about ``size`` characters, or whatever came
    within ``every`` seconds: a million one-line writes cost more than the
    work behind them when stdout is unbuffered (PYTHONUNBUFFERED, -u). To a
    terminal each chunk goes at once (a person is watching), and whatever was
    produced is written even when the stream fails part-way."""
    if sys.stdout.isatty():
        for chunk in chunks:
            sys.stdout.write(chunk)
            sys.stdout.flush()
        return
    pending: list[str] = []
    held = 0
    last = time.monotonic()
    stream = iter(chunks)
    while True:
        try:
            chunk = next(stream)
        except StopIteration:
            break
        except BaseException:  # the stream failed, not stdout: what it produced still goes out
            with contextlib.suppress(OSError, ValueError):
                sys.stdout.write("".join(pending))
                sys.stdout.flush()
            raise
        pending.append(chunk)
        held += len(chunk)
        if held >= size or time.monotonic() - last >= every:
            block = "".join(pending)  # out of pending first: a failed write is never written twice
            pending.clear()
            held = 0
            sys.stdout.write(block)
            sys.stdout.flush()
            last = time.monotonic()
    sys.stdout.write("".join(pending))
    sys.stdout.flush()
