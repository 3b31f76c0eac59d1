"""Search and forget-request commands: index, search, requests, plan, apply, dismiss."""

from __future__ import annotations

import argparse
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import PalinodeError, UsageError
from ..session import Session
from .args import (
    NOTHING_WRITTEN,
    TerminalProgress,
    count,
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
    p.add_argument(
        "--full",
        action="store_true",
        help="embed every chunk and sentence (semantic search of any query; by default only what plans of the "
        "open requests need: the sentences the cheap pass finds near them)",
    )
    p.add_argument(
        "--chunks-only",
        action="store_true",
        help="the chunks' BM25 terms only: no sentences segmented, nothing embedded",
    )
    scan_args(p)


def _index(args: argparse.Namespace) -> dict[str, Any]:
    from ..search.embed import VECTORS_EXTRA_NOTICE, Embedder

    # a lean install indexes lexically and says how to get vectors, never "loading the model" for nothing
    lean = not (args.lexical or args.chunks_only) and not Embedder().installed
    lexical = args.lexical or args.chunks_only or lean
    session, progress = open_for_scan(args, lexical=lexical)
    terminal = TerminalProgress()
    try:
        index = session.update_index(progress or terminal, units=not args.chunks_only, full=args.full and not lexical)
        if not lexical:
            # what each open request's plan reads, embedded now (the model loads only if some is missing,
            # as on a rerun after an interrupted one): the first plan after `index` embeds nothing
            session.prepare_plans(progress or terminal)
            index.derive()
        if not (args.lexical or args.chunks_only):  # kept: the app's first list reads no file (not in its own child)
            session.possible_requests()
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
        "requests_covered": len(index.units.covered_prefs(session.open_prefs())) if not lexical else 0,
        "requests_open": len(session.open_prefs()),
        "notice": VECTORS_EXTRA_NOTICE if lean else index.notice or None,
    }


def _search_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("query")
    p.add_argument("--limit", type=count(1), default=10)
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


def _requests_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--possible",
        action="store_true",
        help="possible requests instead: requests in other words ('stop bringing that up', 'I no longer live in "
        "Berlin') and blanket ones, each with its sentence, what it points at, how sure, and what confirming does",
    )
    p.add_argument("--all", action="store_true", help="with --possible: also those confirmed or dismissed")
    decide = p.add_mutually_exclusive_group()
    decide.add_argument(
        "--confirm",
        metavar="ID",
        help="write the possible request ID as a forget request in Palinode's format, naming its source "
        "(previewed; --yes writes it, with the ledger's record, in one commit)",
    )
    decide.add_argument("--dismiss", metavar="ID", help="record that the possible request ID is none (needs --note)")
    p.add_argument("--pref", help="with --confirm: the preference to write (a blanket request needs one)")
    p.add_argument("--note", help="with --confirm or --dismiss: why (recorded in the ledger)")
    dry_run_arg(p)


def _requests(args: argparse.Namespace) -> dict[str, Any]:
    deciding = args.confirm is not None or args.dismiss is not None
    require(
        args.possible or not (deciding or args.all or args.pref or args.note or args.yes),
        "--all, --confirm, --dismiss, --pref, --note and --yes go with --possible",
    )
    require(args.pref is None or args.confirm is not None, "--pref goes with --confirm")
    if not args.possible:
        return {"requests": [s.to_dict() for s in open_session(args).request_states()]}
    session = open_session(args)
    if args.confirm is not None:
        plan = session.plan_confirm(args.confirm, args.pref, args.note)
        if not writes(args):
            return {"confirmed": False, "message": NOTHING_WRITTEN, "plan": plan.to_dict()}
        commit = session.apply_confirm(plan)
        return {
            "confirmed": True,
            "candidate": plan.candidate.id,
            "request": plan.request,
            "pref": plan.pref,
            "rid": plan.rid,
            "source": plan.candidate.path,
            "commit": commit,
        }
    if args.dismiss is not None:
        require(bool((args.note or "").strip()), "a dismissal needs a note saying why (--note)")
        if not writes(args):
            from ..forget.possible import find_candidate

            cand = find_candidate(session.store, session.memories, args.dismiss)  # an unknown id says so now
            return {"candidate": cand.to_dict(), "dismissed": False, "note": args.note, "message": NOTHING_WRITTEN}
        return {
            "candidate": args.dismiss,
            "dismissed": True,
            "commit": session.dismiss_possible(args.dismiss, args.note),
        }
    session.search_index()  # the index as it is (never built or embedded for this): who likely holds each referent
    return {"possible": [c.to_dict() for c in session.possible_requests(decided=args.all)]}


