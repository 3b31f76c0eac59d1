"""The report as a file: rendered as json, md or html and written outside the
store. The CLI's ``report -o`` and the app's export share this one path."""

from __future__ import annotations

import contextlib
import os
import tempfile
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
    # A new file renamed (or linked) into place: the old name's inode is never
    # written to, so an output that is a hard link to a memory cannot reach it.
    try:
        handle, tmp = tempfile.mkstemp(prefix=".palinode-report-", dir=out.parent)
    except OSError as exc:
        raise PalinodeError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(tmp, 0o644)
        if overwrite:
            os.replace(tmp, out)
        else:
            os.link(tmp, out)  # fails if the name exists, atomically
    except FileExistsError:
        raise PalinodeError(f"{out} already exists") from None
    except OSError as exc:
        raise PalinodeError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return {
        "written": os.fspath(out),
        "format": fmt,
        "requests": len(report["requests"]),
        "targets": sum(len(r["targets"]) for r in report["requests"]),
    }
