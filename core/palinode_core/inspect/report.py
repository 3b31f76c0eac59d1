"""An audit report anyone can read: for each forget request in scope, who
filed it and when, how it was resolved and with which knobs, every target with
its route, coverage and evidence, the reviewer's decisions, the operations
applied with their commits and diffs, undos and withdrawals, and what still
mentions the preference now. The data is one dict (docs/report-schema.json);
report_html and report_md render it.

Git is read in a fixed number of passes however many requests are in scope:
one log of every commit's subject and trailers (no file lists: those cost a
tree diff per commit), one log of when each request file was added, blobs
through one ``git cat-file --batch``, and one ``git show`` per operation the
report lists."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ..errors import NotAForgetRequest, PalinodeError
from ..forget.ledger import Ledger, read
from ..forget.requests import Request, find_requests, request_states
from ..forget.resolve import coverage
from ..ops.subjects import actor_of, parse_subject
from ..storage.commits import Commit, parse_trailers
from ..storage.config import CONFIG_NAME, config_from_text
from ..storage.memory import Memory
from ..storage.paths import history_rel_for
from ..storage.records import OperationKind
from ..storage.snapshot import GitObjects, date_bound
from ..storage.store import Store
from ..text.document import parse_document
from ..text.history import parse_entries
from ..text.markdown import struck_spans
from ..text.words import content_words, normalize_pref
from .report_review import UnderReview, proposed_targets
from .residue import candidates_for, residue

SCHEMA_ID = "palinode-audit/report/1"
MAX_DIFF_CHARS = 200_000  # one pathological commit must not make the report unreadable
_LOG_FMT = "%x1e%H%x1f%s%x1f%an%x1f%aI%x1f%(trailers:only,unfold)"
_ADD_FMT = "%x1e%H%x1f%an%x1f%aI%x1d"


def _parse_when(text: str) -> datetime:
    when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def scope_bounds(since: str | None, until: str | None) -> tuple[datetime | None, datetime | None]:
    """``since`` from the start of its day, ``until`` to the end of its day, to
    the second, in the user's time zone unless a zone is given."""
    start = None
    if since:
        text = since.strip()
        try:
            start = datetime.fromisoformat(text + "T00:00:00" if len(text) == 10 else text.replace("Z", "+00:00"))
            if start.tzinfo is None:
                start = start.astimezone()  # a naive time is the user's
        except (ValueError, OverflowError, OSError):
            raise PalinodeError(f"cannot read the date {since!r}; use YYYY-MM-DD or an ISO 8601 time") from None
    end = _parse_when(date_bound(until)) if until else None
    return start, end


def _all_commits(store: Store, rev: str) -> list[Commit]:
    """Every commit reachable from ``rev``, newest first: subject, author, date, trailers."""
    try:
        out = store.git.run_bytes("log", f"--format={_LOG_FMT}", rev, "--", read=True).decode("utf-8", "replace")
    except PalinodeError:
        return []  # an empty repository
    commits = []
    for record in out.split("\x1e")[1:]:
        sha, subject, author, date, trailers = (record.split("\x1f") + [""] * 5)[:5]
        commits.append(Commit(sha.strip(), subject, author, date, parse_trailers(trailers)))
    return commits


def _first_added(store: Store, rev: str, paths: list[str]) -> dict[str, Commit]:
    """The commit that first added each path (one pathspec-limited log)."""
    if not paths:
        return {}
    out = store.git.run_bytes(
        "log", "--diff-filter=A", "--name-only", "-z", f"--format={_ADD_FMT}", rev, "--", *paths, read=True
    ).decode("utf-8", "replace")
    found: dict[str, Commit] = {}
    for record in out.split("\x1e")[1:]:
        head, _, names = record.partition("\x1d")
        sha, author, date = [*head.split("\x1f"), "", ""][:3]
        for name in names.strip("\n\0").split("\0"):
            name = name.strip("\n")
            if name:
                found[name] = Commit(sha, "", author, date)  # newest first: the last one seen is the first add
    return found


def _decisions(ledger: Ledger) -> list[dict[str, Any]]:
    """Every ledger entry, in the order history added them, with the commit,
    author and date that added it."""
    out = []
    for line in ledger.lines:
        source = line.source
        recorded = (
            {"commit": source.commit, "author": source.author.rsplit(" <", 1)[0], "date": source.date}
            if source is not None
            else None
        )
        out.append({**line.entry, "recorded": recorded})
    return out


