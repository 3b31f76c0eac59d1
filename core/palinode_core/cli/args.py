"""Argument helpers shared by the command modules, and how a command opens
its store."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

from ..errors import PalinodeError
from ..search.embed import Embedder
from ..session import Session
from ..storage.config import ForgetKnobs
from ..text.sanitize import printable

# -q: -1 (errors only), default 0, -v: 1 (also each git command run, and the time taken)
VERBOSITY = 0


def _said_git(command: str) -> None:
    one_line = printable(command).replace("\n", " \\n ")  # a commit message's lines, kept on one
    print(f"palinode-audit: {one_line}", file=sys.stderr, flush=True)


def on_git() -> Callable[[str], None] | None:
    """-v: each git command the store runs, on stderr."""
    return _said_git if VERBOSITY > 0 else None


def _say_loading() -> None:
    if VERBOSITY < 0:
        return
    print(
        "palinode-audit: loading the embedding model: some text has no cached vector",
        file=sys.stderr,
        flush=True,
    )


class TerminalProgress:
    """Progress on stderr, one updating line per phase with its rate and ETA,
    when stderr is a terminal (never in a pipe or a log). The rate is measured
    from the phase's first report (its work left to do), so the ETA is the work
    left at the rate measured so far; loading the model is a step of its own
    ("model"), its seconds in no rate."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty() and VERBOSITY >= 0
        self._phase: str | None = None
        self._start = 0.0
        self._first = 0
        self._last = 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if phase != self._phase:
            if self._phase is not None:
                print(file=sys.stderr)
            self._phase, self._start, self._first, self._last = phase, now, done, 0.0
        if phase == "model":  # a step: said when done (the line above is closed first, for on_load's note)
            if done >= total:
                print(f"\rmodel: loaded in {now - self._start:.1f} s", end="", file=sys.stderr, flush=True)
            return
        if now - self._last < 0.2 and done < total:
            return
        self._last = now
        rate = (done - self._first) / (now - self._start) if now > self._start else 0.0
        eta = _clock((total - done) / rate) if rate and done < total else "-"
        print(f"\r{phase}: {done:,}/{total:,}  {rate:,.0f}/s  ETA {eta}   ", end="", file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.enabled and self._phase is not None:
            print(file=sys.stderr)
            self._phase = None


def _clock(seconds: float) -> str:
    whole = int(seconds)
    hours, minutes = divmod(whole // 60, 60)
    return f"{hours}:{minutes:02d}:{whole % 60:02d}" if hours else f"{minutes}:{whole % 60:02d}"


def embedder() -> Embedder:
    """The CLI's embedder: it says on stderr when the model has to load, since
    every text the store holds (chunks, requests' preferences) is normally cached."""
    return Embedder(on_load=_say_loading)


def _note_if_not_git(args: argparse.Namespace, session: Session) -> Session:
    """A folder that is no git repository is read as plain files, with no
    history: main() says so after a read that worked (a write refuses anyway)."""
    if session.store.config_error:  # main() says so: what was read used Palinode's defaults
        args.config_warning = f"{session.store.config_error}: read with Palinode's defaults"
    if not session.store.git.available:
        args.not_git = session.root
        return session
    what = session.store.git.in_progress()
    if what:  # main() says so after the command: what was read is git's half-finished worktree
        unmerged = session.store.git.unmerged()
        args.unfinished = f"{what} is in progress" + (
            f" with {len(unmerged)} unmerged file(s) ({', '.join(unmerged[:3])}{', …' if len(unmerged) > 3 else ''})"
            if unmerged
            else ""
        )
    return session


def open_session(args: argparse.Namespace, *, lexical: bool = False) -> Session:
    at, date = getattr(args, "at", None), getattr(args, "as_of", None)
    if at is not None or date is not None:
        session = Session.open_as_of(args.store, at=at, date=date, on_git=on_git(), cache_dir=cache_dir_of(args))
        args.as_of_point = session.as_of  # main() prints which commit was read
        if session.store.config_error:  # that commit's config: read with Palinode's defaults, said once
            args.config_warning = f"{session.store.config_error}: read with Palinode's defaults"
        return session
    session = Session.open(args.store, vectors=not lexical, embedder=embedder(), on_git=on_git())
    args.opened = session  # main() says which files it could not read, when a check claims the store clean
    return _note_if_not_git(args, session)


def as_of_args(p: argparse.ArgumentParser) -> None:
    when = p.add_mutually_exclusive_group()
    when.add_argument(
        "--as-of",
        metavar="DATE",
        help="the store as of the last commit at or before DATE "
        "(YYYY-MM-DD means the end of that day, in your time zone; or an ISO 8601 time, yours unless it names a zone)",
    )
    when.add_argument("--at", metavar="REV", help="the store as of a commit (any git revision)")


def wants_as_of(args: argparse.Namespace) -> bool:
    return getattr(args, "at", None) is not None or getattr(args, "as_of", None) is not None


def path_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="memory path relative to the store")


def dry_run_arg(p: argparse.ArgumentParser) -> None:
    """Every writing command previews by default: it writes only with ``--yes``."""
    p.add_argument("--yes", action="store_true", help="really write it; without it the plan is only shown")
    p.add_argument("--dry-run", action="store_true", help="print the plan and its diff; write nothing (the default)")


NOTHING_WRITTEN = "nothing written; re-run with --yes to apply"


def writes(args: argparse.Namespace) -> bool:
    """Whether a writing command was told to write (``--yes``, and no ``--dry-run``)."""
    return bool(getattr(args, "yes", False)) and not getattr(args, "dry_run", False)


def scan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache-dir", help="the scan cache's folder (default: the store's own under the user cache)")
    p.add_argument("--progress", action="store_true", help="JSON progress lines on stdout before the result")
    p.add_argument("--background", action="store_true", help="run at low CPU priority (nice 10)")


