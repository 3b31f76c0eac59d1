"""How results are printed: JSON (the scripting contract) or a compact text
rendering for people. Store text is passed through ``printable`` so it can
never become a terminal escape."""
from __future__ import annotations

from typing import Any

from ..text.sanitize import printable, safe_json


def render(data: dict[str, Any], as_json: bool) -> str:
    return safe_json(data) if as_json else render_text(data)


def render_text(data: dict[str, Any]) -> str:
    lines: list[str] = []
    for key, value in data.items():
        if key in ("diff", "body") and value:
            lines.append(f"{key}:\n{value.rstrip()}")
        elif isinstance(value, list):
            lines.append(f"{key}: ({len(value)})")
            for item in value:
                lines.append(f"  - {item if not isinstance(item, dict) else ', '.join(f'{k}={v}' for k, v in item.items())}")
        elif isinstance(value, dict):
            lines.append(f"{key}: " + ", ".join(f"{k}={v}" for k, v in value.items()))
        else:
            lines.append(f"{key}: {value}")
    return printable("\n".join(lines))


def error_line(message: str) -> str:
    return f"palinode-audit: {printable(message)}"
