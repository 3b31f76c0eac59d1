"""The report with no preference text: every field that carries store text
(the preference, sentences, shared words, diffs, history lines, queries,
notes) becomes a keyed hash (HMAC-SHA256, 64 bits shown), and the retraction
id (``r:`` rule id) stays, so two reports under the same key still show the
same sentence as the same hash. Any other string that still contains a
preference is hashed too, whatever field it sits in.

The key is never in the store, so no word list turns a hash back into a word
or a path (an unsalted SHA-256 of one word is undone with a word list in
seconds): ``PALINODE_AUDIT_REDACT_KEY`` when set (a CI secret: tokens stable
across runs and machines that share it), else a random key kept per store in
this machine's cache folder (``redact.key``, stable until the folder is
deleted), else, when that cannot be written, a key for this process only."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from ..storage.cache import store_cache_dir
from ..text.stem import counted_stems, stem
from ..text.words import STOPWORDS

KEY_ENV = "PALINODE_AUDIT_REDACT_KEY"
KEY_FILE = "redact.key"
_KEY_BYTES = 32
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_KEPT = {
    "environment": "the key is PALINODE_AUDIT_REDACT_KEY: hashes match in every report made with that secret",
    "store": "the key is kept in this machine's cache folder for this store: hashes match until it is deleted",
    "process": "the key is this run's only (the cache folder could not be written): hashes match within it",
}


@dataclass(frozen=True)
class RedactionKey:
    secret: bytes
    kept: str  # environment | store | process

    @property
    def id(self) -> str:
        """Names the key, not the text: reports showing the same id share their hashes."""
        return hmac.new(self.secret, b"palinode-audit redaction key", hashlib.sha256).hexdigest()[:8]

    def to_dict(self) -> dict[str, str]:
        return {"key_id": self.id, "key": self.kept, "stable": _KEPT[self.kept]}


def redaction_key(root: str | os.PathLike[str]) -> RedactionKey:
    """The key for redacting reports of the store at ``root`` (one per process and store)."""
    return _key(os.path.realpath(root), os.environ.get(KEY_ENV) or "")


@functools.cache
def _key(real_root: str, from_env: str) -> RedactionKey:
    if from_env:
        return RedactionKey(hashlib.sha256(from_env.encode("utf-8", "surrogatepass")).digest(), "environment")
    try:
        return RedactionKey(_kept_key(store_cache_dir(Path(real_root)) / KEY_FILE), "store")
    except (OSError, ValueError):
        return RedactionKey(secrets.token_bytes(_KEY_BYTES), "process")


def _kept_key(path: Path) -> bytes:
    """The key kept at ``path`` (a private regular file of this user, never a
    link), made once: written aside, then linked into place (never half there)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not os.path.lexists(path):
        aside = path.with_name(f".{KEY_FILE}-{secrets.token_hex(8)}")
        made = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC, 0o600)
        try:
            with os.fdopen(made, "wb") as out:
                out.write(secrets.token_bytes(_KEY_BYTES))
            try:
                os.link(aside, path)
            except FileExistsError:  # another process made it first: theirs is read
                pass
            except OSError:  # a folder with no hard links (some network ones): renamed into place
                os.rename(aside, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(aside)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise ValueError("not a private file of this user")
        secret = handle.read(_KEY_BYTES + 1)
    if len(secret) != _KEY_BYTES:
        raise ValueError("not a key")
    return secret


TEXT_KEYS = frozenset(
    {"pref", "text", "sentence", "struck", "shared_words", "history_line", "diff", "query", "note", "flags", "reason"}
)


# Fields whose values are the report's own vocabulary (states, kinds, routes), never store text.
VOCABULARY_KEYS = frozenset(
    {
        "action",
        "kind",
        "state",
        "route",
        "op",
        "class",
        "match",
        "where",
        "severity",
        "decision",
        "resolver",  # thorough or palinode (a plan under review): our own words
        "revision_match",
        "actor",
        "knobs_source",
        "schema",
        "mode",
    }
)


def digest(text: str, key: RedactionKey) -> str:
    """``text`` as a keyed hash: equal texts give equal hashes under one key; nothing else is told."""
    return "hmac:" + hmac.new(key.secret, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:16]


def redact(report: dict[str, Any], key: RedactionKey) -> dict[str, Any]:
    """A copy of ``report`` carrying no preference text: besides the text
    fields, any string holding a content word of a preference, in any
    inflection (a path such as ``insights/forget-berlin.md``, a commit
    subject naming it), is hashed under ``key``; the store is named, never located."""
    prefs = [str(r.get("pref") or "") for r in report.get("requests", [])]
    prefs.append(str((report.get("scope") or {}).get("pref") or ""))
    own = {s for pref in prefs for s in counted_stems(pref)} - {stem(w) for w in STOPWORDS}

    def carries(value: str) -> bool:  # any word of any script, in any inflection (forget.judgment's words)
        return any(s in own for s in counted_stems(value))

    def scrub(value: Any, field: str | None) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v, field) for v in value]
        if isinstance(value, str) and value and field not in VOCABULARY_KEYS and (field in TEXT_KEYS or carries(value)):
            return digest(value, key)
        return value

    out = scrub(report, None)
    if isinstance(out.get("store"), str):
        out["store"] = PurePath(out["store"]).name  # no absolute path: the auditor's folders stay private
    return {**out, "redacted": True, "redaction": key.to_dict()}
