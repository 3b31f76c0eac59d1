"""A Session: one store opened for auditing. It holds the store's latest scan,
its search index, the request states of that scan, and the store's config
(read again when ``palinode.config.yaml`` changes). The app and the CLI talk
to a Session; the layers below it never hold state between calls.

Only the storage layer is imported up front: each method imports the layer it
calls, so a command that only scans (``palinode-audit scan``) never loads
search, forget, undo or their libraries."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .errors import PalinodeError, ReadOnlyError, UsageError
from .inspect.views import InspectViews
from .storage.child import Progress
from .storage.config import CONFIG_NAME, ForgetKnobs, config_or_defaults, load_store_config
from .storage.memory import Memory, ScanResult
from .storage.store import Store, utc_now

if TYPE_CHECKING:
    from .forget.leak import Leak
    from .forget.possible import ConfirmPlan, PossibleRequest
    from .forget.requests import RequestState
    from .forget.resolve import ForgetPlan, Resolution
    from .forget.review import ForgetApplied
    from .forget.saved import Approved
    from .forget.selection import Selection
    from .ops.apply import Applied
    from .ops.journal import Interrupted, Recovered
    from .ops.plan import Plan
    from .search.embed import Embedder
    from .search.index import SearchIndex
    from .storage.records import LedgerRecord
    from .storage.snapshot import AsOf
    from .undo.operations import Operation
    from .undo.withdraw import WithdrawPlan

OPEN_STATES = ("pending", "partial", "conflicted")  # a request in these states is planned again


def _config_stamp(root: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(root / CONFIG_NAME)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class Session(InspectViews):
    def __init__(
        self, store: Store, *, embedder: Embedder | None = None, vectors: bool = True, resolver: str = "thorough"
    ) -> None:
        self.store = store
        self.resolver = resolver  # the default resolver of plan()
        self.vectors = vectors
        self.embedder = embedder
        self._scan: ScanResult | None = None
        self._index: SearchIndex | None = None
        self._states: tuple[ScanResult, list[RequestState]] | None = None
        self._config_stamp = _config_stamp(store.root)
        self._lock = threading.RLock()

    @classmethod
    def open(
        cls,
        root: str | os.PathLike[str],
        *,
        read_only: bool = False,
        clock: Callable[[], datetime] = utc_now,
        on_git: Callable[[str], None] | None = None,
        cache_dir: Path | None = None,
        embedder: Embedder | None = None,
        vectors: bool = True,
        use_scan_cache: bool = True,
        resolver: str = "thorough",
    ) -> Session:
        store = Store(
            root, read_only=read_only, clock=clock, on_git=on_git, cache_dir=cache_dir, use_scan_cache=use_scan_cache
        )
        return cls(store, embedder=embedder, vectors=vectors, resolver=resolver)

    @classmethod
    def open_as_of(
        cls,
        root: str | os.PathLike[str],
        *,
        at: str | None = None,
        date: str | None = None,
        on_git: Callable[[str], None] | None = None,
        cache_dir: Path | None = None,
    ) -> Session:
        """The store as of a commit (``at``) or the last commit at or before a
        date, read from git objects: read-only, nothing checked out."""
        from .storage.snapshot import SnapshotStore

        snapshot = SnapshotStore.open(root, at=at, date=date, on_git=on_git, cache_dir=cache_dir)
        return cls(snapshot, vectors=False)  # type: ignore[arg-type]

    @property
    def as_of(self) -> AsOf | None:
        """Which point of history this session shows, or None for the live store."""
        return getattr(self.store, "as_of", None)

    def _live_only(self, what: str) -> None:
        """Refuse work that needs the store as it is now (planning, search, any write)."""
        if self.as_of is not None:
            raise ReadOnlyError(
                f"{what} needs the live store; this session shows it as of {self.as_of.label} "
                "(open it without --as-of/--at)"
            )

    def close(self) -> None:
        closer = getattr(self.store, "close", None)
        if closer is not None:
            closer()

    # -- the store as last read ---------------------------------------------------
    @property
    def read_only(self) -> bool:
        return self.store.read_only

    @property
    def root(self) -> Path:
        return self.store.root

    @property
    def cache_dir(self) -> Path | None:
        """The store's cache folder (derived data: docs/cache.md)."""
        return getattr(self.store, "cache_dir", None)

    @property
    def latest(self) -> ScanResult | None:
        """The latest scan, or None before the first one."""
        return self._scan

    @property
    def memories(self) -> dict[str, Memory]:
        return self.scanned().memories

    def scanned(self) -> ScanResult:
        """The latest scan, scanning first if there is none."""
        return self._scan if self._scan is not None else self.rescan()

    def rescan(self, progress: Callable[[int, int], None] | None = None, *, isolate: bool = False) -> ScanResult:
        """Read the store from scratch (unchanged files come from the scan cache)."""
        self.reload_config()
        scan = self.store.scan(progress, isolate=isolate)
        self._scan = scan
        return scan

    def refresh(self, changed: set[str] | None = None) -> ScanResult:
        """The latest scan brought up to date: only ``changed`` paths, or every
        file's stat when None."""
        if self._scan is None:
            return self.rescan()
        if changed is None or CONFIG_NAME in changed:
            self.reload_config()
        scan = self.store.refresh(self._scan, changed)
        self._scan = scan
        return scan

    def reload_config(self) -> bool:
        """Read ``palinode.config.yaml`` again if it changed; True if it did.
        One that cannot be read gives Palinode's defaults, as a fresh open would,
        and ``store.config_error`` says why (writes wait until it is fixed)."""
        stamp = _config_stamp(self.store.root)
        if self.as_of is not None or stamp == self._config_stamp:  # history's config is fixed
            return False
        root = self.store.root
        self.store.config, self.store.config_error = config_or_defaults(lambda: load_store_config(root))
        self._config_stamp = stamp
        return True

    def cancel(self) -> None:
        """Stop a scan or an index update running in another thread (closing)."""
        self.store.cancel()
        if self._index is not None:
            self._index.cancel()

    # -- search ----------------------------------------------------------------------
    def search_index(self) -> SearchIndex:
        """The index object (not updated; see ``update_index``)."""
        self._live_only("search")
        with self._lock:
            if self._index is None:
                from .search.index import SearchIndex

                self._index = SearchIndex(self.store, self.embedder)
            return self._index

    def update_index(
        self,
        progress: Progress | None = None,
        *,
        isolate: bool = False,
        vectors: bool | None = None,
        units: bool = True,
        full: bool = False,
    ) -> SearchIndex:
        """The index brought up to date; with vectors, those plans need (every
        chunk and unit text with ``full``)."""
        index = self.search_index()
        index.update_lexical(progress, memories=self.memories, isolate=isolate, units=units)
        if self.vectors if vectors is None else vectors:
            index.update_vectors(progress, full=full, cover=self.open_prefs())
        return index

    def prepare_plans(self, progress: Progress | None = None) -> None:
        """Plan each open request once, embedding what its plan reads that has
        no vector yet: the first plan after ``index`` then reads cached vectors only."""
        for state in self.request_states():
            if state.state in OPEN_STATES:
                try:
                    self.plan(state.path, embed=True, progress=progress)
                except PalinodeError:  # a request no plan can be made for: its own command says why
                    continue

    def open_prefs(self) -> list[str]:
        """The preferences of the requests still to decide: those a plan is made for."""
        return sorted({s.pref for s in self.request_states() if s.state in OPEN_STATES})

    # -- forget requests ------------------------------------------------------------------
    def request_states(self) -> list[RequestState]:
        """Every request's state, computed once per scan."""
        from .forget import requests as forget_requests

        scan = self.scanned()
        if self._states is None or self._states[0] is not scan:
            self._states = (scan, forget_requests.request_states(self.store, scan.memories))
        return self._states[1]

    def forget_knobs(self) -> ForgetKnobs:
        self.reload_config()
        return self.store.config.forget

    def plan(
        self,
        request_path: str,
        knobs: ForgetKnobs | None = None,
        *,
        index: SearchIndex | None = None,
        resolver: str | None = None,
        verified: bool = True,
        embed: bool = False,
        progress: Progress | None = None,
    ) -> ForgetPlan:
        """A request's plan by ``resolver``: "thorough" (this tool's default) or
        "palinode" (exactly what Palinode itself would do), with what recall
        would still surface after it (``verified``). With ``embed`` the thorough
        plan first embeds the sentences it reads that have no vector yet
        (``progress`` hears of it; the model loads if it must), so it is the
        same plan whether or not the index's vectors are built; without, it
        reads only cached vectors and never loads the model."""
        self._live_only("planning a forget request")
        from .forget import verify
        from .forget.requests import refuse_blanket, request_at

        refuse_blanket(request_at(self.store, request_path, self.memories))
        index = index or self.search_index()
        resolver = resolver or self.resolver

        if resolver == "palinode":
            from .forget import resolve as forget_resolve

            fplan = forget_resolve.plan_forget(
                self.store, index, request_path, self.memories, knobs or self.forget_knobs(), lexical=not self.vectors
            )
        elif resolver == "thorough":
            from .forget import thorough

            if embed and self.vectors:  # a memory written since `index` covered the requests: covered now
                index.embed_fresh(progress)

            fplan = thorough.plan_thorough(
                self.store,
                index,
                request_path,
                self.memories,
                knobs or self.forget_knobs(),
                lexical=not self.vectors,
                embed=(progress or True) if embed else False,
            )
        else:
            raise PalinodeError(f"unknown resolver {resolver!r} (palinode or thorough)")
        if not verified:
            return fplan
        return replace(fplan, surfacing=verify.would_surface(index, fplan, self.memories, lexical=not self.vectors))

    def reroute(self, resolution: Resolution, knobs: ForgetKnobs, resolver: str | None = None) -> ForgetPlan:
        """Route an earlier resolution with other knobs: no search (the thorough
        resolver plans again; its sentence vectors are cached)."""
        if (resolver or self.resolver) == "thorough":
            return self.plan(resolution.request.path, knobs, resolver="thorough")
        from .forget import resolve as forget_resolve

        return forget_resolve.route(self.store, resolution, knobs, self.memories)

    def narrow(self, plan: Plan, spans: frozenset[int] | None) -> Plan:
        from .forget.selection import narrow

        return narrow(self.store, plan, spans)

    def plan_strike(self, request_path: str, path: str, line: int, text: str) -> Plan:
        """A retract plan for the request striking the one sentence of ``path`` at ``line`` reading ``text``."""
        self._live_only("planning a strike")
        from .forget.requests import request_at
        from .forget.selection import strike_sentence

        return strike_sentence(self.store, request_at(self.store, request_path, self.memories), path, line, text)

    def check_closable(self, fplan: ForgetPlan) -> None:
        """Raise, saying why, unless the request is partial and its plan has nothing left to apply."""
        path = fplan.request.path
        state = next((s for s in self.request_states() if s.path == path), None)
        if state is None or state.state != "partial":
            raise UsageError(
                f"{path} is {state.state if state else 'not a request'}: only a partial request with nothing left "
                "to apply is closed; nothing was changed"
            )
        if fplan.actionable:
            raise UsageError(
                f"{path} still has {len(fplan.actionable)} target(s) to apply "
                f"({', '.join(c.path for c in fplan.actionable)}): apply or reject them; nothing was changed"
            )
        live = [m for m in self.residue(fplan.request.pref) if m.kind == "live"]
        if live:
            where = ", ".join(f"{m.path}:{m.line}" for m in live[:3]) + (", …" if len(live) > 3 else "")
            raise UsageError(
                f"{path} still has {len(live)} live mention(s) ({where}): strike or flag them (Residue, or "
                "palinode-audit residue); nothing was changed"
            )

    def close_request(self, fplan: ForgetPlan, note: str | None = None) -> str | None:
        """Record a partial request whose plan has nothing left to apply as done (applied)."""
        self._live_only("closing a request")
        from .forget import review as forget_review

        self.check_closable(fplan)
        state = next(s for s in self.request_states() if s.path == fplan.request.path)
        return forget_review.close(
            self.store, fplan.request.path, set(state.archived_targets) | set(state.struck_targets), note
        )

    def strike(self, plan: Plan, line: int, text: str, note: str | None = None) -> ForgetApplied:
        """Apply a ``plan_strike``: the commit and the reviewer's decision in the ledger, as one transaction."""
        self._live_only("striking a sentence")
        from .forget import review as forget_review

        return forget_review.strike_by_hand(self.store, plan, line, text, note)

    def apply_forget(
        self,
        fplan: ForgetPlan,
        selection: Selection | None = None,
        note: str | None = None,
        *,
        residue: bool = True,
        reopen: bool = False,
    ) -> ForgetApplied:
        """Apply; unless ``residue`` is False, the leak check on the store as
        the apply left it goes into the ledger in the same commit as the decision."""
        self._live_only("applying a forget request")
        from .forget import review as forget_review

        leak = forget_review.LeakCheck(self.scanned(), self._index) if residue else None
        try:
            return forget_review.apply_forget(self.store, fplan, selection, note, leak=leak, reopen=reopen)
        finally:
            if leak is not None:  # the facade catches up once the transaction is over, also one that failed late
                self.refresh()

    def approve(self, fplan: ForgetPlan, selection: Selection | None = None, note: str | None = None) -> Approved:
        """What applying ``fplan`` with ``selection`` would write, as a value to
        save (``plan --out``) and apply later, exactly (``apply_saved``)."""
        from .forget import review as forget_review
        from .forget.saved import restamped
        from .ops.backing import listed_from
        from .storage.gitstore import GitCommandFailed

        with listed_from(self.store, self.memories):  # the dependents as scanned: no git grep
            approved = restamped(self.store, forget_review.approve(self.store, fplan, selection, note))
        base = None
        if self.store.git.available:
            with contextlib.suppress(GitCommandFailed):  # no commit yet
                base = self.store.git.run("rev-parse", "--verify", "-q", "HEAD", read=True).strip() or None
        return replace(approved, base_commit=base)

    def check_saved(self, approved: Approved) -> Approved:
        """``approved`` when this store still holds what it was planned on (forget.saved), else
        PalinodeError saying why: what ``apply_saved`` checks first, for a preview."""
        from .forget import saved as forget_saved
        from .ops.backing import listed_from

        self._live_only("checking a saved plan")
        with listed_from(self.store, self.refresh().memories):
            return forget_saved.checked(self.store, approved, self.search_index())

    def apply_saved(self, approved: Approved, *, reopen: bool = False) -> ForgetApplied:
        """Apply a saved plan exactly as it was approved, after checking the
        store still holds what it was planned on (forget.saved); nothing is planned again."""
        self._live_only("applying a saved plan")
        from .forget import review as forget_review

        self.reload_config()
        # the index: the leak check after the apply is then a lookup in the unit index
        leak = forget_review.LeakCheck(self.scanned(), self.search_index())
        try:
            return forget_review.apply_saved(self.store, approved, leak, reopen=reopen)
        finally:
            self.refresh()  # the facade's scan catches up once the transaction is over, also one that failed late

    def leak_check(self, request_path: str, changed: set[str] | None = None) -> list[Leak]:
        """Every surviving mention of a request's preference, classified; ``changed``: only these moved since."""
        from .forget import leak as forget_leak
        from .forget import requests as forget_requests

        request = forget_requests.request_at(self.store, request_path)
        return forget_leak.leak_check(request, self.refresh(changed).memories, self._index)

    def record_leaks(self, request_path: str, leaks: list[Leak] | None = None, note: str | None = None) -> str | None:
        """Record a leak check in the ledger (``leaks`` when already run, else run now)."""
        self._live_only("recording a leak check")
        from .forget import leak as forget_leak
        from .forget import requests as forget_requests

        found = self.leak_check(request_path) if leaks is None else leaks
        return forget_leak.record_residue(self.store, forget_requests.request_at(self.store, request_path), found, note)

    def decisions(self, request_path: str) -> list[LedgerRecord]:
        """The ledger's records about one request (applies, dismissals, flags), oldest first."""
        from .forget import ledger as forget_ledger

        return forget_ledger.decisions_for(forget_ledger.read_ledger(self.store), request_path)

    def flags(self) -> list[LedgerRecord]:
        """Every mention a reviewer flagged (with or without a request), oldest first."""
        from .forget import ledger as forget_ledger

        return [r for r in forget_ledger.read_ledger(self.store) if r.get("action") == "flag"]

    def dismiss(self, request_path: str, note: str) -> str | None:
        self._live_only("dismissing a request")
        from .forget import review as forget_review

        return forget_review.dismiss(self.store, request_path, note)

    # -- possible requests: requests in other words, for a person to confirm (issue 44) --------------
    def possible_requests(self, *, decided: bool = False) -> list[PossibleRequest]:
        """Every possible request in the store as last scanned (``decided``: with those
        confirmed or dismissed); nothing is written."""
        self._live_only("listing possible requests")
        from .forget import possible

        # the index as it is (nothing is built or embedded for this)
        return possible.possible_requests(self.store, self.memories, decided=decided, index=self._index)

    def plan_confirm(self, ref: str, pref: str | None = None, note: str | None = None) -> ConfirmPlan:
        """What confirming the possible request ``ref`` would write: a value to show."""
        self._live_only("confirming a possible request")
        from .forget import possible

        return possible.plan_confirm(self.store, self.refresh().memories, ref, pref, note)

    def apply_confirm(self, plan: ConfirmPlan) -> str | None:
        """Write exactly ``plan`` (the request memory and its ledger record, one commit)."""
        self._live_only("confirming a possible request")
        from .forget import possible

        return possible.apply_confirm(self.store, self.memories, plan)

    def dismiss_possible(self, ref: str, note: str) -> str | None:
        self._live_only("dismissing a possible request")
        from .forget import possible

        return possible.dismiss_possible(self.store, self.refresh().memories, ref, note)

    def flag(
        self, path: str, line: int, kind: str, text: str, note: str, request_path: str | None = None
    ) -> str | None:
        self._live_only("flagging a mention")
        from .forget import review as forget_review

        return forget_review.flag(self.store, path, line, kind, text, note, request_path)

    # -- single operations and their undo ---------------------------------------------------
    def plan_op(self, op: str, target: str, **kw: Any) -> Plan:
        self._live_only("planning an operation")
        from .ops import lifecycle

        return lifecycle.plan_op(self.store, op, target, **kw)

    def apply(self, plan: Plan) -> Applied:
        self._live_only("applying a plan")
        from .ops.apply import apply

        return apply(self.store, plan)

    def operations(self, limit: int = 500) -> list[Operation]:
        from .undo import operations as undo_operations

        return undo_operations.operations(self.store, limit)

    def operation(self, commit: str) -> Operation:
        """The operation a commit id (or its first digits) names."""
        from .undo import operations as undo_operations

        return undo_operations.find_operation(self.operations(), commit)

    def plan_undo(self, operation: Operation, reason: str | None = None) -> Plan:
        self._live_only("planning an undo")
        from .undo import operations as undo_operations

        return undo_operations.plan_undo(self.store, operation, reason)

    def plan_redo(self, operation: Operation, reason: str | None = None) -> Plan:
        """An undone operation again, exactly as it was approved."""
        self._live_only("planning a redo")
        from .undo import redo

        return redo.plan_redo(self.store, operation, reason)

    def plan_withdraw(self, request_path: str, broad: bool = False) -> WithdrawPlan:
        self._live_only("planning a withdrawal")
        from .undo import withdraw as undo_withdraw

        return undo_withdraw.plan_withdraw(self.store, request_path, self.memories, broad=broad)

    def apply_withdraw(self, wplan: WithdrawPlan) -> dict[str, Any]:
        self._live_only("withdrawing a request")
        from .undo import withdraw as undo_withdraw

        return undo_withdraw.apply_withdraw(self.store, wplan)

    def interrupted(self) -> list[Interrupted]:
        from .ops import journal

        return journal.pending(self.store) if self.as_of is None else []  # the journal is now, not history

    def recover(self, how: Literal["complete", "rollback"]) -> list[Recovered]:
        self._live_only("recovering interrupted operations")
        from .undo import recover as undo_recover

        return undo_recover.recover(self.store, how)

    def load(self, ref: str) -> Memory:
        return self.store.load(ref)
