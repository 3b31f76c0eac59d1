"""The audit report as Markdown. Store text is escaped so it can never become
markup (a link, an image, raw HTML, a table break); struck sentences render
as ``~~strikes~~``; diffs sit in fences longer than any backtick run in them."""

from __future__ import annotations

import re
from typing import Any

from ..text.sanitize import printable

_SPECIAL_RE = re.compile(r"([\\`*_{}\[\]<>#|~&])")


def md(value: Any) -> str:
    """Inline store text: acting characters visible, markup characters escaped, one line."""
    text = printable("" if value is None else str(value)).replace("\r", " ").replace("\n", " ")
    return _SPECIAL_RE.sub(r"\\\1", text)


def _fence(text: str) -> str:
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}diff\n{printable(text).rstrip()}\n{fence}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _commits(items: list[dict[str, Any]], undo: bool = False) -> list[str]:
    if not items:
        return ["none", ""]
    out = []
    for c in items:
        kind = f"{md(c['kind'])}: " if undo else ""
        out += [
            f"#### {kind}{md(c['subject'])}",
            "",
            f"commit `{c['commit']}`, {md(c['date'])}, by {md(c['author'])} (made by {md(c['actor'])})"
            + (
                f"; the same change as `{c['same_as'][:10]}`, made in another clone: one application"
                if c.get("same_as")
                else ""
            ),
            "",
            _fence(c["diff"]),
            "",
        ]
    return out


def _request(req: dict[str, Any]) -> list[str]:
    filed, resolver = req["filed"], req["resolver"]
    knobs = resolver["knobs"]
    out = [
        f"## Request {md(req['path'])}",
        "",
        f"- preference: “{md(req['pref'])}”",
        f"- retraction id: r:{md(req['rid'])}",
        f"- state: {md(req['state'])}",
        f"- filed: {md(filed['date'])} by {md(filed['author'])} (commit {filed['commit'][:10]})"
        if filed
        else "- filed: not committed",
        f"- resolved by: {md(resolver['by'] or 'not resolved yet')}",
        f"- search mode: {md(resolver['search_mode'] or '—')}",
        "- knobs: "
        + (
            ", ".join(f"{md(k)}={md(v)}" for k, v in knobs.items()) + f" ({md(resolver['knobs_source'])})"
            if knobs
            else "—"
        ),
        "",
        "### Targets"
        + (
            f" (the plan under review, by the {md(req['under_review']['resolver'])} resolver: nothing of it is applied)"
            if req.get("under_review")
            else ""
        ),
        "",
    ]
    if req["targets"]:
        out += [_row(["memory", "route", "coverage", "decision", "commit", "evidence"]), _row(["---"] * 6)]
        for t in req["targets"]:
            ev = t["evidence"]
            parts = (
                (["shared words: " + md(", ".join(ev["shared_words"]))] if ev["shared_words"] else [])
                + [f"struck: ~~{md(s)}~~" for s in ev["struck"]]
                + (["history: " + md(ev["history_line"])] if ev["history_line"] else [])
                + (["router: " + md(ev["reason"])] if ev["reason"] else [])
                + ["flagged: " + md(f) for f in t["flags"]]
            )
            cov = "—" if t["coverage"] is None else f"{t['coverage']:.4f}"
            decision = md(t["decision"] or "—") + (f" by {md(t['decided_by'])}" if t["decided_by"] else "")
            out.append(
                _row(
                    [md(t["path"]), md(t["route"] or "—"), cov, decision, (t["commit"] or "")[:10], "<br>".join(parts)]
                )
            )
    else:
        out.append("none")
    out += ["", "### Reviewer decisions", ""]
    if req["decisions"]:
        out += [_row(["action", "at", "by", "what", "note", "ledger commit"]), _row(["---"] * 6)]
        for d in req["decisions"]:
            what = [
                f"{k}: " + ", ".join(md(p) for p in d[k])
                for k in ("approved", "rejected", "deferred", "failed")
                if d[k]
            ]
            if d["action"] == "flag":
                what.append(f"{md(d['path'])} line {md(d['line'])} ({md(d['kind'])}): {md(d['text'])}")
            elif d["action"] == "strike":
                what.append(f"struck by hand: {md(d['path'])} line {md(d['line'])}: ~~{md(d['text'])}~~")
            elif d["action"] == "residue" and d.get("counts") is not None:
                what.append("leak check: " + (", ".join(f"{md(k)} {v}" for k, v in d["counts"].items()) or "nothing"))
            out.append(
                _row(
                    [
                        md(d["action"]),
                        md(plain_time(d["at"])),
                        md(d["by"] or "—"),
                        "<br>".join(what),
                        md(d["note"] or "")
                        + (
                            f" (the same application as {md(d['same_application_as'])})"
                            if d.get("same_application_as")
                            else ""
                        ),
                        (d["commit"] or "")[:10],
                    ]
                )
            )
    else:
        out.append("none")
    out += ["", "### Operations applied", "", *_commits(req["operations"])]
    out += ["### Undos and withdrawals", "", *_commits(req["undos"], undo=True)]
    counts = ", ".join(f"{md(k)}: {v}" for k, v in sorted(req["residue"]["counts"].items())) or "none"
    out += ["### Surviving mentions now", "", counts, ""]
    for m in req["residue"]["mentions"]:
        text = f"~~{md(m['text'])}~~" if m["kind"] == "struck" else md(m["text"])
        out.append(f"- {md(m['path'])}:{m['line']} **{md(m['kind'])}**: {text} ({md(m['reason'])})")
    return [*out, "", *_deliveries(req.get("deliveries"))]


