"""Undo and inspection commands: operations, undo, redo, withdraw, recover,
residue (and a reviewer's strike or flag of one mention), integrity, trace."""

from __future__ import annotations

import argparse
from typing import Any

from ..errors import UsageError
from .args import NOTHING_WRITTEN, count, dry_run_arg, open_session, path_arg, writes
from .registry import Command
from .store_cmds import run_plan


def _operations_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=count(1), default=100, help="how many commits back to look (default 100)")


def _operations(args: argparse.Namespace) -> dict[str, Any]:
    return {"operations": [o.to_dict() for o in open_session(args).operations(args.limit)]}


def _commit_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("commit", help="the operation's commit id (at least 4 hex digits)")
    dry_run_arg(p)


def _undo(args: argparse.Namespace) -> dict[str, Any]:
    session = open_session(args)
    operation = session.operation(args.commit)
    return run_plan(args, session, session.plan_undo(operation, reason=f"undo of {operation.commit[:7]}"))


def _redo(args: argparse.Namespace) -> dict[str, Any]:
    session = open_session(args)
    return run_plan(args, session, session.plan_redo(session.operation(args.commit)))


def _withdraw_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("request")
    dry_run_arg(p)
    p.add_argument(
        "--broad",
        action="store_true",
        help="Palinode 0.23's behaviour: undo every same-pref record and strike, not only this request's",
    )


def _withdraw(args: argparse.Namespace) -> dict[str, Any]:
    session = open_session(args)
    wplan = session.plan_withdraw(args.request, broad=args.broad)
    if not writes(args):
        return {"status": "would_withdraw", "message": NOTHING_WRITTEN, **wplan.to_dict()}
    return session.apply_withdraw(wplan)


def _recover_args(p: argparse.ArgumentParser) -> None:
    how = p.add_mutually_exclusive_group()
    how.add_argument("--complete", action="store_true", help="finish every interrupted operation")
    how.add_argument("--rollback", action="store_true", help="put back what every interrupted operation wrote")
    dry_run_arg(p)


def _recover(args: argparse.Namespace) -> dict[str, Any]:
    session = open_session(args)
    if not (args.complete or args.rollback) or not writes(args):
        listed: dict[str, Any] = {"interrupted": [i.to_dict() for i in session.interrupted()]}
        if args.complete or args.rollback:
            listed["message"] = NOTHING_WRITTEN
        return listed
    return {"recovered": session.recover("complete" if args.complete else "rollback")}


def _residue_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pref", required=True)


def _residue(args: argparse.Namespace) -> dict[str, Any]:
    mentions = open_session(args).residue(args.pref)
    counts: dict[str, int] = {}
    for m in mentions:
        counts[m.kind] = counts.get(m.kind, 0) + 1
    return {"pref": args.pref, "counts": counts, "mentions": [m.to_dict() for m in mentions]}


def _mention_args(p: argparse.ArgumentParser, note_required: bool = False) -> None:
    p.add_argument("request", help="the forget request the decision is filed under")
    p.add_argument("mention", metavar="PATH:LINE", help="the mention, as residue lists it")
    p.add_argument("--text", help="the mention's text, or its start: needed when the line holds several")
    p.add_argument("--note", required=note_required, help="why (required for a flag)" if note_required else None)
    dry_run_arg(p)


def _flag_args(p: argparse.ArgumentParser) -> None:
    _mention_args(p, note_required=True)


def _mention(args: argparse.Namespace, kinds: tuple[str, ...]) -> tuple[Any, Any, Any]:
    """The session, the request and the one residue mention at PATH:LINE (of ``kinds``), or one line saying why."""
    from ..forget.requests import request_at

    ref, sep, number = args.mention.rpartition(":")
    if not (sep and ref and number.isdigit()):
        raise UsageError(f"give the mention as PATH:LINE, as residue lists it, not {args.mention!r}")
    session = open_session(args)
    request = request_at(session.store, args.request)
    path = session.store.resolve(ref)[0]
    found = [
        m
        for m in session.residue(request.pref)
        if m.path == path and m.line == int(number) and m.kind in kinds and m.text.startswith(args.text or "")
    ]
    if len(found) != 1:
        listed = "; ".join(
            f"{m.kind}: {m.text[:60]!r}"
            for m in session.residue(request.pref)
            if m.path == path and m.line == int(number)
        )
        raise UsageError(
            f"{path}:{number} holds {'no' if not found else len(found)} {' or '.join(kinds)} mention(s) of "
            f'"{request.pref}"'
            + (" matching --text" if args.text else "")
            + (f" (there: {listed}; --text picks one)" if listed else "")
            + "; nothing was changed"
        )
    return session, request, found[0]


def _strike(args: argparse.Namespace) -> dict[str, Any]:
    session, request, mention = _mention(args, ("live",))
    plan = session.plan_strike(request.path, mention.path, mention.line, mention.text)
    if not writes(args):
        return {
            "status": "would_strike",
            "path": mention.path,
            "line": mention.line,
            "text": mention.text,
            "message": NOTHING_WRITTEN,
            "diff": plan.diff(),
        }
    return {"status": "struck", **session.strike(plan, mention.line, mention.text, args.note).to_dict()}


def _flag(args: argparse.Namespace) -> dict[str, Any]:
    session, request, mention = _mention(args, ("live", "unforgettable", "struck", "archived"))
    if not args.note or not args.note.strip():
        raise UsageError("a flag needs a note saying why")
    if not writes(args):
        return {"status": "would_flag", "message": NOTHING_WRITTEN, **mention.to_dict()}
    commit = session.flag(mention.path, mention.line, mention.kind, mention.text, args.note, request.path)
    return {"status": "flagged", "commit": commit, **mention.to_dict()}


def _integrity_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--history",
        action="store_true",
        help="walk the whole history: every strike marker ever written, every commit that broke a chain",
    )


def _integrity(args: argparse.Namespace) -> dict[str, Any]:
    session = open_session(args)
    problems = session.integrity()
    ok = not any(p.severity == "error" for p in problems)
    data: dict[str, Any] = {"ok": ok, "problems": [p.to_dict() for p in problems]}
    if args.history:
        history = session.integrity_history()
        data.update(ok=ok and history["ok"], history=history)
    return data


def _trace(args: argparse.Namespace) -> dict[str, Any]:
    return open_session(args).trace(args.path).to_dict()


COMMANDS = (
    Command(
        "operations",
        "every archive, restore, retract and unretract commit, with what undid or redid it",
        _operations,
        _operations_args,
    ),
    Command("undo", "undo one operation by its commit (previewed with --dry-run)", _undo, _commit_args),
    Command("redo", "re-apply an undone operation exactly as it was approved (stale refused)", _redo, _commit_args),
    Command("withdraw", "take a forget request back: restore, unstrike, archive the record", _withdraw, _withdraw_args),
    Command(
        "recover", "list operations a crash interrupted; --complete or --rollback repairs them", _recover, _recover_args
    ),
    Command("residue", "every surviving mention of a preference, classified", _residue, _residue_args, as_of=True),
    Command(
        "strike",
        "strike one live mention (PATH:LINE, as residue lists it) for a request: one commit, your decision in the ledger",
        _strike,
        _mention_args,
    ),
    Command(
        "flag",
        "flag one mention (PATH:LINE, as residue lists it) with a note, filed under a request in the ledger",
        _flag,
        _flag_args,
    ),
    Command("integrity", "markers, records and history lines that disagree", _integrity, _integrity_args, as_of=True),
    Command("trace", "why a memory is as it is: chain, request, history, commits", _trace, path_arg, as_of=True),
)
