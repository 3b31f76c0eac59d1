"""The audit report as ONE self-contained HTML file: inline CSS, no script, no
external resource (a Content-Security-Policy forbids any), readable in any
browser without this tool. Every string from the store is HTML-escaped after
its acting characters are made visible; a strike renders as <del>."""

from __future__ import annotations

import html
import re
from typing import Any

from ..text.sanitize import printable
from .report_chart import forgetting_over_time, request_life
from .report_md import plain_time, verdict

_STRIKE_RE = re.compile(r"~~(.+?)~~", re.DOTALL)
CSS = """
body{font:15px/1.5 system-ui,-apple-system,'Segoe UI',sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1d1d1f}
h1{font-size:1.6rem}h2{border-top:2px solid #444;padding-top:1rem;margin-top:2.5rem}h3{margin-top:1.6rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}th,td{border:1px solid #bbb;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#eee}code,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:13px}
pre{background:#f6f6f6;border:1px solid #ddd;padding:.5rem;overflow-x:auto;white-space:pre-wrap;word-break:break-word}
del{color:#a00;text-decoration:line-through}.add{color:#060;background:#eaffea}.rm{color:#900;background:#ffecec}
.hunk{color:#557}dl{display:grid;grid-template-columns:max-content auto;gap:.2rem 1rem}dt{font-weight:600}
.k-live{color:#a00;font-weight:600}.k-struck,.k-archived{color:#555}.k-unforgettable{color:#a60;font-weight:600}
.muted{color:#666}.chart{max-width:100%;height:auto;display:block;margin:.5rem 0}@media print{details{display:block}}
"""


def esc(value: Any) -> str:
    """Store text as inert HTML: acting characters shown as escapes, then escaped."""
    return html.escape(printable("" if value is None else str(value)), quote=True)


def with_strikes(value: Any) -> str:
    """Escaped text whose ``~~struck~~`` spans render as <del>."""
    return _STRIKE_RE.sub(lambda m: f"<del>{m.group(1)}</del>", esc(value))


def _diff(text: str) -> str:
    lines = []
    for line in text.splitlines():
        cls = (
            "hunk"
            if line.startswith("@@")
            else "add"
            if line.startswith("+") and not line.startswith("+++")
            else "rm"
            if line.startswith("-") and not line.startswith("---")
            else ""
        )
        body = with_strikes(line)
        lines.append(f'<span class="{cls}">{body}</span>' if cls else body)
    return "<pre>" + "\n".join(lines) + "</pre>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    if not rows:
        return '<p class="muted">none</p>'
    out = ["<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows]
    return "\n".join(out) + "</tbody></table>"


def _dl(pairs: list[tuple[str, str]]) -> str:
    return "<dl>" + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in pairs) + "</dl>"


def _target_rows(req: dict[str, Any]) -> list[list[str]]:
    rows = []
    for t in req["targets"]:
        ev = t["evidence"]
        parts = []
        if ev["shared_words"]:
            parts.append("shared words: " + esc(", ".join(ev["shared_words"])))
        parts += [f"struck: <del>{esc(s)}</del>" for s in ev["struck"]]
        if ev["history_line"]:
            parts.append("history: " + esc(ev["history_line"]))
        if ev["reason"]:
            parts.append("router: " + esc(ev["reason"]))
        parts += ["flagged: " + esc(f) for f in t["flags"]]
        cov = "—" if t["coverage"] is None else f"{t['coverage']:.4f}"
        rows.append(
            [
                f"<code>{esc(t['path'])}</code>",
                esc(t["route"] or "—"),
                cov,
                esc(t["decision"] or "—") + (f" by {esc(t['decided_by'])}" if t["decided_by"] else ""),
                f"<code>{esc((t['commit'] or '')[:10])}</code>",
                "<br>".join(parts),
            ]
        )
    return rows


def _decision_rows(req: dict[str, Any]) -> list[list[str]]:
    rows = []
    for d in req["decisions"]:
        what = []
        for key in ("approved", "rejected", "deferred", "failed"):
            if d[key]:
                what.append(f"{key}: " + ", ".join(f"<code>{esc(p)}</code>" for p in d[key]))
        if d["action"] == "flag":
            what.append(
                f"<code>{esc(d['path'])}</code> line {esc(d['line'])} ({esc(d['kind'])}): " + with_strikes(d["text"])
            )
        elif d["action"] == "strike":
            what.append(
                f"struck by hand: <code>{esc(d['path'])}</code> line {esc(d['line'])}: <del>{esc(d['text'])}</del>"
            )
        elif d["action"] == "residue" and d.get("counts") is not None:
            what.append("leak check: " + (", ".join(f"{esc(k)} {esc(v)}" for k, v in d["counts"].items()) or "nothing"))
        rows.append(
            [
                esc(d["action"]),
                esc(plain_time(d["at"])),
                esc(d["by"] or "—"),
                "<br>".join(what),
                esc(d["note"] or "")
                + (
                    f" (the same application as {esc(d['same_application_as'])})"
                    if d.get("same_application_as")
                    else ""
                ),
                f"<code>{esc((d['commit'] or '')[:10])}</code>",
            ]
        )
    return rows


def _commits(items: list[dict[str, Any]], undo: bool = False) -> str:
    if not items:
        return '<p class="muted">none</p>'
    out = []
    for c in items:
        kind = f"{esc(c['kind'])}: " if undo else ""
        out.append(
            f"<h4>{kind}{esc(c['subject'])}</h4>"
            + _dl(
                [
                    ("commit", f"<code>{esc(c['commit'])}</code>"),
                    ("date", esc(c["date"])),
                    ("author", esc(c["author"])),
                    ("made by", esc(c["actor"])),
                    *(
                        [("same change as", f"<code>{esc(c['same_as'][:10])}</code> (another clone: one application)")]
                        if c.get("same_as")
                        else []
                    ),
                ]
            )
            + _diff(c["diff"])
        )
    return "\n".join(out)


