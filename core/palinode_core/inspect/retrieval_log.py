"""Reading Palinode's retrieval log, ``.audit/retrievals.jsonl``: one JSON
line per delivered file or chunk (Palinode 0.23's ``RetrievalLogger``), with
the delivery receipt's ``bundle_id``, ``revision`` and ``revision_basis`` when
the delivery carried one, and what Palinode's ``explain`` reads of it (policy,
scope, disposition, coverage, next transition). Every field but ``timestamp``
and ``file_path`` is optional. A resolve logs one receipt envelope
(``event_type: bundle_receipt``, no ``file_path``) for the whole delivery: it
is read as one row per record it supplied, as Palinode's own ``explain`` does.

The log is read, never written: streamed line by line (a line over
``MAX_LINE_BYTES`` is skipped without being held), its folder and files opened
without following a link, rotated siblings (``retrievals.jsonl.1``,
``retrievals.jsonl-20250601``, ``.gz``) read oldest first and named. A logged
``file_path`` is only ever a key into git history: nothing it names is opened.
Each malformed or hostile row is one problem line; the first
``MAX_PROBLEMS`` are kept, the rest counted."""

from __future__ import annotations

import errno
import gzip
import json
import operator
import os
import posixpath
import re
import stat as stat_mod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any, cast

from ..storage import safeio

LOG_DIR = ".audit"
LOG_NAME = "retrievals.jsonl"
LOG_REL = f"{LOG_DIR}/{LOG_NAME}"
_BLOCK = 1 << 20  # bytes read at a time
MAX_LINE_BYTES = 1 << 20  # a receipt envelope is capped at 256 KiB by Palinode; a delivery row is far smaller
MAX_PROBLEMS = 200
# A rotated .gz log is read up to this many times its size, plus 64 KiB, and never past GZ_MAX_BYTES:
# Palinode's rows compress about 15x (27x the barest), deflate reaches 1032x.
GZ_MAX_RATIO = 100
GZ_SLACK = 1 << 16
GZ_MAX_BYTES = 4 << 30
_PLACES_KEPT = 100_000  # distinct logged paths remembered at once (memory stays bounded)
_ROTATED_RE = re.compile(r"^retrievals\.jsonl(?:\.(\d+)|[-.]([0-9A-Za-z_-]+))?(\.gz)?$")
_OPTIONAL = (
    "mode",
    "source",
    "query",
    "session_id",
    "bundle_id",
    "revision",
    "revision_basis",
    "policy_version",
    "disposition",
    "next_transition",
)
_TEXT_OR_NONE = frozenset((str, type(None)))
_TEXT = frozenset((str,))
_FIELDS = ("timestamp", "file_path", "chunk_id", *_OPTIONAL, "scope", "coverage")
BUNDLE_RECEIPT = "bundle_receipt"  # Palinode's resolve envelope (palinode.core.retrieval_log)
_every_field = operator.itemgetter(*_FIELDS)
_FILLED = re.compile(rb"[^ \t\n\r\f\v]")  # a byte that makes a line more than blank (bytes.strip's set)
_VALUE_FIRST = frozenset(b'{["-0123456789tfnNI')  # a byte a JSON value can begin with (NaN, Infinity too)
# JSON's blanks, a BOM's first byte or a NUL (json.loads reads UTF-16 or UTF-32 then): json.loads decides
_LOADS_FIRST = frozenset(b" \t\r\xef\xfe\xff\x00")
_QUOTE = json.JSONEncoder(ensure_ascii=True, default=str).encode  # json.dumps with options builds one a call
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)


