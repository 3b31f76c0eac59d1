"""Text for people, the primitives: ``Text`` (lines, our ANSI styles only on a
terminal, tables, word diffs) and ``p``, through which every store string passes
before any colour of ours is added, so store text never becomes an escape."""

from __future__ import annotations

import difflib
import re
import shutil
from typing import Any

from ..text.sanitize import printable

WORD_DIFF_MAX = 4000  # words on a changed line shown as words; past it the line is shown whole

_RESET = "\x1b[0m"
_STYLES = {
    "add": "\x1b[32m",
    "del": "\x1b[31m",
    "hunk": "\x1b[36m",
    "head": "\x1b[1m",
    "dim": "\x1b[2m",
    "warn": "\x1b[33m",
}


class Text:
    """Lines for a person; ``colour`` decides whether our ANSI styles are added."""

    def __init__(self, colour: bool, exact: bool = False, width: int | None = None) -> None:
        self.colour = colour
        self.exact = exact  # whole-line diffs, byte for byte
        self.width = width or shutil.get_terminal_size((100, 24)).columns
        self.lines: list[str] = []

    def style(self, text: str, name: str) -> str:
        return f"{_STYLES[name]}{text}{_RESET}" if self.colour else text

    def add(self, line: str = "") -> None:
        self.lines.append(line)

    def table(self, headers: list[str], rows: list[list[str]], indent: str = "  ") -> None:
        """Columns sized to their widest cell; every cell already printable. A cell is
        one line (a note's newline never makes a row of its own)."""
        if not rows:
            return
        rows = [[one_line(cell) for cell in r] for r in rows]
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
        self.add(
            indent + self.style("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip(), "head")
        )
        for row in rows:
            self.add(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())

    def diff(self, diff: str, indent: str = "    ") -> None:
        """A unified diff; a changed line is shown as words (the struck and added
        words marked, wrapped to the terminal), unless ``exact``."""
        lines = printable(diff).splitlines()
        i = 0
        while i < len(lines):
            j = i
            while j < len(lines) and lines[j].startswith("-") and not lines[j].startswith("---"):
                j += 1
            k = j
            while k < len(lines) and lines[k].startswith("+") and not lines[k].startswith("+++"):
                k += 1
            if not self.exact and j > i and k - j == j - i:
                for old, new in zip(lines[i:j], lines[j:k], strict=True):
                    self._word_line(old[1:], new[1:], indent)
                i = k
                continue
            self._diff_line(lines[i], indent)
            i += 1

    def _word_line(self, old: str, new: str, indent: str) -> None:
        old_words, new_words = re.split(r"(\s+)", old), re.split(r"(\s+)", new)
        if len(old_words) + len(new_words) > WORD_DIFF_MAX:  # matching is quadratic: a huge line stays whole
            self._diff_line("-" + old, indent)
            self._diff_line("+" + new, indent)
            return
        pieces: list[tuple[str, str | None]] = []
        matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
        for tag, a1, a2, b1, b2 in matcher.get_opcodes():
            if tag == "equal":
                pieces.append(("".join(old_words[a1:a2]), None))
                continue
            if a2 > a1:
                pieces.append(("[-" + "".join(old_words[a1:a2]) + "-]", "del"))
            if b2 > b1:
                pieces.append(("{+" + "".join(new_words[b1:b2]) + "+}", "add"))
        line, room = indent + "~ ", self.width - len(indent) - 2
        used = 0
        for text, style in pieces:
            for word in re.split(r"(?<=\s)(?=\S)", text):  # wrap between words, never inside one
                if used and used + len(word.rstrip()) > room:
                    self.add(line.rstrip())
                    line, used = indent + "  ", 0
                    word = word.lstrip()
                line += self.style(word, style) if style else word
                used += len(word)
        self.add(line.rstrip())

    def _diff_line(self, raw: str, indent: str) -> None:
        kind = (
            "head"
            if raw.startswith(("+++", "---"))
            else "add"
            if raw.startswith("+")
            else "del"
            if raw.startswith("-")
            else "hunk"
            if raw.startswith("@@")
            else None
        )
        self.add(indent + (self.style(raw, kind) if kind else raw))

    def render(self) -> str:
        return "\n".join(self.lines)


def one_line(text: str) -> str:
    """Printable text kept to one line: a newline or tab shown as ``\\n``/``\\t``
    (a name holding one stays that name; a note never makes a row of its own)."""
    return text.replace("\n", "\\n").replace("\t", "\\t") if "\n" in text or "\t" in text else text


def p(value: Any) -> str:
    """A store-derived value as safe text ('' for None)."""
    return "" if value is None else printable(str(value))
