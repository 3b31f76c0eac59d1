"""``palinode-audit``: every action of the app, scriptable, JSON on ``--json``.

Errors exit non-zero with one line on stderr; nothing is ever half-written.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable

from . import lifecycle
from .errors import PalinodeError
from .history import parse_entries
from .paths import history_rel_for
from .sanitize import printable, safe_json
from .store import Store

Handler = Callable[[argparse.Namespace], dict[str, Any]]
_COMMANDS: dict[str, tuple[Handler, Callable[[argparse.ArgumentParser], None], str]] = {}


def command(name: str, help_text: str, configure: Callable[[argparse.ArgumentParser], None] = lambda p: None):
    def register(fn: Handler) -> Handler:
        _COMMANDS[name] = (fn, configure, help_text)
        return fn
    return register


def _open(args: argparse.Namespace) -> Store:
    return Store(args.store)


def memory_summary(memory) -> dict[str, Any]:
    return {
        "path": memory.rel, "title": memory.title, "status": memory.status,
        "superseded_by": memory.superseded_by, "retracted_prefs": memory.retracted_prefs,
        "update_policy": memory.update_policy, "created_at": memory.created_at,
        "category": memory.category, "struck": memory.struck, "fingerprint": memory.fingerprint,
        "retired": memory.retired_reason,
    }


def _scan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cache-dir", help="the scan cache's folder (default: the store's own under the user cache)")
    p.add_argument("--progress", action="store_true", help="JSON progress lines on stdout before the result")
    p.add_argument("--background", action="store_true", help="run at low CPU priority (nice 10)")


def _open_for_scan(args: argparse.Namespace) -> tuple[Store, Callable[[str, int, int], None] | None]:
    """The store and a progress printer for ``_scan_args`` (how child.run_audit runs us)."""
    if args.background:
        os.nice(10)
    store = Store(args.store, cache_dir=Path(args.cache_dir).expanduser() if args.cache_dir else None)

    def progress(phase: str, done: int, total: int) -> None:
        print(json.dumps({"progress": phase, "done": done, "total": total}), flush=True)
    return store, progress if args.progress else None


@command("scan", "count the store's memories and report files that cannot be read", _scan_args)
def _scan(args: argparse.Namespace) -> dict[str, Any]:
    store, progress = _open_for_scan(args)
    scan = store.scan((lambda done, total: progress("reading", done, total)) if progress else None)
    return {**scan.counts(), "errors": [{"path": e.path, "reason": e.reason} for e in scan.errors]}


def _path_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="memory path relative to the store")


@command("show", "one memory's metadata and body", _path_arg)
def _show(args: argparse.Namespace) -> dict[str, Any]:
    memory = _open(args).load(args.path)
    meta = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in memory.meta.items()}
    return {**memory_summary(memory), "frontmatter": meta, "body": memory.body}


def _run_plan(args: argparse.Namespace, store: Store, plan: lifecycle.Plan) -> dict[str, Any]:
    result = plan.to_dict()
    if args.dry_run or not plan.changes:
        result["applied"] = False
        return result
    done = lifecycle.apply(store, plan)
    result.update(applied=True, commit=done.commit)
    return result


def _lifecycle_args(p: argparse.ArgumentParser) -> None:
    _path_arg(p)
    p.add_argument("--dry-run", action="store_true", help="print the plan and its diff; write nothing")


def _archive_args(p: argparse.ArgumentParser) -> None:
    _lifecycle_args(p)
    p.add_argument("--superseded-by", help="the successor's store-relative path")
    p.add_argument("--reason")


@command("archive", "retire a memory whole (status: archived)", _archive_args)
def _archive(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    return _run_plan(args, store, lifecycle.plan_archive(store, args.path, args.superseded_by, args.reason))


def _restore_args(p: argparse.ArgumentParser) -> None:
    _lifecycle_args(p)
    p.add_argument("--reason")


@command("restore", "bring an archived memory back to recall", _restore_args)
def _restore(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    return _run_plan(args, store, lifecycle.plan_restore(store, args.path, args.reason))


def _retract_args(p: argparse.ArgumentParser) -> None:
    _lifecycle_args(p)
    p.add_argument("--pref", required=True, help="the preference phrase, as the request stated it")
    p.add_argument("--superseded-by", help="the forget request's store-relative path")


@command("retract", "strike the sentences that carry a preference", _retract_args)
def _retract(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    return _run_plan(args, store, lifecycle.plan_retract(store, args.path, args.pref, args.superseded_by))


def _unretract_args(p: argparse.ArgumentParser) -> None:
    _lifecycle_args(p)
    p.add_argument("--pref", required=True)
    p.add_argument("--reason")


@command("unretract", "undo the strikes one preference made in a memory", _unretract_args)
def _unretract(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    return _run_plan(args, store, lifecycle.plan_unretract(store, args.path, args.pref, args.reason))


@command("history", "a memory's history-sibling entries and git commits", _path_arg)
def _history(args: argparse.Namespace) -> dict[str, Any]:
    store = _open(args)
    memory = store.load(args.path)
    sibling = history_rel_for(memory.rel)
    text, _ = store.read_optional(sibling)
    entries = [e for e in parse_entries(text or "") if e.fact_id in (None, memory.fact_id)]
    return {
        "path": memory.rel, "history_file": sibling if text is not None else None,
        "entries": [{"when": e.when, "text": e.text, "fact_id": e.fact_id, "rid": e.rid} for e in entries],
        "commits": [{"sha": c.sha, "subject": c.subject, "author": c.author, "date": c.date,
                     "trailers": c.trailers} for c in store.git.log(memory.rel)],
    }


def _render_text(name: str, data: dict[str, Any]) -> str:
    """A compact human rendering; JSON is the contract for scripts."""
    lines: list[str] = []
    for key, value in data.items():
        if key in ("diff", "body") and value:
            lines.append(f"{key}:\n{value.rstrip()}")
        elif isinstance(value, list):
            lines.append(f"{key}: ({len(value)})")
            for item in value:
                lines.append(f"  - {item if not isinstance(item, dict) else ', '.join(f'{k}={v}' for k, v in item.items())}")
        elif isinstance(value, dict):
            lines.append(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        else:
            lines.append(f"{key}: {value}")
    return printable("\n".join(lines))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="palinode-audit", description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print JSON (the scripting contract)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (_, configure, help_text) in _COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print JSON")
        if name != "demo-store":
            p.add_argument("store", help="the store's root folder")
        configure(p)
    return parser


def main(argv: list[str] | None = None) -> int:
    from . import cli_forget  # noqa: F401  (registers the forget commands)
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = _COMMANDS[args.command][0]
    try:
        data = handler(args)
    except PalinodeError as exc:
        print(f"palinode-audit: {printable(str(exc))}", file=sys.stderr)
        return 1
    except (OSError, ValueError) as exc:
        print(f"palinode-audit: {printable(str(exc) or exc.__class__.__name__)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("palinode-audit: interrupted", file=sys.stderr)
        return 130
    print(safe_json(data) if args.json else _render_text(args.command, data))
    return 2 if data.get("failed") else 0  # apply/withdraw stopped part-way


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="an empty or new folder")
    p.add_argument("--size", type=int, default=0, help="add N generated memories (50 to 2,000 words each)")
    p.add_argument("--seed", type=int, default=7)


@command("demo-store", "write the deterministic demo store (with real git history) into DIR", _demo_args)
def _demo_store(args: argparse.Namespace) -> dict[str, Any]:
    from pathlib import Path

    from .demo import build_demo_store
    return build_demo_store(Path(args.dir), size=args.size, seed=args.seed)