def _blob_body(objects: GitObjects, rev: str, path: str) -> str | None:
    data = objects.read(f"{rev}:{path}")
    if data is None:
        return None
    try:
        return parse_document(data.decode("utf-8", "replace")).body
    except PalinodeError:
        return None


def _commit_dict(commit: Commit, prefix: str) -> dict[str, Any]:
    parsed = parse_subject(commit.subject, prefix)
    return {
        "commit": commit.sha,
        "date": commit.date,
        "author": commit.author,
        "subject": commit.subject,
        "op": parsed.op if parsed else None,
        "path": parsed.path if parsed else None,
        "actor": actor_of(commit.subject, commit.trailers, prefix),
    }


def _evidence(objects: GitObjects, request: Request, commit: Commit, path: str, kind: OperationKind) -> dict[str, Any]:
    """What the commit itself shows: the words shared before it, its coverage,
    the sentences it struck and the history line it wrote."""
    before = _blob_body(objects, commit.sha + "^", path) or ""
    after = _blob_body(objects, commit.sha, path) or ""
    struck: list[str] = []
    if kind.route == "strike":
        old = {s.text for s in struck_spans(before, request.rid)}
        struck = [s.text for s in struck_spans(after, request.rid) if s.text not in old]
    sibling = history_rel_for(path)
    old_lines = {
        e.text for e in parse_entries((objects.read(f"{commit.sha}^:{sibling}") or b"").decode("utf-8", "replace"))
    }
    new_lines = [
        e.text
        for e in parse_entries((objects.read(f"{commit.sha}:{sibling}") or b"").decode("utf-8", "replace"))
        if e.text not in old_lines
    ]
    return {
        "coverage": round(coverage(request.pref, before), 4) if before else None,
        "shared_words": sorted(content_words(request.pref) & content_words(before)),
        "struck": struck,
        "history_line": new_lines[-1] if new_lines else None,
    }


def _diff(store: Store, sha: str) -> str:
    text = store.git.diff(sha)
    if len(text) > MAX_DIFF_CHARS:
        return text[:MAX_DIFF_CHARS] + f"\n[… diff cut at {MAX_DIFF_CHARS} characters; see git show {sha}]\n"
    return text


def _knobs_at(objects: GitObjects, sha: str) -> dict[str, Any] | None:
    data = objects.read(f"{sha}:{CONFIG_NAME}")
    if data is None:
        return None
    try:
        knobs = config_from_text(data.decode("utf-8", "replace"), CONFIG_NAME).forget
    except PalinodeError:
        return None
    return {
        "search_k": knobs.search_k,
        "min_shared_words": knobs.min_shared_words,
        "max_targets": knobs.max_targets,
        "min_target_coverage": knobs.min_target_coverage,
    }


