"""How results are printed: JSON (the scripting contract, unchanged by this
module) or text for people: tables of candidates and requests, counts, and
diffs coloured when stdout is a terminal. Every store string goes through
``printable`` before any colour of ours is added, so store text can never
become a terminal escape."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from ..text.sanitize import printable, safe_json
from .textout import Text, one_line, p


def _plan_text(out: Text, plan: dict[str, Any]) -> None:
    knobs = plan["knobs"]
    out.add(out.style(f"Forget request {p(plan['request'])}", "head") + f'  "{p(plan["pref"])}"  r:{plan["rid"]}')
    thorough = plan.get("resolver") == "thorough"
    if thorough:
        out.add(
            "  resolver: thorough (store-wide sentence evidence; the knobs below set only Palinode's plan beside it)"
            + (f"  {out.style(p(plan['resolver_notice']), 'warn')}" if plan.get("resolver_notice") else "")
        )
        semantic = plan.get("semantic")
        if semantic is None:
            meaning = "  meaning: off: words only"
        elif not semantic.get("query"):  # how to get it (index, or the vectors extra) is the resolver's notice
            meaning = "  meaning: none yet (the preference has no vector)"
        else:
            meaning = f"  meaning: {semantic.get('description', '')}"
        out.add(meaning if semantic is None or semantic.get("complete") else out.style(meaning, "warn"))
    search = "Palinode's search" if thorough else "search"  # thorough's own is the sentence index (meaning above)
    out.add(
        f"  {search}: {plan['search_mode']} (top {knobs['search_k']})"
        f"  floor {knobs['min_target_coverage']}  max targets {knobs['max_targets']}"
        f"  min shared words {knobs['min_shared_words']}"
    )
    if plan.get("search_notice"):
        out.add("  " + out.style(p(plan["search_notice"]), "warn"))
    for warning in plan.get("warnings", []):
        out.add("  " + out.style(f"warning: {p(warning)}", "warn"))
    candidates = plan["candidates"]
    if not candidates:
        out.add("  no candidate passed the search")
        return
    out.add()
    rows = []
    for c in candidates:
        cov = "" if c["coverage"] is None else f"{c['coverage']:.4f} vs {c['floor']}"
        found = (
            p(c["arms"])
            if plan.get("resolver", "palinode") == "palinode"
            else "+".join(p(r) for r in c.get("found_by", ())) + ("" if c.get("preapproved", True) else " (ask)")
        )
        rows.append(
            [
                str(c["rank"]),
                c["route"].replace("_", " "),
                p(c["path"]),
                cov,
                found,
                ", ".join(p(w) for w in c["shared_words"]),
            ]
        )
    out.table(["rank", "route", "memory", "coverage", "found by", "shared words"], rows)
    out.add()
    for c in candidates:
        out.add(f"  {p(c['path'])}: {p(c['reason'])}")
        for ev in c.get("evidence", []):
            sim = "" if ev["similarity"] is None else f" sim {ev['similarity']:.2f}"
            near = f" near {p(ev['neighbour'])!r} ({ev['neighbour_similarity']:.2f})" if ev.get("neighbour") else ""
            near += " (weak: among the nearest in meaning, below the usual cut)" if ev.get("weak") else ""
            near += " (names someone else: a person decides)" if ev.get("someone_named") else ""
            loose = ev.get("loose_words") or []
            near += f" (not counted alone: {', '.join(p(w) for w in loose)})" if loose else ""
            near += f" [{p(ev['whose'])}]" if ev.get("whose") else ""
            out.add(
                f"    {ev['kind']} line {ev['line']}: score {ev['score']:.2f}{sim}, words "
                f"{', '.join(p(w) for w in ev['shared_words']) or 'none'}{near}: {p(ev['text'])}"
            )
        for unit in c.get("spans") or []:  # what --span PATH:N approves, one by one
            mark = "pre-approved" if unit["selected"] else "waits for you"
            out.add(f"    [{unit['index']}] {unit['kind']} line {unit['line']} ({mark}): {p(unit['text'])}")
        for text in c.get("collateral", []):
            out.add("    " + out.style(f"also struck with it (compound sentence): {p(text)}", "warn"))
        for region in c.get("unforgotten", []):
            out.add(
                "    "
                + out.style(f"cannot be struck ({region['kind']}, line {region['line']}): {p(region['text'])}", "warn")
            )
        plan_data = c.get("plan")
        if plan_data and plan_data.get("changes"):
            out.diff(plan_data["diff"])
    taking = sum(1 for c in candidates if c.get("plan") and c["plan"].get("changes"))
    out.add()
    for row in plan.get("guarded", []):
        out.add(f"  held back: {p(row['path'])}: {p(row['reason'])}")
    _surfacing(out, plan.get("would_still_surface"))
    to_store = " to the store" if plan.get("saved") else ""  # with --out, the plan file was
    out.add(f"{taking} target(s) would change, {len(candidates) - taking} not; nothing was written{to_store}.")


def _surfacing(out: Text, rows: list[dict[str, Any]] | None) -> None:
    """What recall would still hand over once the pre-approved targets are applied."""
    if rows is None:
        return
    if not rows:
        out.add("Verified by recall: after the pre-approved targets, no recall query surfaces a live mention.")
        return
    out.add(out.style(f"Would still surface after the pre-approved targets ({len(rows)} mention(s)):", "warn"))
    for r in rows:
        out.add(
            f"  {r['query_kind']} {p(r['query'])!r} #{r['rank']}: {p(r['path'])}:{r['line']} ({r['where']}) {p(r['text'])}"
        )


def _possible(out: Text, data: dict[str, Any]) -> None:
    """Possible requests, each with its sentence, what it points at, how sure, and
    what confirming would do; or a confirmation's plan, or what was written."""
    if "plan" in data:
        plan = data["plan"]
        _candidate(out, plan["candidate"])
        out.add()
        out.add(
            out.style(f"Confirming writes {p(plan['request'])}", "head") + f'  "{p(plan["pref"])}"  r:{plan["rid"]}'
        )
        for line in p(plan["text"]).splitlines():
            out.add("    " + line)
        out.add(f"  in one commit ({p(plan['subject'])}) with the ledger's record of who confirmed it")
        out.add(p(data.get("message")))
        return
    if "confirmed" in data:
        out.add(
            f"Confirmed {p(data['candidate'])}: wrote {p(data['request'])} "
            f'"{p(data["pref"])}" r:{data["rid"]} from {p(data["source"])}'
            + (f", commit {data['commit'][:7]}" if data.get("commit") else "")
        )
        out.add(f"It waits in Review: palinode-audit plan <store> {p(data['request'])}")
        return
    if "dismissed" in data:
        if not data["dismissed"]:
            _candidate(out, data["candidate"])
            out.add(p(data.get("message")))
        else:
            out.add(
                f"Dismissed {p(data['candidate'])}" + (f", commit {data['commit'][:7]}" if data.get("commit") else "")
            )
        return
    found = data["possible"]
    if not found:
        out.add("no possible requests in this store")
        return
    for i, cand in enumerate(found):
        if i:
            out.add()
        _candidate(out, cand)
    out.add()
    out.add(
        f"{len(found)} possible request(s); nothing was written. Confirm one with --confirm ID [--yes], "
        "or dismiss it with --dismiss ID --note WHY [--yes]."
    )


