"""``sync``: bring a clone up to date with its remote and check it again
(palinode_core.team)."""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

from ..errors import PalinodeError
from .args import NOTHING_WRITTEN, dry_run_arg, open_session, writes
from .registry import Command


def _sync_args(p: argparse.ArgumentParser) -> None:
    how = p.add_mutually_exclusive_group()
    how.add_argument("--rebase", action="store_true", help="rebase local commits on the remote's")
    how.add_argument("--merge", action="store_true", help="merge the remote's commits (the default)")
    p.add_argument("--no-push", action="store_true", help="fetch and integrate only")
    dry_run_arg(p)


def _sync(args: argparse.Namespace) -> dict[str, Any]:
    from ..team import ready, sync, upstream_of

    store = open_session(args).store
    if not writes(args):
        refusal = ready(store, "rebase" if args.rebase else "merge")
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


def _review_pack_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, metavar="DIR", help="a folder outside the store (made if missing)")
    p.add_argument("--lexical", action="store_true", help="plan with BM25 only (no model: a lean CI runner)")


def _review_pack(args: argparse.Namespace) -> dict[str, Any]:
    """For CI (docs/team.md): every pending request's saved plan, what a
    reviewer approves, and a redacted Markdown page to post on the forge."""
    from ..forget.saved import dumps
    from ..inspect.report_out import render_report
    from ..inspect.report_redact import digest as keyed_hash
    from ..inspect.report_redact import redaction_key
    from ..storage.output import write_output
    from .forget_cmds import updated_index

    session = open_session(args, lexical=args.lexical)
    folder = Path(args.out).expanduser().absolute()
    store = session.root.resolve()
    if folder.resolve() == store or store in folder.resolve().parents:  # checked before a folder is made there
        raise PalinodeError(f"{folder} is inside the store; write the review pack somewhere else (nothing was written)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise PalinodeError(f"cannot make {folder}: {exc.strerror or exc}") from None
    index = updated_index(session, args.lexical, False)
    key = redaction_key(session.root)  # the pages' and the comment's: one key, so equal hashes mean equal paths
    entries: list[dict[str, Any]] = []
    comment = [
        "# Pending forget requests",
        "",
        f"Paths are keyed hashes, key `{key.id}`: {key.to_dict()['stable']}.",
        "",
    ]
    pending = [state for state in session.request_states() if state.state == "pending"]
    names = pack_names([(state.path, state.rid) for state in pending])
    for state in pending:
        name = names[state.path]
        heading = f"## r:{state.rid}" + ("" if name == state.rid else f" (another request shares it: files {name}.*)")
        fplan = session.plan(state.path, index=index)
        page = render_report(session.report(request=state.path, redacted=True), "md")
        write_output(session.root, page, folder / f"{name}.md")
        try:
            approved = session.approve(fplan)
        except PalinodeError as exc:  # nothing pre-approved: a person reviews it in the app or with plan --out --only
            why = "no target would change" if not fplan.actionable else "no target is pre-approved"
            entries.append(
                {"request": state.path, "rid": state.rid, "id": name, "plan": None, "why": why, "detail": str(exc)}
            )
            comment += [heading, "", f"- no plan to approve here: {why}", ""]
            continue
        text = dumps(approved)
        digest = hashlib.sha256(text.encode()).hexdigest()
        plan_file = write_output(session.root, text, folder / f"{name}.plan.json")
        steps = [{"path": p.target, "route": r, "sha256": p.fingerprint} for p, r in approved.steps]
        entries.append(
            {
                "request": state.path,
                "rid": state.rid,
                "id": name,
                "plan": plan_file.name,
                "plan_sha256": digest,
                "steps": steps,
                "deferred": approved.ledger["deferred"],
            }
        )
        comment += [
            heading,
            "",
            f"- plan `{plan_file.name}`, sha256 `{digest}`",
            f"- {len(steps)} target(s) to change, {len(approved.ledger['deferred'])} awaiting review by hand",
            *(f"  - {s['route']} `{keyed_hash(s['path'], key)}`" for s in steps),
            f"- approve: run the apply workflow with rid `{name}` and plan_sha256 `{digest}`",
            "",
        ]
    if not entries:
        comment.append("None: nothing to review.")
    write_output(session.root, "\n".join(comment) + "\n", folder / "comment.md")
    write_output(
        session.root, json.dumps({"requests": entries}, indent=1, sort_keys=True) + "\n", folder / "index.json"
    )
    return {"folder": str(folder), "requests": entries}


def pack_names(requests: list[tuple[str, str]]) -> dict[str, str]:
    """Each request's file name in a review pack: its rid, or, for requests that share
    one (the same preference in two files: the rid is the preference's, as Palinode
    writes it in r:<id> marks), the rid and its place among them in hex (``<rid>01``,
    ``<rid>02``), so no plan file overwrites another's. Nothing of the path is in it
    (the comment is posted redacted), and it is hex as the apply workflow takes a rid."""
    count = Counter(rid for _path, rid in requests)
    seen: Counter[str] = Counter()
    names = {}
    for path, rid in requests:
        seen[rid] += 1
        names[path] = rid if count[rid] == 1 else f"{rid}{seen[rid]:02x}"
    return names


COMMANDS = (
    Command(
        "review-pack",
        "for CI: each pending request's saved plan and a redacted page to post (docs/team.md)",
        _review_pack,
        _review_pack_args,
    ),
    Command(
        "sync",
        "fetch, merge (or --rebase) and push, then check integrity and request states again",
        _sync,
        _sync_args,
    ),
)