@dataclass(slots=True)
class Row:
    """One delivery row, its fields as logged (a wrong-typed optional field is None)."""

    log: str  # the log file it came from
    line: int
    timestamp: str
    epoch: float
    file_path: str  # as logged
    rel: str | None  # store-relative, or None when it names nothing inside the store
    chunk_id: str | None
    mode: str | None
    source: str | None
    query: str | None
    session_id: str | None
    bundle_id: str | None
    revision: str | None
    revision_basis: str | None
    policy_version: str | None = None
    disposition: str | None = None  # selected, replaced, conflict_side, ... as the receipt named it
    next_transition: str | None = None
    scope: list[str] | None = None  # the caller scope the server resolved ([]: no scope identity)
    coverage: dict[str, Any] | None = None  # the delivery's bounded coverage: status and reasons
    entry: int | None = None  # the supplied record's place in a resolve envelope (None: a row of its own)


# (the store path an absolute logged path outside the store names, the folder the store was in), or None
Relocate = Callable[[str], "tuple[str, str] | None"]


@dataclass
class LogReport:
    """What was read, and everything said about it, one line each."""

    files: list[dict[str, Any]] = field(default_factory=list)
    missing: bool = False
    rows: int = 0  # delivery rows yielded
    skipped: dict[str, int] = field(default_factory=dict)  # why rows were not deliveries
    problems: list[str] = field(default_factory=list)
    problem_count: int = 0
    first: str | None = None
    last: str | None = None
    envelopes: int = 0  # resolve envelopes read as the records they supplied
    moved: dict[str, int] = field(default_factory=dict)  # a folder the store was in -> rows logged under it
    relocate: Relocate | None = None  # maps a path under a folder the store was in (a store moved since)

    def problem(self, where: str, what: str) -> None:
        self.problem_count += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{where}: {what}")

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1

    def notes(self) -> list[str]:
        """The log's state in plain sentences."""
        out = []
        if self.missing:
            out.append(
                f"no retrieval log at {LOG_REL}: never written (Palinode writes it on its first delivery), "
                "or rotated or deleted since; no delivery can be shown"
            )
        # a file read only in part is always said, however many problem lines came before
        out += [f"{LOG_DIR}/{f['name']}: {f['stopped']}" for f in self.files if "stopped" in f]
        rotated = [f["name"] for f in self.files if f["name"] != LOG_NAME]
        if rotated:
            out.append(f"rotated logs read too (oldest first): {', '.join(rotated)}")
        if self.first:
            out.append(f"the log begins at {self.first}: deliveries before that are not known")
        if self.envelopes:
            out.append(
                f"{self.envelopes} resolve envelope(s) (bundle_receipt) read as the records they supplied, "
                "as Palinode's explain reads them"
            )
        for folder, count in sorted(self.moved.items()):
            out.append(
                f"{count} row(s) name files under {folder}, where the store was when they were logged: "
                "read as this store's files (the paths history holds)"
            )
        if self.problem_count > len(self.problems):
            out.append(f"{self.problem_count - len(self.problems)} more problem line(s) not shown")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": LOG_REL,
            "files": self.files,
            "missing": self.missing,
            "rows": self.rows,
            "skipped": self.skipped,
            "first": self.first,
            "last": self.last,
            "envelopes": self.envelopes,
            "moved": self.moved,
            "notes": self.notes(),
            "problems": self.problems,
            "problem_count": self.problem_count,
        }