def _planned(args: argparse.Namespace) -> tuple[Session, Any]:
    session = open_session(args, lexical=args.lexical)
    knobs = knobs_from(args, session)
    index = updated_index(session, args.lexical, args.wait_vectors)
    progress = TerminalProgress()
    try:
        # apply --yes takes the same targets whether or not `index` has run: what is read is embedded first
        return session, session.plan(
            args.request, knobs, index=index, resolver=args.resolver, embed=not args.lexical, progress=progress
        )
    finally:
        progress.close()


def _plan_args(p: argparse.ArgumentParser) -> None:
    knob_args(p)
    p.add_argument(
        "--out",
        metavar="FILE",
        help="also save what `apply --yes` would apply (with --only: those targets) as a plan file, "
        "for `apply --plan FILE` to execute exactly, here or in another clone",
    )
    _selection_args(p, "with --out: approve only these targets")


def _plan(args: argparse.Namespace) -> dict[str, Any]:
    session, fplan = _planned(args)
    out = fplan.to_dict()
    if args.out:
        from ..forget.saved import dumps
        from ..storage.output import write_output

        approved = session.approve(fplan, _selection(session, args, fplan))
        out["saved"] = {
            "file": str(write_output(session.root, dumps(approved), args.out)),
            "steps": [{"path": p.target, "route": r, "sha256": p.fingerprint} for p, r in approved.steps],
            "deferred": approved.ledger["deferred"],
            "base_commit": approved.base_commit,
        }
    return out


def _selection(session: Session, args: argparse.Namespace, fplan: Any) -> dict[str, Choice] | None:
    """What the reviewer approved on the command line, as the app's review would have it: whole
    targets (--only), single units of a strike, its sentences and clause cuts (--span PATH:N, N as
    the plan numbers them), rejected targets (--reject); a target named by none is deferred."""
    only, spans, reject = getattr(args, "only", None), getattr(args, "span", None), getattr(args, "reject", None)
    if not (only or spans or reject):
        return None
    from ..forget.selection import APPROVE_ALL, REJECT, Choice

    def target(ref: str) -> str:
        return session.store.resolve(ref)[0]

    def check(condition: bool, message: str) -> None:  # arguments that do not fit the plan: exit 2
        if not condition:
            raise UsageError(message)

    selection: dict[str, Choice] = {target(ref): APPROVE_ALL for ref in only or ()}
    chosen: dict[str, set[int]] = {}
    for item in spans or ():
        ref, sep, number = item.rpartition(":")
        check(
            bool(sep and ref) and number.isdigit(),
            f"--span takes PATH:N (N: a unit's number in the plan), not {item!r}",
        )
        path = target(ref)
        candidate = next((c for c in fplan.actionable if c.path == path), None)
        units = {span.index for span in candidate.plan.spans} if candidate is not None and candidate.plan else set()
        check(
            candidate is not None and candidate.plan.op == "retract",
            f"--span {item}: {path} is not a strike of this plan (strikes: "
            + (", ".join(c.path for c in fplan.actionable if c.plan and c.plan.op == "retract") or "none")
            + "); nothing was changed",
        )
        check(
            int(number) in units,
            f"--span {item}: {path} has no unit {number} (its units: {', '.join(map(str, sorted(units)))}); "
            "nothing was changed",
        )
        chosen.setdefault(path, set()).add(int(number))
    for path, numbers in chosen.items():
        selection[path] = Choice(spans=frozenset(numbers))
    for ref in reject or ():
        path = target(ref)
        check(path not in selection, f"{path} is both approved and rejected; nothing was changed")
        selection[path] = REJECT
    return selection


def _selection_args(p: argparse.ArgumentParser, only_help: str) -> None:
    p.add_argument("--only", nargs="+", metavar="PATH", help=only_help)
    p.add_argument(
        "--span",
        action="append",
        metavar="PATH:N",
        help="approve only unit N of a strike (a sentence, list item or clause cut, numbered [N] in the plan); "
        "repeat for more",
    )
    p.add_argument("--reject", nargs="+", metavar="PATH", help="reject these targets (recorded as rejected)")