def _request(req: dict[str, Any]) -> str:
    filed = req["filed"]
    resolver = req["resolver"]
    knobs = resolver["knobs"]
    counts = ", ".join(f"{esc(k)}: {v}" for k, v in sorted(req["residue"]["counts"].items())) or "none"
    mentions = [
        [
            f"<code>{esc(m['path'])}</code>:{m['line']}",
            f'<span class="k-{esc(m["kind"])}">{esc(m["kind"])}</span>',
            f"<del>{esc(m['text'])}</del>" if m["kind"] == "struck" else with_strikes(m["text"]),
            esc(m["reason"]),
        ]
        for m in req["residue"]["mentions"]
    ]
    return "\n".join(
        [
            f"<section><h2>Request <code>{esc(req['path'])}</code></h2>",
            _dl(
                [
                    ("preference", f"“{esc(req['pref'])}”"),
                    ("retraction id", f"<code>r:{esc(req['rid'])}</code>"),
                    ("state", esc(req["state"])),
                    (
                        "filed",
                        f"{esc(filed['date'])} by {esc(filed['author'])} (commit <code>{esc(filed['commit'][:10])}</code>)"
                        if filed
                        else "not committed",
                    ),
                    ("resolved by", esc(resolver["by"] or "not resolved yet")),
                    ("search mode", esc(resolver["search_mode"] or "—")),
                    (
                        "knobs",
                        (
                            ", ".join(f"{esc(k)}={esc(v)}" for k, v in knobs.items())
                            + f' <span class="muted">({esc(resolver["knobs_source"])})</span>'
                        )
                        if knobs
                        else "—",
                    ),
                ]
            ),
            *(["<h3>Its life</h3>", life] if (life := request_life(req)) else []),
            f"<h3>Targets (the plan under review, by the {esc(req['under_review']['resolver'])} resolver: "
            "nothing of it is applied)</h3>"
            if req.get("under_review")
            else "<h3>Targets</h3>",
            _table(["memory", "route", "coverage", "decision", "commit", "evidence"], _target_rows(req)),
            "<h3>Reviewer decisions</h3>",
            _table(["action", "at", "by", "what", "note", "ledger commit"], _decision_rows(req)),
            "<h3>Operations applied</h3>",
            _commits(req["operations"]),
            "<h3>Undos and withdrawals</h3>",
            _commits(req["undos"], undo=True),
            f"<h3>Surviving mentions now</h3><p>{counts}</p>",
            _table(["where", "kind", "text", "why"], mentions),
            _deliveries(req.get("deliveries")),
            "</section>",
        ]
    )


def _deliveries(found: dict[str, Any] | None) -> str:
    """What Palinode delivered carrying the preference: the exposure window and the leaks."""
    if not found:
        return ""
    w = found["window"]
    counts = ", ".join(f"{esc(k)}: {v}" for k, v in found["counts"].items())
    parts = [
        "<h3>Deliveries (Palinode's retrieval log)</h3>",
        _dl(
            [
                ("exposure window", f"{esc(w['from'] or 'unknown')} to {esc(w['to'] or 'not applied (still open)')}"),
                ("deliveries", counts),
                *[("log", esc(note)) for note in found["log"]["notes"]],
            ]
        ),
    ]
    for title, rows in (
        ("Leaks (delivered after the apply)", found["leaks"]),
        ("In the exposure window", found["exposure"]),
    ):
        if rows:
            parts.append(f"<h4>{title}</h4>")
            head = ["time", "session", "mode", "query", "memory", "version", "sentence"]
            cells = [
                [
                    esc(r["timestamp"]),
                    esc(r["session_id"] or ""),
                    esc(r["mode"] or ""),
                    esc(r["query"] or ""),
                    f"<code>{esc(r['path'] or '')}</code>",
                    esc(f"{r['revision_match']} {(r['version'] or '')[:10]}"),
                    esc(r["sentence"] or ""),
                ]
                for r in rows
            ]
            parts.append(_table(head, cells))
    return "\n".join(parts)


def render_html(report: dict[str, Any]) -> str:
    scope = ", ".join(f"{k} {esc(v)}" for k, v in report["scope"].items() if v) or "everything"
    as_of = report["as_of"]
    head = _dl(
        [
            ("store", f"<code>{esc(report['store'])}</code>"),
            ("generated", esc(plain_time(report["generated_at"]))),
            ("head", f"<code>{esc(report['head'] or '—')}</code>"),
            ("scope", scope),
            ("as of", esc(f"{as_of['asked']} = {as_of['commit']} ({as_of['date']})") if as_of else "now"),
            ("requests", str(len(report["requests"]))),
            *(
                [("redacted", f"keyed hashes, key <code>{esc(k['key_id'])}</code>; {esc(k['stable'])}")]
                if (k := report.get("redaction"))
                else []
            ),
        ]
    )
    body = "\n".join(_request(r) for r in report["requests"]) or '<p class="muted">No forget request in scope.</p>'
    if len(report["requests"]) > 1 and (chart := forgetting_over_time(report["requests"])):
        body = "<h2>Forgetting over time</h2>" + chart + "\n" + body
    if report["requests"]:
        body = "<h2>Verdict</h2>" + "".join(f"<p>{esc(line)}</p>" for line in verdict(report)) + "\n" + body
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Forget audit report</title><style>{CSS}</style></head><body>\n"
        f"<h1>Forget audit report</h1>\n{head}\n{body}\n"
        '<p class="muted">Struck text is shown <del>struck</del>. Written by palinode-audit; '
        "schema palinode-audit/report/1.</p></body></html>\n"
    )
