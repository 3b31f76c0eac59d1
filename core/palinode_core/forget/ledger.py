"""The reviewer's ledger, ``.palinode-audit/ledger.jsonl``: a dot-directory
with no markdown, so Palinode never indexes it, committed to git so the audit
survives a fresh clone (see docs/format.md)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..ops.apply import commit_files, step_op_id
from ..ops.lock import writer_lock
from ..ops.subjects import parse_subject
from ..storage.gitstore import GitCommandFailed
from ..storage.paths import subject_path
from ..storage.records import RECORD_VERSION, LedgerRecord, from_line, record_lines, to_line
from ..storage.store import AUDIT_DIR, Store

LEDGER_REL = f"{AUDIT_DIR}/ledger.jsonl"
# Committed beside the ledger: git's built-in union merge keeps both sides' new
# lines, so two clones recording different decisions merge without a conflict
# (nothing is run: "union" is git's own, not a configured driver).
ATTRIBUTES_REL = f"{AUDIT_DIR}/.gitattributes"
ATTRIBUTES = "ledger.jsonl merge=union\n"
CONFLICT_MARKERS = ("<<<<<<< ", "=======", ">>>>>>> ")


def read_ledger(store: Store) -> list[LedgerRecord]:
    text = store.read_text(LEDGER_REL)  # a snapshot store reads it from history
    if text is None:
        return []
    return parse_ledger(text)


def parse_ledger(text: str) -> list[LedgerRecord]:
    """The decisions, oldest first: after a merge another clone's lines may sit
    after ours whatever their time, and a line both sides added appears once."""
    entries = []
    seen: set[str] = set()
    for line in record_lines(text):
        if line in seen:
            continue
        seen.add(line)
        entry = from_line(line)
        if entry is not None:
            entries.append(entry)
    entries.sort(key=lambda e: str(e.get("at") or ""))  # stable: lines of one time keep their order
    return entries


def record(
    store: Store,
    entry: LedgerRecord,
    parent: str | None = None,
    fault: Callable[[str], None] | None = None,
    also: Sequence[LedgerRecord] = (),
) -> str | None:
    """Append one decision (and ``also``, the records that belong with it,
    such as an apply's leak check) to the ledger in one commit of its own.

    The read-append-commit runs under the store's writer lock, so two
    instances never lose each other's decision; it is journaled like any
    commit (``parent`` names the transaction it belongs to)."""
    store.check_writable()
    store.git.preflight()
    at = store.now().isoformat()
    # who decided, as git names them: the same identity the ledger commit is authored by
    stamp: LedgerRecord = {"at": at, "v": RECORD_VERSION, "decided_by": store.git.identity()}
    entry = _stamped(stamp, entry)
    with writer_lock(store):
        before = store.read_optional(LEDGER_REL)[0]  # refuses a linked ledger or folder
        head = before or ""
        if head and not head.endswith("\n"):
            head += "\n"
        after = head + "".join(to_line(line) + "\n" for line in (entry, *(_stamped(stamp, a) for a in also)))
        named = entry.get("request") or entry.get("path")
        subject = f"palinode-audit ledger: {entry.get('action')} {subject_path(named) if named else ''}"
        trailers = {"Forget-Request": entry["request"]} if entry.get("request") else {}
        files = [{"rel": LEDGER_REL, "before": before, "after": after}]
        attributes = store.read_optional(ATTRIBUTES_REL)[0]
        if attributes is None:  # the merge rule travels with the ledger from its first line on
            files.append({"rel": ATTRIBUTES_REL, "before": None, "after": ATTRIBUTES})
        return commit_files(
            store,
            {
                "kind": "ledger",
                "target": LEDGER_REL,
                "subject": subject.strip(),
                "trailers": trailers,
                "parent": parent,
                "op_id": step_op_id(parent, "ledger") if parent else None,
            },
            files,
            fault,
            steps=("after_ledger_write",),
        )


def _stamped(stamp: LedgerRecord, entry: LedgerRecord) -> LedgerRecord:
    out = stamp.copy()
    out.update(entry)  # the record's own keys win: recovery writes a journaled record as it was
    return out


def decisions_for(ledger: list[LedgerRecord], request_path: str) -> list[LedgerRecord]:
    return [e for e in ledger if e.get("request") == request_path]


LEDGER_SUBJECT = "palinode-audit ledger"


@dataclass(frozen=True)
class Provenance:
    """The commit that added one ledger line: who recorded it, when, under what subject."""

    commit: str
    subject: str
    author: str  # Name <email>
    date: str
    request: str  # its Forget-Request trailer, or ""


@dataclass(frozen=True)
class Unbelieved:
    """A ledger record that history does not back, and why."""

    entry: LedgerRecord
    why: str


def provenance(store: Store) -> dict[str, Provenance]:
    """Each ledger line -> the non-merge commit that first added it. A union
    merge keeps each side's own commit as the one that added its lines, and a
    rebase replays them as commits of the same kind; a line that only a merge
    (a hand resolution) or a stranger's commit added is not ours."""
    fmt = "%x1e%H%x1f%s%x1f%an <%ae>%x1f%aI%x1f%(trailers:key=Forget-Request,valueonly,separator=%x2C)%x1f"
    try:
        out = store.git.run_bytes(
            "log",
            "-p",
            "--no-merges",
            "--topo-order",
            "--reverse",
            "--no-renames",
            "--no-ext-diff",
            "--no-textconv",
            "--no-color",
            "--unified=0",
            f"--format={fmt}",
            store.git.tip(),
            "--",
            LEDGER_REL,
            read=True,
        ).decode("utf-8", "replace")
    except GitCommandFailed:
        return {}  # no history yet
    found: dict[str, Provenance] = {}
    for record in out.split("\x1e")[1:]:
        fields = record.split("\x1f")
        if len(fields) < 6:
            continue
        sha, subject, author, date, request = (f.strip("\n") for f in fields[:5])
        who = Provenance(sha, subject, author, date, request)
        for line in "\x1f".join(fields[5:]).split("\n"):
            if line.startswith("+") and not line.startswith("+++ "):
                found.setdefault(line[1:], who)
    return found


def unbelieved(store: Store, text: str | None = None) -> list[Unbelieved]:
    """The ledger's records that its history does not back: added by no ledger
    commit of this tool, by one filed under another request, or naming a
    decider other than the commit's author. Such a record is reported by
    ``integrity`` and decides no request's state. Empty for a shallow clone,
    whose older lines have no commit here to be checked against."""
    text = store.read_text(LEDGER_REL) if text is None else text
    if not text or store.git.shallow():
        return []
    found = provenance(store)
    out: list[Unbelieved] = []
    seen: set[str] = set()
    for line in record_lines(text):
        if line in seen or line.startswith(CONFLICT_MARKERS):
            continue
        seen.add(line)
        entry = from_line(line)
        if entry is None:
            continue
        why = _why_unbelieved(entry, found.get(line))
        if why:
            out.append(Unbelieved(entry, why))
    return out


def _why_unbelieved(entry: LedgerRecord, source: Provenance | None) -> str | None:
    if source is None:
        return "no commit of its own added it (written by hand, or in a merge)"
    decided_by = entry.get("decided_by")
    if not source.subject.startswith(LEDGER_SUBJECT):
        if isinstance(decided_by, str) and decided_by == source.author:
            return None  # the decider's own commit swept our line in (an autosaving agent, a commit -a)
        return f"added by commit {source.commit[:10]} ({source.subject[:60]!r}), not by a ledger commit"
    request = entry.get("request")
    if isinstance(request, str) and source.request and source.request != request:
        return f"added by commit {source.commit[:10]}, which was filed for {source.request}"
    if isinstance(decided_by, str) and decided_by != source.author:
        return f"names {decided_by} as its decider, but commit {source.commit[:10]} was made by {source.author}"
    return None


def believed(store: Store, ledger: list[LedgerRecord]) -> list[LedgerRecord]:
    """``ledger`` without the records history does not back."""
    doubted = unbelieved(store)
    if not doubted:
        return ledger
    keys = {json.dumps(d.entry, sort_keys=True) for d in doubted}
    return [e for e in ledger if json.dumps(e, sort_keys=True) not in keys]


def unmatched_commits(store: Store, ledger: list[LedgerRecord]) -> list[Unbelieved]:
    """Apply and withdraw records naming a commit that history does not hold:
    not by its sha, not by its Operation-Id (a rebase rewrites the sha), nor as
    the same operation for the same request (a rebase drops a commit another
    clone had already made: one application, recorded twice)."""
    claims = [
        (entry, item)
        for entry in ledger
        if entry.get("action") in ("apply", "withdraw")
        for item in [*(entry.get("approved") or []), *(entry.get("commits") or [])]
        if isinstance(item, dict) and isinstance(item.get("commit"), str)
    ]
    if not claims:
        return []
    fmt = "%H%x1f%(trailers:key=Operation-Id,valueonly,separator=%x2C)%x1f%(trailers:key=Forget-Request,valueonly,separator=%x2C)%x1f%s"
    try:
        out = store.git.run("log", f"--format={fmt}", store.git.tip(), read=True)
    except GitCommandFailed:
        out = ""
    shas: set[str] = set()
    op_ids: set[str] = set()
    done: set[tuple[str, str]] = set()  # (request, path) of each operation filed for a request
    for line in out.split("\n"):  # a subject may hold U+2028: a record per newline only
        sha, op_id, request, subject = [*line.split("\x1f", 3), "", "", ""][:4]
        shas.add(sha)
        op_ids.add(op_id)
        parsed = parse_subject(subject, store.config.commit_prefix)
        if parsed is not None:
            done.add((request or parsed.counterpart or "", parsed.path))
    out_list: list[Unbelieved] = []
    for entry, item in claims:
        if item["commit"] in shas or item.get("op_id") in op_ids:
            continue
        if (str(entry.get("request") or ""), str(item.get("path") or "")) in done:
            continue
        out_list.append(
            Unbelieved(
                entry, f"names commit {str(item['commit'])[:10]} ({item.get('path')}), which history does not hold"
            )
        )
    return out_list
