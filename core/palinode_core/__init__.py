"""Headless engine for auditing how a Palinode memory store forgets.

Never imports textual or rich: the TUI is one client of this package, the
``palinode-audit`` CLI is another.
"""

from pathlib import Path

# The one version source of both distributions: core/pyproject.toml and the app's
# pyproject.toml read this file too, so palinode-core and palinode-tui are released together.
__version__ = (Path(__file__).parent / "VERSION").read_text(encoding="ascii").strip()
