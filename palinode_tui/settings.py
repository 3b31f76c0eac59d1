"""The app's own settings: ``$XDG_CONFIG_HOME/palinode-tui/config.yaml``.

```yaml
theme: textual-dark
keymap:            # action id -> key(s)
  review.apply: ctrl+a
```
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml


def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "palinode-tui" / "config.yaml"


@dataclass
class Settings:
    theme: str | None = None
    keymap: dict[str, str] = field(default_factory=dict)
    problem: str | None = None  # why the file could not be used, shown once

    @classmethod
    def load(cls) -> "Settings":
        path = config_path()
        if not path.is_file():
            return cls()
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
            return cls(problem=f"{path} ignored: {exc.__class__.__name__}")
        if not isinstance(data, dict):
            return cls(problem=f"{path} ignored: not a mapping")
        keymap = data.get("keymap") or {}
        if not isinstance(keymap, dict):
            keymap = {}
        theme = data.get("theme")
        return cls(theme=theme if isinstance(theme, str) else None,
                   keymap={str(k): str(v) for k, v in keymap.items()})

    def save(self) -> None:
        path = config_path()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            data = {"theme": self.theme, "keymap": self.keymap}
            path.write_text(yaml.safe_dump(data, sort_keys=True), encoding="utf-8")
        except OSError:
            pass  # settings are a convenience; never fail the app over them
