"""The report with no preference text: every field that carries store text
(the preference, sentences, shared words, diffs, history lines, queries,
notes) becomes a SHA-256 prefix, and the retraction id (``r:`` rule id) stays,
so two redacted reports still show the same sentence as the same hash. Any
other string that still contains a preference is hashed too, whatever field
it sits in."""

from __future__ import annotations

import hashlib
from typing import Any

TEXT_KEYS = frozenset(
    {"pref", "text", "sentence", "struck", "shared_words", "history_line", "diff", "query", "note", "flags", "reason"}
)


def digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def redact(report: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``report`` carrying no preference text."""
    prefs = {r["pref"].strip().lower() for r in report.get("requests", []) if str(r.get("pref") or "").strip()}
    if (report.get("scope") or {}).get("pref"):
        prefs.add(str(report["scope"]["pref"]).strip().lower())

    def scrub(value: Any, key: str | None) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [scrub(v, key) for v in value]
        if isinstance(value, str) and value and (key in TEXT_KEYS or any(p in value.lower() for p in prefs)):
            return digest(value)
        return value

    return {**scrub(report, None), "redacted": True}
