"""Widgets shared by the screens: the status line, modal dialogs and a table
that keeps its selected key."""

from .banner import AsOfBanner
from .list_filter import ListFilter
from .modals import ConfirmModal, ErrorModal, NoteModal, RecoveryModal
from .status import StatusLine
from .table import KeyedTable
from .tabs import ModeTabs

__all__ = [
    "AsOfBanner",
    "ConfirmModal",
    "ErrorModal",
    "KeyedTable",
    "ListFilter",
    "ModeTabs",
    "NoteModal",
    "RecoveryModal",
    "StatusLine",
]
