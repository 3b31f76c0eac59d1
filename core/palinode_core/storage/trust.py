"""Which programs a store's own git setup would run, and whether the person
trusts that store to run them (as direnv and git's ``safe.directory`` do).

A store copied as a folder carries ``.git/config`` and hooks; until the
person says ``palinode-audit trust STORE``, every git command of ours runs
with those neutralised (see ``overrides``). A trust is recorded per store and
per digest of its config entries and hooks, in
``$XDG_CONFIG_HOME/palinode-tui/trust.json``: any change to either makes the
store untrusted again.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import safeio

# Variables that would point git somewhere other than this store, or run a program.
SCRUBBED_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_COMMON_DIR",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_CONFIG",
    "GIT_TRACE",
    "GIT_ATTR_SOURCE",
    "GIT_QUARANTINE_PATH",
)


# Always off when untrusted: each names or starts a program, or would sign.
FIXED_OFF: list[tuple[str, str]] = [
    ("core.hooksPath", "/dev/null"),
    ("core.fsmonitor", "false"),
    ("tag.gpgSign", "false"),
    ("log.showSignature", "false"),
    ("core.pager", "cat"),
    ("core.editor", ":"),
    ("sequence.editor", ":"),
    ("diff.external", ""),
    ("credential.helper", ""),
    ("core.askPass", ""),
    ("core.sshCommand", "ssh"),
    ("submodule.recurse", "false"),
    ("core.quotePath", "false"),
    ("core.untrackedCache", "false"),
    # a partial clone fetches a missing object on demand, running the remote's
    # uploadpack program (or ssh to anywhere): no transport at all
    ("protocol.allow", "never"),
]
# Per-name drivers: (section, variables to blank, extra (variable, value) pairs).
_DRIVERS = {
    "filter": (("clean", "smudge", "process"), (("required", "false"),)),
    "diff": (("textconv", "command"), ()),
    "merge": (("driver",), ()),
    "trailer": (("command", "cmd"), ()),
    "hook": (("command",), ()),
}
# Settings worth showing a person before they trust a store (lower-cased keys).
_RUNS_RE = re.compile(
    r"^(core\.(fsmonitor|hookspath|editor|pager|sshcommand|askpass|gitproxy|alternaterefscommand|worktree)"
    r"|sequence\.editor|diff\.external|diff\..+\.(textconv|command)|filter\..+\.(clean|smudge|process)"
    r"|merge\..+\.driver|gpg\.program|gpg\..+\.program|gpg\.ssh\.defaultkeycommand|gpg\.format"
    r"|commit\.gpgsign|tag\.gpgsign|user\.signingkey|credential\.helper|credential\..+\.helper|pager\..+"
    r"|trailer\..+\.(command|cmd)|hook\..+\.command|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack)"
    r"|include\.path|includeif\..+\.path|web\.browser|browser\..+\.(cmd|path)|man\..+\.(cmd|path))$"
)
_OFF_VALUES = {"core.fsmonitor": "false", "commit.gpgsign": "false", "tag.gpgsign": "false"}
_SIGNING_RE = re.compile(r"^(commit\.gpgsign|gpg\..+|user\.signingkey)$")
_LOCAL_SCOPES = ("local", "worktree")


def trust_file() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "palinode-tui" / "trust.json"


@dataclass(frozen=True)
class Finding:
    """One thing the store's setup would run (or that decides what runs)."""

    setting: str  # a config key, or "hook <name>"
    value: str
    origin: str

    def to_dict(self) -> dict[str, str]:
        return {"setting": self.setting, "value": self.value, "origin": self.origin}


@dataclass(frozen=True)
class Profile:
    digest: str
    findings: tuple[Finding, ...]
    trusted: bool
    neutral: tuple[tuple[str, str], ...]  # the overrides while untrusted
    signing_refusal: str | None = None  # the store's own setting that asks to sign, when untrusted
    local_filters: tuple[str, ...] = ()  # filter drivers the store's own config defines
    changed_since_trust: bool = False  # trusted once, but its config or hooks changed since
    watched: tuple[Path, ...] = field(default=(), compare=False)  # files whose change means rebuild
    stamps: tuple[Any, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "trusted": self.trusted,
            "changed_since_trust": self.changed_since_trust,
            "digest": self.digest,
            "runs": [f.to_dict() for f in self.findings],
        }


