"""The core's shape is checked, not hoped for: no import cycle anywhere in the
project (lazy imports inside functions count; imports only a type checker runs,
under ``if TYPE_CHECKING:``, do not: nothing imports them), and the import-linter layer
contracts from pyproject.toml hold."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def _cycles(package: str) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    graph = grimp.build_graph(package, exclude_type_checking_imports=True)
    modules = sorted(graph.modules)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.find_modules_directly_imported_by(node)):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in modules:
        if module not in index:
            visit(module)
    return found


def _is_package_init_edge(component: list[str]) -> bool:
    """A package importing its own submodule and back is how Python packages
    work (``from . import x`` in ``__init__``), not a design cycle."""
    return len(component) == 2 and (component[1].startswith(component[0] + ".")
                                    or component[0].startswith(component[1] + "."))


def test_no_import_cycles_in_core_or_app():
    for package in ("palinode_core", "palinode_tui"):
        cycles = [c for c in _cycles(package) if not _is_package_init_edge(c)]
        assert cycles == [], f"import cycles in {package}: {cycles}"


def test_import_linter_contracts_hold():
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--config", str(ROOT / "pyproject.toml")], cwd=ROOT,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
