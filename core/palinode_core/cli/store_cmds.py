"""Commands on single memories: scan, show, the four lifecycle operations,
history, and the demo store."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..session import Session
from ..storage.memory import Memory
from ..storage.paths import history_rel_for
from ..text.history import parse_entries
from .args import (
    NOTHING_WRITTEN,
    count,
    dry_run_arg,
    open_for_scan,
    open_session,
    path_arg,
    scan_args,
    wants_as_of,
    writes,
)
from .registry import Command

if TYPE_CHECKING:
    from ..ops.plan import Plan


def memory_summary(memory: Memory) -> dict[str, Any]:
    return {
        "path": memory.rel,
        "title": memory.title,
        "status": memory.status,
        "superseded_by": memory.superseded_by,
        "retracted_prefs": memory.retracted_prefs,
        "update_policy": memory.update_policy,
        "created_at": memory.created_at,
        "category": memory.category,
        "struck": memory.struck,
        "fingerprint": memory.fingerprint,
        "retired": memory.retired_reason,
    }


def _scan(args: argparse.Namespace) -> dict[str, Any]:
    if wants_as_of(args):
        scan = open_session(args).rescan()
        return {**scan.counts(), "errors": [{"path": e.path, "reason": e.reason} for e in scan.errors]}
    session, progress = open_for_scan(args)
    scan = session.rescan((lambda done, total: progress("reading", done, total)) if progress else None)
    return {**scan.counts(), "errors": [{"path": e.path, "reason": e.reason} for e in scan.errors]}


def _show(args: argparse.Namespace) -> dict[str, Any]:
    memory = open_session(args).load(args.path)
    meta = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in memory.meta.items()}
    return {**memory_summary(memory), "frontmatter": meta, "body": memory.body}


def run_plan(args: argparse.Namespace, session: Session, plan: Plan) -> dict[str, Any]:
    """Print a plan; apply it only with ``--yes`` (and when it changes something)."""
    result = plan.to_dict()
    if not writes(args) or not plan.changes:
        result["applied"] = False
        if plan.changes:
            result["message"] = NOTHING_WRITTEN
        return result
    done = session.apply(plan)
    verb = plan.status.removeprefix("would_")  # what was done, not what would be: archive -> archived
    result.update(applied=True, commit=done.commit, status=verb + ("d" if verb.endswith("e") else "ed"))
    return result


def _lifecycle(op: str) -> Any:
    def run(args: argparse.Namespace) -> dict[str, Any]:
        session = open_session(args)
        plan = session.plan_op(
            op,
            args.path,
            pref=getattr(args, "pref", None),
            superseded_by=getattr(args, "superseded_by", None),
            reason=getattr(args, "reason", None),
        )
        return run_plan(args, session, plan)

    return run


def _archive_args(p: argparse.ArgumentParser) -> None:
    path_arg(p)
    dry_run_arg(p)
    p.add_argument("--superseded-by", help="the successor's store-relative path")
    p.add_argument("--reason")


def _restore_args(p: argparse.ArgumentParser) -> None:
    path_arg(p)
    dry_run_arg(p)
    p.add_argument("--reason")


def _retract_args(p: argparse.ArgumentParser) -> None:
    path_arg(p)
    dry_run_arg(p)
    p.add_argument("--pref", required=True, help="the preference phrase, as the request stated it")
    p.add_argument("--superseded-by", help="the forget request's store-relative path")


def _unretract_args(p: argparse.ArgumentParser) -> None:
    path_arg(p)
    dry_run_arg(p)
    p.add_argument("--pref", required=True)
    p.add_argument("--reason")


def _history(args: argparse.Namespace) -> dict[str, Any]:
    store = open_session(args).store
    memory = store.load(args.path)
    sibling = history_rel_for(memory.rel)
    text, _ = store.read_optional(sibling)
    entries = [e for e in parse_entries(text or "") if e.fact_id in (None, memory.fact_id)]
    return {
        "path": memory.rel,
        "history_file": sibling if text is not None else None,
        "entries": [{"when": e.when, "text": e.text, "fact_id": e.fact_id, "rid": e.rid} for e in entries],
        "commits": [
            {"sha": c.sha, "subject": c.subject, "author": c.author, "date": c.date, "trailers": c.trailers}
            for c in store.git.log(memory.rel)
        ],
    }


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="an empty or new folder")
    p.add_argument(
        "--size", type=count(0, 1_000_000), default=0, help="add N generated memories (50 to 2,000 words each)"
    )
    p.add_argument("--seed", type=int, default=7)


def _demo_store(args: argparse.Namespace) -> dict[str, Any]:
    from ..demo import build_demo_store

    return build_demo_store(Path(args.dir), size=args.size, seed=args.seed)


COMMANDS = (
    Command("scan", "count the store's memories and report files that cannot be read", _scan, scan_args, as_of=True),
    Command("show", "one memory's metadata and body", _show, path_arg, as_of=True),
    Command("archive", "retire a memory whole (status: archived)", _lifecycle("archive"), _archive_args),
    Command("restore", "bring an archived memory back to recall", _lifecycle("restore"), _restore_args),
    Command("retract", "strike the sentences that carry a preference", _lifecycle("retract"), _retract_args),
    Command("unretract", "undo the strikes one preference made in a memory", _lifecycle("unretract"), _unretract_args),
    Command("history", "a memory's history-sibling entries and git commits", _history, path_arg, as_of=True),
    Command(
        "demo-store",
        "write the deterministic demo store (with real git history) into DIR",
        _demo_store,
        _demo_args,
        takes_store=False,
    ),
)
