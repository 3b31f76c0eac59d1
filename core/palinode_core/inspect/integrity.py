"""Integrity: strike markers, ``retracted_prefs`` records and history lines
that disagree, dangling links, and operations a crash interrupted."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from ..forget.ledger import CONFLICT_MARKERS, LEDGER_REL, parse_ledger, read, unmatched_commits
from ..ops import journal
from ..storage.memory import Memory
from ..storage.paths import history_rel_for
from ..storage.records import LedgerRecord, record_lines
from ..storage.store import AUDIT_DIR, Store
from ..text.history import parse_entries
from ..text.markdown import MARKER_RE, struck_spans
from ..text.words import retraction_id

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    path: str
    kind: str
    detail: str
    severity: Severity = "error"

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "detail": self.detail, "severity": self.severity}


def integrity(store: Store, memories: Mapping[str, Memory], *, interrupted: bool = True) -> list[Problem]:
    """Every problem in ``memories``; with ``interrupted``, the crash journal's
    and stray temp files too (a store read from history has neither)."""
    items = journal.pending(store) if interrupted else []
    problems: list[Problem] = [
        Problem(
            item.target or item.path.name,
            f"interrupted_{item.kind}",
            item.summary
            + (" — run recover to complete or roll back" if item.can_complete or item.can_roll_back else ""),
            "warning" if item.live else "error",
        )
        for item in items
    ]
    unfinished = store.git.in_progress() if interrupted else None
    if unfinished:
        problems += [
            Problem(rel, "unmerged_file", f"{unfinished} left this file with conflicts: finish or abort it with git")
            for rel in store.git.unmerged()
        ]
    ledger = store.read_text(LEDGER_REL) or ""
    conflicted = any(line.startswith(CONFLICT_MARKERS) for line in record_lines(ledger))
    if conflicted:
        problems.append(
            Problem(
                LEDGER_REL,
                "ledger_conflict",
                "the ledger holds merge conflict markers: decisions are read without them until the merge is "
                "finished (keep both sides' lines, git add, commit) or aborted",
            )
        )
    # mid-merge the conflict is the problem; an interrupted apply's own line is not committed yet
    checked = "" if conflicted else ledger if not items else store.git.blob_at(store.git.tip(), LEDGER_REL) or ""
    decided = read(store, checked)
    for doubt in [*decided.unbelieved, *unmatched_commits(store, parse_ledger(checked))]:
        what = doubt.entry.get("request") or doubt.entry.get("path") or "?"
        problems.append(
            Problem(
                LEDGER_REL,
                "ledger_unbacked",
                f"the {doubt.entry.get('action')} record for {what} of {doubt.entry.get('at')} is not believed: "
                f"{doubt.why}",
            )
        )
    # our atomic writes' temp files: in any memory's folder, the audit folder, or one a journal names
    folders = {AUDIT_DIR, ""} | {rel.rpartition("/")[0] for rel in memories}
    folders |= {rel.rpartition("/")[0] for item in items for rel in item.writes}
    if interrupted and not any(item.live for item in items):
        problems += [
            Problem(rel, "temp_file", "a temp file an interrupted write left behind; recover removes it")
            for rel in journal.temp_files(store, folders)
        ]
    # an interrupted operation explains its file's other symptoms: report only the cause
    explained = {p.path for p in problems} | {rel for item in items for rel in (*item.step_targets, *item.writes)}
    for rel, memory in sorted(memories.items()):
        if memory.superseded_by and memory.superseded_by not in memories:
            problems.append(
                Problem(
                    rel, "dangling_superseded_by", f"superseded_by {memory.superseded_by} names no memory", "warning"
                )
            )
        problems += chain_problems(rel, memory, partial(_history_text, store, rel))
    # reviewers' decisions that disagree: a symptom of no other problem, never explained by one
    conflicts = [
        Problem(request, "decision_conflict", _conflict_detail(dismissal, applied))
        for request, (dismissal, applied) in decided.conflicts().items()
    ]
    return [
        p
        for p in problems
        if p.path not in explained or p.kind.startswith(("interrupted_", "temp_", "ledger_", "unmerged_"))
    ] + conflicts


def _conflict_detail(dismissal: LedgerRecord, applied: LedgerRecord) -> str:
    def who(record: LedgerRecord) -> str:
        return f"{record.get('decided_by') or 'a reviewer'} at {record.get('at')}"

    return (
        f"dismissed by {who(dismissal)} and applied by {who(applied)}, neither knowing of the other "
        "(clones that had not synced): decide again: withdraw it (puts back what it changed), "
        "or apply it with --reopen"
    )


def _history_text(store: Store, rel: str) -> str | None:
    return store.read_optional(history_rel_for(rel))[0]


def chain_problems(rel: str, memory: Memory, history_text: Callable[[], str | None]) -> list[Problem]:
    """Markers, ``retracted_prefs`` records and history lines of one memory
    that disagree. ``history_text`` is called only when records need it."""
    problems: list[Problem] = []
    if not memory.struck and not memory.retracted_prefs:
        return problems  # nothing struck, nothing recorded: no text to read
    marker_rids = {m.group(2) for m in MARKER_RE.finditer(memory.body)}
    anchored = struck_spans(memory.body)
    records = {retraction_id(p): p for p in memory.retracted_prefs}
    for rid in sorted(marker_rids - set(records)):
        problems.append(
            Problem(
                rel, "marker_without_record", f"[RETRACTED … r:{rid}] markers but no retracted_prefs entry for r:{rid}"
            )
        )
    for rid, pref in sorted(records.items()):
        if rid not in marker_rids:
            problems.append(
                Problem(
                    rel,
                    "record_without_markers",
                    f'retracted_prefs has "{pref}" (r:{rid}) but no marker carries it',
                    "warning",
                )
            )
    if records:
        logged = {e.rid for e in parse_entries(history_text() or "")}
        for rid, pref in sorted(records.items()):
            if rid not in logged:
                problems.append(
                    Problem(
                        rel, "missing_history_line", f'no history line records the retraction of "{pref}" (r:{rid})'
                    )
                )
    unanchored = len(list(MARKER_RE.finditer(memory.body))) - len(anchored)
    if unanchored > 0:
        problems.append(
            Problem(rel, "unanchored_marker", f"{unanchored} marker(s) with no struck text before them (hand edit?)")
        )
    for span in anchored:
        if "\n" in span.text:
            problems.append(
                Problem(
                    rel,
                    "multiline_strike",
                    f"line {span.line + memory.body_line_offset}: a strike crosses a line break; "
                    "Palinode 0.23's unretract cannot undo it (this tool can)",
                    "warning",
                )
            )
    return problems