_WHERE = {
    "object": "what it names",
    "previous": "the sentence before",
    "note": "the same day's note",
    "scope": "a blanket scope, yours to choose",
    "unknown": "nothing found to point at",
}


def _candidate(out: Text, c: dict[str, Any]) -> None:
    state = "" if c["state"] == "open" else f"  [{c['state']}: {_decided(c.get('decision'))}]"
    out.add(
        out.style(f"{c['id']}  {c['sure_words']} ({c['sure']:.2f})  {c['kind'].replace('_', ' ')}", "head")
        + f"  {p(c['path'])}:{c['line']}{state}"
    )
    speaker = f"{c['speaker']}: " if c.get("speaker") else ""
    out.add(f"  sentence:  {speaker}{p(c['sentence'])!r}")
    out.add(f"  evidence:  {p(c['cue'])!r} ({p(c['why'])})")
    ref = c["referent"]
    where = _WHERE.get(ref["where"], ref["where"])
    at = (
        f" {p(ref['path'])}" + (f":{ref['line']}" if ref.get("line") else "")
        if ref.get("path") and ref["where"] != "object"
        else ""
    )
    out.add(f"  refers to: {where}{at}" + (f": {p(ref['text'])!r}" if ref.get("text") else ""))
    for carrier in c.get("carriers", []):
        how = "its words" if carrier["how"] == "words" else f"meaning, {carrier['similarity']:.2f}"
        out.add(f"  likely in: {p(carrier['path'])} ({how}): {p(carrier['text'])!r}")
    out.add(f"  preference: {p(c['pref'])!r}" if c.get("pref") else "  preference: none yet (give one with --pref)")
    out.add(f"  confirming would: {p(c['effect'])}")