def _quoted(value: Any, limit: int = 80) -> str:
    text = _QUOTE(value)
    return text if len(text) <= limit else text[:limit] + "…"


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (``Z`` allowed); naive times are UTC."""
    when = datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def place(file_path: str, root: str) -> tuple[str | None, str | None]:
    """(the store-relative path a logged ``file_path`` names, or None; why not).
    Palinode logs a path relative to the store or absolute, as it had it."""
    if "\x00" in file_path:
        return None, "file_path holds a NUL byte"
    text = file_path
    if text.startswith("/"):
        prefix = root.rstrip("/") + "/"
        if not text.startswith(prefix):
            return None, f"file_path {_quoted(file_path)} is outside the store; not followed"
        text = text[len(prefix) :]
    elif text.startswith("~"):
        return None, f"file_path {_quoted(file_path)} is outside the store; not followed"
    parts = [p for p in text.split("/") if p and p != "."]
    if not parts or ".." in parts:
        return None, f"file_path {_quoted(file_path)} climbs out of the store ('..'); not followed"
    return posixpath.join(*parts), None


def _log_files(dir_fd: int) -> list[str]:
    """The live log and its rotated siblings, oldest first (higher numbers are older)."""
    found = []
    for name in os.listdir(dir_fd):
        match = _ROTATED_RE.match(name)
        if match is None:
            continue
        number, stamp, _gz = match.groups()
        if name == LOG_NAME:
            key: tuple[int, Any] = (2, 0)
        elif number is not None:
            key = (1, -int(number))
        else:
            key = (0, stamp or name)
        found.append((key, name))
    return [name for _key, name in sorted(found)]


def _lines(handle: IO[bytes]) -> Iterator[tuple[int, bytes | None]]:
    """(line number, line) for each line holding more than blanks, newline
    kept (None for one longer than MAX_LINE_BYTES, never held whole). Read a
    block at a time (a readline per row cost 15 µs, four times the JSON parse
    of the row); a run of blank lines is skipped and counted inside the regex
    and ``bytes.count``, never a line at a time (a blank line had cost as much
    as a row: 38 times a row's cost per byte)."""
    ended = 0  # lines ended so far
    pending = bytearray()  # the start of the current line, never beyond the limit
    too_long = False  # the current line is past the limit: dropped, only whether it holds more than blanks kept
    filled = False  # the current line's dropped or pending part holds more than blanks
    while True:
        block = handle.read(_BLOCK)
        if not block:
            if filled:  # the last line, without its newline
                yield ended + 1, None if too_long else bytes(pending)
            return
        first = block.find(b"\n")
        head = block if first < 0 else block[:first]
        filled = filled or _FILLED.search(head) is not None
        if too_long or len(pending) + len(head) > MAX_LINE_BYTES:
            too_long = True
            pending.clear()
        else:
            pending += head
        if first < 0:
            continue
        ended += 1
        if filled:  # the line begun in an earlier block (or the block's first line) ends here
            yield ended, None if too_long else bytes(pending) + b"\n"
        pending.clear()
        too_long = filled = False
        last = block.rfind(b"\n")
        pos = first + 1
        while True:  # the block's whole lines after its first: only those holding more than blanks
            hit = _FILLED.search(block, pos, last)
            if hit is None:
                break
            start = block.rfind(b"\n", pos, hit.start()) + 1 or pos
            stop = block.find(b"\n", hit.start())
            ended += block.count(b"\n", pos, start) + 1
            yield ended, None if stop - start > MAX_LINE_BYTES else block[start : stop + 1]
            pos = stop + 1
        ended += block.count(b"\n", pos, last + 1)
        tail = block[last + 1 :]
        filled = _FILLED.search(tail) is not None
        if len(tail) > MAX_LINE_BYTES:
            too_long = True
        else:
            pending += tail


class _TooInflated(Exception):
    pass


class _Inflated:
    """A rotated ``.gz`` log, read up to GZ_MAX_RATIO times its size (and
    GZ_MAX_BYTES): a few KiB of gzip can hold millions of lines."""

    def __init__(self, raw: IO[bytes], size: int) -> None:
        self._gzip = gzip.GzipFile(fileobj=raw)
        self._size = size
        self._limit = min(GZ_MAX_BYTES, GZ_MAX_RATIO * size + GZ_SLACK)
        self._read = 0

    def read(self, n: int) -> bytes:
        if self._read >= self._limit:  # its lines up to the limit are read; anything past it is said
            if self._gzip.read(1):
                raise _TooInflated(
                    f"stopped reading after {self._limit:,} bytes, over {GZ_MAX_RATIO} times its {self._size:,} "
                    "(a rotated log expands about 15 times, a gzip bomb far more); the rest was not read"
                )
            return b""
        block = self._gzip.read(min(n, self._limit - self._read))
        self._read += len(block)
        return block


def read_rows(root: str | os.PathLike[str], report: LogReport, since: float | None = None) -> Iterator[Row]:
    """Every delivery row of the log and its rotated siblings; ``report`` says
    what was read and what was wrong. ``since``: only rows at or after it (epoch)."""
    base = os.fspath(root)
    root_text = os.path.realpath(base)
    try:
        with safeio.open_dir(base, [LOG_DIR]) as dir_fd:
            names = _log_files(dir_fd)
            if LOG_NAME not in names:
                report.missing = True
            for name in names:
                try:
                    fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
                except OSError as exc:
                    report.problem(f"{LOG_DIR}/{name}", f"not read: {exc.strerror or exc}")
                    continue
                with os.fdopen(fd, "rb") as raw:
                    st = os.fstat(raw.fileno())
                    if not stat_mod.S_ISREG(st.st_mode):
                        report.problem(f"{LOG_DIR}/{name}", "not a regular file; not read")
                        continue
                    entry = {"name": name, "bytes": st.st_size}
                    report.files.append(entry)
                    handle: Any = _Inflated(raw, st.st_size) if name.endswith(".gz") else raw
                    try:
                        yield from _rows_of(handle, f"{LOG_DIR}/{name}", root_text, base, report, since)
                    except _TooInflated as exc:  # what was read stands
                        entry["stopped"] = str(exc)
                    except (OSError, EOFError) as exc:  # a damaged .gz: what was read stands
                        entry["stopped"] = f"stopped reading: {exc}"
    except FileNotFoundError:
        report.missing = True
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) or isinstance(exc, safeio.LinkRefused):
            report.problem(LOG_DIR, "is a symbolic link (or not a folder); not followed, no log read")
        else:
            report.problem(LOG_DIR, f"not read: {exc.strerror or exc}")


