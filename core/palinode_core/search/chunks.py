"""Palinode's chunking of a memory for search: one chunk for a short body,
else the preamble plus one chunk per ``##``/``###`` section, struck text
projected out."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ..storage.memory import Memory
from ..text.markdown import project

CHUNK_LIMIT = 2000
_SECTION_RE = re.compile(r"^(#{2,3})\s+(.*)$", re.MULTILINE)


def text_hash(text: str) -> str:
    """The vector cache's key for a text (search.vectors): SHA-256 of its UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _slugify(text: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return slug or "section"


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    path: str
    section: str
    text: str

    @property
    def content_hash(self) -> str:
        return text_hash(self.text)


def chunk_memory(memory: Memory) -> list[Chunk]:
    """Palinode's chunking: one ``root`` chunk under 2000 characters, else the
    preamble plus one chunk per ``##``/``###`` section; struck text projected out."""
    body = memory.body.strip()
    question = memory.meta.get("canonical_question")
    sections: list[tuple[str, str]] = []
    if len(body) < CHUNK_LIMIT:
        sections.append(("root", body))
    else:
        matches = list(_SECTION_RE.finditer(body))
        sections.append(("root", body[: matches[0].start()] if matches else body))
        seen: dict[str, int] = {}
        for i, match in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(body)
            slug = _slugify(match.group(2))
            seen[slug] = seen.get(slug, 0) + 1
            sid = slug if seen[slug] == 1 else f"{slug}-{seen[slug]}"
            sections.append((sid, body[match.start() : end]))
    chunks = []
    for index, (sid, text) in enumerate(sections):
        text = project(text).strip()
        if index == 0 and isinstance(question, str) and question.strip():
            text = f"{question.strip()}\n\n{text}".strip()
        if not text:
            continue
        cid = hashlib.md5(f"{memory.rel}#{sid}".encode(), usedforsecurity=False).hexdigest()
        chunks.append(Chunk(cid, memory.rel, sid, text))
    return chunks