def _one(
    store: Store,
    objects: GitObjects,
    request: Request,
    state: dict[str, Any],
    history: list[Commit],
    filed: Commit | None,
    decisions: list[dict[str, Any]],
    memories: Mapping[str, Memory],
    review: UnderReview | None = None,
) -> dict[str, Any]:
    prefix = store.config.commit_prefix
    mine = [d for d in decisions if d.get("request") == request.path]
    applies = [d for d in mine if d.get("action") == "apply"]
    reviewed = [d for d in mine if d.get("action") in ("apply", "strike")]  # a strike by hand is a decision too
    approved = {a.get("path"): d for d in reviewed for a in d.get("approved") or [] if isinstance(a, dict)}
    ops: list[dict[str, Any]] = []
    undos: list[dict[str, Any]] = []
    targets: dict[str, dict[str, Any]] = {}
    forward_at: dict[str, str] = {}  # target -> op of its forward commit
    in_force: dict[tuple[str, str], str] = {}  # (target, op) -> the commit whose change is in force
    for commit in reversed(history):  # oldest first
        parsed = parse_subject(commit.subject, prefix)
        if parsed is None:
            continue
        ours = commit.trailers.get("Forget-Request") == request.path or parsed.counterpart == request.path
        if ours and parsed.kind.direction == "forward" and parsed.path != request.path:
            entry = {**_commit_dict(commit, prefix), "diff": _diff(store, commit.sha)}
            ops.append(entry)
            first = in_force.get((parsed.path, parsed.op))
            if first is not None:  # the same change made in another clone too, then merged: one application
                entry["same_as"] = first
                continue
            in_force[(parsed.path, parsed.op)] = commit.sha
            route = parsed.kind.route
            evidence = _evidence(objects, request, commit, parsed.path, parsed.kind)
            decided = approved.get(parsed.path)
            targets[parsed.path] = {
                "path": parsed.path,
                "route": route,
                "coverage": evidence.pop("coverage"),
                "decision": "approved" if decided else "automatic",
                "decided_by": (decided.get("decided_by") or (decided.get("recorded") or {}).get("author"))
                if decided
                else None,
                "commit": commit.sha,
                "evidence": {**evidence, "reason": None, "rank": None},
                "flags": [],
            }
            forward_at[parsed.path] = parsed.op
        elif (ours and (parsed.kind.direction == "backward" or parsed.path == request.path)) or (
            parsed.path in forward_at and parsed.kind.direction == "backward"
        ):
            kind = "withdrawal" if commit.trailers.get("Forget-Request") == request.path else "undo"
            in_force = {k: v for k, v in in_force.items() if k[0] != parsed.path}
            undos.append({**_commit_dict(commit, prefix), "kind": kind, "diff": _diff(store, commit.sha)})
    for decision in applies:  # what the reviewer saw: every resolved target, route and coverage
        for t in decision.get("targets") or []:
            if not isinstance(t, dict) or not isinstance(t.get("path"), str):
                continue
            row = targets.setdefault(
                t["path"],
                {
                    "path": t["path"],
                    "route": t.get("route"),
                    "coverage": None,
                    "decision": None,
                    "decided_by": None,
                    "commit": None,
                    "evidence": {"shared_words": [], "struck": [], "history_line": None, "reason": None, "rank": None},
                    "flags": [],
                },
            )
            row["route"] = row["route"] or t.get("route")
            row["coverage"] = row["coverage"] if row["coverage"] is not None else t.get("coverage")
            row["evidence"].update(reason=t.get("reason"), rank=t.get("rank"))
            if not row["evidence"]["shared_words"]:
                row["evidence"]["shared_words"] = [str(w) for w in t.get("shared_words") or []]
        for key in ("rejected", "deferred", "failed"):
            for item in decision.get(key) or []:
                path = item.get("path") if isinstance(item, dict) else item
                if not isinstance(path, str):
                    continue
                row = targets.setdefault(
                    path,
                    {
                        "path": path,
                        "route": None,
                        "coverage": None,
                        "decision": None,
                        "decided_by": None,
                        "commit": None,
                        "evidence": {
                            "shared_words": [],
                            "struck": [],
                            "history_line": None,
                            "reason": None,
                            "rank": None,
                        },
                        "flags": [],
                    },
                )
                row["decision"] = key
                row["decided_by"] = decision.get("decided_by") or (decision.get("recorded") or {}).get("author")
    for decision in mine:
        if decision.get("action") == "flag" and decision.get("path") in targets:
            targets[decision["path"]]["flags"].append(str(decision.get("note") or ""))
    last_apply = applies[-1] if applies else None
    first_op = ops[0]["commit"] if ops else None
    if last_apply and isinstance(last_apply.get("knobs"), dict):
        knobs, source = last_apply["knobs"], "ledger"
    elif first_op and (at_op := _knobs_at(objects, first_op)) is not None:
        knobs, source = at_op, f"{CONFIG_NAME} at {first_op[:7]}"
    else:
        knobs, source = None, None
    under_review = None
    if (
        review is not None
        and review.plan.request.path == request.path
        and review.plan.request.norm == request.norm  # the request not edited since it was planned
        and not ops
        and not applies
    ):
        targets = {row["path"]: row for row in proposed_targets(review)}
        under_review = {
            "resolver": review.plan.resolver,
            "note": "the plan as the reviewer has it open: nothing of it is applied",
        }
        for decision in mine:  # the reviewer's flags on those targets still show
            if decision.get("action") == "flag" and decision.get("path") in targets:
                targets[decision["path"]]["flags"].append(str(decision.get("note") or ""))
    mentions = residue(request.pref, memories, candidates_for(store, request.pref))
    counts: dict[str, int] = {}
    for m in mentions:
        counts[m.kind] = counts.get(m.kind, 0) + 1
    return {
        "path": request.path,
        "pref": request.pref,
        "rid": request.rid,
        "state": state["state"],
        "filed": {"commit": filed.sha, "author": filed.author, "date": filed.date} if filed else None,
        "resolver": {
            "by": "palinode-audit (reviewed)" if reviewed else "palinode (automatic, unreviewed)" if ops else None,
            "search_mode": last_apply.get("search_mode") if last_apply else None,
            "knobs": knobs,
            "knobs_source": source,
        },
        "targets": [targets[p] for p in sorted(targets)],
        "under_review": under_review,
        "decisions": _same_applications([_decision_row(d) for d in mine]),
        "operations": ops,
        "undos": undos,
        "residue": {"counts": counts, "mentions": [m.to_dict() for m in mentions]},
    }