def _json_line(line: bytes, scan: Any) -> Any:
    """The line's JSON value; ValueError or RecursionError when it holds none.
    The C scanner straight on the decoded text (a third of ``json.loads``'s
    cost per row goes to sniffing the encoding and matching blanks), and a line
    no JSON value can begin is refused without a parse; a line opening with a
    BOM, blanks or a NUL, or one that is not UTF-8, goes through ``json.loads``,
    so both accept exactly the same lines."""
    first = line[0]
    if first in _LOADS_FIRST or line[1:2] == b"\0":
        return json.loads(line)
    if first not in _VALUE_FIRST:
        raise ValueError("no JSON value begins so")
    try:
        text = line.decode()
    except UnicodeDecodeError:
        return json.loads(line)  # it decodes with surrogatepass
    try:
        value, end = scan(text, 0)
    except StopIteration:
        raise ValueError("no JSON value") from None
    if text[end:].strip(" \t\n\r"):  # JSON's own blanks, no others
        raise ValueError("extra data")
    return value


def _rows_of(
    handle: IO[bytes], where: str, root_text: str, base: str, report: LogReport, since: float | None
) -> Iterator[Row]:
    scan = cast(Any, json.JSONDecoder()).scan_once  # the C scanner json.loads itself uses
    # A log names the same few thousand files a million times: each is placed once.
    places: dict[str, tuple[str | None, str | None, str | None]] = {}
    for number, line in _lines(handle):
        if line is None:
            report.problem(f"{where}:{number}", f"line longer than {MAX_LINE_BYTES} bytes; skipped")
            continue
        try:
            data = _json_line(line, scan)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser's depth
            report.problem(f"{where}:{number}", "not a JSON line; skipped")
            continue
        if data.__class__ is not dict:
            report.problem(f"{where}:{number}", f"a JSON {type(data).__name__}, not an object; skipped")
            continue
        row = _row_of(data, where, number, root_text, base, report, since, places)
        if row is None:
            continue
        if isinstance(row, Row):
            yield row
        else:  # a resolve envelope: the records it supplied
            yield from row