def _requests(out: Text, data: dict[str, Any]) -> None:
    if "requests" not in data:
        _possible(out, data)
        return
    states = data["requests"]
    if not states:
        out.add("no forget requests in this store")
        return
    out.table(
        ["state", "request", "preference", "archived", "struck", "last decision"],
        [
            [
                s["state"],
                p(s["path"]),
                p(s["pref"]),
                str(len(s["archived_targets"])),
                str(len(s["struck_targets"])),
                _decided(s.get("last_decision")),
            ]
            for s in states
        ],
        indent="",
    )
    counts: dict[str, int] = {}
    for s in states:
        counts[s["state"]] = counts.get(s["state"], 0) + 1
    out.add()
    out.add(", ".join(f"{n} {state}" for state, n in sorted(counts.items())))


def _decided(record: dict[str, Any] | None) -> str:
    """Who decided last, when, and their note: "dismiss 2025-06-01 Ann Lee: duplicate"."""
    if not record:
        return ""
    who = str(record.get("decided_by") or "").split(" <", 1)[0]  # the name; the email is in --json
    note = f": {record['note']}" if record.get("note") else ""
    return p(f"{record.get('action')} {str(record.get('at') or '')[:10]} {who}{note}"[:100])


def _sync(out: Text, data: dict[str, Any]) -> None:
    if not data.get("synced"):
        _generic(out, data)
        return
    moved = data["before"] != data["after"]
    out.add(
        f"{data['how']}d {p(data['upstream'])}: "
        + (f"{data['before'][:7]} -> {data['after'][:7]}" if moved else "already up to date")
        + (", pushed" if data["pushed"] else ", nothing to push")
    )
    _integrity(out, {"ok": not data["problems"], "problems": data["problems"]})
    out.add()
    out.table(
        ["state", "request", "preference", "last decision"],
        [
            [
                s["state"],
                p(s["path"]),
                p(s["pref"]),
                p(
                    f"{s['last_decision'].get('action')} by {s['last_decision'].get('decided_by') or '?'}"
                    if isinstance(s.get("last_decision"), dict)
                    else ""
                ),
            ]
            for s in data["states"]
        ],
        indent="",
    )


def _commits(out: Text, data: dict[str, Any], verb: str) -> None:
    for c in data.get("commits", []):
        out.add(f"  {(c.get('commit') or '')[:7]}  {p(c.get('subject'))}")
    for f in data.get("failed", []):
        out.add("  " + out.style(f"failed: {p(f.get('path'))}: {p(f.get('reason'))}", "warn"))
    out.add(
        f"{len(data.get('commits', []))} commit(s) {verb}"
        + (f", ledger {data['ledger_commit'][:7]}" if data.get("ledger_commit") else "")
    )