def _entries(run: Callable[[list[str]], subprocess.CompletedProcess[bytes]]) -> list[tuple[str, str, str, str]]:
    """(scope, origin, key, value) of every config entry git would read, includes followed."""
    proc = run(["config", "--list", "-z", "--show-scope", "--show-origin", "--includes"])
    if proc.returncode not in (0, 1):
        return []
    items = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    out = []
    for i in range(0, len(items) - 2, 3):
        scope, origin, pair = items[i], items[i + 1], items[i + 2]
        key, _, value = pair.partition("\n")
        out.append((scope, origin, key, value))
    return out


def common_dir(git_dir: Path) -> Path:
    """The repository's common folder: a linked worktree's git dir names it in
    ``commondir``; git runs hooks and reads the shared config from there."""
    try:
        named = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return git_dir
    return Path(os.path.normpath(git_dir / named)) if named else git_dir


def _hooks_dir(root: Path, git_dir: Path, entries: list[tuple[str, str, str, str]]) -> Path:
    path = None
    for _scope, _origin, key, value in entries:
        if key.lower() == "core.hookspath" and value:
            path = value
    if path is None:
        return common_dir(git_dir) / "hooks"  # a linked worktree's hooks are the main repository's
    hooks = Path(os.path.expanduser(path))
    return hooks if hooks.is_absolute() else root / hooks


def _hooks(folder: Path) -> list[tuple[str, int, str]]:
    """(name, mode, sha256) of every hook git would run from ``folder``."""
    found = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        if entry.name.endswith(".sample") or entry.name.startswith("."):
            continue
        try:
            st = entry.stat()
            if not entry.is_file() or not st.st_mode & 0o111:
                continue
            with open(entry.path, "rb") as handle:
                digest = hashlib.file_digest(handle, "sha256").hexdigest()  # all of it: a change anywhere counts
        except OSError:
            continue
        found.append((entry.name, st.st_mode & 0o7777, digest))
    return found


