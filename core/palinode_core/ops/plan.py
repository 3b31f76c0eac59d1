"""Plan values: what one operation on one memory would write, shown before
anything is written (see docs/format.md for the bytes)."""

from __future__ import annotations

import difflib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from ..storage.records import PlanOp
from ..text.markdown import Region, Span
from .backing import Flag

Op = PlanOp  # docs/records.md
# would_<op> when the plan changes the file, else Palinode's no-op status
PlanStatus = Literal[
    "would_archive",
    "would_restore",
    "would_retract",
    "would_unretract",
    "already_archived",
    "not_archived",
    "already_retracted",
    "not_retracted",
    "no_mentions",
    "replace_doc",
    "nothing_selected",
]


@dataclass(frozen=True)
class FieldChange:
    key: str
    before: Any
    after: Any  # None means the key is removed


@dataclass(frozen=True)
class Plan:
    op: Op
    target: str
    status: PlanStatus
    old_text: str
    new_text: str
    fingerprint: str
    history_rel: str
    history_line: str | None = None
    commit_subject: str | None = None
    trailers: dict[str, str] = field(default_factory=dict)
    field_changes: tuple[FieldChange, ...] = ()
    pref: str | None = None
    rid: str | None = None
    mentions: int = 0
    spans: tuple[Span, ...] = ()  # every candidate span, chosen or not
    selected: tuple[int, ...] = ()  # indices of spans this plan strikes
    regions: tuple[Region, ...] = ()  # mentions striking cannot reach
    superseded_by: str | None = None
    reason: str | None = None
    body_line_offset: int = 0
    flags: tuple[Flag, ...] = ()  # dependents flagged in a commit of their own, after this one
    flags_subject: str | None = None
    custom_spans: bool = False  # spans chosen by a resolver (clauses), not Palinode's walker

    @property
    def changes(self) -> bool:
        return self.new_text != self.old_text

    def diff(self, context: int = 3) -> str:
        return "".join(
            difflib.unified_diff(
                self.old_text.splitlines(keepends=True),
                self.new_text.splitlines(keepends=True),
                fromfile=f"a/{self.target}",
                tofile=f"b/{self.target}",
                n=context,
            )
        )

    def to_dict(self, with_text: bool = False) -> dict[str, Any]:
        chosen = frozenset(self.selected)  # a span's "in" over the tuple was quadratic (100,000 struck sentences)
        data: dict[str, Any] = {
            "op": self.op,
            "target": self.target,
            "status": self.status,
            "changes": self.changes,
            "fingerprint": self.fingerprint,
            "history_file": self.history_rel,
            "history_line": self.history_line,
            "commit_subject": self.commit_subject,
            "trailers": dict(self.trailers),
            "field_changes": [_jsonable(asdict(c)) for c in self.field_changes],
            "pref": self.pref,
            "rid": self.rid,
            "mentions": self.mentions,
            "spans": [_span_dict(s, s.index in chosen, self.body_line_offset) for s in self.spans],
            "unforgotten": [_region_dict(r, self.body_line_offset) for r in self.regions],
            "diff": self.diff(),
            "dependents": [
                {
                    "path": f.rel,
                    "diff": "".join(
                        difflib.unified_diff(
                            f.old_text.splitlines(keepends=True),
                            f.new_text.splitlines(keepends=True),
                            fromfile=f"a/{f.rel}",
                            tofile=f"b/{f.rel}",
                        )
                    ),
                }
                for f in self.flags
            ],
            "dependents_subject": self.flags_subject,
        }
        if with_text:
            data.update(old_text=self.old_text, new_text=self.new_text)
        return data


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _span_dict(span: Span, selected: bool, offset: int) -> dict[str, Any]:
    return {
        "index": span.index,
        "kind": span.kind,
        "line": span.line + offset,
        "text": span.text,
        "multiline": span.multiline,
        "collateral": span.collateral,
        "selected": selected,
    }


def _region_dict(region: Region, offset: int) -> dict[str, Any]:
    return {"kind": region.kind, "line": region.line + offset, "text": region.text}


@dataclass(frozen=True)
class Applied:
    plan: Plan
    commit: str | None
    history_rel: str
    flags_commit: str | None = None
    flags_error: str | None = None  # the flags were put back; the operation itself landed
