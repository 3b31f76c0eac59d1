"""Headless engine for auditing how a Palinode memory store forgets.

Never imports textual or rich: the TUI is one client of this package, the
``palinode-audit`` CLI is another.
"""

__version__ = "0.1.0"
