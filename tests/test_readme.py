"""Every command in the README is exercised: the CLI ones run in order against
a real store, the interactive ones are parsed, make targets are dry-run, and
the YAML examples are read by the code that reads such files."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.DOTALL)


def commands() -> list[str]:
    out = []
    for lang, body in BLOCKS:
        if lang != "sh":
            continue
        for line in body.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def test_the_readme_shows_both_setup_commands():
    assert {"make demo", "make test"} <= set(commands())


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_every_cli_command_runs(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "HOME": str(home), "PATH": f"{bindir}:{os.environ['PATH']}",
           "XDG_CACHE_HOME": str(home / ".cache")}
    ran = 0
    for cmd in commands():
        if not cmd.startswith("palinode-audit"):
            continue
        proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, f"{cmd}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr
        ran += 1
    assert ran >= 12
    assert (home / "palinode-demo" / ".palinode-audit" / "ledger.jsonl").is_file()  # the apply ran


def test_interactive_commands_parse_and_make_targets_exist():
    from palinode_tui.app import make_parser
    for cmd in commands():
        words = shlex.split(cmd)
        if words[0] == "palinode-tui":
            make_parser().parse_args([os.path.expanduser(w) for w in words[1:]])
        elif words[0] == "make":
            proc = subprocess.run(["make", "-n", *words[1:]], cwd=ROOT, capture_output=True, text=True)
            assert proc.returncode == 0, proc.stderr
    assert "screenshots" in README and "make screenshots" in README
    for image in re.findall(r"\((screenshots/[\w.-]+\.svg)\)", README):
        assert (ROOT / image).is_file(), image


def test_yaml_examples_are_understood(tmp_path):
    from palinode_core.storage.config import load_store_config
    from palinode_tui.settings import Settings
    yamls = [body for lang, body in BLOCKS if lang == "yaml"]
    store_cfg = next(b for b in yamls if "consolidation" in b)
    (tmp_path / "palinode.config.yaml").write_text(store_cfg)
    cfg = load_store_config(tmp_path)
    assert cfg.forget.max_targets == 2 and cfg.forget.min_target_coverage == 0.05 and cfg.commit_prefix == "palinode"
    app_cfg = next(b for b in yamls if "keymap" in b)
    path = Path(os.environ["XDG_CONFIG_HOME"]) / "palinode-tui" / "config.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(app_cfg)
    settings = Settings.load()
    from palinode_tui.actions import REGISTRY
    ids = {s.id for s in REGISTRY}
    assert settings.theme == "nord" and set(settings.keymap) <= ids and settings.notices == []


def test_readme_key_table_matches_the_registry():
    """Every key the README's screen table names is bound in the action registry,
    and every mutating (uppercase, confirmed) action is in the table."""
    import re

    from palinode_tui.actions import REGISTRY

    text = (ROOT / "README.md").read_text()
    table = text[text.index("## Screens and keys"):text.index("## The headless CLI")]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    named = {k for row in rows for k in re.findall(r"`([^`]+)`", row)}
    bound = {key.strip() for spec in REGISTRY for key in spec.key.split(",")}
    aliases = {"?": "question_mark", "+": "plus", "-": "minus", "/": "slash", "F1": "f1", "Tab": "tab",
               "Esc": "escape", "Ctrl+P": None, "Enter": "enter", "Shift+Tab": "shift+tab", "Ctrl+Q": "ctrl+q",
               "Ctrl+R": "ctrl+r", "@": "at", "Ctrl+N": "ctrl+n"}
    keys = {k for k in named if len(k) <= 10 and " " not in k and not k.endswith(".md")}
    for key in keys:
        if key in aliases:
            assert aliases[key] is None or aliases[key] in bound, key
        elif len(key) == 1 or key in ("space",):
            assert key in bound, f"README names key {key!r}, which nothing binds"
    for spec in REGISTRY:
        if spec.mutates:
            assert f"`{spec.key}`" in table, f"{spec.id} ({spec.key}) is missing from the README's key table"
