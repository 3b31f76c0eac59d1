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

import fnmatch
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


_FALSE = ("false", "no", "off", "0")
_TRUE = ("true", "yes", "on", "1")


@dataclass(frozen=True)
class Program:
    """A git setting that names or starts a program, or decides that one runs: what
    ``trust --show`` lists, and what it is while the store is untrusted. One table
    (``PROGRAMS``) makes both, so the list and the overrides cannot drift apart."""

    key: str  # lower-cased as git prints it; "*" is a name the store chooses (a driver's, a remote's, a URL)
    off: str | None  # the value that runs nothing, set over every scope; None: ``by`` says why none is needed
    always: bool = False  # set even where the store does not set it (hooks run with no setting at all)
    harmless: tuple[str, ...] = ()  # values that run nothing: not listed
    also: tuple[tuple[str, str], ...] = ()  # more variables of the same name set with it
    env: tuple[str, str] | None = None  # set in the environment instead (git takes the first value it meets)
    by: str = ""


PROGRAMS: tuple[Program, ...] = (
    Program("core.hookspath", "/dev/null", always=True),
    Program("core.fsmonitor", "false", always=True, harmless=_FALSE),
    Program("core.pager", "cat", always=True),
    Program("core.editor", ":", always=True),
    Program("sequence.editor", ":", always=True),
    Program("core.askpass", "", always=True),
    Program("core.sshcommand", "ssh", always=True),
    Program("credential.helper", "", always=True),
    Program("diff.external", "", always=True),
    Program("tag.gpgsign", "false", always=True, harmless=_FALSE),
    Program("log.showsignature", "false", always=True, harmless=_FALSE),
    Program("submodule.recurse", "false", always=True, harmless=_FALSE),
    Program("fetch.recursesubmodules", "false", always=True, harmless=_FALSE),
    Program("push.recursesubmodules", "no", always=True, harmless=_FALSE),
    # a partial clone fetches a missing object on demand, running the remote's uploadpack
    # program (or ssh to anywhere): no transport at all, unless sync opens one
    Program("protocol.allow", "never", always=True, harmless=("never",)),
    Program("protocol.*.allow", "never", harmless=("never",)),  # a protocol's own outranks protocol.allow
    # git keeps the first core.gitProxy it reads (the store's, before any override), and none when
    # GIT_PROXY_COMMAND is set: an empty one means no proxy
    Program("core.gitproxy", None, always=True, env=("GIT_PROXY_COMMAND", "")),
    # run on fetch (and by a local remote's receive-pack) for each objects/info/alternates entry
    Program("core.alternaterefscommand", "", always=True),
    Program("core.worktree", None, by="the runner names the work tree (GIT_WORK_TREE)"),
    Program("pager.*", "false", harmless=_FALSE),
    Program("diff.*.textconv", ""),
    Program("diff.*.command", ""),
    Program("filter.*.clean", "", also=(("required", "false"),)),
    Program("filter.*.smudge", "", also=(("required", "false"),)),
    Program("filter.*.process", "", also=(("required", "false"),)),
    Program("merge.*.driver", ""),
    Program("trailer.*.command", ""),
    Program("trailer.*.cmd", ""),
    Program("hook.*.command", ""),
    Program("credential.*.helper", ""),
    # a commit that would be signed, or a merge that would verify signatures, with any say of the store's
    # config in it is refused while untrusted (signing_refusal, verify_refusal), never silently done
    # without; a push is signed by no one (the server says whether it wants signed pushes)
    Program("commit.gpgsign", "false", harmless=_FALSE),
    Program("merge.verifysignatures", "false", harmless=_FALSE),
    Program("push.gpgsign", "false", harmless=_FALSE),
    Program("gpg.program", ""),
    Program("gpg.*.program", ""),
    Program("gpg.ssh.defaultkeycommand", ""),
    Program("gpg.format", "openpgp"),
    # sync names git's own pack programs; these keep any other fetch or push to git's too
    Program("remote.*.uploadpack", "git-upload-pack"),
    Program("remote.*.receivepack", "git-receive-pack"),
    Program("remote.*.vcs", None, by="sync opens only the file, ssh, https and git transports"),
    Program("uploadpack.packobjectshook", None, by="git reads it only from the person's own config"),
    # a push into this repository would check out the pushed branch: filters and push-to-checkout
    Program("receive.denycurrentbranch", "refuse", harmless=("refuse", "ignore", "warn", *_TRUE, *_FALSE)),
    Program("http.savecookies", "false", harmless=_FALSE),  # writes http.cookieFile, wherever it is
    Program("http.*.savecookies", "false", harmless=_FALSE),
    Program("include.path", None, by="each setting it includes is listed and neutralised as the store's own"),
    Program("includeif.*.path", None, by="each setting it includes is listed and neutralised as the store's own"),
    Program("web.browser", ""),
    Program("browser.*.cmd", ""),
    Program("browser.*.path", ""),
    Program("man.*.cmd", ""),
    Program("man.*.path", ""),
    Program("difftool.*.cmd", ""),
    Program("difftool.*.path", ""),
    Program("mergetool.*.cmd", ""),
    Program("mergetool.*.path", ""),
)
_PATTERNS = [(re.compile(fnmatch.translate(p.key)), p) for p in PROGRAMS]
# Always set when untrusted, for our own parsing and to write nothing we did not ask for
_PLAIN_FIXED = [("core.quotePath", "false"), ("core.untrackedCache", "false")]
FIXED_OFF: list[tuple[str, str]] = [(p.key, p.off) for p in PROGRAMS if p.always and p.off is not None] + _PLAIN_FIXED
UNTRUSTED_ENV: tuple[tuple[str, str], ...] = tuple(p.env for p in PROGRAMS if p.env)
_SIGNING_RE = re.compile(r"^(commit\.gpgsign|gpg\..+|user\.signingkey)$")
_VERIFY_RE = re.compile(r"^(merge\.verifysignatures|gpg\..+)$")