def _apply(out: Text, data: dict[str, Any]) -> None:
    if not data.get("applied"):
        if "plan" in data:
            _plan_text(out, data["plan"])
        else:  # a saved plan (apply --plan FILE): its steps as they were approved
            out.add(out.style(f"Saved plan for {p(data['request'])}", "head"))
            for step in data["steps"]:
                out.add(f"  {p(step['route'])} {p(step['path'])}  sha256 {p(step['sha256'])[:12]}")
        out.add(p(data.get("message")))
        return
    out.add(out.style(f"Applied {p(data['request'])}", "head"))
    for label in ("rejected", "deferred"):
        if data.get(label):
            out.add(f"  {label}: " + ", ".join(p(x) for x in data[label]))
    _commits(out, data, "made")


def _withdraw(out: Text, data: dict[str, Any]) -> None:
    if data.get("status") == "would_withdraw":
        out.add(out.style(f"Withdraw {p(data['request'])}", "head") + f'  "{p(data["pref"])}"')
        for step in data["steps"]:
            out.add(f"  {step['op']} {p(step['target'])}")
            out.diff(step["diff"])
        out.add(f"{len(data['steps'])} step(s), each its own commit; {p(data.get('message') or 'nothing written')}.")
        return
    out.add(out.style(f"{data['status']}: {p(data['request'])}", "head"))
    _commits(out, data, "made")


def _operations(out: Text, data: dict[str, Any]) -> None:
    if not data["operations"]:
        out.add("no archive, restore, retract or unretract commit in this store's history")
        return
    rows = []
    for o in data["operations"]:
        state = ""
        if o.get("undone_by"):
            state = f"undone {p(o['undone_at'])[:10]} in {o['undone_by'][:7]}"
            if o.get("redone_by"):
                state += f", redone in {o['redone_by'][:7]}"
        rows.append([o["commit"][:7], p(o["date"])[:10], o["op"], p(o["path"]), p(o["counterpart"]), state])
    out.table(["commit", "date", "op", "memory", "via", "undone"], rows, indent="")


def _residue(out: Text, data: dict[str, Any]) -> None:
    out.add(
        out.style(f'Residue of "{p(data["pref"])}"', "head")
        + "  "
        + (", ".join(f"{n} {k}" for k, n in sorted(data["counts"].items())) or "no mentions")
    )
    out.table(
        ["kind", "where", "text"],
        [[m["kind"], f"{p(m['path'])}:{m['line']}", p(m["text"])[:100]] for m in data["mentions"]],
    )


def _integrity(out: Text, data: dict[str, Any]) -> None:
    out.add("ok" if data["ok"] else out.style("problems found", "warn"))
    out.table(
        ["severity", "kind", "memory", "detail"],
        [[x["severity"], x["kind"].replace("_", " "), p(x["path"]), p(x["detail"])] for x in data["problems"]],
    )
    history = data.get("history")
    if history:
        unsound = [m for m in history["markers"] if not (m["record"] and m["history_line"] and m["retract_commit"])]
        out.add(
            f"history: {history['commits_walked']} commits, {len(history['markers'])} strike marker(s) written, "
            f"{len(unsound)} without record, history line or retract commit; {len(history['open'])} break(s) "
            f"still open, {len(history['repairs'])} repaired"
        )
        out.table(
            ["marker", "memory", "commit", "date", "author", "record", "history", "retract"],
            [
                [
                    p(m["rid"]),
                    p(m["path"]),
                    m["commit"][:10],
                    p(m["date"]),
                    p(m["author"]),
                    *("yes" if m[k] else "NO" for k in ("record", "history_line", "retract_commit")),
                ]
                for m in unsound
            ],
        )
        out.table(
            ["broke", "memory", "commit", "date", "author", "by", "subject"],
            [
                [
                    b["kind"].replace("_", " "),
                    p(b["path"]),
                    b["commit"][:10],
                    p(b["date"]),
                    p(b["author"]),
                    "hand edit" if b["hand_edit"] else p(b["actor"]),
                    p(b["subject"]),
                ]
                for b in history["open"]
            ],
        )


