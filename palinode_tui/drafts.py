"""Review drafts: what a reviewer decided for one forget request (per target:
approved or skipped, and for a strike which sentences), kept until the
request is applied or dismissed. A draft survives switching requests,
re-planning with other knobs, file changes and restarting the app: it lives
in the app's per-store cache folder, never in the store.

A target nobody has decided on follows the plan: approved when the resolver
pre-approves it, else "ask" (a compound sentence, weak evidence, a
paraphrase): left out of an apply, neither applied nor skipped, until the
reviewer approves it with space.

When a target's file changes under a span choice, the choice is carried over
by sentence text and the target is marked "changed, review again": it is
left out of the next apply until the reviewer looks at it again."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from palinode_core.api import APPROVE_ALL, REJECT, Candidate, Choice, ForgetPlan

DRAFTS_NAME = "review-drafts.json"
# How a target looks in the review list.
Mark = Literal["approved", "partial", "skipped", "ask", "changed", "not a target"]


@dataclass
class TargetDraft:
    approved: bool | None = None  # None: not decided, as the plan proposes (Candidate.preapproved)
    spans: frozenset[int] | None = None  # chosen strike sentences; None = as the plan proposes
    texts: tuple[str, ...] = ()  # the chosen sentences, to follow them when the file changes
    fingerprint: str | None = None  # the file when the sentences were chosen
    changed: bool = False  # the file changed under the span choice: review again
    # what an approval was given to: the route and the file's content hash shown then
    seen_route: str | None = None
    seen_fingerprint: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "approved": self.approved,
            "spans": None if self.spans is None else sorted(self.spans),
            "texts": list(self.texts),
            "fingerprint": self.fingerprint,
            "changed": self.changed,
            "seen_route": self.seen_route,
            "seen_fingerprint": self.seen_fingerprint,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TargetDraft:
        spans = data.get("spans")
        approved = data.get("approved")
        return cls(
            approved=None if approved is None else bool(approved),
            spans=None if spans is None else frozenset(int(i) for i in spans),
            texts=tuple(str(t) for t in data.get("texts") or ()),
            fingerprint=data.get("fingerprint"),
            changed=bool(data.get("changed", False)),
            seen_route=_text_or_none(data.get("seen_route")),
            seen_fingerprint=_text_or_none(data.get("seen_fingerprint")),
        )


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@dataclass
class Draft:
    request: str
    rid: str
    targets: dict[str, TargetDraft] = field(default_factory=dict)

    def copy(self) -> Draft:
        return Draft(self.request, self.rid, {p: replace(t) for p, t in self.targets.items()})

    def target(self, path: str) -> TargetDraft:
        return self.targets.get(path) or TargetDraft()

    def approved(self, cand: Candidate) -> bool | None:
        """True or False as decided; None for a target the resolver does not
        pre-approve and nobody has decided on yet."""
        t = self.target(cand.path)
        if t.approved is None:
            return True if cand.preapproved else None
        return t.approved

    def toggle(self, cand: Candidate) -> None:
        """Approve or skip (an undecided target is approved); either way the
        reviewer has looked again."""
        t = self.targets.setdefault(cand.path, TargetDraft())
        t.approved = not self.approved(cand) or t.changed
        t.changed = False
        # the approval holds for this route of this file's content, nothing else
        t.seen_route = cand.route
        t.seen_fingerprint = cand.plan.fingerprint if cand.plan is not None else None

    def choose_spans(self, cand: Candidate, spans: frozenset[int]) -> None:
        """The reviewer's sentence choice from the diff (it also clears "changed")."""
        assert cand.plan is not None
        t = self.targets.setdefault(cand.path, TargetDraft())
        t.changed = False
        if spans == frozenset(cand.plan.selected):
            t.spans, t.texts, t.fingerprint = None, (), None
        else:
            t.spans = spans
            t.texts = tuple(s.text for s in cand.plan.spans if s.index in spans)
            t.fingerprint = cand.plan.fingerprint

    def reconcile(self, plan: ForgetPlan) -> list[str]:
        """Carry span choices onto a new plan of this request; returns the
        targets whose choice had to move because their file changed."""
        moved: list[str] = []
        for cand in plan.actionable:
            t = self.targets.get(cand.path)
            if t is None:
                continue
            shown = cand.plan.fingerprint if cand.plan is not None else None
            if t.approved and t.seen_route is not None and (t.seen_route, t.seen_fingerprint) != (cand.route, shown):
                # approved as another route or another content: it waits for the reviewer again
                t.approved, t.changed = None, True
                moved.append(cand.path)
                continue
            if t.spans is not None and cand.plan is not None and not t.spans <= {s.index for s in cand.plan.spans}:
                t.changed = True  # sentence numbers this plan does not have (a damaged draft): look again
                moved.append(cand.path)
                continue
            if t.spans is None or cand.route != "strike" or cand.plan is None:
                continue
            if t.fingerprint == cand.plan.fingerprint:
                continue
            t.spans = frozenset(s.index for s in cand.plan.spans if s.text in t.texts)
            t.fingerprint = cand.plan.fingerprint
            t.changed = True
            moved.append(cand.path)
        return moved

    def mark(self, cand: Candidate) -> Mark:
        if not cand.actionable:
            return "not a target"
        t = self.target(cand.path)
        if t.changed:
            return "changed"
        approved = self.approved(cand)
        if approved is None:
            return "ask"
        if not approved:
            return "skipped"
        if cand.route == "strike" and cand.plan is not None:
            chosen = len(t.spans) if t.spans is not None else len(cand.plan.selected)
            if not chosen:
                return "skipped"
            if chosen < len(cand.plan.spans):
                return "partial"
        return "approved"

    def chosen_spans(self, cand: Candidate) -> frozenset[int] | None:
        t = self.target(cand.path)
        return t.spans if cand.route == "strike" else None

    def selection(self, targets: list[Candidate]) -> dict[str, Choice]:
        """What apply gets: changed and undecided targets are left out
        (deferred: neither written nor recorded as skipped)."""
        out: dict[str, Choice] = {}
        for cand in targets:
            t = self.target(cand.path)
            approved = self.approved(cand)
            if t.changed or approved is None:
                continue
            if not approved:
                out[cand.path] = REJECT
            elif cand.route == "strike" and t.spans is not None:
                out[cand.path] = Choice(spans=t.spans)
            else:
                out[cand.path] = APPROVE_ALL
        return out

    def to_json(self) -> dict[str, Any]:
        return {"rid": self.rid, "targets": {p: t.to_json() for p, t in self.targets.items()}}


