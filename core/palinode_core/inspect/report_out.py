"""The report as a file: rendered as json, md or html and written outside the
store. The CLI's ``report -o`` and the app's export share this one path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, get_args

from ..errors import PalinodeError
from ..text.sanitize import safe_json
from .report_html import render_html
from .report_md import render_md

ReportFormat = Literal["json", "md", "html"]
FORMATS: tuple[ReportFormat, ...] = get_args(ReportFormat)


def render_report(report: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        return safe_json(report) + "\n"
    if fmt == "md":
        return render_md(report)
    if fmt == "html":
        return render_html(report)
    raise PalinodeError(f"unknown report format {fmt!r} (json, md or html)")


def write_report(
    root: Path, report: dict[str, Any], fmt: str, output: str | os.PathLike[str], *, overwrite: bool = True
) -> dict[str, Any]:
    """Write the rendered report to ``output``; never inside the store, and
    never over an existing file unless ``overwrite``."""
    text = render_report(report, fmt)
    out = Path(output).expanduser().resolve()
    if out == root or root in out.parents:
        # inside the store the report would be read as a memory (and committed by Palinode)
        raise PalinodeError(f"{out} is inside the store; write the report somewhere else")
    try:
        with open(out, "w" if overwrite else "x", encoding="utf-8") as handle:
            handle.write(text)
    except FileExistsError:
        raise PalinodeError(f"{out} already exists") from None
    except OSError as exc:
        raise PalinodeError(f"cannot write {out}: {exc.strerror or exc}") from None
    return {
        "written": os.fspath(out),
        "format": fmt,
        "requests": len(report["requests"]),
        "targets": sum(len(r["targets"]) for r in report["requests"]),
    }
