"""``sync``: bring a clone up to date with its remote and check it again
(palinode_core.team)."""

from __future__ import annotations

import argparse
from typing import Any

from .args import NOTHING_WRITTEN, dry_run_arg, open_session, writes
from .registry import Command


def _sync_args(p: argparse.ArgumentParser) -> None:
    how = p.add_mutually_exclusive_group()
    how.add_argument("--rebase", action="store_true", help="rebase local commits on the remote's")
    how.add_argument("--merge", action="store_true", help="merge the remote's commits (the default)")
    p.add_argument("--no-push", action="store_true", help="fetch and integrate only")
    dry_run_arg(p)


def _sync(args: argparse.Namespace) -> dict[str, Any]:
    from ..errors import PalinodeError
    from ..team import ready, sync, upstream_of

    store = open_session(args).store
    if not writes(args):
        refusal = ready(store)
        if refusal:
            raise PalinodeError(f"{refusal}; nothing was fetched")
        upstream = upstream_of(store)
        return {
            "synced": False,
            "upstream": upstream,
            "message": NOTHING_WRITTEN.replace("apply", "fetch, integrate and push")
            if upstream
            else "this branch has no upstream (git branch --set-upstream-to REMOTE/BRANCH); nothing was fetched",
        }
    return {"synced": True, **sync(store, "rebase" if args.rebase else "merge", push=not args.no_push)}


COMMANDS = (
    Command(
        "sync",
        "fetch, merge (or --rebase) and push, then check integrity and request states again",
        _sync,
        _sync_args,
    ),
)