def program_of(key: str) -> Program | None:
    """The row of ``PROGRAMS`` a config key (as git prints it) falls under, or None."""
    low = key.lower()
    return next((p for pattern, p in _PATTERNS if pattern.match(low)), None)


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
    verify_refusal: str | None = None  # the store's own setting that asks a merge to verify signatures, untrusted
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
        program = program_of(key)
        if program is None or value.lower() in program.harmless:
            continue
        findings.append(Finding(key, value, origin))
        if program.off is not None and not program.always:
            section, _, rest = key.partition(".")
            name = rest.rpartition(".")[0]
            neutral.append((key, program.off))
            neutral += [(f"{section}.{name}.{var}", val) for var, val in program.also]
    hooks_dir = _hooks_dir(root, git_dir, entries)
    hooks = _hooks(hooks_dir)
    findings += [Finding(f"hook {name}", str(hooks_dir / name), "hooks") for name, _mode, _sha in hooks]
    digest = hashlib.sha256(json.dumps([[list(e) for e in local], str(hooks_dir), hooks]).encode()).hexdigest()
    record = read_records().get(str(root))
    trusted = isinstance(record, dict) and record.get("digest") == digest
    signing = verify = None
    if not trusted:
        # signing or verifying the person's own (global) config asks for runs their own program; with any
        # say of the store's in it, refused, never silently done without (it would pass for done)
        signing = _asked(entries, local, "commit.gpgsign", _SIGNING_RE)
        verify = _asked(entries, local, "merge.verifysignatures", _VERIFY_RE)
        if not any(e[2].lower() == "commit.gpgsign" for e in entries):
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
        signing_refusal=signing,
        verify_refusal=verify,
        local_filters=filters,
        changed_since_trust=changed,
        watched=watched,
        stamps=tuple(_stamp(p) for p in watched),
    )


def _asked(
    entries: list[tuple[str, str, str, str]], local: list[tuple[str, str, str, str]], key: str, own_re: re.Pattern[str]
) -> str | None:
    """When ``key`` is true in the end: the store's own setting (one ``own_re`` matches, ``key`` itself
    first) that has a say in what then runs, as ``setting=value``; else None."""
    values = [e for e in entries if e[2].lower() == key]
    if not values or values[-1][3].lower() not in _TRUE:
        return None
    own = sorted((e for e in local if own_re.match(e[2].lower())), key=lambda e: e[2].lower() != key)
    return f"{own[0][2]}={own[0][3]}" if own else None


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

    def environment(self) -> tuple[tuple[str, str], ...]:
        """Variables set while untrusted where git reads no override (``UNTRUSTED_ENV``)."""
        return () if self.current().trusted else UNTRUSTED_ENV

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
