"""Palinode's content-word rules (spec §4.3) and pref normalisation (§4.7)."""

from __future__ import annotations

import hashlib
import re

STOPWORDS = frozenset(
    [
        "the",
        "a",
        "an",
        "and",
        "or",
        "to",
        "of",
        "in",
        "on",
        "for",
        "with",
        "that",
        "this",
        "these",
        "those",
        "i",
        "my",
        "me",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "have",
        "has",
        "had",
        "do",
        "does",
        "did",
        "as",
        "at",
        "by",
        "from",
        "about",
        "please",
        "forget",
        "you",
        "your",
        "our",
        "it",
        "its",
        "they",
        "their",
        "he",
        "she",
    ]
)
assert len(STOPWORDS) == 46

_CONTENT_RE = re.compile(r"[a-z]+")
_WORD_RE = re.compile(r"[A-Za-z]+")


def content_words(text: str) -> set[str]:
    """Lowercase ASCII tokens longer than 2 characters that are not stopwords."""
    return {w for w in _CONTENT_RE.findall(text.lower()) if len(w) > 2 and w not in STOPWORDS}


def span_words(text: str) -> set[str]:
    """Every ASCII letter run, lowercased: what a span is matched on."""
    return {w.lower() for w in _WORD_RE.findall(text)}


def entity_tokens(pref: str) -> set[str]:
    """Titlecase content words after the pref's first word (ALL-CAPS do not count)."""
    words = _WORD_RE.findall(pref)
    return {
        w.lower() for w in words[1:] if w[0].isupper() and w[1:].islower() and len(w) > 2 and w.lower() not in STOPWORDS
    }


def normalize_pref(pref: str) -> str:
    return " ".join(pref.lower().split())


def retraction_id(pref: str) -> str:
    """``md5(normalized pref)[:8]``: the same pref always names the same markers."""
    return hashlib.md5(normalize_pref(pref).encode("utf-8"), usedforsecurity=False).hexdigest()[:8]
