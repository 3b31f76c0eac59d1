"""Rendering shared by the screens: plan previews and diffs as Rich text."""
from __future__ import annotations

import difflib

from rich.text import Text

from palinode_core.ops.plan import Plan
from palinode_core.text.document import parse_document
from palinode_core.text.markdown import struck_spans

from ..render import body_text, plain


def field_changes(plan: Plan) -> Text:
    text = Text()
    for change in plan.field_changes:
        text.append(f"{change.key}: ", style="bold")
        text.append(plain(_short(change.before), "red"))
        text.append(" → ")
        text.append(plain("(removed)" if change.after is None else _short(change.after), "green"))
        text.append("\n")
    return text


def _short(value: object) -> str:
    if value is None:
        return "(absent)"
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def unified_diff(old: str, new: str, name: str) -> Text:
    text = Text()
    for line in difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                     fromfile=f"a/{name}", tofile=f"b/{name}", n=2):
        style = ("green" if line.startswith("+") else "red" if line.startswith("-") else
                 "cyan" if line.startswith("@@") else "dim")
        if not line.endswith("\n"):
            line += "\n"
        text.append(plain(line, style))
    return text


def plan_preview(plan: Plan) -> Text:
    """What a plan will write: the frontmatter delta, the strikes, the history
    line, the commit subject."""
    text = Text()
    text.append(f"{plan.op} ", style="bold")
    text.append(plain(plan.target, "bold"))
    text.append(f"  ({plan.status})\n\n", style="dim")
    text.append_text(field_changes(plan))
    if plan.op == "retract":
        new_body = plan.new_text
        for span in struck_spans(new_body, plan.rid):
            text.append("  strike: ", style="magenta")
            text.append(plain(span.text, "strike"))
            text.append("\n")
    if plan.op == "unretract":
        text.append(f"  unstrike {plan.mentions} span(s) marked r:{plan.rid}\n", style="green")
    if plan.history_line:
        text.append("\nhistory: ", style="bold")
        text.append(plain(plan.history_line.rstrip()))
    if plan.commit_subject:
        text.append("\ncommit:  ", style="bold")
        text.append(plain(plan.commit_subject))
    text.append("\n")
    return text


def after_body(plan: Plan) -> Text:
    """The body as it will read after the plan: this plan's new strikes in
    bold red, earlier strikes as ordinary strikethrough."""
    body = parse_document(plan.new_text).body
    if plan.op != "retract" or not plan.rid:
        return body_text(body)
    text = body_text(body)
    plain_text = text.plain
    for span in struck_spans(body, plan.rid):
        start = plain_text.find(span.text)
        if start >= 0:
            text.stylize("bold red strike", start, start + len(span.text))
    return text
