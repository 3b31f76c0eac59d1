"""The ``{base}-history.md`` sibling Palinode appends one line to per op (spec §3)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

HISTORY_HEADER = "---\ncategory: history\ncore: false\nstatus: archived\n---\n\n# History\n\n"
_ARCHIVED_BLOCK = "---\ncategory: history\ncore: false\nstatus: archived\n---\n\n"
_FM_RE = re.compile(r"^---\n(.*?)\n---\n", re.DOTALL)
ENTRY_RE = re.compile(r"^-\s+\[([^\]]+)\]\s?(.*?)(?:\s*<!-- fact:([^>]*?) -->)?\s*$")


# Every character str.splitlines breaks on, shown as an escape: a line break in
# a file name, a reason or a frontmatter id must not start a forged entry.
_LINE_BREAKS = str.maketrans({c: repr(c)[1:-1] for c in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def history_line(text: str, fact_id: str, when: datetime) -> str:
    """One entry: UTC minute resolution, no seconds or zone suffix."""
    text, fact_id = text.translate(_LINE_BREAKS), fact_id.translate(_LINE_BREAKS)
    return f"- [{when:%Y-%m-%d %H:%M}] {text} <!-- fact:{fact_id} -->\n"


def with_entry(existing: str | None, line: str) -> str:
    """The sibling's new text after appending ``line``. A legacy sibling gets
    ``status: archived`` first, exactly as Palinode's writer adds it."""
    if existing is None:
        return HISTORY_HEADER + line
    # Palinode reads the sibling with universal newlines, so a CRLF sibling's
    # frontmatter is found too; we keep its CRLF and write our lines in it.
    crlf = "\r\n" in existing and existing.count("\n") == existing.count("\r\n")
    if crlf:
        existing = existing.replace("\r\n", "\n")
    match = _FM_RE.match(existing)
    if not match:
        existing = _ARCHIVED_BLOCK + existing
    elif not re.search(r"^status:", match.group(1), re.MULTILINE):
        existing = existing[: match.end(1)] + "\nstatus: archived" + existing[match.end(1) :]
    if existing and not existing.endswith("\n"):
        existing += "\n"  # Palinode would glue the entry onto the last line
    result = existing + line
    return result.replace("\n", "\r\n") if crlf else result


@dataclass(frozen=True)
class HistoryEntry:
    when: str
    text: str
    fact_id: str | None
    line: int

    @property
    def rid(self) -> str | None:
        match = re.search(r"\[r:([0-9a-f]{8})\]", self.text)
        return match.group(1) if match else None


def parse_entries(text: str) -> list[HistoryEntry]:
    entries = []
    for number, line in enumerate(text.splitlines(), start=1):
        match = ENTRY_RE.match(line)
        if match:
            entries.append(HistoryEntry(match.group(1), match.group(2).strip(), match.group(3), number))
    return entries
