"""Commits as this tool reads and writes them: a commit's summary from
``git log``, its trailers, and a message whose subject and trailers no file
name can break or forge (docs/format.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..errors import GitError

_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    author: str
    date: str  # ISO 8601 author date
    trailers: dict[str, str] = field(default_factory=dict)
    files: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        return self.sha[:7]


def parse_trailers(body: str) -> dict[str, str]:
    trailers: dict[str, str] = {}
    for line in body.split("\n"):  # git's lines: a U+2028 in a value is no line of its own
        line = line.removesuffix("\r")
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key and key[0].isupper():
            trailers[key] = value.strip()
    return trailers


def escape_control(text: str) -> str:
    """Control characters (a newline above all) as visible escapes, so a file
    name can never start a new line in a commit message."""
    return _CONTROL_RE.sub(
        lambda m: {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(m.group(), f"\\x{ord(m.group()):02x}"), text
    )


def commit_message(subject: str, trailers: dict[str, str] | None) -> str:
    """One subject line and ``Key: value`` trailers, none able to forge another."""
    message = escape_control(subject)
    lines = []
    for key, value in (trailers or {}).items():
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9-]*", key):
            raise GitError(f"refusing a commit trailer named {escape_control(key)!r}")
        lines.append(f"{key}: {escape_control(str(value))}")
    return message + ("\n\n" + "\n".join(lines) if lines else "")
