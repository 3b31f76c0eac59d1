"""The human-in-the-loop layer: request states, reviewed applies recorded in a
ledger, dismiss and flag, withdraw, residue, integrity, and trace.

The ledger is ``.palinode-audit/ledger.jsonl``: a dot-directory with no
markdown, so Palinode never indexes it, committed to git so the audit
survives a fresh clone. Every target commit also carries ``Forget-Request:``
and ``Retraction-Id:`` trailers after Palinode's own subject.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from . import lifecycle
from .errors import NotAForgetRequest, PalinodeError, StalePlan
from .detect import detect_forget_request
from .forget import PALINODE_ONLY_NOTE, ForgetPlan, Request, coverage, find_requests
from .history import parse_entries
from .markdown import MARKER_RE, Matcher, find_mentions, struck_spans
from .paths import history_rel_for
from .store import AUDIT_DIR, Memory, Store
from .textio import atomic_write
from .words import normalize_pref, retraction_id

LEDGER_REL = f"{AUDIT_DIR}/ledger.jsonl"


# -- ledger -----------------------------------------------------------------
def read_ledger(store: Store) -> list[dict[str, Any]]:
    path = store.root / LEDGER_REL
    if not path.is_file():
        return []
    entries = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue  # a hand-damaged line is skipped, never fatal
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def record(store: Store, entry: dict[str, Any]) -> str | None:
    """Append one decision to the ledger and commit it on its own."""
    store.check_writable()
    store.git.preflight()
    entry = {"at": store.now().isoformat(), **entry}
    path = store.root / LEDGER_REL
    before = path.read_text(encoding="utf-8") if path.is_file() else ""
    if before and not before.endswith("\n"):
        before += "\n"
    atomic_write(path, before + json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n")
    subject = f"palinode-audit ledger: {entry.get('action')} {entry.get('request') or entry.get('path') or ''}".strip()
    trailers = {"Forget-Request": entry["request"]} if entry.get("request") else {}
    try:
        return store.git.commit([LEDGER_REL], subject, trailers)
    except PalinodeError:
        if before:
            atomic_write(path, before)
        else:
            path.unlink(missing_ok=True)
        raise


def decisions_for(ledger: list[dict[str, Any]], request_path: str) -> list[dict[str, Any]]:
    return [e for e in ledger if e.get("request") == request_path]


# -- reviewed apply --------------------------------------------------------
Selection = dict[str, "bool | set[int]"]


@dataclass
class ForgetApplied:
    request: str
    commits: list[dict[str, Any]] = field(default_factory=list)
    approved: list[dict[str, Any]] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)
    ledger_commit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"request": self.request, "commits": self.commits, "approved": self.approved,
                "rejected": self.rejected, "deferred": self.deferred, "failed": self.failed,
                "ledger_commit": self.ledger_commit}


def apply_forget(store: Store, fplan: ForgetPlan, selection: Selection | None = None,
                 note: str | None = None) -> ForgetApplied:
    """Apply the approved targets, one commit each in rank order. With no
    ``selection`` every actionable target is approved with all its spans; with
    one, ``True`` approves a target, a set of span indices approves those
    strikes only, ``False`` rejects it, and anything unnamed is deferred."""
    store.check_writable()
    store.git.preflight()
    request = fplan.request
    out = ForgetApplied(request.path)
    for cand in fplan.actionable:
        choice: bool | set[int] = True if selection is None else selection.get(cand.path, None)  # type: ignore[assignment]
        if choice is None:
            out.deferred.append(cand.path)
            continue
        if choice is False:
            out.rejected.append(cand.path)
            continue
        plan = cand.plan
        assert plan is not None
        if isinstance(choice, set) and cand.route == "strike" and set(plan.selected) != choice:
            if not choice:
                out.rejected.append(cand.path)
                continue
            narrowed = lifecycle.plan_retract(store, cand.path, request.pref, superseded_by=request.path,
                                              selected=choice, trailers=plan.trailers)
            if narrowed.fingerprint != plan.fingerprint:
                out.failed.append({"path": cand.path, "reason": "changed since the plan was made; re-plan"})
                break
            plan = narrowed
        try:
            done = lifecycle.apply(store, plan)
        except StalePlan as exc:
            out.failed.append({"path": cand.path, "reason": str(exc)})
            break
        out.commits.append({"path": cand.path, "op": plan.op, "commit": done.commit, "subject": plan.commit_subject})
        out.approved.append({"path": cand.path, "route": cand.route, "spans": list(plan.selected),
                             "commit": done.commit})
    out.ledger_commit = record(store, {
        "action": "apply", "request": request.path, "pref": request.pref, "rid": request.rid,
        "knobs": fplan.to_dict()["knobs"], "approved": out.approved, "rejected": out.rejected,
        "deferred": out.deferred, "failed": out.failed, "note": note,
        "complete": not out.failed,
    })
    return out


def dismiss(store: Store, request_path: str, note: str) -> str | None:
    memory = store.load(request_path)
    pref = detect_forget_request(memory.body)
    if not pref:
        raise NotAForgetRequest(f"{memory.rel} contains no forget request")
    return record(store, {"action": "dismiss", "request": memory.rel, "pref": pref,
                          "rid": retraction_id(pref), "note": note})


def flag(store: Store, path: str, line: int, kind: str, text: str, note: str,
         request_path: str | None = None) -> str | None:
    rel, _ = store.resolve(path)
    return record(store, {"action": "flag", "request": request_path, "path": rel, "line": line,
                          "kind": kind, "text": text, "note": note})


# -- request states -----------------------------------------------------------
@dataclass(frozen=True)
class RequestState:
    path: str
    pref: str
    rid: str
    state: str  # pending | applied | partial | withdrawn | dismissed
    archived_targets: tuple[str, ...]
    struck_targets: tuple[str, ...]
    created_at: str | None
    last_decision: dict[str, Any] | None
    note: str | None = None  # PALINODE_ONLY_NOTE for a request only Palinode's detector takes

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "pref": self.pref, "rid": self.rid, "state": self.state,
                "archived_targets": list(self.archived_targets), "struck_targets": list(self.struck_targets),
                "created_at": self.created_at, "last_decision": self.last_decision, "note": self.note}


def request_states(store: Store, memories: dict[str, Memory] | None = None) -> list[RequestState]:
    memories = memories if memories is not None else store.scan().memories
    ledger = read_ledger(store)
    states = []
    for request in find_requests(memories):
        archived = tuple(sorted(r for r, m in memories.items() if m.archived and m.superseded_by == request.path))
        struck = tuple(sorted(r for r, m in memories.items() if request.norm in m.retracted_prefs))
        decisions = decisions_for(ledger, request.path)
        last = decisions[-1] if decisions else None
        applies = [d for d in decisions if d.get("action") == "apply"]
        if request.memory.archived:
            state = "withdrawn"
        elif last and last.get("action") == "dismiss":
            state = "dismissed"
        elif archived or struck or applies:
            incomplete = applies and (applies[-1].get("deferred") or not applies[-1].get("complete", True))
            state = "partial" if incomplete else "applied"
        else:
            state = "pending"
        states.append(RequestState(request.path, request.pref, request.rid, state, archived, struck,
                                   request.memory.created_at, last,
                                   PALINODE_ONLY_NOTE if request.palinode_only else None))
    return states


# -- withdraw -------------------------------------------------------------------
@dataclass(frozen=True)
class WithdrawPlan:
    request: str
    pref: str
    records: tuple[str, ...]
    steps: tuple[lifecycle.Plan, ...]
    broad: bool

    def to_dict(self) -> dict[str, Any]:
        return {"request": self.request, "pref": self.pref, "records": list(self.records), "broad": self.broad,
                "steps": [s.to_dict() for s in self.steps],
                "recovery": "a withdrawal is undone by saving the request again (re-plan and apply it)"}


def _struck_by(store: Store, memory: Memory, request: Request) -> bool:
    """Did this request strike this file? Its history line or commit says so."""
    text, _ = store.read_optional(history_rel_for(memory.rel))
    for entry in parse_entries(text or ""):
        if entry.rid == request.rid and f"superseded by {request.path}" in entry.text:
            return True
    for commit in store.git.log(memory.rel, limit=100):
        if commit.trailers.get("Forget-Request") == request.path or commit.subject.endswith(f"<- {request.path}"):
            if "retract:" in commit.subject:
                return True
    return False


def plan_withdraw(store: Store, request_path: str, broad: bool = False,
                  memories: dict[str, Memory] | None = None) -> WithdrawPlan:
    """Take a request back: restore what it archived, unstrike what it struck,
    archive the request record. By default only what *this* request did;
    ``broad`` reproduces Palinode 0.23 (every same-pref record and strike)."""
    memory = store.load(request_path)
    memories = memories if memories is not None else store.scan().memories
    pref = detect_forget_request(memory.body)
    if not pref:  # a request Palinode applied although our detector declines it
        pref = next((r.pref for r in find_requests(memories) if r.path == memory.rel and r.palinode_only), None)
    if not pref:
        raise NotAForgetRequest(f"{memory.rel} contains no forget request")
    request = Request(memory.rel, pref, memory)
    records = [memory.rel]
    if broad:
        records += [r.path for r in find_requests(memories)
                    if r.norm == request.norm and r.path != memory.rel and not r.memory.archived]
    why = f'forget request withdrawn: "{pref}"'
    trailers = {"Forget-Request": memory.rel, "Retraction-Id": request.rid}
    steps: list[lifecycle.Plan] = []
    for rel, other in sorted(memories.items()):
        if rel in records:
            continue
        if other.archived and other.superseded_by in records:
            steps.append(lifecycle.plan_restore(store, rel, reason=why, trailers=trailers))
        if request.norm in other.retracted_prefs and (broad or _struck_by(store, other, request)):
            steps.append(lifecycle.plan_unretract(store, rel, pref, reason=why, trailers=trailers))
    for rel in records:
        steps.append(lifecycle.plan_archive(store, rel, reason=why, trailers=trailers))
    return WithdrawPlan(memory.rel, pref, tuple(records), tuple(s for s in steps if s.changes), broad)


def apply_withdraw(store: Store, wplan: WithdrawPlan, fault=None) -> dict[str, Any]:
    """Each step its own commit, as Palinode does; a step whose file we just
    rewrote in this withdraw is re-planned on our own output, never on a
    stranger's. Progress is journaled, so a crash between commits is reported
    by ``integrity`` and finished or rolled back by ``recover``."""
    from . import journal
    store.check_writable()
    store.git.preflight()
    entry = {"kind": "withdraw", "request": wplan.request, "pref": wplan.pref, "broad": wplan.broad,
             "total": len(wplan.steps), "done": [], "started_at": store.now().isoformat()}
    journal_path = journal.write_entry(store, entry)
    written: dict[str, str] = {}
    commits, failed = [], []
    for number, step in enumerate(wplan.steps):
        plan = step
        if step.target in written:
            current = store.load(step.target)
            if current.fingerprint == written[step.target]:
                plan = {"restore": lambda: lifecycle.plan_restore(store, step.target, step.reason, step.trailers),
                        "unretract": lambda: lifecycle.plan_unretract(store, step.target, step.pref or "",
                                                                      step.reason, step.trailers),
                        "archive": lambda: lifecycle.plan_archive(store, step.target, reason=step.reason,
                                                                  trailers=step.trailers)}[step.op]()
        if fault:
            fault(f"before_step_{number}")
        try:
            done = lifecycle.apply(store, plan, parent=entry["id"])
        except (StalePlan, PalinodeError) as exc:
            failed.append({"path": step.target, "op": step.op, "reason": str(exc)})
            break
        written[step.target] = store.load(step.target).fingerprint
        commits.append({"path": step.target, "op": step.op, "commit": done.commit, "subject": plan.commit_subject})
        entry["done"].append({"path": step.target, "op": step.op, "commit": done.commit,
                              "superseded_by": plan.superseded_by})
        if journal_path is not None:
            atomic_write(journal_path, json.dumps(entry, ensure_ascii=False))
    ledger_commit = record(store, {"action": "withdraw", "request": wplan.request, "pref": wplan.pref,
                                   "rid": retraction_id(wplan.pref), "broad": wplan.broad, "commits": commits,
                                   "failed": failed, "complete": not failed})
    journal.clear(journal_path)
    return {"request": wplan.request, "status": "partial" if failed else "withdrawn", "commits": commits,
            "failed": failed, "ledger_commit": ledger_commit}


# -- residue ---------------------------------------------------------------------
@dataclass(frozen=True)
class Mention:
    path: str
    line: int  # file line number
    kind: str  # live | struck | archived | unforgettable | request
    reason: str
    text: str

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "kind": self.kind, "reason": self.reason, "text": self.text}


def residue(store: Store, pref: str, memories: dict[str, Memory] | None = None) -> list[Mention]:
    """Every surviving mention of ``pref``, classified by whether recall would
    still surface it."""
    memories = memories if memories is not None else store.scan().memories
    matcher = Matcher.for_pref(pref)
    rid = retraction_id(pref)
    norm = normalize_pref(pref)
    found: list[Mention] = []
    for rel, memory in sorted(memories.items()):
        offset = memory.body_line_offset
        request_pref = memory.forget_pref or memory.palinode_pref
        if request_pref and normalize_pref(request_pref) == norm:
            found.append(Mention(rel, offset + 1, "request", "the retraction record itself (kept on purpose)",
                                 memory.body.strip().splitlines()[0] if memory.body.strip() else ""))
            continue
        if not memory.struck and not matcher.could_match(memory.body):
            continue  # nothing to segment: none of the pref's words, no strike marker
        spans, regions = find_mentions(memory.body, matcher)
        for span in spans:
            if memory.archived:
                kind, reason = "archived", "in an archived memory (out of default recall)"
            elif memory.is_replace_doc:
                kind, reason = "unforgettable", "living update_policy: replace document"
            else:
                kind, reason = "live", "unstruck in an active memory: recall would surface it"
            found.append(Mention(rel, span.line + offset, kind, reason, span.text))
        for region in regions:
            kind = "archived" if memory.archived else "unforgettable"
            found.append(Mention(rel, region.line + offset, kind, f"inside a {region.kind}", region.text))
        for struck in struck_spans(memory.body, rid):
            found.append(Mention(rel, struck.line + offset, "struck",
                                 "struck in place: kept in the file, projected out of search", struck.text))
    return found


# -- integrity ----------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    path: str
    kind: str
    detail: str
    severity: str = "error"  # error | warning

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "detail": self.detail, "severity": self.severity}


def integrity(store: Store, memories: dict[str, Memory] | None = None) -> list[Problem]:
    from . import journal
    memories = memories if memories is not None else store.scan().memories
    problems: list[Problem] = [
        Problem(str(item.entry.get("target") or item.entry.get("request") or item.path.name), f"interrupted_{item.kind}",
                item.summary + (" — run recover to complete or roll back" if item.can_complete or item.can_roll_back
                                else ""))
        for item in journal.pending(store)]
    # an interrupted operation explains its file's other symptoms: report only the cause
    explained = {p.path for p in problems}
    for rel, memory in sorted(memories.items()):
        if memory.superseded_by and memory.superseded_by not in memories:
            problems.append(Problem(rel, "dangling_superseded_by",
                                    f"superseded_by {memory.superseded_by} names no memory", "warning"))
        if not memory.struck and not memory.retracted_prefs:
            continue  # nothing struck, nothing recorded: no text to read
        marker_rids = {m.group(2) for m in MARKER_RE.finditer(memory.body)}
        anchored = struck_spans(memory.body)
        records = {retraction_id(p): p for p in memory.retracted_prefs}
        for rid in sorted(marker_rids - set(records)):
            problems.append(Problem(rel, "marker_without_record",
                                    f"[RETRACTED … r:{rid}] markers but no retracted_prefs entry for r:{rid}"))
        for rid, pref in sorted(records.items()):
            if rid not in marker_rids:
                problems.append(Problem(rel, "record_without_markers",
                                        f'retracted_prefs has "{pref}" (r:{rid}) but no marker carries it', "warning"))
        if records:
            text, _ = store.read_optional(history_rel_for(rel))
            logged = {e.rid for e in parse_entries(text or "")}
            for rid, pref in sorted(records.items()):
                if rid not in logged:
                    problems.append(Problem(rel, "missing_history_line",
                                            f'no history line records the retraction of "{pref}" (r:{rid})'))
        unanchored = len(list(MARKER_RE.finditer(memory.body))) - len(anchored)
        if unanchored > 0:
            problems.append(Problem(rel, "unanchored_marker",
                                    f"{unanchored} marker(s) with no struck text before them (hand edit?)"))
        for span in anchored:
            if "\n" in span.text:
                problems.append(Problem(rel, "multiline_strike",
                                        f"line {span.line + memory.body_line_offset}: a strike crosses a line break; "
                                        "Palinode 0.23's unretract cannot undo it (this tool can)", "warning"))
    return [p for p in problems if p.path not in explained or p.kind.startswith("interrupted_")]


# -- trace -----------------------------------------------------------------------------
def trace(store: Store, ref: str, memories: dict[str, Memory] | None = None) -> dict[str, Any]:
    """Why is this memory the way it is: its superseded_by chain both ways,
    the request that retired or struck it, history lines, and commits."""
    memories = memories if memories is not None else store.scan().memories
    memory = store.load(ref)
    rel = memory.rel
    forward: list[str] = []
    note = None
    current = memory
    visited = {rel}
    while current.superseded_by:
        nxt = current.superseded_by
        forward.append(nxt)
        if nxt in visited:
            note = f"cycle: {nxt} is already in the chain"
            break
        visited.add(nxt)
        if nxt not in memories:
            note = f"dangling: {nxt} does not exist"
            break
        current = memories[nxt]
    pointing: dict[str, list[str]] = {}
    for other_rel, other in memories.items():
        if other.superseded_by:
            pointing.setdefault(other.superseded_by, []).append(other_rel)

    def backward(node: str, seen: frozenset[str]) -> list[dict[str, Any]]:
        out = []
        for child in sorted(pointing.get(node, [])):
            if child in seen:
                out.append({"path": child, "cycle": True, "from": []})
            else:
                out.append({"path": child, "cycle": False, "from": backward(child, seen | {child})})
        return out

    retired_by = None
    if memory.superseded_by and memory.superseded_by in memories:
        successor = memories[memory.superseded_by]
        pref = successor.forget_pref or successor.palinode_pref  # it retired this file: Palinode took it
        if pref:
            retired_by = {"request": memory.superseded_by, "pref": pref, "rid": retraction_id(pref),
                          "coverage": round(coverage(pref, memory.body), 4), "route": "archive"}
    retractions = []
    by_norm = {r.norm: r for r in find_requests(memories)}
    for pref in memory.retracted_prefs:
        rid = retraction_id(pref)
        req = by_norm.get(normalize_pref(pref))
        retractions.append({"pref": pref, "rid": rid, "markers": len(struck_spans(memory.body, rid)),
                            "request": req.path if req else None,
                            "coverage": round(coverage(pref, memory.body), 4), "route": "strike"})
    sibling = history_rel_for(rel)
    text, _ = store.read_optional(sibling)
    return {
        "path": rel, "status": memory.status, "retired": memory.retired_reason,
        "chain_forward": forward, "chain_note": note, "chain_backward": backward(rel, frozenset({rel})),
        "retired_by": retired_by, "retractions": retractions,
        "history_file": sibling if text is not None else None,
        "history": [{"when": e.when, "text": e.text, "fact_id": e.fact_id, "rid": e.rid}
                    for e in parse_entries(text or "")],
        "commits": [{"sha": c.sha, "subject": c.subject, "author": c.author, "date": c.date, "trailers": c.trailers}
                    for c in store.git.log(rel)],
    }


# -- operation-level undo ------------------------------------------------------------
_SUBJECT_RE = re.compile(
    r"^(?P<prefix>\S+) (?P<op>archive|supersede|retract|unretract|restore): (?P<path>\S+)"
    r"(?: \((?P<n>\d+) mentions\))?(?: -> (?P<succ>\S+))?(?: <- (?P<src>\S+))?(?: \(actor: [^)]*\))?$")
_RETRACT_ENTRY_RE = re.compile(r'^(?:Retracted|Unretracted) \d+ mention\(s\) \[r:(?P<rid>[0-9a-f]{8})\]: "(?P<pref>.*?)"'
                               r'(?: \u2014 superseded by \S+| \(reason: .*\))?$')


@dataclass(frozen=True)
class Operation:
    """One lifecycle commit in the store's history (ours or Palinode's own)."""

    commit: str
    date: str
    op: str  # archive | supersede | retract | unretract | restore
    path: str
    counterpart: str | None  # the successor, the forget request, or the restored-from
    subject: str
    trailers: dict[str, str]

    def to_dict(self) -> dict[str, Any]:
        return {"commit": self.commit, "date": self.date, "op": self.op, "path": self.path,
                "counterpart": self.counterpart, "subject": self.subject, "trailers": self.trailers}


def operations(store: Store, limit: int = 500) -> list[Operation]:
    out = []
    for commit in store.git.log(limit=limit):
        match = _SUBJECT_RE.match(commit.subject)
        if not match or match.group("prefix") != store.config.commit_prefix:
            continue
        out.append(Operation(commit.sha, commit.date, match.group("op"), match.group("path"),
                             match.group("succ") or match.group("src"), commit.subject, commit.trailers))
    return out


def pref_for(store: Store, path: str, rid: str | None = None, op: str = "retract") -> str | None:
    """The pref as its request stated it, from the history sibling: by rid when
    the commit names it, else the newest entry of this kind that fits the file
    (a retraction still recorded, or an unretraction no longer recorded)."""
    memory = store.load(path)
    recorded = {retraction_id(p) for p in memory.retracted_prefs}
    verb = "Retracted" if op == "retract" else "Unretracted"
    text, _ = store.read_optional(history_rel_for(memory.rel))
    for entry in reversed(parse_entries(text or "")):
        match = _RETRACT_ENTRY_RE.match(entry.text)
        if not match or not entry.text.startswith(verb):
            continue
        if rid is not None:
            if match.group("rid") == rid:
                return match.group("pref")
        elif (match.group("rid") in recorded) == (op == "retract"):
            return match.group("pref")
    return None


def plan_undo(store: Store, operation: Operation, reason: str | None = "undone in palinode-tui") -> lifecycle.Plan:
    """The inverse of one applied operation, planned against the file as it is now."""
    if operation.op in ("archive", "supersede"):
        return lifecycle.plan_restore(store, operation.path, reason=reason)
    if operation.op == "restore":
        return lifecycle.plan_archive(store, operation.path, superseded_by=operation.counterpart, reason=reason)
    rid = operation.trailers.get("Retraction-Id")
    pref = pref_for(store, operation.path, rid, operation.op)
    if pref is None:
        raise PalinodeError(f"cannot tell which preference {operation.subject!r} struck; use unretract with --pref")
    if operation.op == "retract":
        return lifecycle.plan_unretract(store, operation.path, pref, reason=reason)
    return lifecycle.plan_retract(store, operation.path, pref, superseded_by=operation.counterpart)