def cache_dir_of(args: argparse.Namespace) -> Path | None:
    """``--cache-dir``, when given: a folder outside the store (never written into what it audits)."""
    given = getattr(args, "cache_dir", None)
    if not given:
        return None
    folder = Path(given).expanduser()
    real, store = Path(os.path.realpath(folder)), Path(os.path.realpath(Path(args.store).expanduser()))
    if real == store or store in real.parents:
        raise PalinodeError(f"--cache-dir {given} is inside the store: the cache goes outside what it audits")
    if folder.exists() and not folder.is_dir():
        raise PalinodeError(f"--cache-dir {given} is not a folder")
    return folder


def open_for_scan(
    args: argparse.Namespace, *, lexical: bool = False
) -> tuple[Session, Callable[[str, int, int], None] | None]:
    """The session and a progress printer for ``scan_args`` (how a child runs us)."""
    if args.background:
        os.nice(10)
    session = _note_if_not_git(
        args,
        Session.open(
            args.store,
            cache_dir=cache_dir_of(args),
            vectors=not lexical,
            embedder=embedder(),
            on_git=on_git(),
        ),
    )

    def progress(phase: str, done: int, total: int) -> None:
        print(json.dumps({"progress": phase, "done": done, "total": total}), flush=True)

    return session, progress if args.progress else None


def _fraction(text: str) -> float:
    value = float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {text}")
    return value


COUNT_MAX = 10_000_000  # past any store or history this tool reads: a bigger count is a typo


def count(minimum: int, maximum: int = COUNT_MAX) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text[:40]!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be from {minimum} to {maximum:,}, not {text[:40]}")
        return value

    return parse


def knob_args(p: argparse.ArgumentParser, *, request_optional: bool = False) -> None:
    if request_optional:
        p.add_argument("request", nargs="?", help="the forget request's store-relative path (not with --plan)")
    else:
        p.add_argument("request", help="the forget request's store-relative path")
    p.add_argument("--floor", type=_fraction, help="min_target_coverage, between 0 and 1")
    p.add_argument("--max-targets", type=count(0))
    p.add_argument("--min-shared", type=count(0), help="min_shared_words")
    p.add_argument("--search-k", type=count(1))
    p.add_argument("--lexical", action="store_true", help="resolve with BM25 only")
    p.add_argument(
        "--wait-vectors",
        action="store_true",
        help="embed every sentence not embedded yet first (loads the model; progress on stderr); "
        "by default a plan uses the vectors already computed and says how many that is",
    )
    p.add_argument("--exact", action="store_true", help="show diffs line by line, byte for byte (not as words)")
    p.add_argument(
        "--resolver",
        choices=("thorough", "palinode"),
        default="thorough",
        help="thorough (default): every unit that carries the preference, with evidence; "
        "palinode: exactly what Palinode itself would do",
    )


def knobs_from(args: argparse.Namespace, session: Session) -> ForgetKnobs:
    return session.forget_knobs().with_overrides(
        min_target_coverage=args.floor,
        max_targets=args.max_targets,
        min_shared_words=args.min_shared,
        search_k=args.search_k,
    )


def require(condition: bool, message: str) -> None:
    if not condition:
        raise PalinodeError(message)
