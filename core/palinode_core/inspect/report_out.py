"""The report as a file: rendered as json, md or html and written outside the
store. The CLI's ``report -o`` and the app's export share this one path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal, get_args

from ..errors import PalinodeError
from ..storage.output import write_output
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
    """Write the rendered report to ``output`` (storage.output's rules: never
    inside the store or through a link; over an existing file only with ``overwrite``)."""
    out = write_output(root, render_report(report, fmt), output, overwrite=overwrite)
    return {
        "written": os.fspath(out),
        "format": fmt,
        "requests": len(report["requests"]),
        "targets": sum(len(r["targets"]) for r in report["requests"]),
    }