def _row_of(
    data: dict[str, Any],
    where: str,
    number: int,
    root_text: str,
    base: str,
    report: LogReport,
    since: float | None,
    places: dict[str, tuple[str | None, str | None, str | None]],
) -> Row | list[Row] | None:
    try:  # every field at once when the row has them all, as Palinode writes it
        fields = _every_field(data)
    except KeyError:
        fields = tuple(map(data.get, _FIELDS))
    (
        timestamp,
        file_path,
        chunk,
        mode,
        source,
        query,
        session,
        bundle,
        revision,
        basis,
        policy,
        disposition,
        upcoming,
        scope,
        coverage,
    ) = fields
    if file_path is None and data.get("event_type") is not None:
        if data["event_type"] == BUNDLE_RECEIPT:
            return _envelope(data, where, number, root_text, base, report, since, places)
        report.skip("an event that delivered no file")
        return None
    if file_path == "":
        report.skip("search that delivered nothing")
        return None
    if not isinstance(timestamp, str):
        report.problem(f"{where}:{number}", f"timestamp is {_quoted(timestamp)}, not a time; skipped")
        return None
    try:
        epoch = parse_time(timestamp).timestamp()
    except ValueError:
        report.problem(f"{where}:{number}", f"timestamp {_quoted(timestamp)} is not an ISO 8601 time; skipped")
        return None
    if not isinstance(file_path, str):
        report.problem(f"{where}:{number}", f"file_path is {_quoted(file_path)}, not a path; skipped")
        return None
    if since is not None and epoch < since:
        report.skip("before --since")
        return None
    placed = places.get(file_path)
    if placed is None:
        placed = _place(file_path, root_text, base, report, places)
    rel, why, moved = placed
    if why is not None:
        report.problem(f"{where}:{number}", why)
    elif moved is not None:
        report.moved[moved] = report.moved.get(moved, 0) + 1
    texts = (mode, source, query, session, bundle, revision, basis, policy, disposition, upcoming)
    if not _TEXT_OR_NONE.issuperset(map(type, texts)):
        fixed = list(texts)
        for i, value in enumerate(texts):
            if value is not None and not isinstance(value, str):
                report.problem(f"{where}:{number}", f"{_OPTIONAL[i]} is {_quoted(value)}, not text; ignored")
                fixed[i] = None
        mode, source, query, session, bundle, revision, basis, policy, disposition, upcoming = fixed
    if scope is not None and (scope.__class__ is not list or not _TEXT.issuperset(map(type, scope))):
        report.problem(f"{where}:{number}", f"scope is {_quoted(scope)}, not a list of scopes; ignored")
        scope = None
    if coverage is not None and not _is_coverage(coverage):
        report.problem(f"{where}:{number}", f"coverage is {_quoted(coverage)}, not a coverage; ignored")
        coverage = None
    if chunk is not None and chunk.__class__ is not str:
        if chunk.__class__ is int:
            chunk = str(chunk)
        else:
            report.problem(f"{where}:{number}", f"chunk_id is {_quoted(chunk)}, not an id; ignored")
            chunk = None
    report.rows += 1
    if report.first is None:
        report.first = timestamp
    report.last = timestamp
    return Row(
        where,
        number,
        timestamp,
        epoch,
        file_path,
        rel,
        chunk,
        mode,
        source,
        query,
        session,
        bundle,
        revision,
        basis,
        policy,
        disposition,
        upcoming,
        scope,
        coverage,
    )


def _place(
    file_path: str,
    root_text: str,
    base: str,
    report: LogReport,
    places: dict[str, tuple[str | None, str | None, str | None]],
) -> tuple[str | None, str | None, str | None]:
    """(the store path a logged path names or None, why not, the folder the
    store was in when it was logged if not where it is), kept for the next row."""
    rel, why = place(file_path, root_text)
    if rel is None and file_path.startswith("/") and base != root_text:
        rel, why = place(file_path, base)  # logged through the link the store was opened by
    moved = None
    if rel is None and file_path.startswith("/") and report.relocate is not None:
        found = report.relocate(file_path)  # a folder the store was in when the row was logged
        if found is not None:
            (rel, moved), why = found, None
    if len(places) >= _PLACES_KEPT:
        places.clear()
    placed = places[file_path] = (rel, why, moved)
    return placed


