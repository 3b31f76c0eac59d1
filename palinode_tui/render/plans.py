"""Plans as Rich text: the frontmatter delta, strikes, history line, commit."""

from __future__ import annotations

import re

from rich.text import Text

from palinode_core.api import OPERATION_KINDS, Plan, parse_document, struck_spans

from .text import body_text, plain

# each operation kind in its own colour (the core's table of kinds)
OPERATION_STYLE: dict[str, str] = {name: kind.colour for name, kind in OPERATION_KINDS.items()}
ROUTE_STYLE: dict[str, str] = {
    "archive": "bold yellow",
    "strike": "bold magenta",
    "unforgotten": "bold red",
    "skipped": "dim",
    "not_taken": "dim italic",
}
# Plain words for the core's route and plan-status names.
ROUTE_WORDS: dict[str, str] = {"not_taken": "not taken"}
STATUS_WORDS: dict[str, str] = {
    "would_archive": "will archive",
    "would_restore": "will restore",
    "would_retract": "will strike",
    "would_unretract": "will unstrike",
    "already_archived": "already archived",
    "not_archived": "not archived",
    "already_retracted": "already struck",
    "not_retracted": "not struck",
    "no_mentions": "no mentions",
    "replace_doc": "a replace-document memory",
    "nothing_selected": "nothing selected",
}
_STATUS_RE = re.compile(r"\b(" + "|".join(STATUS_WORDS) + r")\b")
STATE_STYLE: dict[str, str] = {
    "pending": "bold cyan",
    "applied": "green",
    "partial": "yellow",
    "withdrawn": "dim",
    "dismissed": "dim italic",
    "conflicted": "bold red",  # dismissed and applied apart: someone must decide again
}


def route_word(route: str) -> str:
    return ROUTE_WORDS.get(route, route)


def words(text: str) -> str:
    """A core reason or status with its internal names in plain words."""
    return _STATUS_RE.sub(lambda m: STATUS_WORDS[m.group()], text)


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


def plan_preview(plan: Plan) -> Text:
    """What a plan will write: the frontmatter delta, the strikes, the history
    line, the commit subject."""
    text = Text()
    text.append(f"{plan.op} ", style="bold")
    text.append(plain(plan.target, "bold"))
    text.append(f"  ({words(plan.status)})\n\n", style="dim")
    text.append_text(field_changes(plan))
    if plan.op == "retract":
        # this plan's own strikes (a memory struck before for the same id keeps those)
        for span in plan.spans:
            if span.index in plan.selected:
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