def _leaks(out: Text, data: dict[str, Any]) -> None:
    if data.get("notice"):
        out.add(out.style(p(data["notice"]), "warn"))
    for check in data["checks"]:
        counts = ", ".join(f"{n} {k}" for k, n in sorted(check["counts"].items())) or "no surviving mention"
        out.add(
            out.style(f"{p(check['request'])}", "head")
            + f"  {counts}"
            + (f"  (recorded: {check['ledger_commit'][:10]})" if check.get("ledger_commit") else "")
        )
        found = [m for m in check["mentions"] if m["kind"] != "possible"]
        out.table(
            ["kind", "where", "in", "match", "text"],
            [[m["kind"], f"{p(m['path'])}:{m['line']}", m["where"], m["match"], p(m["text"])[:90]] for m in found],
        )
        maybe = [m for m in check["mentions"] if m["kind"] == "possible"]
        if maybe:
            out.add("  read as possibly a mention, and not taken for one:")
            out.table(
                ["where", "why", "text"],
                [[f"{p(m['path'])}:{m['line']}", p(m.get("why") or "")[:70], p(m["text"])[:70]] for m in maybe],
            )


def _plan(out: Text, data: dict[str, Any]) -> None:
    _plan_text(out, data)
    saved = data.get("saved") or {}
    if saved:  # the store is untouched; the plan file is what was written
        steps = ", ".join(f"{p(s['route'])} {p(s['path'])}" for s in saved["steps"])
        out.add(f"Saved to {p(saved['file'])}: {len(saved['steps'])} approved step(s) ({steps})")
        out.add(f"  apply it with: palinode-audit apply STORE --plan {p(shlex.quote(saved['file']))} --yes")


def _generic(out: Text, data: dict[str, Any]) -> None:
    for key, value in data.items():
        if key in ("diff", "body") and value:
            out.add(f"{key}:")
            if key == "diff":
                out.diff(value, indent="")
            else:
                out.add(p(value).rstrip())
        elif isinstance(value, list):
            out.add(f"{one_line(p(key))}: ({len(value)})")
            for item in value:
                out.add(
                    "  - "
                    + (
                        ", ".join(f"{one_line(p(k))}={_flat(v)}" for k, v in item.items())
                        if isinstance(item, dict)
                        else _flat(item)
                    )
                )
        elif isinstance(value, dict):
            out.add(f"{one_line(p(key))}: " + ", ".join(f"{one_line(p(k))}={_flat(v)}" for k, v in value.items()))
        else:
            out.add(f"{one_line(p(key))}: {_flat(value)}")


def _flat(value: Any) -> str:
    """A nested value on one line for a person (a commit's trailers, a list of
    paths), never a Python repr: "(Forget-Request: a.md; Retraction-Id: 1f)"."""
    if isinstance(value, dict):
        return "(" + "; ".join(f"{one_line(p(k))}: {_flat(v)}" for k, v in value.items()) + ")"
    if isinstance(value, (list, tuple)):
        return "[" + "; ".join(_flat(v) for v in value) + "]"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return one_line(p(value).rstrip("\n"))  # a history line's own newline is no content


_RENDERERS: dict[str, Callable[[Text, dict[str, Any]], None]] = {
    "plan": _plan,
    "apply": _apply,
    "requests": _requests,
    "operations": _operations,
    "withdraw": _withdraw,
    "residue": _residue,
    "leaks": _leaks,
    "integrity": _integrity,
    "sync": _sync,
}


def render(command: str, data: dict[str, Any], as_json: bool, colour: bool = False, exact: bool = False) -> str:
    if as_json:
        return safe_json(data)
    out = Text(colour, exact)
    point = data.get("as_of")
    if isinstance(point, dict) and command in _RENDERERS:  # the generic renderer prints it as a field
        out.add(
            out.style(
                p(f"as of {point['asked']}: commit {point['commit'][:10]} of {point['date']} (history, read-only)"),
                "warn",
            )
        )
    _RENDERERS.get(command, _generic)(out, data)
    return out.render()


def error_line(message: str) -> str:
    return f"palinode-audit: {printable(message)}"
