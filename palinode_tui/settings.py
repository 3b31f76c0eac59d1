"""The app's own settings: ``$XDG_CONFIG_HOME/palinode-tui/config.yaml``.

```yaml
theme: textual-dark
keymap:            # action id -> key(s)
  review.apply: ctrl+a
```

The file is the person's: saving the theme rewrites only the ``theme:`` line
(comments and everything else stay), and a keymap entry that names no action
or takes a key another action already has is a visible warning naming its line.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .actions import REGISTRY

_THEME_LINE = re.compile(r"^theme:[^\n#]*?(?P<comment>[ \t]+#[^\n]*)?$", re.MULTILINE)


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "palinode-tui" / "config.yaml"


def _keymap_lines(text: str) -> dict[str, int]:
    """The 1-based line of each keymap entry, for warnings."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return {}
    lines: dict[str, int] = {}
    if isinstance(root, yaml.MappingNode):
        for key, value in root.value:
            if key.value == "keymap" and isinstance(value, yaml.MappingNode):
                for k, _v in value.value:
                    lines[str(k.value)] = k.start_mark.line + 1
    return lines


def _keys(spec_key: str) -> set[str]:
    return {k.strip() for k in spec_key.split(",") if k.strip()}


def check_keymap(keymap: dict[str, str], lines: dict[str, int], path: Path) -> tuple[dict[str, str], list[str]]:
    """The usable entries and a warning for each unknown or clashing one.
    Scopes clash when they are the same, or one is app-wide or "main"
    (both are live on the main screens)."""
    by_id = {s.id: s for s in REGISTRY}
    notices: list[str] = []
    usable: dict[str, str] = {}
    for action_id, keys in keymap.items():
        where = f"{path}:{lines[action_id]}" if action_id in lines else str(path)
        if action_id not in by_id:
            notices.append(f"{where}: keymap entry '{action_id}: {keys}' names no action; ignored")
            continue
        usable[action_id] = keys
    effective = {s.id: _keys(usable.get(s.id, s.key)) for s in REGISTRY}
    shared = ("app", "main")
    refused: set[str] = set()
    for action_id, keys in usable.items():
        spec = by_id[action_id]
        for other in REGISTRY:
            if other.id == action_id:
                continue
            if not (spec.scope == other.scope or spec.scope in shared or other.scope in shared):
                continue
            clash = effective[action_id] & effective[other.id]
            if clash:
                # a clash is never applied: one of the two actions would become unreachable
                where = f"{path}:{lines[action_id]}" if action_id in lines else str(path)
                notices.append(
                    f"{where}: keymap entry '{action_id}: {keys}' takes {', '.join(sorted(clash))}, "
                    f"already the key of '{other.id}'; ignored"
                )
                refused.add(action_id)
                break
    return {k: v for k, v in usable.items() if k not in refused}, notices


@dataclass
class Settings:
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)  # shown once, as warnings
    writable: bool = True  # False when the file could not be read: never overwrite it

    @classmethod
    def load(cls) -> Settings:
        path = config_path()
        if not path.is_file():
            return cls()
        try:
            text = path.read_text(encoding="utf-8")
            data = yaml.safe_load(text) or {}
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
            return cls(notices=[f"{path} ignored: {exc.__class__.__name__}"], writable=False)
        if not isinstance(data, dict):
            return cls(notices=[f"{path} ignored: not a mapping"], writable=False)
        keymap = data.get("keymap") or {}
        notices = []
        if not isinstance(keymap, dict):
            notices.append(f"{path}: keymap is not a mapping; ignored")
            keymap = {}
        usable, more = check_keymap({str(k): str(v) for k, v in keymap.items()}, _keymap_lines(text), path)
        theme = data.get("theme")
        return cls(theme=theme if isinstance(theme, str) else None, keymap=usable, notices=notices + more)

    def save(self) -> None:
        """Remember the theme by rewriting only the file's ``theme:`` line."""
        if not self.writable or not self.theme:
            return
        path = config_path()
        line = f"theme: {json.dumps(self.theme)}"
        try:
            text = path.read_text(encoding="utf-8") if path.is_file() else ""
            match = _THEME_LINE.search(text)
            if match:
                text = text[: match.start()] + line + (match.group("comment") or "") + text[match.end() :]
            else:
                text = (text if not text or text.endswith("\n") else text + "\n") + line + "\n"
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, path)
        except (OSError, UnicodeDecodeError):
            pass  # settings are a convenience; never fail the app over them
