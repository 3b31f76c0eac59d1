"""``trust`` / ``untrust``: whether a store's own git setup (hooks, fsmonitor,
filter and diff drivers, signing) may run when we run git there."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..errors import PalinodeError
from ..storage import trust
from ..storage.gitstore import GitStore
from .registry import Command


def _git_store(args: argparse.Namespace) -> GitStore:
    root = Path(args.store).expanduser()
    if not root.is_dir():
        raise PalinodeError(f"no store at {root}: not a directory")
    store = GitStore(root)
    if not store.available:
        raise PalinodeError(f"{store.root} is not a git repository")
    return store


def _trust_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--show", action="store_true", help="only list what the store's git config and hooks would run")


def _trust(args: argparse.Namespace) -> dict[str, Any]:
    store = _git_store(args)
    profile = store.setup()
    assert profile is not None
    if not args.show:
        trust.trust_store(store.root, profile)
        profile = store.setup()
        assert profile is not None
    return {"store": str(store.root), **profile.to_dict(), "trust_file": str(trust.trust_file())}


def _untrust(args: argparse.Namespace) -> dict[str, Any]:
    store = _git_store(args)
    was = trust.untrust_store(store.root)
    return {"store": str(store.root), "trusted": False, "was_trusted": was}


COMMANDS = (
    Command(
        "trust",
        "let this store's own git hooks and config run (after --show lists what they would run)",
        _trust,
        _trust_args,
    ),
    Command("untrust", "stop running this store's own git hooks and config", _untrust),
)
