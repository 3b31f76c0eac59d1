"""One registry of every user action. It feeds the key bindings, the footer,
the command palette and the help screen, and keymap overrides address the
stable ids here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from textual.binding import Binding

Scope = Literal[
    "app", "main", "browse", "review", "diff", "undo", "residue", "trace", "activity", "view", "timeline", "deliveries"
]


# The screens a person moves between with 1-5; "main" actions (q, Tab) live on them.
MAIN_SCOPES: tuple[Scope, ...] = ("browse", "review", "undo", "residue", "activity")


# The screens whose lists `/` filters (Browse has its own search field).
FILTERED_SCOPES: tuple[Scope, ...] = ("review", "undo", "residue", "activity", "timeline", "deliveries")


@dataclass(frozen=True)
class ActionSpec:
    id: str
    key: str
    action: str
    description: str
    scope: Scope
    help: str = ""
    show: bool = True
    mutates: bool = False  # refused in read-only mode, in the core as well as here
    priority: bool = False


REGISTRY: tuple[ActionSpec, ...] = (
    ActionSpec("app.browse", "1", "go('browse')", "Browse", "app", "Memories: active, archived, struck", show=False),
    ActionSpec(
        "app.review",
        "2",
        "go('review')",
        "Review",
        "app",
        "Pending forget requests and their plans",
        show=False,
    ),
    ActionSpec("app.undo", "3", "go('undo')", "Undo", "app", "Applied operations and requests, undoable", show=False),
    ActionSpec("app.residue", "4", "go('residue')", "Residue", "app", "What could not be forgotten", show=False),
    ActionSpec(
        "app.activity",
        "5",
        "go('activity')",
        "Activity",
        "app",
        "What this session did, and the forget timeline",
        show=False,
    ),
    ActionSpec("app.help", "f1,question_mark", "help", "Help", "app", "Keys for what has focus"),
    ActionSpec("app.quit", "ctrl+q", "quit", "Quit", "app", priority=True, show=False),
    ActionSpec("main.quit", "q", "app.quit", "Quit", "main", "Quit (not while typing in a field)", show=False),
    ActionSpec("main.back", "escape", "back", "Back", "main", "Back to the screen Enter (or x) came from", show=False),
    ActionSpec("main.next_pane", "tab", "next_pane", "Next pane", "main", "Move to the next pane", show=False),
    ActionSpec("main.previous_pane", "shift+tab", "next_pane(-1)", "Previous pane", "main", show=False),
    ActionSpec("app.rescan", "ctrl+r", "rescan", "Rescan", "app", "Re-read the store from disk", show=False),
    ActionSpec(
        "app.as_of",
        "at",
        "time_travel",
        "As of…",
        "app",
        "Show the store as of a date or a commit (read-only); empty returns to now",
        show=False,
    ),
    ActionSpec("app.now", "ctrl+n", "back_to_now", "Now", "app", "Back to the store as it is now", show=False),
    ActionSpec(
        "browse.search", "slash", "focus_search", "Search", "browse", "Filter by text; Enter runs hybrid search"
    ),
    ActionSpec(
        "browse.status",
        "s",
        "cycle_status",
        "Status",
        "browse",
        "All / active / archived / struck / history / unparseable",
    ),
    ActionSpec(
        "browse.category", "c", "cycle_category", "Category", "browse", "All categories, then each one in the store"
    ),
    ActionSpec("browse.trace", "t", "trace", "Trace", "browse", "Why this memory is as it is"),
    ActionSpec("browse.timeline", "l", "timeline", "Timeline", "browse", "Each commit that changed this memory"),
    ActionSpec(
        "browse.restore", "R", "restore", "Restore", "browse", "Restore the archived memory (previewed)", mutates=True
    ),
    ActionSpec(
        "review.state",
        "s",
        "cycle_state",
        "States",
        "review",
        "Pending / applied / partial / withdrawn / dismissed / all",
    ),
    ActionSpec("review.diff", "d", "open_diff", "Diff", "review", "Exact before/after of the selected target"),
    ActionSpec("review.toggle", "space", "toggle_target", "Approve", "review", "Approve or skip the selected target"),
    ActionSpec("review.apply", "A", "apply", "Apply", "review", "Apply the approved targets (confirmed)", mutates=True),
    ActionSpec(
        "review.dismiss", "X", "dismiss_request", "Dismiss", "review", "Reject the request with a note", mutates=True
    ),
    ActionSpec(
        "review.floor_up",
        "plus",
        "floor(0.05)",
        "Floor +",
        "review",
        "Raise the coverage floor (archive less)",
        show=False,
    ),
    ActionSpec(
        "review.floor_down",
        "minus",
        "floor(-0.05)",
        "Floor −",
        "review",
        "Lower the coverage floor (archive more)",
        show=False,
    ),
    ActionSpec(
        "review.resolver",
        "r",
        "switch_resolver",
        "Resolver",
        "review",
        "Switch between the thorough resolver and Palinode's own",
        show=False,
    ),
    ActionSpec("review.knobs", "k", "focus_knobs", "Knobs", "review", "Edit floor, max targets, min shared words"),
    ActionSpec(
        "review.plan_again",
        "p",
        "plan_again",
        "Plan",
        "review",
        "A decided request: plan what remains (its record is shown first)",
    ),
    ActionSpec("review.residue", "x", "residue", "Residue", "review", "Surviving mentions of this request's pref"),
    ActionSpec(
        "review.timeline",
        "enter",
        "target_timeline",
        "Timeline",
        "review",
        "On a plan target: each commit that changed it (Esc comes back)",
        show=False,
    ),
    ActionSpec(
        "review.deliveries",
        "v",
        "deliveries",
        "Deliveries",
        "review",
        "What Palinode delivered of this preference: before, in the exposure window, after (leaks)",
        show=False,
    ),
    ActionSpec(
        "review.export",
        "e",
        "export",
        "Export",
        "review",
        "Write this request's audit report (json, md, html)",
        show=False,
    ),  # the footer is full at 80 columns; help and the palette list it
    ActionSpec("diff.toggle", "space", "toggle_span", "Toggle", "diff", "Strike this sentence or leave it"),
    ActionSpec("diff.close", "escape", "close", "Back", "diff"),
    ActionSpec(
        "undo.request",
        "enter",
        "open_request",
        "Request",
        "undo",
        "The forget request this operation carried out, in Review (Esc comes back)",
        show=False,
    ),
    ActionSpec("undo.run", "U", "undo", "Undo", "undo", "Undo the selected operation (confirmed)", mutates=True),
    ActionSpec(
        "undo.redo",
        "R",
        "redo",
        "Redo",
        "undo",
        "Redo the selected undone operation exactly as approved (confirmed)",
        mutates=True,
    ),
    ActionSpec(
        "undo.withdraw", "W", "withdraw", "Withdraw", "undo", "Withdraw the whole request (confirmed)", mutates=True
    ),
    ActionSpec(
        "residue.strike",
        "S",
        "strike",
        "Strike",
        "residue",
        "Strike this one sentence for its request (confirmed)",
        mutates=True,
    ),
    ActionSpec("residue.flag", "f", "flag", "Flag", "residue", "Flag this mention with a note", mutates=True),
    ActionSpec("residue.jump", "enter", "jump", "Jump", "residue", "Open the memory at this line", show=False),
    ActionSpec("trace.close", "escape", "close", "Back", "trace"),
    ActionSpec(
        "trace.follow",
        "enter",
        "follow",
        "Follow",
        "trace",
        "On a memory of the chain: its own trace (Esc comes back)",
        show=False,
    ),
    ActionSpec("trace.timeline", "l", "timeline", "Timeline", "trace", "Each commit that changed this memory"),
    ActionSpec("view.close", "escape", "close", "Back", "view"),
    ActionSpec("view.trace", "t", "trace", "Trace", "view", "Why this memory is as it is"),
    ActionSpec("view.timeline", "l", "timeline", "Timeline", "view", "Each commit that changed this memory"),
    ActionSpec(
        "timeline.mark", "space", "mark", "Mark", "timeline", "Mark this point; two marks show the diff between"
    ),
    ActionSpec("timeline.close", "escape", "close", "Back", "timeline"),
    ActionSpec(
        "deliveries.version",
        "enter",
        "show_version",
        "Version",
        "deliveries",
        "The delivered version itself; again: its diff against today",
    ),
    ActionSpec("deliveries.close", "escape", "close", "Back", "deliveries"),
    *(
        ActionSpec(
            f"{scope}.filter",
            "slash",
            "focus_filter",
            "Filter",
            scope,
            "Show only the rows containing a text (any column); Enter keeps it, Esc clears it",
            show=scope in ("undo", "timeline", "deliveries"),  # the others' footers are full at 80 columns
        )
        for scope in FILTERED_SCOPES
    ),
)


def specs_for(scope: Scope) -> list[ActionSpec]:
    return [s for s in REGISTRY if s.scope == scope]


def bindings_for(scope: Scope) -> list[Binding]:
    return [
        Binding(s.key, s.action, s.description, show=s.show, id=s.id, priority=s.priority) for s in specs_for(scope)
    ]
