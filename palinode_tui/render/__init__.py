"""Turning core values into Rich ``Text``: ``text`` (the choke point for store
strings, memory bodies), ``plans`` (plan previews), ``diff`` (the one diff
colourer), ``formats`` (dates, ids, gauges)."""
from .diff import colour_diff, unified_diff
from .formats import coverage_gauge, short_date, short_sha
from .plans import ROUTE_STYLE, STATE_STYLE, after_body, field_changes, plan_preview, route_word, words
from .text import STATUS_STYLE, MemoryStatus, body_text, memory_status, plain, safe

__all__ = ["colour_diff", "unified_diff", "coverage_gauge", "short_date", "short_sha", "ROUTE_STYLE", "STATE_STYLE",
           "after_body", "field_changes", "plan_preview", "route_word", "words", "STATUS_STYLE", "MemoryStatus", "body_text",
           "memory_status", "plain", "safe"]
