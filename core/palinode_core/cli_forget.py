"""Search and forget commands of ``palinode-audit`` (registered on import)."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from . import audit, forget
from .cli import _open, _open_for_scan, _path_arg, _scan_args, command
from .search import SearchIndex


def _index(store, lexical: bool = False) -> SearchIndex:
    index = SearchIndex(store)
    verbose = sys.stderr.isatty()

    def progress(phase: str, done: int, total: int) -> None:
        if verbose:
            print(f"\rindexing {phase}: {done}/{total}", end="", file=sys.stderr, flush=True)
    index.update_lexical(progress)
    if not lexical:
        index.update_vectors(progress)
    if verbose:
        print(file=sys.stderr)
    return index


def _index_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lexical", action="store_true", help="BM25 only; do not embed")
    _scan_args(p)


@command("index", "build the search index, or bring it up to date with the store", _index_args)
def _index_cmd(args: argparse.Namespace) -> dict[str, Any]:
    store, progress = _open_for_scan(args)
    index = SearchIndex(store)
    index.update_lexical(progress)
    if not args.lexical:
        index.update_vectors(progress)
    stats = index.stats
    return {"files": stats.files, "chunks": stats.chunks, "files_reindexed": stats.files_reindexed,
            "vectors": stats.vectors, "embedded": stats.embedded_this_session, "unreadable": stats.errors,
            "mode": "hybrid" if index.vectors_ready else "lexical"}


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--lexical", action="store_true", help="BM25 only; do not load the embedding model")
    p.add_argument("--include-archived", action="store_true")


@command("search", "hybrid search (BM25 + vectors, RRF) over the store", _search_args)
def _search(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    index = _index(store, args.lexical)
    result = index.search(args.query, args.limit, lexical_only=args.lexical, include_archived=args.include_archived)
    return {"query": args.query, "mode": result.mode, "notice": result.notice, "hits": [
        {"path": h.path, "chunk": h.section, "bm25_rank": h.bm25_rank, "vector_rank": h.vector_rank,
         "arms": h.arms, "score": round(h.score, 4)} for h in result.hits]}


@command("requests", "every forget request in the store and its state")
def _requests(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    return {"requests": [s.to_dict() for s in audit.request_states(store)]}


def _knob_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("request", help="the forget request's store-relative path")
    p.add_argument("--floor", type=float, help="min_target_coverage")
    p.add_argument("--max-targets", type=int)
    p.add_argument("--min-shared", type=int, help="min_shared_words")
    p.add_argument("--search-k", type=int)
    p.add_argument("--lexical", action="store_true", help="resolve with BM25 only")


def _plan(args: argparse.Namespace):
    store = _open(args)
    knobs = store.config.forget.with_overrides(min_target_coverage=args.floor, max_targets=args.max_targets,
                                               min_shared_words=args.min_shared, search_k=args.search_k)
    return store, forget.plan_forget(store, _index(store, args.lexical), args.request, knobs)


@command("plan", "what a forget request would do, target by target (writes nothing)", _knob_args)
def _plan_cmd(args: argparse.Namespace) -> dict[str, Any]:
    return _plan(args)[1].to_dict()


def _apply_args(p: argparse.ArgumentParser) -> None:
    _knob_args(p)
    p.add_argument("--only", nargs="+", metavar="PATH", help="approve only these targets (others are deferred)")
    p.add_argument("--yes", action="store_true", help="really apply; without it the plan is only shown")
    p.add_argument("--note")


@command("apply", "apply a forget request's plan: one commit per target, recorded in the ledger", _apply_args)
def _apply(args: argparse.Namespace) -> dict[str, Any]:
    store, fplan = _plan(args)
    if not args.yes:
        return {"applied": False, "message": "nothing written; re-run with --yes to apply", "plan": fplan.to_dict()}
    selection = None
    if args.only:
        selection = {}
        for ref in args.only:
            rel, _ = store.resolve(ref)
            selection[rel] = True
    result = audit.apply_forget(store, fplan, selection, note=args.note)
    return {"applied": True, **result.to_dict()}


def _dismiss_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("request")
    p.add_argument("--note", required=True)


@command("dismiss", "reject a forget request, with a note, recorded in the ledger", _dismiss_args)
def _dismiss(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    return {"request": args.request, "dismissed": True, "commit": audit.dismiss(store, args.request, args.note)}


def _withdraw_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("request")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--broad", action="store_true",
                   help="Palinode 0.23's behaviour: undo every same-pref record and strike, not only this request's")


@command("withdraw", "take a forget request back: restore, unstrike, archive the record", _withdraw_args)
def _withdraw(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    wplan = audit.plan_withdraw(store, args.request, broad=args.broad)
    if args.dry_run:
        return {"status": "would_withdraw", **wplan.to_dict()}
    return audit.apply_withdraw(store, wplan)


def _residue_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pref", required=True)


@command("residue", "every surviving mention of a preference, classified", _residue_args)
def _residue(args: argparse.Namespace) -> dict[str, Any]:
    mentions = audit.residue(_open(args), args.pref)
    counts: dict[str, int] = {}
    for m in mentions:
        counts[m.kind] = counts.get(m.kind, 0) + 1
    return {"pref": args.pref, "counts": counts, "mentions": [m.to_dict() for m in mentions]}


@command("integrity", "markers, records and history lines that disagree")
def _integrity(args: argparse.Namespace) -> dict[str, Any]:
    problems = audit.integrity(_open(args))
    return {"ok": not any(p.severity == "error" for p in problems), "problems": [p.to_dict() for p in problems]}


@command("trace", "why a memory is as it is: chain, request, history, commits", _path_arg)
def _trace(args: argparse.Namespace) -> dict[str, Any]:
    return audit.trace(_open(args), args.path)


def _recover_args(p: argparse.ArgumentParser) -> None:
    how = p.add_mutually_exclusive_group()
    how.add_argument("--complete", action="store_true", help="finish every interrupted operation")
    how.add_argument("--rollback", action="store_true", help="put back what every interrupted operation wrote")


@command("recover", "list operations a crash interrupted; --complete or --rollback repairs them", _recover_args)
def _recover(args: argparse.Namespace) -> dict[str, Any]:
    from . import journal
    store = _open(args)
    if not (args.complete or args.rollback):
        return {"interrupted": [i.to_dict() for i in journal.pending(store)]}
    return {"recovered": journal.recover(store, "complete" if args.complete else "rollback")}
