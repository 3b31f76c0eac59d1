"""Turning core values into Rich ``Text``: ``text`` (the choke point for store
strings, memory bodies), ``plans`` (plan previews), ``diff`` (the one diff
colourer), ``formats`` (dates, ids, gauges), ``evidence`` (which resolver found a
target and why)."""
from .diff import colour_diff, unified_diff
from .evidence import comparison_line, evidence_text, found_by_line, found_by_marker
from .formats import coverage_gauge, short_date, short_sha
from .plans import ROUTE_STYLE, STATE_STYLE, after_body, field_changes, plan_preview, route_word, words
from .text import STATUS_STYLE, MemoryStatus, body_text, memory_status, plain, safe

__all__ = ["colour_diff", "unified_diff", "comparison_line", "evidence_text", "found_by_line", "found_by_marker",
           "coverage_gauge", "short_date", "short_sha", "ROUTE_STYLE", "STATE_STYLE",
           "after_body", "field_changes", "plan_preview", "route_word", "words", "STATUS_STYLE", "MemoryStatus", "body_text",
           "memory_status", "plain", "safe"]
