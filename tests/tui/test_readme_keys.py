"""Issue 23: the README's keys table matches the app. Every key of the action
registry (which makes the bindings, the footer, the palette and help) is named
in the row of its screen, and every screen of the registry has a row."""
from __future__ import annotations

from helpers import ROOT

from palinode_tui.actions import REGISTRY

# the README's name for a key in the registry's spelling
SHOWN = {"slash": "/", "space": "space", "enter": "Enter", "escape": "Esc", "plus": "+", "minus": "-",
         "question_mark": "?", "at": "@", "f1": "F1", "tab": "Tab", "shift+tab": "Shift+Tab"}
# the screen column of the README's row for each scope
ROW = {"browse": "Browse", "review": "Review", "diff": "Diff", "undo": "Undo", "residue": "Residue",
       "deliveries": "Deliveries", "trace": "Trace", "timeline": "Timeline", "activity": "Activity",
       "view": "Memory", "main": "anywhere"}
# keys every screen shares, said once on the "anywhere" row
SHARED = {"escape", "tab", "shift+tab", "q"}


def shown(key: str) -> str:
    if key in SHOWN:
        return SHOWN[key]
    if key.startswith("ctrl+"):
        return "Ctrl+" + key[5:].upper()
    return key


def readme_rows() -> dict[str, str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("| key | screen |"):]
    rows = {}
    for line in table.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[1]] = f"{cells[0]} {cells[2]}"
    return rows


def test_every_key_of_the_registry_is_in_its_screens_row_of_the_readme():
    rows = readme_rows()
    missing = []
    for spec in REGISTRY:
        for key in spec.key.split(","):
            if spec.scope == "app":
                where = " ".join(rows.values())  # app keys open screens: the key column of their row
            elif key in SHARED:
                where = rows.get("anywhere", "")
            else:
                where = rows.get(ROW[spec.scope], "")
            if f"`{shown(key)}`" not in where:
                missing.append(f"{spec.id}: `{shown(key)}` not in the README's {ROW.get(spec.scope, 'any')} row")
    assert missing == []


def test_every_screen_with_keys_has_a_row():
    rows = readme_rows()
    scopes = {spec.scope for spec in REGISTRY} - {"app"}
    assert {ROW[scope] for scope in scopes} <= set(rows)