def _deliveries(found: dict[str, Any] | None) -> list[str]:
    """What Palinode delivered carrying the preference: the exposure window and the leaks."""
    if not found:
        return []
    w, counts = found["window"], found["counts"]
    out = [
        "### Deliveries (Palinode's retrieval log)",
        "",
        f"- exposure window: {md(w['from'] or 'unknown')} to {md(w['to'] or 'not applied (still open)')}",
        "- " + ", ".join(f"{md(k)}: {v}" for k, v in counts.items()),
        *[f"- {md(note)}" for note in found["log"]["notes"]],
        "",
    ]
    for title, rows in (
        ("Leaks (delivered after the apply)", found["leaks"]),
        ("In the exposure window", found["exposure"]),
    ):
        if rows:
            out += [f"#### {title}", "", _row(["time", "session", "mode", "query", "memory", "version", "sentence"])]
            out.append(_row(["---"] * 7))
            for r in rows:
                version = f"{r['revision_match']} {(r['version'] or '')[:10]}".strip()
                cells = [r["timestamp"], r["session_id"], r["mode"], r["query"], r["path"], version, r["sentence"]]
                out.append(_row([md(c or "") for c in cells]))
            out.append("")
    return out


def plain_time(value: Any) -> str:
    """An ISO time without its fraction of a second: what a reader needs."""
    return re.sub(r"(\d{2}:\d{2}:\d{2})\.\d+", r"\1", str(value)) if value else "—"


def verdict(report: dict[str, Any]) -> list[str]:
    """One line per request, in plain words, before the detail: what is still live."""
    lines = []
    for req in report["requests"]:
        counts = req["residue"]["counts"]
        live, blocked = counts.get("live", 0), counts.get("unforgettable", 0)
        said = [f"{live} live mention(s) still recalled" if live else "nothing live remains"]
        if blocked:
            said.append(f"{blocked} that cannot be struck (heading, table, code or living document)")
        leaks = ((req.get("deliveries") or {}).get("counts") or {}).get("leak", 0)
        if leaks:
            said.append(f"{leaks} delivery(ies) of it after the apply")
        lines.append(f"r:{req['rid']} {req['path']} is {req['state']}: " + "; ".join(said))
    return lines


def render_md(report: dict[str, Any]) -> str:
    scope = ", ".join(f"{k} {md(v)}" for k, v in report["scope"].items() if v) or "everything"
    as_of = report["as_of"]
    out = [
        "# Forget audit report",
        "",
        f"- store: {md(report['store'])}",
        f"- generated: {md(plain_time(report['generated_at']))}",
        f"- head: {report['head'] or '—'}",
        f"- scope: {scope}",
        f"- as of: {md(as_of['asked'])} = {as_of['commit']} ({md(as_of['date'])})" if as_of else "- as of: now",
        f"- requests: {len(report['requests'])}",
        *(
            [f"- redacted: keyed hashes, key `{md(k['key_id'])}`; {md(k['stable'])}"]
            if (k := report.get("redaction"))
            else []
        ),
        "",
    ]
    if report["requests"]:
        out += ["## Verdict", "", *(f"- {md(line)}" for line in verdict(report)), ""]
    for req in report["requests"]:
        out += _request(req)
    if not report["requests"]:
        out.append("No forget request in scope.")
    return "\n".join(out).rstrip() + "\n"
