"""Undo and inspection commands: operations, undo, redo, withdraw, recover,
residue, integrity, trace."""

from __future__ import annotations

import argparse
from typing import Any

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
    Command("integrity", "markers, records and history lines that disagree", _integrity, _integrity_args, as_of=True),
    Command("trace", "why a memory is as it is: chain, request, history, commits", _trace, path_arg, as_of=True),
)
