"""The report with no preference text: every field that carries store text
(the preference, sentences, shared words, diffs, history lines, queries,
notes) becomes a SHA-256 prefix, and the retraction id (``r:`` rule id) stays,
so two redacted reports still show the same sentence as the same hash. Any
other string that still contains a preference is hashed too, whatever field
it sits in."""

from __future__ import annotations

import hashlib
from pathlib import PurePath
from typing import Any

from ..text.stem import counted_stems, stem
from ..text.words import STOPWORDS

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


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def redact(report: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``report`` carrying no preference text: besides the text
    fields, any string holding a content word of a preference, in any
    inflection (a path such as ``insights/forget-berlin.md``, a commit
    subject naming it), is hashed; the store is named, never located."""
    prefs = [str(r.get("pref") or "") for r in report.get("requests", [])]
    prefs.append(str((report.get("scope") or {}).get("pref") or ""))
    own = {s for pref in prefs for s in counted_stems(pref)} - {stem(w) for w in STOPWORDS}

    def carries(value: str) -> bool:  # any word of any script, in any inflection (forget.judgment's words)
        return any(s in own for s in counted_stems(value))

    def scrub(value: Any, key: str | None) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v, key) for v in value]
        if isinstance(value, str) and value and key not in VOCABULARY_KEYS and (key in TEXT_KEYS or carries(value)):
            return digest(value)
        return value

    out = scrub(report, None)
    if isinstance(out.get("store"), str):
        out["store"] = PurePath(out["store"]).name  # no absolute path: the auditor's folders stay private
    return {**out, "redacted": True}