def _apply_args(p: argparse.ArgumentParser) -> None:
    knob_args(p, request_optional=True)
    _selection_args(p, "approve only these targets (others are deferred)")
    p.add_argument(
        "--close",
        action="store_true",
        help="a partial request whose plan has nothing left to apply: record it as done (applied)",
    )
    p.add_argument("--plan", metavar="FILE", help="apply exactly this saved plan (`plan --out`): nothing is re-planned")
    p.add_argument("--yes", action="store_true", help="really apply; without it the plan is only shown")
    p.add_argument("--note")
    p.add_argument("--reopen", action="store_true", help="apply a request a reviewer dismissed (says who and why)")


PLAN_FILE_MAX = 64 << 20  # a plan file holds whole memories: generous, but bounded


def _apply(args: argparse.Namespace) -> dict[str, Any]:
    if args.plan is not None:
        return _apply_saved(args)
    require(args.request is not None, "apply needs a forget request (or --plan FILE)")
    session, fplan = _planned(args)
    if args.close:
        require(not (args.only or args.span or args.reject), "--close applies nothing: no --only, --span or --reject")
        if not args.yes:
            session.check_closable(fplan)  # says now why it could not be closed
            return {
                "applied": False,
                "message": "nothing written; re-run with --yes to close it",
                "plan": fplan.to_dict(),
            }
        return {
            "applied": True,
            "closed": True,
            "request": fplan.request.path,
            "ledger_commit": session.close_request(fplan, note=args.note),
        }
    selection = _selection(session, args, fplan)
    if not args.yes:
        message = "nothing written; re-run with --yes to apply"
        if selection is not None:  # what --yes would do with it, checked now (an unknown path is refused here)
            approved = session.approve(fplan, selection)
            given = ", ".join(f"--{o}" for o in ("only", "span", "reject") if getattr(args, o))
            applied = [
                p.target + (f" (units {', '.join(map(str, p.selected))})" if args.span and p.op == "retract" else "")
                for p, _r in approved.steps
            ]
            message = f"with {given}, --yes would apply {', '.join(applied) or 'nothing'}"
            if approved.ledger["rejected"]:
                message += f", reject {', '.join(approved.ledger['rejected'])}"
            message += f" and defer {', '.join(approved.ledger['deferred']) or 'nothing'}; nothing written"
        return {"applied": False, "message": message, "plan": fplan.to_dict()}
    result = session.apply_forget(fplan, selection, note=args.note, reopen=args.reopen)
    return {"applied": True, **result.to_dict()}


def _apply_saved(args: argparse.Namespace) -> dict[str, Any]:
    from ..forget.saved import loads

    require(
        args.request is None and not (args.only or args.span or args.reject or args.close),
        "--plan applies the saved plan as it is: no request, --only, --span, --reject or --close",
    )
    session = open_session(args)
    try:
        with open(args.plan, "rb") as f:
            data = f.read(PLAN_FILE_MAX + 1)
    except OSError as exc:
        raise PalinodeError(f"cannot read {args.plan}: {exc.strerror or exc}") from None
    require(len(data) <= PLAN_FILE_MAX, f"{args.plan} is larger than any plan file ({PLAN_FILE_MAX >> 20} MiB)")
    approved = loads(data.decode("utf-8", "replace"))
    if args.note:
        approved = replace(approved, ledger={**approved.ledger, "note": args.note})
    steps = [{"path": p.target, "route": r, "sha256": p.fingerprint} for p, r in approved.steps]
    if not args.yes:
        session.check_saved(approved)  # a stale or edited plan file says so now, not at --yes
        return {
            "applied": False,
            "message": "nothing written; re-run with --yes to apply",
            "request": approved.request,
            "steps": steps,
        }
    return {"applied": True, **session.apply_saved(approved, reopen=args.reopen).to_dict()}


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
    index = None if args.lexical else updated_index(session, False)
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
    return {"checks": checks, "notice": index.units.take_notice() if index else None}


COMMANDS = (
    Command("index", "build the search index, or bring it up to date with the store", _index, _index_args),
    Command("search", "hybrid search (BM25 + vectors, RRF) over the store", _search, _search_args),
    Command(
        "requests",
        "every forget request in the store and its state; --possible: requests in other words, for a person to "
        "confirm or dismiss",
        _requests,
        _requests_args,
        as_of=True,
    ),
    Command("plan", "what a forget request would do, target by target (writes nothing but --out)", _plan, _plan_args),
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
