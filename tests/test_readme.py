"""Every command in the README and the user guide (docs/guide/) is exercised:
the CLI ones run in order against a real store, the interactive ones are
parsed, make targets are dry-run, the YAML examples are read by the code that
reads such files, and every relative link leads to a file."""
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
GUIDE = sorted((ROOT / "docs/guide").glob("*.md"))
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", README, re.DOTALL)


def commands(text: str = README) -> list[str]:
    out = []
    for lang, body in re.findall(r"```(\w+)\n(.*?)```", text, re.DOTALL):
        if lang != "sh":
            continue
        for line in body.splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                out.append(line)
    return out


def _cli_env(home: Path) -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "HOME": str(home), "PATH": f"{bindir}:{os.environ['PATH']}",
            "XDG_CACHE_HOME": str(home / ".cache")}


def _run_cli(lines: list[str], home: Path) -> int:
    """Run the palinode-audit lines in order, as a reader would; how many ran."""
    ran = 0
    for cmd in lines:
        if not cmd.startswith("palinode-audit"):
            continue
        proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, env=_cli_env(home), timeout=300)
        assert proc.returncode == 0, f"{cmd}\n{proc.stderr}"
        assert "Traceback" not in proc.stderr
        ran += 1
    return ran


def test_the_readme_is_for_users_and_short():
    assert len(README.encode()) < 15_000, f"README.md is {len(README.encode())} bytes"
    for section in ("## Install", "## The first five minutes", "## Screens and keys", "## Where next"):
        assert section in README, section


def test_every_relative_link_leads_to_a_file():
    for page in [ROOT / "README.md", ROOT / "bench/README.md", *GUIDE, ROOT / "docs/team.md"]:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            assert path.exists(), f"{page.relative_to(ROOT)} links to {target}, which does not exist"


def test_the_readme_shows_both_setup_commands():
    assert {"make demo", "make test"} <= set(commands())


@pytest.mark.model
@pytest.mark.xdist_group("model")
def test_every_cli_command_runs(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    ran = _run_cli(commands(), home)
    assert ran >= 12
    assert (home / "palinode-demo" / ".palinode-audit" / "ledger.jsonl").is_file()  # the apply ran


@pytest.mark.model
@pytest.mark.xdist_group("model")
@pytest.mark.parametrize("page", [p.name for p in GUIDE
                                  if any(c.startswith("palinode-audit") for c in commands(p.read_text(encoding="utf-8")))])
def test_every_guide_command_runs(page, tmp_path):
    """Each page's commands in order, on a fresh demo store (as its index page says)."""
    home = tmp_path / "home"
    home.mkdir()
    lines = commands((ROOT / "docs/guide" / page).read_text(encoding="utf-8"))
    if not any(line.startswith("palinode-audit demo-store") for line in lines[:1]):
        lines = ["palinode-audit demo-store ~/palinode-demo", *lines]
    assert _run_cli(lines, home) >= 2


def test_interactive_commands_parse_and_make_targets_exist():
    from palinode_tui.app import make_parser
    for cmd in commands() + [c for page in GUIDE for c in commands(page.read_text(encoding="utf-8"))]:
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
    text = "\n".join([README, *(p.read_text(encoding="utf-8") for p in GUIDE)])
    yamls = [body for lang, body in re.findall(r"```(\w+)\n(.*?)```", text, re.DOTALL) if lang == "yaml"]
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
