"""The reviewer's ledger, ``.palinode-audit/ledger.jsonl``: a dot-directory
with no markdown, so Palinode never indexes it, committed to git so the audit
survives a fresh clone (see docs/format.md)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ..ops.apply import commit_files
from ..ops.lock import writer_lock
from ..ops.subjects import parse_subject
from ..storage.gitstore import GitCommandFailed
from ..storage.paths import subject_path
from ..storage.records import (
    DECIDING_ACTIONS,
    RECORD_VERSION,
    CommitIntent,
    FileIntent,
    LedgerRecord,
    from_line,
    record_lines,
    step_op_id,
    to_line,
)
from ..storage.store import AUDIT_DIR, Store

LEDGER_REL = f"{AUDIT_DIR}/ledger.jsonl"
# Committed beside the ledger: git's built-in union merge keeps both sides' new
# lines, so two clones recording different decisions merge without a conflict
# (nothing is run: "union" is git's own, not a configured driver).
ATTRIBUTES_REL = f"{AUDIT_DIR}/.gitattributes"
ATTRIBUTES = "ledger.jsonl merge=union\n"
CONFLICT_MARKERS = ("<<<<<<< ", "=======", ">>>>>>> ")


def read_ledger(store: Store) -> list[LedgerRecord]:
    """Every record, believed or not, in the order history added them (a display:
    what decides a state is ``believed``)."""
    return [line.entry for line in read(store).lines]


def parse_ledger(text: str) -> list[LedgerRecord]:
    """The records of a ledger's text, in the file's order: after a merge another
    clone's lines may sit anywhere, and a line both sides added appears once. Only
    history orders them (``read``)."""
    return [entry for _line, entry in _records(text)]


def _records(text: str) -> list[tuple[str, LedgerRecord]]:
    out = []
    seen: set[str] = set()
    for line in record_lines(text):
        if line in seen or line.startswith(CONFLICT_MARKERS):
            continue
        seen.add(line)
        entry = from_line(line)
        if entry is not None:
            out.append((line, entry))
    return out


def line_id(line: str) -> str:
    """A record's id, which a later decision names in ``after``: the digest of its
    line, whose bytes a merge or a rebase keeps."""
    return hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _after(text: str, request: str) -> list[str]:
    """The ids a new decision on ``request`` is made after: the request's decisions
    this clone holds, less those another of them already names (each is known
    through it), so the list stays as short as the decisions made apart."""
    held = [(line_id(line), e) for line, e in _records(text) if _deciding(e) and e.get("request") == request]
    named = {i for _id, e in held for i in _named(e)}
    return [i for i, _e in held if i not in named]


def _deciding(entry: LedgerRecord) -> bool:
    return entry.get("action") in DECIDING_ACTIONS


def _named(entry: LedgerRecord) -> list[str]:
    after = entry.get("after")
    return [i for i in after if isinstance(i, str)] if isinstance(after, list) else []


def record(
    store: Store,
    entry: LedgerRecord,
    parent: str | None = None,
    fault: Callable[[str], None] | None = None,
    also: Sequence[LedgerRecord] = (),
    extra: Sequence[FileIntent] = (),
) -> str | None:
    """Append one decision (and ``also``, the records that belong with it,
    such as an apply's leak check) to the ledger in one commit of its own;
    ``extra``: files the decision writes, committed with it
    (a confirmed possible request's request memory).

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
        if _deciding(entry) and isinstance(entry.get("request"), str) and "after" not in entry:
            entry = {**entry, "after": _after(head, str(entry["request"]))}  # what this clone knew when deciding
        written = head + "".join(to_line(line) + "\n" for line in (entry, *(_stamped(stamp, a) for a in also)))
        named = entry.get("request") or entry.get("path")
        subject = f"palinode-audit ledger: {entry.get('action')} {subject_path(named) if named else ''}"
        request = entry.get("request")
        trailers = {"Forget-Request": request} if request else {}
        files = [FileIntent(LEDGER_REL, before, written)]
        attributes = store.read_optional(ATTRIBUTES_REL)[0]
        if attributes is None:  # the merge rule travels with the ledger from its first line on
            files.append(FileIntent(ATTRIBUTES_REL, None, ATTRIBUTES))
        files.extend(extra)
        intent = CommitIntent(
            kind="ledger",
            target=LEDGER_REL,
            subject=subject.strip(),
            trailers=trailers,
            parent=parent,
            op_id=step_op_id(parent, "ledger") if parent else None,
        )
        return commit_files(
            store,
            intent,
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


@dataclass(frozen=True)
class Line:
    """One record as the ledger holds it."""

    entry: LedgerRecord
    id: str  # line_id: what a later decision's ``after`` names
    doubt: str | None  # why history does not back it; None: believed
    source: Provenance | None  # the commit that added it


@dataclass(frozen=True)
class Ledger:
    """The ledger read with its history: every record in the order the commits
    that added them were made (a line no commit added comes last, in the file's
    order), each believed or not. History does not back a record added by no
    ledger commit of this tool, by one filed under another request, naming a
    decider other than the commit's author, or dated after the commit that
    added it: ``integrity`` reports it and it decides no request's state. A
    shallow clone's records are not checked (its older lines have no commit
    here to be checked against)."""

    lines: tuple[Line, ...]

    @functools.cached_property
    def believed(self) -> list[LedgerRecord]:
        return [line.entry for line in self.lines if line.doubt is None]

    @property
    def unbelieved(self) -> list[Unbelieved]:
        return [Unbelieved(line.entry, line.doubt) for line in self.lines if line.doubt is not None]

    def current(self, request: str) -> list[Line]:
        """The request's believed decisions that no later one was made knowing of.
        Two of them were made apart, in clones that had not synced."""
        return self._current.get(request, [])

    @functools.cached_property
    def _current(self) -> dict[str, list[Line]]:
        """Each request's current decisions, in one pass in history's order. A
        decision names in ``after`` the ones its clone held; one without it
        (written before it existed) was made knowing of every earlier one."""
        heads: dict[str, dict[str, Line]] = {}
        for line in self.lines:
            request = line.entry.get("request")
            if line.doubt is not None or not isinstance(request, str) or not _deciding(line.entry):
                continue
            known = heads.setdefault(request, {})
            if isinstance(line.entry.get("after"), list):
                for named in _named(line.entry):
                    known.pop(named, None)
            else:
                known.clear()
            known[line.id] = line
        return {request: list(known.values()) for request, known in heads.items()}

    def conflicts(self) -> dict[str, tuple[LedgerRecord, LedgerRecord]]:
        """Each request whose current decisions hold both a dismissal and an apply
        (made apart: neither knew of the other) -> the latest of each."""
        found = {request: conflict_in(lines) for request, lines in self._current.items()}
        return {request: pair for request, pair in found.items() if pair is not None}


def conflict_in(current: Iterable[Line]) -> tuple[LedgerRecord, LedgerRecord] | None:
    """(the dismissal, the apply) when ``current`` decisions hold both, else None."""
    by_action = {line.entry.get("action"): line.entry for line in current}
    if "dismiss" in by_action and "apply" in by_action:
        return by_action["dismiss"], by_action["apply"]
    return None


def read(store: Store, text: str | None = None) -> Ledger:
    """The ledger (``text``: as given, else as the store holds it) in history's
    order, each record checked against the commit that added it. One git
    process, a walk of the ledger's own commits, whenever it holds a record."""
    text = store.read_text(LEDGER_REL) if text is None else text
    records = _records(text or "")
    if not records:
        return Ledger(())
    found = provenance(store)
    check = not store.git.shallow()  # a shallow clone's older lines have no commit here to check
    rank = {line: i for i, line in enumerate(found)}
    records.sort(key=lambda r: rank.get(r[0], len(rank)))  # stable: lines no commit added keep their order
    return Ledger(
        tuple(
            Line(entry, line_id(line), _why_unbelieved(entry, found.get(line)) if check else None, found.get(line))
            for line, entry in records
        )
    )


def provenance(store: Store) -> dict[str, Provenance]:
    """Each ledger line -> the non-merge commit that first added it, in the order
    history made them (parents before children). A union
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


def _why_unbelieved(entry: LedgerRecord, source: Provenance | None) -> str | None:
    if source is None:
        return "no commit of its own added it (written by hand, or in a merge)"
    decided_by = entry.get("decided_by")
    if not source.subject.startswith(LEDGER_SUBJECT):
        if not (isinstance(decided_by, str) and decided_by == source.author):
            return f"added by commit {source.commit[:10]} ({source.subject[:60]!r}), not by a ledger commit"
        # else the decider's own commit swept our line in (an autosaving agent, a commit -a)
    else:
        request = entry.get("request")
        if isinstance(request, str) and source.request and source.request != request:
            return f"added by commit {source.commit[:10]}, which was filed for {source.request}"
        if isinstance(decided_by, str) and decided_by != source.author:
            return f"names {decided_by} as its decider, but commit {source.commit[:10]} was made by {source.author}"
    return _misdated(entry, source) if "at" in entry else None


def _misdated(entry: LedgerRecord, source: Provenance) -> str | None:
    """Why the record's ``at`` is no time its commit backs: the tool writes it
    before it commits, so no later than the commit's author date (to the
    second git keeps); a later one was written by hand."""
    try:
        when, committed = datetime.fromisoformat(str(entry.get("at"))), datetime.fromisoformat(source.date)
    except ValueError:
        return f"its time {str(entry.get('at'))[:40]!r} is no time"
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    if when.replace(microsecond=0) > committed:
        return f"dated after its commit {source.commit[:10]} of {source.date}"
    return None


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