def _stamp(path: Path | str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    # ctime too: whatever can rewrite a config can set its mtime back, never its ctime
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def read_records() -> dict[str, Any]:
    try:
        data = json.loads(safeio.read_bytes(trust_file(), max_bytes=4 * 1024 * 1024))
    except (OSError, ValueError):
        return {}
    stores = data.get("stores") if isinstance(data, dict) else None
    return stores if isinstance(stores, dict) else {}


def _write_records(stores: dict[str, Any]) -> None:
    path = trust_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    safeio.write_atomic(
        path.name, json.dumps({"version": 1, "stores": stores}, indent=1, sort_keys=True).encode(), root=path.parent
    )


def build_profile(root: Path, git_dir: Path, run: Callable[[list[str]], subprocess.CompletedProcess[bytes]]) -> Profile:
    entries = _entries(run)
    local = [e for e in entries if e[0] in _LOCAL_SCOPES]
    findings = []
    neutral = list(FIXED_OFF)
    for _scope, origin, key, value in local:
        low = key.lower()
        if _RUNS_RE.match(low) and _OFF_VALUES.get(low) != value.lower():
            findings.append(Finding(key, value, origin))
        section, _, rest = key.partition(".")
        name, _, var = rest.rpartition(".")
        if section.lower() == "protocol" and name and var.lower() == "allow":
            neutral.append((key, "never"))  # a per-protocol allowance outranks protocol.allow
        if section.lower() in _DRIVERS and name and var.lower() in _DRIVERS[section.lower()][0]:
            blank, extra = _DRIVERS[section.lower()]
            neutral += [(f"{section}.{name}.{v}", "") for v in blank] + [(f"{section}.{name}.{k}", v) for k, v in extra]
    hooks_dir = _hooks_dir(root, git_dir, entries)
    hooks = _hooks(hooks_dir)
    findings += [Finding(f"hook {name}", str(hooks_dir / name), "hooks") for name, _mode, _sha in hooks]
    digest = hashlib.sha256(json.dumps([[list(e) for e in local], str(hooks_dir), hooks]).encode()).hexdigest()
    record = read_records().get(str(root))
    trusted = isinstance(record, dict) and record.get("digest") == digest
    refusal = None
    if not trusted:
        signing = [e for e in entries if e[2].lower() == "commit.gpgsign"]
        if signing and signing[-1][3].lower() in ("true", "yes", "on", "1"):
            own = [e for e in local if _SIGNING_RE.match(e[2].lower())]
            refusal = f"{own[0][2]}={own[0][3]}" if own else None
            # signing set up by the person's own global config runs their own program
        if not signing:
            neutral.append(("commit.gpgSign", "false"))
    origins = sorted({o[len("file:") :] for _s, o, _k, _v in local if o.startswith("file:")})
    watched = tuple(
        [git_dir / "config", git_dir / "config.worktree", common_dir(git_dir) / "config", hooks_dir, trust_file()]
        + [Path(o) if os.path.isabs(o) else root / o for o in origins]
        + [hooks_dir / h[0] for h in hooks]
        # an include not read now (its onbranch: or gitdir: condition false, or its file missing)
        # is read once HEAD moves or the file appears: both are watched, so it is noticed then
        + [git_dir / "HEAD", *_include_targets(root, entries)]
    )
    filters = tuple(
        sorted(
            {
                k.split(".", 1)[1].rsplit(".", 1)[0]
                for _s, _o, k, _v in local
                if k.lower().startswith("filter.")
                and k.lower().rsplit(".", 1)[-1] in ("clean", "process")
                and k.count(".") >= 2
            }
        )
    )
    changed = isinstance(record, dict) and not trusted
    return Profile(
        digest,
        tuple(findings),
        trusted,
        tuple(neutral),
        refusal,
        filters,
        changed,
        watched,
        tuple(_stamp(p) for p in watched),
    )


def _include_targets(root: Path, entries: list[tuple[str, str, str, str]]) -> list[Path]:
    """Every file an ``include.path`` or ``includeIf.<condition>.path`` names, read or not."""
    found = []
    for _scope, origin, key, value in entries:
        low = key.lower()
        if not value or not (low == "include.path" or (low.startswith("includeif.") and low.endswith(".path"))):
            continue
        target = Path(os.path.expanduser(value))
        if not target.is_absolute():  # relative to the config file that names it
            source = origin[len("file:") :] if origin.startswith("file:") else ""
            base = Path(source) if os.path.isabs(source) else root / source
            target = base.parent / target
        found.append(target)
    return found


class ProfileCache:
    """The store's profile, rebuilt (one ``git config`` process) only when a
    config file, the hooks folder, a hook or the trust file changed."""

    def __init__(self, root: Path, git_dir: Path, run: Callable[[list[str]], subprocess.CompletedProcess[bytes]]):
        self.root, self.git_dir, self._run = root, git_dir, run
        self._profile: Profile | None = None

    def current(self) -> Profile:
        profile = self._profile
        # cheap: a handful of stats instead of a git process per command
        if profile is None or tuple(_stamp(p) for p in profile.watched) != profile.stamps:
            profile = self._profile = build_profile(self.root, self.git_dir, self._run)
        return profile

    def overrides(self, *, read_only: bool) -> list[tuple[str, str]]:
        profile = self.current()
        if profile.trusted:
            # read-only never lets fsmonitor write under the store, even when trusted
            return [("core.fsmonitor", "false")] if read_only else []
        return list(profile.neutral)

    def invalidate(self) -> None:
        self._profile = None


def trust_store(root: Path, profile: Profile) -> None:
    stores = read_records()
    stores[str(root)] = {
        "digest": profile.digest,
        "trusted_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "runs": [f.to_dict() for f in profile.findings],
    }
    _write_records(stores)


def untrust_store(root: Path) -> bool:
    stores = read_records()
    if str(root) not in stores:
        return False
    del stores[str(root)]
    _write_records(stores)
    return True