def _same_applications(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark an apply that approved only what an earlier one (not withdrawn since)
    already applied: two reviewers applied the request in two clones, and the
    merge made it one application. Both decisions stay, each with its decider."""
    applied: dict[str, str] = {}  # target -> the time of the apply that applied it
    for row in rows:
        if row["action"] == "withdraw":
            applied.clear()
        elif row["action"] == "apply" and row["approved"]:
            earlier = {applied.get(p) for p in row["approved"]}
            if None not in earlier:
                row["same_application_as"] = min(str(e) for e in earlier)
            for path in row["approved"]:
                applied.setdefault(path, str(row["at"]))
    return rows


def _decision_row(entry: dict[str, Any]) -> dict[str, Any]:
    def paths(key: str) -> list[str]:
        return [str(i.get("path") if isinstance(i, dict) else i) for i in entry.get(key) or []]

    recorded = entry.get("recorded") or {}
    return {
        "action": str(entry.get("action")),
        "at": entry.get("at"),
        "note": entry.get("note"),
        "by": entry.get("decided_by") or recorded.get("author"),
        "commit": recorded.get("commit"),
        "approved": paths("approved"),
        "rejected": paths("rejected"),
        "deferred": paths("deferred"),
        "failed": paths("failed"),
        "path": entry.get("path"),
        "line": entry.get("line"),
        "kind": entry.get("kind"),
        "text": entry.get("text"),
        "counts": entry.get("counts") if isinstance(entry.get("counts"), dict) else None,
    }


def build_report(
    store: Store,
    memories: Mapping[str, Memory],
    *,
    request: str | None = None,
    pref: str | None = None,
    since: str | None = None,
    until: str | None = None,
    generated_at: str | None = None,
    review: UnderReview | None = None,
) -> dict[str, Any]:
    """The report for one request, every request for a preference, or every
    request filed in a date range (both ends inclusive, whole days); a pending
    request under ``review`` shows that plan's targets, marked proposed."""
    if sum(x is not None for x in (request, pref)) + (since is not None or until is not None) != 1:
        raise PalinodeError("give one scope: a request, a preference, or a date range")
    requests = find_requests(memories)
    if request is not None:
        rel, _ = store.resolve(request)
        requests = [r for r in requests if r.path == rel]
        if not requests:
            raise NotAForgetRequest(f"{rel} is not a forget request in this store")
    elif pref is not None:
        requests = [r for r in requests if r.norm == normalize_pref(pref)]
    as_of = getattr(store, "as_of", None)
    rev = as_of.commit if as_of else "HEAD"
    history = _all_commits(store, rev)
    filed = _first_added(store, rev, [r.path for r in requests]) if history else {}
    if since is not None or until is not None:
        start, end = scope_bounds(since, until)
        requests = [
            r
            for r in requests
            if r.path in filed
            and (start is None or _parse_when(filed[r.path].date) >= start)
            and (end is None or _parse_when(filed[r.path].date) <= end)
        ]
    ledger = read(store)
    states = {s.path: s.to_dict() for s in request_states(store, memories, ledger)}
    objects = GitObjects(store.git)
    try:
        decisions = _decisions(ledger)
        rows = [
            _one(store, objects, r, states[r.path], history, filed.get(r.path), decisions, memories, review)
            for r in requests
        ]
    finally:
        objects.close()
    return {
        "schema": SCHEMA_ID,
        "store": store.root.name,  # the folder's name: a report is shared, the auditor's own folders are not
        "generated_at": generated_at or store.now().replace(microsecond=0).isoformat(),
        "head": history[0].sha if history else None,
        "as_of": as_of.to_dict() if as_of else None,
        "scope": {"request": request, "pref": pref, "since": since, "until": until},
        "requests": rows,
    }
