"""Search and forget-request commands: index, search, requests, plan, apply, dismiss."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..session import Session
from .args import (
    NOTHING_WRITTEN,
    TerminalProgress,
    dry_run_arg,
    knob_args,
    knobs_from,
    open_for_scan,
    open_session,
    require,
    scan_args,
    writes,
)
from .registry import Command

if TYPE_CHECKING:  # imported where used: `requests` needs neither search nor forget selection
    from ..forget.selection import Choice
    from ..search.index import SearchIndex


def updated_index(session: Session, lexical: bool, wait_vectors: bool = False) -> SearchIndex:
    """The store's index brought up to date (changed files only), progress on
    stderr when it is a terminal. Vectors are embedded only with ``wait_vectors``:
    a plan or a search uses those already computed and never waits for the model."""
    progress = TerminalProgress()
    try:
        index = session.update_index(progress, vectors=wait_vectors and not lexical)
    finally:
        progress.close()
    if not lexical:
        index.check_vectors()
    return index


def _index_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lexical", action="store_true", help="BM25 only; do not embed")
    scan_args(p)


def _index(args: argparse.Namespace) -> dict[str, Any]:
    session, progress = open_for_scan(args, lexical=args.lexical)
    terminal = TerminalProgress()
    try:
        index = session.update_index(progress or terminal)
    finally:
        terminal.close()
    stats = index.stats
    embedded, units = index.units.coverage()
    return {
        "files": stats.files,
        "chunks": stats.chunks,
        "files_reindexed": stats.files_reindexed,
        "vectors": stats.vectors,
        "embedded": stats.embedded_this_session,
        "unreadable": stats.errors,
        "units": index.units.stats.units,
        "sentences_embedded": embedded,
        "sentences": units,
        "mode": "hybrid" if index.vectors_ready else "lexical",
        "notice": index.notice,
    }


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--lexical", action="store_true", help="BM25 only; do not load the embedding model")
    p.add_argument("--include-archived", action="store_true")


def _search(args: argparse.Namespace) -> dict[str, Any]:
    session = open_session(args, lexical=args.lexical)
    index = updated_index(session, args.lexical)
    result = index.search(
        args.query, limit=args.limit, include_archived=args.include_archived, lexical_only=args.lexical
    )
    notice = "; ".join(n for n in (index.notice, result.notice) if n) or None
    return {
        "query": args.query,
        "mode": result.mode,
        "notice": notice,
        "hits": [
            {
                "path": h.path,
                "chunk": h.section,
                "bm25_rank": h.bm25_rank,
                "vector_rank": h.vector_rank,
                "arms": h.arms,
                "score": round(h.score, 4),
            }
            for h in result.hits
        ],
    }


def _requests(args: argparse.Namespace) -> dict[str, Any]:
    return {"requests": [s.to_dict() for s in open_session(args).request_states()]}


def _planned(args: argparse.Namespace) -> tuple[Session, Any]:
    session = open_session(args, lexical=args.lexical)
    knobs = knobs_from(args, session)
    return session, session.plan(
        args.request, knobs, index=updated_index(session, args.lexical, args.wait_vectors), resolver=args.resolver
    )


def _plan(args: argparse.Namespace) -> dict[str, Any]:
    return _planned(args)[1].to_dict()


def _apply_args(p: argparse.ArgumentParser) -> None:
    knob_args(p)
    p.add_argument("--only", nargs="+", metavar="PATH", help="approve only these targets (others are deferred)")
    p.add_argument("--yes", action="store_true", help="really apply; without it the plan is only shown")
    p.add_argument("--note")


def _apply(args: argparse.Namespace) -> dict[str, Any]:
    session, fplan = _planned(args)
    if not args.yes:
        return {"applied": False, "message": "nothing written; re-run with --yes to apply", "plan": fplan.to_dict()}
    from ..forget.selection import APPROVE_ALL

    selection: dict[str, Choice] | None = None
    if args.only:
        selection = {}
        for ref in args.only:
            rel, _ = session.store.resolve(ref)
            selection[rel] = APPROVE_ALL
    result = session.apply_forget(fplan, selection, note=args.note)
    return {"applied": True, **result.to_dict()}


def _dismiss_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("request")
    p.add_argument("--note", required=True)
    dry_run_arg(p)


def _dismiss(args: argparse.Namespace) -> dict[str, Any]:
    require(bool(args.note.strip()), "a dismissal needs a note saying why")
    if not writes(args):
        from ..forget.requests import request_at

        request = request_at(open_session(args).store, args.request)  # refuses a path that holds no request
        return {"request": request.path, "dismissed": False, "note": args.note, "message": NOTHING_WRITTEN}
    return {"request": args.request, "dismissed": True, "commit": open_session(args).dismiss(args.request, args.note)}


def _leaks_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("request", nargs="?", help="a forget request's path (default: every request)")
    p.add_argument("--record", action="store_true", help="also record each check in the ledger (one commit each)")
    p.add_argument("--lexical", action="store_true", help="lexical and inflected matches only; never embed")


def _leaks(args: argparse.Namespace) -> dict[str, Any]:
    from ..forget.leak import leak_counts

    session = open_session(args, lexical=args.lexical)
    if not args.lexical:
        updated_index(session, False)
    paths = [args.request] if args.request else [s.path for s in session.request_states()]
    checks = []
    for path in paths:
        leaks = session.leak_check(path)
        commit = session.record_leaks(path, leaks) if args.record else None  # the check just run, not a second one
        checks.append(
            {
                "request": path,
                "counts": leak_counts(leaks),
                "mentions": [leak.to_dict() for leak in leaks],
                "ledger_commit": commit,
            }
        )
    return {"checks": checks}


COMMANDS = (
    Command("index", "build the search index, or bring it up to date with the store", _index, _index_args),
    Command("search", "hybrid search (BM25 + vectors, RRF) over the store", _search, _search_args),
    Command("requests", "every forget request in the store and its state", _requests, as_of=True),
    Command("plan", "what a forget request would do, target by target (writes nothing)", _plan, knob_args),
    Command(
        "apply", "apply a forget request's plan: one commit per target, recorded in the ledger", _apply, _apply_args
    ),
    Command(
        "leaks",
        "leak check: every surviving mention of a request's preference (lexical, inflected, semantic, "
        "frontmatter, headings, tables, code), classified live/struck/archived/unforgettable",
        _leaks,
        _leaks_args,
    ),
    Command("dismiss", "reject a forget request, with a note, recorded in the ledger", _dismiss, _dismiss_args),
)
