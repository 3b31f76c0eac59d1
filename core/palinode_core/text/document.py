"""A memory file as frontmatter text plus body, edited minimally.

Palinode's lifecycle ops re-dump the whole frontmatter sorted and strip the
body. We instead change only the keys an operation is about and leave every
other byte alone (key order, flow lists, quoting, bare dates, comments). On a
file already in Palinode's canonical layout both give the same bytes, because
PyYAML renders each top-level key independently of its neighbours.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from ..errors import UnreadableMemory

try:  # the C loader is ~7x faster on large stores
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - libyaml missing
    _Loader = yaml.SafeLoader

_CLOSE_RE = re.compile(r"^-{3,}\s*$")
_TOP_KEY_RE = re.compile(
    r"""^(?:(?P<bare>[^\s#'"\-?:,\[\]{}&*!|>%@`][^:]*?)|'(?P<sq>[^']*)'|"(?P<dq>[^"]*)")\s*:(?:\s|$)"""
)
_MISSING = object()


def load_yaml(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)


# Keys Palinode adds after a re-dump without sorting (its backed_by merge):
# a new one goes last, and its mappings keep their own key order.
APPENDED_KEYS = frozenset({"stale_backing"})


def render_key(key: str, value: Any) -> str:
    """One top-level key as Palinode's dumper writes it (block style, unicode)."""
    return yaml.safe_dump(
        {key: value}, default_flow_style=False, allow_unicode=True, sort_keys=key not in APPENDED_KEYS
    )


def palinode_layout(meta: dict[str, Any], body: str) -> str:
    """Exactly what Palinode's lifecycle ops write: ``frontmatter.dumps(post) + "\\n"``."""
    dumped = yaml.safe_dump(meta, default_flow_style=False, allow_unicode=True, sort_keys=True).strip()
    return f"---\n{dumped}\n---\n\n{body.strip()}".strip() + "\n"


@dataclass(frozen=True)
class Document:
    """A parsed memory file. ``head`` is everything up to and including the
    closing ``---`` line, ``fm_text`` the YAML between the delimiters, and
    ``body`` every byte after the closing line."""

    text: str
    meta: dict[str, Any]
    fm_text: str | None
    head_open: str
    head_close: str
    body: str
    newline: str

    @property
    def has_frontmatter(self) -> bool:
        return self.fm_text is not None

    def replace_body(self, new_body: str) -> str:
        return self._join(self.fm_text, new_body)

    def edit(
        self, set_keys: dict[str, Any] | None = None, delete_keys: tuple[str, ...] = (), body: str | None = None
    ) -> str:
        """New file text with ``set_keys`` set, ``delete_keys`` removed and,
        optionally, a new body. Verifies the YAML it produced parses to the
        intended mapping, so an exotic frontmatter is refused, never mangled."""
        set_keys = dict(set_keys or {})
        new_body = self.body if body is None else body
        expected = dict(self.meta)
        for key in delete_keys:
            expected.pop(key, None)
        expected.update(set_keys)
        if self.fm_text is None:
            if not set_keys:
                return self._join(None, new_body)
            fm = "".join(render_key(k, v) for k, v in sorted(set_keys.items())).replace("\n", self.newline)
            lead = "" if new_body.startswith(("\n", "\r\n")) else self.newline
            return f"---{self.newline}{fm}---{self.newline}{lead}{new_body}"
        fm = self.fm_text
        if not self.meta and _has_content(fm):
            fm = "".join(line for line in fm.splitlines(keepends=True) if not _has_content(line))  # `{}`, `null`
        for key in delete_keys:
            fm = _delete_key(fm, key)
        for key, value in set_keys.items():
            fm = _set_key(fm, key, value, self.newline)
        if not expected and not _has_content(fm):
            fm += "{}" + self.newline  # an empty mapping as Palinode writes it (`---` then `---` reads back oddly)
        parsed = load_yaml(fm) if fm.strip() else {}
        if parsed is None:
            parsed = {}
        if parsed != expected:
            raise UnreadableMemory("frontmatter uses YAML this tool cannot edit without rewriting it; edit it by hand")
        return self._join(fm, new_body)

    def _join(self, fm_text: str | None, body: str) -> str:
        if fm_text is None:
            return body
        return f"{self.head_open}{fm_text}{self.head_close}{body}"


def parse_document(text: str) -> Document:
    """Split a memory into frontmatter and body, as Palinode recognises it: the
    file starts with a ``---`` line and a later ``---`` line closes the block."""
    # Palinode (python-frontmatter) strips leading whitespace, then takes any
    # line of three or more dashes with trailing spaces as the opener.
    lead = len(text) - len(text.lstrip())
    lead = text.rfind("\n", 0, lead) + 1  # leading blank lines belong to the opener; its indent too
    newline = "\r\n" if text[lead:].split("\n", 1)[0].endswith("\r") else "\n"
    lines = text[lead:].splitlines(keepends=True)
    if not lines or not _CLOSE_RE.match(lines[0].lstrip().rstrip("\r\n")):
        return Document(text, {}, None, "", "", text, newline)
    for index in range(1, len(lines)):
        if _CLOSE_RE.match(lines[index].rstrip("\r\n")):
            fm_text = "".join(lines[1:index])
            body = "".join(lines[index + 1 :])
            meta = _load_mapping(fm_text)
            return Document(text, meta, fm_text, text[:lead] + lines[0], lines[index], body, newline)
    if lead or lines[0].rstrip("\r\n") != "---":
        return Document(text, {}, None, "", "", text, newline)  # a rule (`----`) opening a note, as before
    raise UnreadableMemory("frontmatter opened with '---' is never closed")


def _has_content(fm_text: str) -> bool:
    """Any line that is not blank or a comment."""
    return any(line.strip() and not line.lstrip().startswith("#") for line in fm_text.splitlines())


def has_alias(fm_text: str) -> bool:
    """Anchors and aliases let a few bytes expand into gigabytes when shown or
    serialised (a billion-laughs file); Palinode never writes them."""
    if "*" not in fm_text and "&" not in fm_text:
        return False
    try:
        return any(
            isinstance(event, (yaml.AliasEvent,)) or getattr(event, "anchor", None)
            for event in yaml.parse(fm_text, Loader=_Loader)
        )
    except yaml.YAMLError:
        return False  # the loader reports the syntax error itself


def _load_mapping(fm_text: str) -> dict[str, Any]:
    if has_alias(fm_text):
        raise UnreadableMemory("frontmatter uses YAML anchors/aliases, which memory files never need; not loaded")
    try:
        data = load_yaml(fm_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or exc.__class__.__name__
        raise UnreadableMemory(f"invalid YAML frontmatter{where}: {problem}") from None
    except RecursionError:
        raise UnreadableMemory("frontmatter is nested too deeply") from None
    except ValueError as exc:  # the loader's own: an integer of more than 4,300 digits, a date out of range
        raise UnreadableMemory(f"invalid YAML frontmatter: {str(exc).splitlines()[0][:120]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UnreadableMemory(f"frontmatter is a {type(data).__name__}, not a mapping of fields")
    if not all(isinstance(k, str) for k in data):
        raise UnreadableMemory("frontmatter has a key that is not a string")
    return data


def _key_of(line: str) -> str | None:
    match = _TOP_KEY_RE.match(line)
    if not match:
        return None
    return next(v for v in match.group("bare", "sq", "dq") if v is not None).strip()


def _blocks(fm_text: str) -> tuple[list[str], list[tuple[str, int, int]]]:
    """Lines and the (key, start, end) line span of every top-level key.
    A span runs to the last non-blank continuation line before the next key
    or column-0 comment."""
    lines = fm_text.splitlines(keepends=True)
    blocks: list[tuple[str, int, int]] = []
    current: tuple[str, int] | None = None
    last_content = -1
    for index, line in enumerate(lines):
        stripped = line.strip()
        key = _key_of(line)
        starts_block = key is not None
        col0_comment = line.startswith("#")
        if starts_block or col0_comment:
            if current is not None:
                blocks.append((current[0], current[1], last_content + 1))
                current = None
            if key is not None:
                current = (key, index)
                last_content = index
            continue
        if stripped and current is not None:
            last_content = index
    if current is not None:
        blocks.append((current[0], current[1], last_content + 1))
    return lines, blocks


def _render(key: str, value: Any, newline: str, flow: bool) -> list[str]:
    if flow and isinstance(value, list):
        inner = yaml.safe_dump(value, default_flow_style=True, allow_unicode=True, width=10**9).strip()
        text = f"{render_key(key, []).split(':', 1)[0]}: {inner}\n"
    else:
        text = render_key(key, value)
    return [line + newline for line in text.splitlines()]


def _set_key(fm_text: str, key: str, value: Any, newline: str) -> str:
    lines, blocks = _blocks(fm_text)
    for name, start, end in blocks:
        if name == key:
            first = lines[start]
            # an empty `[]` becomes a block list, as Palinode's dump writes a non-empty list
            flow = bool(re.match(r"^[^:]+:\s*\[", first)) and not re.match(r"^[^:]+:\s*\[\s*\]\s*(#.*)?$", first)
            lines[start:end] = _render(key, value, newline, flow)
            return "".join(lines)
    names = [name for name, _, _ in blocks]
    rendered = _render(key, value, newline, flow=False)
    if names == sorted(names) and key not in APPENDED_KEYS:
        for name, start, _ in blocks:
            if name > key:
                lines[start:start] = rendered
                return "".join(lines)
    insert_at = blocks[-1][2] if blocks else len(lines)
    if insert_at > 0 and not lines[insert_at - 1].endswith("\n"):
        lines[insert_at - 1] += newline
    lines[insert_at:insert_at] = rendered
    return "".join(lines)


def _delete_key(fm_text: str, key: str) -> str:
    lines, blocks = _blocks(fm_text)
    for name, start, end in blocks:
        if name == key:
            del lines[start:end]
            return "".join(lines)
    return fm_text
