"""Turning core values into Rich ``Text``: ``text`` (the choke point for store
strings, memory bodies), ``plans`` (plan previews), ``diff`` (the one diff
colourer), ``formats`` (dates, ids, gauges), ``evidence`` (which resolver found a
target and why)."""

from .diff import colour_diff, unified_diff
from .evidence import comparison_line, evidence_text, found_by_line, found_by_marker
from .formats import coverage_gauge, short_date, short_sha
from .plans import OPERATION_STYLE, ROUTE_STYLE, STATE_STYLE, after_body, field_changes, plan_preview, route_word, words
from .text import STATUS_STYLE, MemoryStatus, body_text, memory_status, plain, safe, spoken

__all__ = [
    "OPERATION_STYLE",
    "ROUTE_STYLE",
    "STATE_STYLE",
    "STATUS_STYLE",
    "MemoryStatus",
    "after_body",
    "body_text",
    "colour_diff",
    "comparison_line",
    "coverage_gauge",
    "evidence_text",
    "field_changes",
    "found_by_line",
    "found_by_marker",
    "memory_status",
    "plain",
    "plan_preview",
    "route_word",
    "safe",
    "short_date",
    "short_sha",
    "spoken",
    "unified_diff",
    "words",
]