def _placed(
    file_path: str,
    where: str,
    number: int,
    root_text: str,
    base: str,
    report: LogReport,
    places: dict[str, tuple[str | None, str | None, str | None]],
) -> str | None:
    """The store path a logged path names (each distinct one placed once), or None."""
    rel, why, moved = places.get(file_path) or _place(file_path, root_text, base, report, places)
    if why is not None:
        report.problem(f"{where}:{number}", why)
    elif moved is not None:
        report.moved[moved] = report.moved.get(moved, 0) + 1
    return rel


def _is_coverage(value: Any) -> bool:
    """A receipt's coverage: an object of text, or lists of text (``{"status": ..., "reasons": [...]}``)."""
    if (
        value.__class__ is dict
        and len(value) == 2
        and value.get("reasons") == []
        and value.get("status").__class__ is str
    ):
        return True  # the shape of nearly every row, said at once
    return value.__class__ is dict and all(
        v is None or v.__class__ is str or (v.__class__ is list and _TEXT.issuperset(map(type, v)))
        for v in value.values()
    )


def _envelope(
    data: dict[str, Any],
    where: str,
    number: int,
    root_text: str,
    base: str,
    report: LogReport,
    since: float | None,
    places: dict[str, tuple[str | None, str | None, str | None]],
) -> list[Row] | None:
    """A resolve envelope as the rows of the records it supplied, as Palinode's
    ``explain_delivery`` expands it: each record's ref as ``<ref>.md``, its
    revision and disposition, the receipt's policy, scope, coverage and next
    transition, ``source: resolve``. No query and no session: Palinode logs none."""
    timestamp, receipt, bundle = data.get("timestamp"), data.get("receipt"), data.get("bundle_id")
    supplied = receipt.get("supplied") if receipt.__class__ is dict else None
    if not isinstance(timestamp, str) or supplied.__class__ is not list:
        report.problem(f"{where}:{number}", "a resolve envelope without a time or its supplied records; skipped")
        return None
    try:
        epoch = parse_time(timestamp).timestamp()
    except ValueError:
        report.problem(f"{where}:{number}", f"timestamp {_quoted(timestamp)} is not an ISO 8601 time; skipped")
        return None
    if since is not None and epoch < since:
        report.skip("before --since")
        return None
    if not supplied:
        report.skip("resolve that delivered nothing")
        return None
    head = cast(dict[str, Any], receipt)
    texts = [v if isinstance(v := head.get(k), str) else None for k in ("policy_version", "next_transition")]
    scope, coverage = head.get("scope"), head.get("coverage")
    if scope is not None and (scope.__class__ is not list or not _TEXT.issuperset(map(type, scope))):
        scope = None
    if coverage is not None and not _is_coverage(coverage):
        coverage = None
    rows = []
    for k, record in enumerate(supplied):
        ref = record.get("ref") if record.__class__ is dict else None
        if not isinstance(ref, str) or not ref:
            report.problem(f"{where}:{number}", f"supplied record {k} names no ref; skipped")
            continue
        file_path = ref + ".md"
        rel = _placed(file_path, where, number, root_text, base, report, places)
        revision, basis, disposition = (
            v if isinstance(v := record.get(key), str) else None
            for key in ("revision", "revision_basis", "disposition")
        )
        rows.append(
            Row(
                where,
                number,
                timestamp,
                epoch,
                file_path,
                rel,
                None,
                None,
                "resolve",
                None,
                None,
                bundle if isinstance(bundle, str) else None,
                revision,
                basis,
                texts[0],
                disposition,
                texts[1],
                scope,
                coverage,
                k,
            )
        )
    report.envelopes += 1
    report.rows += len(rows)
    if report.first is None:
        report.first = timestamp
    report.last = timestamp
    return rows
