"""One example per command, shown at the end of its ``--help``. Each runs as
written on the demo store (``palinode-audit demo-store ~/palinode-demo``; its
history and commit ids are the same on every build), and a test runs them."""

from __future__ import annotations

DEMO = "~/palinode-demo"

EXAMPLES: dict[str, tuple[str, ...]] = {
    "scan": (f"scan {DEMO}", f"scan {DEMO} --as-of 2025-05-13"),
    "show": (f"show {DEMO} insights/pref-tea.md",),
    "archive": (f"archive {DEMO} projects/tea-club-status.md --reason 'the club closed'",),
    "restore": (f"restore {DEMO} insights/forget-gym.md",),
    "retract": (
        f"retract {DEMO} people/me-profile.md --pref 'I live in Berlin' --superseded-by insights/forget-berlin.md",
    ),
    "unretract": (f"unretract {DEMO} projects/weekly-plan.md --pref 'I play poker on Fridays'",),
    "history": (f"history {DEMO} insights/pref-poker.md",),
    "demo-store": (f"demo-store {DEMO}",),
    "index": (f"index {DEMO}",),
    "search": (f"search {DEMO} 'oolong tea' --lexical",),
    "requests": (f"requests {DEMO}", f"requests {DEMO} --possible"),
    "plan": (f"plan {DEMO} insights/forget-tea.md", f"plan {DEMO} insights/forget-tea.md --out tea-plan.json"),
    "apply": (f"apply {DEMO} insights/forget-tea.md", f"apply {DEMO} --plan tea-plan.json --yes"),
    "leaks": (f"leaks {DEMO} insights/forget-poker.md --lexical",),
    "dismiss": (f"dismiss {DEMO} insights/forget-tea.md --note 'the tea is work-related'",),
    "operations": (f"operations {DEMO}",),
    "undo": (f"undo {DEMO} a15fbdd", f"undo {DEMO} a15fbdd --yes"),
    "redo": (f"redo {DEMO} a15fbdd",),
    "withdraw": (f"withdraw {DEMO} insights/forget-poker.md",),
    "recover": (f"recover {DEMO}",),
    "residue": (f"residue {DEMO} --pref 'I play poker on Fridays'",),
    "strike": (f"strike {DEMO} insights/forget-w.md projects/moonrise-closeout.md:9 --text Handed",),
    "flag": (f"flag {DEMO} insights/forget-tea.md projects/tea-club-status.md:10 --note 'a table row: edit by hand'",),
    "integrity": (f"integrity {DEMO}", f"integrity {DEMO} --history"),
    "trace": (f"trace {DEMO} insights/pref-poker.md",),
    "timeline": (f"timeline {DEMO} insights/pref-gym.md",),
    "diff": (f"diff {DEMO} insights/pref-gym.md --from HEAD~3",),
    "report": (
        f"report {DEMO} --request insights/forget-poker.md",
        f"report {DEMO} --since 2025-05-01 --format html -o audit.html",
    ),
    "deliveries": (f"deliveries {DEMO} --request insights/forget-poker.md",),
    "review-pack": (f"review-pack {DEMO} --out /tmp/review-pack --lexical",),
    "sync": (f"sync {DEMO}",),
    "trust": (f"trust {DEMO} --show",),
    "untrust": (f"untrust {DEMO}",),
    "completion": ("completion bash > ~/.local/share/bash-completion/completions/palinode-audit",),
}


def epilog(command: str) -> str:
    lines = EXAMPLES.get(command, ())
    if not lines:
        return ""
    return "example" + ("s" if len(lines) > 1 else "") + ":\n" + "\n".join(f"  palinode-audit {x}" for x in lines)
