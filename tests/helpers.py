"""Shared test helpers: real git stores in temp dirs, a fixed clock."""
from __future__ import annotations

import os
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
# Everything the tests read lives inside the repository (see fixtures/README.md).
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE_STORE = FIXTURES / "palinode-sample-store"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.test",
    "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.test",
}

MOONRISE = (
    "Moonrise Fair 2025 judging pipeline closeout. Handed the judging "
    "workflow to Wilhelmina Cragg after the June stage flood. Versions "
    "frozen at release candidate seven; ingest queue drained and verified "
    "against the submission manifest. Outstanding recovery items: rebuild "
    "thumbnail cache, reconcile duplicate performer registrations, restore "
    "the staging gallery snapshots, audit volunteer access grants. Flood "
    "log migrated to the tracker with twelve linked entries. Next steps: "
    "schedule retrospective, publish judging rubric, confirm pavilion "
    "contract renewal, decommission obsolete submission portals, rotate "
    "the shared credentials, document the escalation path Wilhelmina "
    "proposed during cleanup."
)


class Clock:
    """A settable UTC clock so markers and history lines are deterministic."""

    def __init__(self, when: datetime = datetime(2025, 6, 1, 11, 0, tzinfo=timezone.utc)):
        self.when = when

    def __call__(self) -> datetime:
        return self.when


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          text=True, env={**os.environ, **GIT_ENV}).stdout


def init_repo(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", GIT_ENV["GIT_AUTHOR_NAME"])
    git(root, "config", "user.email", GIT_ENV["GIT_AUTHOR_EMAIL"])
    git(root, "config", "commit.gpgsign", "false")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--allow-empty", "-m", "initial")


def palinode_file(meta: dict, body: str) -> str:
    """A file as Palinode's save path writes it (spec §2)."""
    dumped = yaml.safe_dump(meta, default_flow_style=False, allow_unicode=True)
    return f"---\n{dumped}---\n\n{body}\n"


def write_files(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))


def make_git_store(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_files(root, files)
    init_repo(root)
    return root


def fixture_files(folder: Path, pattern: str = "*.md", at_least: int = 1) -> list[str]:
    """The fixture files under ``folder`` (relative, sorted) for parametrising.
    Finding none raises at collection time: an empty list would turn every
    parametrised test into a silent "empty parameter set" skip."""
    found = sorted(p.relative_to(folder).as_posix() for p in folder.rglob(pattern)) if folder.is_dir() else []
    if len(found) < at_least:
        raise FileNotFoundError(f"expected at least {at_least} {pattern} fixture file(s) under {folder}, "
                                f"found {len(found)}; the repository's tests/fixtures is incomplete")
    return found


def copy_sample_store(dest: Path) -> Path:
    shutil.copytree(SAMPLE_STORE, dest)
    init_repo(dest)
    return dest


def subjects(root: Path) -> list[str]:
    return git(root, "log", "--format=%s").splitlines()


def judged(pref: str, text: str, *, sim: float | None = None, user: tuple[str, ...] = (), kind: str = "sentence"):
    """The judgment's evidence for one unit of text (forget.judgment), outside any store."""
    from palinode_core.forget.judgment import Judge, StoreFacts
    from palinode_core.text.units import Unit

    return Judge(pref, StoreFacts(frozenset(user))).judge(Unit(kind, text, 1), similarity=sim)


def whose_of(pref: str, text: str, *, about: str | None = None, antecedent: str | None = None) -> str:
    from palinode_core.forget.judgment import Judge

    return Judge(pref).whose(text, about, antecedent).who

def checkout_copy(dest: Path) -> Path:
    """The repository's files as a fresh clone has them (tracked and new, not ignored), copied to ``dest``:
    for tests that build or install from a clone without writing build output beside the sources."""
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, names):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest
