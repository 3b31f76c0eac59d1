"""The core's declared public API: what an app (palinode_tui) may import.
The Session and the value types it takes and returns, the errors, and the few
text helpers a view needs to show store text. Everything else is inside the
core and may change; an import-linter contract keeps the app to this module."""

from __future__ import annotations

from . import __version__
from .demo import build_demo_store
from .errors import Cancelled, PalinodeError
from .forget.evidence import Evidence
from .forget.possible import ConfirmPlan, PossibleRequest
from .forget.requests import RequestState
from .forget.resolve import Candidate, ForgetPlan
from .forget.review import ForgetApplied
from .forget.selection import APPROVE_ALL, REJECT, Choice
from .inspect.report_out import FORMATS
from .inspect.report_review import ReviewMark, UnderReview
from .inspect.residue import Mention
from .inspect.timeline import Point
from .inspect.trace import Pointer, Trace
from .ops.apply import Applied
from .ops.plan import Plan
from .search.embed import Embedder
from .search.index import SearchIndex
from .session import Session
from .storage.child import ProgressPhase
from .storage.config import ForgetKnobs
from .storage.memory import Memory, ScanResult
from .storage.records import OPERATION_KINDS, LedgerRecord, OperationKind, OpKind, RequestStateName
from .storage.snapshot import AsOf
from .storage.store import utc_now
from .storage.watch import StoreWatcher
from .text.document import parse_document
from .text.markdown import struck_spans
from .text.sanitize import printable
from .text.stem import stem, stem_tokens
from .text.words import normalize_pref
from .undo.operations import Operation
from .undo.withdraw import WithdrawPlan

__all__ = [
    "APPROVE_ALL",
    "FORMATS",
    "OPERATION_KINDS",
    "REJECT",
    "Applied",
    "AsOf",
    "Cancelled",
    "Candidate",
    "Choice",
    "ConfirmPlan",
    "Embedder",
    "Evidence",
    "ForgetApplied",
    "ForgetKnobs",
    "ForgetPlan",
    "LedgerRecord",
    "Memory",
    "Mention",
    "OpKind",
    "Operation",
    "OperationKind",
    "PalinodeError",
    "Plan",
    "Point",
    "Pointer",
    "PossibleRequest",
    "ProgressPhase",
    "RequestState",
    "RequestStateName",
    "ReviewMark",
    "ScanResult",
    "SearchIndex",
    "Session",
    "StoreWatcher",
    "Trace",
    "UnderReview",
    "WithdrawPlan",
    "__version__",
    "build_demo_store",
    "normalize_pref",
    "parse_document",
    "printable",
    "stem",
    "stem_tokens",
    "struck_spans",
    "utc_now",
]