class DraftBook:
    """Every draft of one store, in one JSON file in the app's cache folder.
    Reads and writes happen in worker threads; a lock keeps them in order
    and a version number keeps a late, older write from replacing a newer one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._drafts: dict[str, Draft] | None = None
        self._lock = threading.Lock()
        self._version = 0
        self._written = 0

    def _load(self) -> dict[str, Draft]:
        if self._drafts is None:
            drafts: dict[str, Draft] = {}
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                data = {}  # no drafts yet, or a damaged file: drafts are a convenience
            for request, item in data.items() if isinstance(data, dict) else ():
                try:
                    drafts[request] = Draft(
                        request, str(item["rid"]), {p: TargetDraft.from_json(t) for p, t in item["targets"].items()}
                    )
                except (KeyError, TypeError, ValueError, AttributeError):
                    continue
            self._drafts = drafts
        return self._drafts

    def get(self, request: str, rid: str) -> Draft | None:
        """The saved draft (blocking: call from a worker). A draft made for
        another pref of the same file (its rid differs) is dropped."""
        with self._lock:
            draft = self._load().get(request)
            draft = draft.copy() if draft is not None else None
        return draft if draft is not None and draft.rid == rid else None

    def put(self, draft: Draft) -> int:
        """Keep ``draft`` in memory now; returns the version to ``save``."""
        with self._lock:
            self._load()[draft.request] = draft.copy()  # the UI keeps changing its own
            self._version += 1
            return self._version

    def drop(self, request: str) -> int:
        with self._lock:
            self._load().pop(request, None)
            self._version += 1
            return self._version

    def save(self, version: int) -> None:
        """Write every draft (blocking: call from a worker)."""
        with self._lock:
            if version < self._written:
                return
            data = {r: d.to_json() for r, d in self._load().items()}
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".drafts.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as handle:
                    json.dump(data, handle, ensure_ascii=False, sort_keys=True)
                os.replace(tmp, self.path)
            except OSError:
                Path(tmp).unlink(missing_ok=True)
                raise
            self._written = version
