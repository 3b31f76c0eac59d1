"""Runs one generated case through the published package (in its own
virtualenv, via driver.py) and through our core (via ours.py), on twin git
stores, and names every difference by a signature."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from . import ours
from .gen import Case, make_case

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV = REPO / ".venv-compat"
NOW = datetime(2025, 6, 1, 11, 0, tzinfo=UTC)
LATER = datetime(2025, 6, 2, 9, 30, tzinfo=UTC)
GIT_ENV = {"GIT_AUTHOR_NAME": "Compat", "GIT_AUTHOR_EMAIL": "compat@example.test",
           "GIT_COMMITTER_NAME": "Compat", "GIT_COMMITTER_EMAIL": "compat@example.test",
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull}
_SKIP = (".git", ".palinode-audit", ".palinode-audit-cache", ".palinode.db")


def venv_python() -> Path:
    return VENV / "bin" / "python"


def venv_ready() -> bool:
    """Built completely (the Makefile stamps it last)."""
    return (VENV / ".installed").exists() and venv_python().exists()


class Driver:
    """The package side: one long-lived process speaking JSON lines."""

    def __init__(self) -> None:
        # An empty folder of its own: the package globs its whole PALINODE_DIR at import.
        self.home = tempfile.mkdtemp(prefix="palinode-compat-home-")
        env = {**os.environ, **GIT_ENV, "PYTHONPATH": "", "PALINODE_DIR": self.home}
        self.proc = subprocess.Popen([str(venv_python()), str(HERE / "driver.py")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     encoding="utf-8", env=env, cwd=self.home)

    def send(self, req: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()

    def recv(self) -> dict:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the compat driver exited; run it by hand to see why")
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)
        shutil.rmtree(self.home, ignore_errors=True)


def make_store(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True)
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True, env=env)
    # committed first, as a store's memories are: we refuse to commit a person's uncommitted work
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "the memories as written"], check=True, env=env)


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if rel.split("/")[0] in _SKIP or rel.split("/")[-1].startswith(".") or not path.is_file():
            continue
        out[rel] = path.read_bytes().decode("utf-8", errors="replace")
    return out


def commits(root: Path) -> list[str]:
    run = subprocess.run(["git", "-C", str(root), "log", "--format=%B%x1e"], capture_output=True, text=True,
                         check=False, env={**os.environ, **GIT_ENV})
    return [_without_ids(c) for c in run.stdout.split("\x1e") if c.strip()]


# Our commits add an id trailer Palinode's lack (docs/format.md, "Operation ids"): the
# subject and every trailer Palinode writes are compared; the ids are not.
_ID_TRAILERS = ("Operation-Id: ", "Undoes-Operation: ", "Redoes-Operation: ")


def _without_ids(message: str) -> str:
    return "\n".join(line for line in message.strip().splitlines() if not line.startswith(_ID_TRAILERS)).strip()


@dataclass
class Side:
    reply: dict
    files: dict[str, str]
    commits: list[str]


@dataclass
class Step:
    label: str
    op: str
    target: str
    before: dict[str, str]
    pal: Side
    ours: Side
    pref: str | None = None
    diffs: list[tuple[str, str]] = field(default_factory=list)  # (part, signature)
    origin: str | None = None  # an inverse step's target as it was before the first operation


def run_step(driver: Driver, tmp: Path, label: str, op: str, case: Case, files: dict[str, str],
             now: datetime, origin: str | None = None) -> Step:
    pal_root, our_root = tmp / f"{label}-p", tmp / f"{label}-o"
    make_store(pal_root, files)
    make_store(our_root, files)
    req = {"root": str(pal_root), "op": op, "ref": case.target, "now": now.isoformat()}
    if op in ("retract", "unretract"):
        req["pref"] = case.pref
    driver.send(req)  # the package works while we do
    mine = ours.apply_op(our_root, op, case.target, pref=case.pref, now=now)
    theirs = driver.recv()
    step = Step(label, op, case.target, files, Side(theirs, snapshot(pal_root), commits(pal_root)),
                Side(mine, snapshot(our_root), commits(our_root)), case.pref, origin=origin)
    step.diffs = classify(step)
    return step


def run_case(driver: Driver, seed: int, base: Path) -> list[Step]:
    case = make_case(seed)
    tmp = base / f"c{seed}"
    tmp.mkdir()
    try:
        first = run_step(driver, tmp, case.op, case.op, case, case.files, NOW)
        inverse = "restore" if case.op == "archive" else "unretract"
        steps = [first]
        if first.pal.reply.get("ok"):
            steps.append(run_step(driver, tmp, f"{inverse}(of pal)", inverse, case, first.pal.files, LATER,
                                  case.files[case.target]))
        if first.ours.reply.get("ok") and first.ours.files != first.pal.files:
            steps.append(run_step(driver, tmp, f"{inverse}(of ours)", inverse, case, first.ours.files, LATER,
                                  case.files[case.target]))
        for step in steps:
            step.tags = case.tags  # type: ignore[attr-defined]
        return steps
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- classification -----------------------------------------------------------------

_FM_BAD_TAGS = ("bom", "list-frontmatter", "unclosed-frontmatter")


def _frontmatter_trouble(text: str) -> str | None:
    """Why our reader refuses a frontmatter the package silently reads as body."""
    if text.startswith("\ufeff"):
        return "bom"
    lines = text.lstrip().splitlines()
    if not lines or not re.match(r"^-{3,}\s*$", lines[0]):
        return None
    closes = [i for i, line in enumerate(lines[1:], 1) if re.match(r"^-{3,}\s*$", line)]
    if not closes:
        return "unclosed-frontmatter"
    block = "\n".join(lines[1:closes[0]]).strip()
    if block.startswith("- "):
        return "list-frontmatter"
    return None


_UNSTRIKE_RE = r"~~(.+?)~~ \[RETRACTED \d{4}-\d{2}-\d{2} r:%s\]\."


def _prose(text: str) -> str:
    """A file's body as both sides should give it back: frontmatter, line endings and the
    trailing spaces Palinode drops from struck list items aside."""
    import frontmatter
    content = frontmatter.loads(text.replace("\r\n", "\n")).content
    return "\n".join(line.rstrip() for line in content.strip().splitlines())


def not_restored(step: Step) -> bool:
    """An unretract of a strike that left the body other than it was before the retract:
    our own tildes were paired wrongly. Only for a well-formed original (a BOM or a list
    frontmatter is refused by us; the package strikes inside it, which nothing undoes)."""
    if step.op != "unretract" or step.origin is None or _frontmatter_trouble(step.origin):
        return False
    mine = step.ours.files.get(step.target)
    return mine is not None and _prose(mine) != _prose(step.origin)


def _body_reason(step: Step, before: str, pal: str, mine: str) -> str:
    from .gen import PREFS  # noqa: F401 - keeps the import graph explicit
    rid = _rid(step.pref or "")
    if step.op == "unretract":
        pal_left = len(re.findall(rf"r:{rid}\]\.", pal))
        ours_left = len(re.findall(rf"r:{rid}\]\.", mine))
        theirs = re.findall(_UNSTRIKE_RE % rid, before)
        if any("~~" in t for t in theirs):
            return "unretract:user-strike-on-line"
        if pal_left > ours_left:
            return "unretract:strike-across-line-break"
    if step.op == "retract" and "~~" in before.replace(f"r:{rid}", ""):
        return "retract:user-strike-on-line"
    return f"{step.op}:target-body"


def _rid(pref: str) -> str:
    import hashlib
    return hashlib.md5(" ".join(pref.lower().split()).encode()).hexdigest()[:8]


def _layout_reason(before: str) -> str:
    if "\r\n" in before:
        return "keep-layout:crlf"
    if not before.endswith("\n"):
        return "keep-layout:unterminated-last-line"
    if before.endswith("\n\n"):
        return "keep-layout:trailing-blank-lines"
    return "keep-layout:frontmatter"


def _stale_backing(text: str | None) -> object:
    import frontmatter
    try:
        return frontmatter.loads(text or "").metadata.get("stale_backing")
    except Exception:  # noqa: BLE001 - unreadable either way
        return None


def classify(step: Step) -> list[tuple[str, str]]:
    p, o = step.pal, step.ours
    before = step.before.get(step.target, "")
    out: list[tuple[str, str]] = []
    if not o.reply.get("ok") and o.reply.get("refused") and not p.reply.get("ok") \
            and "YAML" in o.reply.get("error", "") and "Error" in p.reply.get("error", ""):
        return []  # invalid YAML: the package raises, we refuse; neither writes
    if not o.reply.get("ok"):
        trouble = _frontmatter_trouble(before)
        if o.reply.get("refused") and trouble:
            return [("refusal", f"refuse:{trouble}")]
        kind = "refused" if o.reply.get("refused") else "crash"
        return [("error", f"{kind}:ours:{o.reply.get('error', '').splitlines()[0][:60]}")]
    if not p.reply.get("ok"):
        return [("error", f"crash:palinode:{p.reply.get('error', '')[:60]}")]
    if not_restored(step):
        # before any label: "the package corrupts this line" must never hide that we did too
        return [("target", "unretract:not-restored")]
    if p.reply.get("status") != o.reply.get("status"):
        out.append(("status", f"status:{step.op}:{p.reply.get('status')}->{o.reply.get('status')}"))
    pt, ot = p.files.get(step.target), o.files.get(step.target)
    if pt != ot and not out:
        if _stale_backing(pt) != _stale_backing(ot):
            out.append(("target", f"backed_by:{step.op}-check"))
        elif pt is not None and ot is not None and ours.palinode_canonical(ot) == pt or pt is not None and ot is not None and ours.palinode_canonical(ot) == ours.palinode_canonical(pt):
            out.append(("target", _layout_reason(before)))
        elif pt is not None and ot is not None and "\r\n" in before \
                and ours.palinode_canonical(ot.replace("\r\n", "\n")) == pt:
            out.append(("target", "keep-layout:crlf"))
        else:
            out.append(("target", _body_reason(step, before, pt or "", ot or "")))
    hist = step.target[:-3] + "-history.md"
    hp, ho = p.files.get(hist), o.files.get(hist)
    if hp != ho and not out:
        hb = step.before.get(hist)
        if hb is not None and not hb.endswith("\n"):
            out.append(("history", "history:no-glue-onto-unterminated-line"))
        elif hb is not None and "\r\n" in hb and ho is not None and ho.replace("\r\n", "\n") == hp:
            out.append(("history", "keep-layout:crlf-history"))
        elif hb is not None and "\r\n" in hb:
            out.append(("history", "history:crlf-sibling"))
        else:
            out.append(("history", f"history:{step.op}"))
    for rel in sorted((set(p.files) | set(o.files)) - {step.target, hist}):
        pd, od = p.files.get(rel), o.files.get(rel)
        if pd == od:
            continue
        if pd is not None and od is not None and ours.palinode_canonical(pd) == ours.palinode_canonical(od):
            out.append(("dependents", "keep-layout:dependent"))
        else:
            out.append(("dependents", f"backed_by:{step.op}"))
        break
    if p.commits != o.commits and not out:
        out.append(("commits", f"commits:{step.op}"))
    return out
