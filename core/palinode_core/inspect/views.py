"""The read-only views a Session offers (mixed into it): residue, integrity,
the timeline, reports, traces. Each imports what it calls, so a command that
only scans never loads them; all of them work on a session as of a past point."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..storage.memory import Memory
    from ..storage.snapshot import AsOf
    from ..storage.store import Store
    from .deliveries import DeliveryAudit
    from .integrity import Problem
    from .report_review import UnderReview
    from .residue import Mention
    from .timeline import Point
    from .trace import Trace


class InspectViews:
    store: Store

    if TYPE_CHECKING:  # what the Session provides

        @property
        def memories(self) -> dict[str, Memory]: ...
        @property
        def as_of(self) -> AsOf | None: ...
        @property
        def root(self) -> Path: ...

    def residue(self, pref: str) -> list[Mention]:
        from . import residue as inspect_residue

        return inspect_residue.residue(pref, self.memories, inspect_residue.candidates_for(self.store, pref))

    def integrity(self) -> list[Problem]:
        from . import integrity as inspect_integrity

        return inspect_integrity.integrity(self.store, self.memories, interrupted=self.as_of is None)

    def integrity_history(self) -> dict[str, Any]:
        """Every strike marker ever written and every commit that broke a chain."""
        from . import chain_history as inspect_chain_history

        return inspect_chain_history.chain_history(self.store, self.as_of.commit if self.as_of else "HEAD")

    def timeline(self, ref: str) -> list[Point]:
        from . import timeline as inspect_timeline

        return inspect_timeline.timeline(self.store, ref)

    def diff_between(self, ref: str, old: str, new: str) -> dict[str, Any]:
        from . import timeline as inspect_timeline

        return inspect_timeline.diff_between(self.store, ref, old, new)

    def report(
        self,
        *,
        request: str | None = None,
        pref: str | None = None,
        since: str | None = None,
        until: str | None = None,
        redacted: bool = False,
        review: UnderReview | None = None,
    ) -> dict[str, Any]:
        """The audit report, each request with its delivery record (retrieval
        log joined with history); ``redacted``: keyed hashes and rule ids, no preference text;
        ``review``: a pending request's plan as the reviewer has it open."""
        from . import report as inspect_report
        from .deliveries import report_deliveries

        report = inspect_report.build_report(
            self.store, self.memories, request=request, pref=pref, since=since, until=until, review=review
        )
        if report["requests"]:
            found = report_deliveries(self.store, self.memories, [r["path"] for r in report["requests"]])
            for row in report["requests"]:
                row["deliveries"] = found.get(row["path"])
        if redacted:
            from .report_redact import redact, redaction_key

            report = redact(report, redaction_key(self.root))
        return report

    def write_report(
        self,
        output: str | os.PathLike[str],
        fmt: str,
        *,
        overwrite: bool = False,
        request: str | None = None,
        redacted: bool = False,
        review: UnderReview | None = None,
    ) -> dict[str, Any]:
        """One request's report rendered as json, md or html, written to ``output`` (never inside the store)."""
        from .report_out import write_report

        return write_report(
            self.root, self.report(request=request, redacted=redacted, review=review), fmt, output, overwrite=overwrite
        )

    def deliveries(
        self,
        *,
        request: str | None = None,
        since: str | None = None,
        show_queries: bool = False,
        bundle: str | None = None,
    ) -> DeliveryAudit:
        """The delivery audit of every forget request (or one) over Palinode's
        retrieval log, not yet run: iterate its ``rows()``, then read its
        ``summary()``. ``since``: rows from that instant on (a day: from its
        start, in the user's time zone); ``show_queries``: each row's query and
        session (the asker's, withheld otherwise); ``bundle``: one delivery's rows."""
        from .deliveries import delivery_audit
        from .report import scope_bounds

        start = scope_bounds(since, None)[0] if since else None
        return delivery_audit(
            self.store,
            self.memories,
            request=request,
            since=start.timestamp() if start else None,
            show_queries=show_queries,
            bundle=bundle,
        )

    def delivery_count(self, path: str) -> int | None:
        """How many logged deliveries name this memory, under any name it had
        (renames followed) and from any folder the store was in when they were
        logged (the log and one ``git log --follow``); None when the store has
        no retrieval log."""
        from ..errors import PalinodeError
        from .retrieval_log import LogReport, read_rows

        rel, _ = self.store.resolve(path)
        names = {rel}
        try:
            out = self.store.git.run_bytes(
                "log", "--follow", "--name-only", "-z", "--format=", self.store.git.tip(), "--", rel, read=True
            )
            names |= {n for n in out.decode("utf-8", "surrogateescape").replace("\n", "\0").split("\0") if n}
        except PalinodeError:  # no history (not a git store, no commit yet): its name now
            pass

        def relocate(file_path: str) -> tuple[str, str] | None:
            for name in names:
                if file_path.endswith("/" + name):
                    return name, file_path[: -len(name) - 1]
            return None

        log = LogReport(relocate=relocate)
        count = 0
        for row in read_rows(self.root, log):
            if row.rel is not None and (row.rel in names or row.rel + ".md" in names):
                count += 1
        return None if log.missing and not log.files else count

    def trace(self, ref: str) -> Trace:
        from . import trace as inspect_trace

        return inspect_trace.trace(self.store, ref, self.memories)

    def commit_diff(self, sha: str, path: str | None = None) -> str:
        """What one commit changed (in ``path`` only, if given), as git shows it."""
        return self.store.git.diff(sha, path)
