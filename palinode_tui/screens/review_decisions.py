"""What a reviewer decides in Review: apply the approved targets (previewed,
confirmed), dismiss the request with a note, and go from it to its residue,
deliveries or report. The base of ReviewScreen (review.py), which keeps the
request list, the plan and the knobs."""

from __future__ import annotations

from typing import Any

from palinode_core.api import Choice, ForgetApplied, ReviewMark, UnderReview

from ..render import plain
from ..widgets import ConfirmModal, KeyedTable, NoteModal
from .base import ModeScreen
from .review_view import Review, apply_preview


class ReviewDecisions(ModeScreen):
    def __init__(self) -> None:
        super().__init__()
        self.current: str | None = None
        self.review: Review | None = None
        self._applying = False  # our own apply runs: the files it commits are no change under the plan
        self.record: dict[str, Any] | None = None  # as of a point, or a decided request: its report, not a plan

    @property
    def request_rows(self) -> list[str]:
        return self.query_one("#requests", KeyedTable).keys

    @property
    def candidate_rows(self) -> list[str]:
        return self.query_one("#candidates", KeyedTable).keys

    def selected_request(self) -> str | None:
        """The request shown, if it is still listed; else None, and said."""
        if self.current is None or self.current not in self.request_rows:
            self.notify("No forget request is selected.", severity="warning")
            return None
        return self.current

    def action_apply(self) -> None:
        review = self.review
        if review is None or self.selected_request() is None:
            return
        if review.stale:
            self.notify("This plan is being re-made because files changed.", severity="warning")
            return
        if not review.plan.actionable and any(
            s.path == review.plan.request.path and s.state == "partial" for s in getattr(self, "states", ())
        ):
            self._close(review)
            return
        selection = review.selection()
        if not any(not choice.rejects for choice in selection.values()):
            waiting = sum(1 for c in review.actionable if review.draft.mark(c) == "ask")
            self.notify(
                "No target is approved." + (f" {waiting} await your approval (space)." if waiting else ""),
                severity="warning",
            )
            return
        session = self.app.session
        self.app.run_blocking(
            lambda: apply_preview(review, selection, session),
            lambda body: self.app.push_screen(
                ConfirmModal(
                    "Apply this withdrawn request again?"
                    if any(
                        s.path == review.plan.request.path and s.state == "withdrawn"
                        for s in getattr(self, "states", ())
                    )
                    else "Apply this forget request?",
                    body,
                    "Apply",
                ),
                lambda ok: ok and self._apply(review, selection),
            ),
            "preview the apply",
            "plan",
        )

    def _apply(self, review: Review, selection: dict[str, Choice]) -> None:
        book = self.app.drafts
        request = review.plan.request.path

        def work() -> ForgetApplied:
            result = self.app.session.apply_forget(review.plan, selection)
            if not result.failed:
                book.save(book.drop(request))  # applied: the draft has done its job
            return result

        def done(result: ForgetApplied) -> None:
            self._applying = False
            commits = [c["commit"] for c in result.commits]
            self.app.record(
                "action",
                f"apply {result.request}: {len(result.commits)} target(s)",
                [*commits, result.ledger_commit or ""],
            )
            if result.failed:
                self.app.fail("Apply stopped", "; ".join(f"{f['path']}: {f['reason']}" for f in result.failed))
            else:
                summary = "\n".join(f"{(c['commit'] or '')[:7]} {c['subject']}" for c in result.commits)
                self.notify(summary or "nothing changed", title="Committed", timeout=8)
            self.review = None
            self.app.scan_store(None)

        def failed(reason: str) -> None:
            self._applying = False
            self.app.fail(f"apply {request}", reason)
            self.app.scan_store(None)  # whatever the failure left on disk: the plan is checked against it

        self._applying = True
        self.app.run_blocking(work, done, f"apply {request}", "apply", on_error=failed)

    def _close(self, review: Review) -> None:
        """A partial request with nothing left to apply: record it as done (issue 41)."""
        request, session = review.plan.request.path, self.app.session
        body = plain(
            "Nothing remains to apply: every target is struck, archived or no longer carries the preference. "
            "Closing records the request as applied, with you as the one who decided; nothing else is written."
        )

        def done(sha: str | None) -> None:
            self.app.record("action", f"close {request}", [sha or ""])
            self.notify(f"Closed {request}: recorded as applied", title="Closed")
            self.review = None
            self.app.scan_store(None)

        def confirm(_none: None) -> None:
            self.app.push_screen(
                ConfirmModal(f"Close {request}?", body, "Close"),
                lambda ok: (
                    ok
                    and self.app.run_blocking(
                        lambda: session.close_request(review.plan), done, f"close {request}", "apply"
                    )
                ),
            )

        def refused(reason: str) -> None:
            self.notify(reason, title="Not closed", severity="warning", timeout=12)

        # why it cannot be closed (a live mention left) is said before any dialog
        self.app.run_blocking(
            lambda: session.check_closable(review.plan), confirm, f"check {request}", "plan", on_error=refused
        )

    def action_dismiss_request(self) -> None:
        path = self.selected_request()
        if path is None:
            return
        session, book = self.app.session, self.app.drafts

        def work(note: str) -> str | None:
            sha = session.dismiss(path, note)
            book.save(book.drop(path))
            return sha

        def save(note: str | None) -> None:
            if not note:
                return
            self.app.run_blocking(
                lambda: work(note),
                lambda sha: (
                    self.app.record("action", f"dismiss {path}: {note}", [sha or ""]),
                    self.notify(f"Dismissed {path}"),
                    self.app.scan_store(None),
                ),
                f"dismiss {path}",
                "apply",
            )

        self.app.push_screen(
            NoteModal(
                f"Dismiss {path}?",
                plain("The request stays in the store; the decision is recorded in the ledger."),
                "Dismiss",
            ),
            save,
        )

    async def action_residue(self) -> None:
        pref = self.review.plan.request.pref if self.review else self.record["pref"] if self.record else None
        if pref is None:
            self.notify("No forget request is selected.")
            return
        from .residue import ResidueScreen

        await self.app.drill("residue")
        if isinstance(self.app.screen, ResidueScreen):
            self.app.screen.set_pref(pref)

    def action_deliveries(self) -> None:
        from .deliveries import DeliveriesScreen

        path = self.selected_request()
        if path is not None:
            self.app.push_screen(DeliveriesScreen(path))

    def action_export(self) -> None:
        from ..widgets.export_modal import export_report

        path = self.selected_request()
        if path is None:
            return
        review = self.review
        under_review = None
        if review is not None and review.plan.request.path == path and self.app.as_of is None:
            words = {"approved": "approved", "partial": "approved", "skipped": "skipped"}
            marks: dict[str, ReviewMark] = {
                c.path: words.get(review.draft.mark(c), "waiting")  # type: ignore[misc]
                for c in review.actionable
            }
            spans = {c.path: chosen for c in review.actionable if (chosen := review.draft.chosen_spans(c)) is not None}
            under_review = UnderReview(review.plan, marks, spans)
        export_report(self.app, path, under_review)
