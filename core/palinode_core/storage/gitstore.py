"""Git through one runner: every command we run on a store goes through
``GitStore.run``, a plain ``git`` subprocess (no GitPython) that

* names the repository explicitly (``GIT_DIR``/``GIT_WORK_TREE``), so nothing
  is discovered from a parent folder or redirected by ``core.worktree``;
* reads every path as a literal (``GIT_LITERAL_PATHSPECS=1`` and ``--``), so a
  file named ``:!x.md`` or ``*.md`` is that file and nothing else;
* runs nothing the store's own git setup names (every setting trust.py's
  ``PROGRAMS`` lists, and hooks) unless the person trusts this store, nor, in
  a fetch or push, what a remote on this machine names (``pack_program``);
* in reads, takes no optional lock and never refreshes the index.
One pathspec commit per mutation: the user's other work stays as it was (spec §6)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from ..errors import GitError
from . import safeio
from . import trust as trust_mod
from .commits import Commit, commit_message, escape_control
from .gitparse import LOG_ARGS, SHA_RE, HeadObjects, batch_check_input, git_complaint, parse_batch_check, parse_log
from .records import is_index_entry

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()
_UNFINISHED = (
    ("MERGE_HEAD", "a merge"),
    ("rebase-merge", "a rebase"),
    ("rebase-apply", "a rebase"),
    ("CHERRY_PICK_HEAD", "a cherry-pick"),
    ("REVERT_HEAD", "a revert"),
)
_URL_RE = re.compile(r"[A-Za-z0-9+.-]+://")  # git's is_url: scheme://...
_HELPER_RE = re.compile(r"[A-Za-z0-9._~-]+::")  # <transport>::<address>: a remote helper


class GitCommandFailed(GitError):
    """A git command exited non-zero; ``stderr``/``stdout`` hold its words."""

    def __init__(self, args: list[str], status: int, stdout: str, stderr: str):
        super().__init__(f"git {args[0] if args else ''} failed: {git_complaint(stderr + stdout) or f'exit {status}'}")
        self.args_run, self.status, self.stdout, self.stderr = args, status, stdout, stderr


def _repo_lock(root: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(root, threading.Lock())


def find_git_dir(root: Path) -> Path | None:
    """The store's own git directory (``.git`` or the folder a ``.git`` file
    names), read without running git; None when the root has none."""
    dot = root / ".git"
    if dot.is_dir():
        return Path(os.path.realpath(dot))
    return _gitfile_target(dot) if dot.is_file() else None


def _gitfile_target(gitfile: Path) -> Path | None:
    """The folder a ``.git`` file (``gitdir: PATH``) names, or None."""
    try:
        text = gitfile.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    target = Path(text[len("gitdir:") :].strip())
    target = Path(os.path.realpath(target if target.is_absolute() else gitfile.parent / target))
    return target if target.is_dir() else None


def local_path(url: str) -> str | None:
    """The path of a remote git reaches by running its pack programs on this machine
    (a path, ``file://``), as git tells them apart; None for a remote on a server
    (``ssh://``, ``host:path``, ``https://``, ``git://``) or a helper (``x::addr``)."""
    if url.startswith("file://"):
        rest = unquote(url[len("file://") :])
        return rest[rest.find("/") :] if "/" in rest else None  # file://host/path: the path
    if _URL_RE.match(url) or _HELPER_RE.match(url):
        return None
    colon, slash = url.find(":"), url.find("/")
    return url if colon < 0 or 0 <= slash < colon else None  # host:path is ssh


def repository_at(path: Path) -> Path | None:
    """The git directory git's pack programs enter for a local remote ``path``: the
    first of ``path/.git``, ``path``, ``path.git/.git``, ``path.git`` that is one
    (a ``.git`` file followed), as git's ``enter_repo`` tries them; None if none is."""
    base = str(path).rstrip("/") or "/"
    for suffix in ("/.git", "", ".git/.git", ".git"):
        candidate = Path(base + suffix)
        if candidate.is_file():
            found = _gitfile_target(candidate)
            return found if found is not None and _is_git_dir(found) else None
        if candidate.is_dir() and _is_git_dir(candidate):
            return Path(os.path.realpath(candidate))
    return None


def _is_git_dir(folder: Path) -> bool:
    common = trust_mod.common_dir(folder)
    return (folder / "HEAD").is_file() and (common / "objects").is_dir() and (common / "refs").is_dir()


def _config_reader(git_dir: Path) -> Callable[[list[str]], subprocess.CompletedProcess[bytes]]:
    """``git config`` in another repository on this machine (a local remote), named explicitly."""
    env = {k: v for k, v in os.environ.items() if k not in trust_mod.SCRUBBED_ENV}
    env.update(GIT_DIR=str(git_dir), LC_ALL="C")

    def run(args: list[str]) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            ["git", "--no-pager", *args], cwd=git_dir, env=env, capture_output=True, stdin=subprocess.DEVNULL
        )

    return run


@dataclass(frozen=True)
class _Repo:
    """What callers used of GitPython's Repo: where the git directory is."""

    git_dir: str
    working_tree_dir: str


class GitStore:
    """The store's git repository, or a clear refusal when there is none."""

    def __init__(self, root: Path, on_command: Callable[[str], None] | None = None, *, read_only: bool = False):
        self.root = Path(os.path.realpath(root))
        self.on_command = on_command
        self.read_only = read_only
        self._identity_ok = False  # checked once per store: it does not change mid-session
        self._identity: str | None = None
        self.head_after_commit: HeadObjects | None = None
        self._batch_z = True  # cat-file --batch-check -z (git 2.38+) until it fails once
        git_dir = find_git_dir(self.root)
        self.git_dir: Path | None = git_dir
        self.repo: _Repo | None = _Repo(str(git_dir), str(self.root)) if git_dir else None
        self._profile = trust_mod.ProfileCache(self.root, git_dir, self._run_plain) if git_dir else None

    @property
    def available(self) -> bool:
        return self.repo is not None

    # -- the one runner -------------------------------------------------------------
    def _env(self, overrides: list[tuple[str, str]], read: bool) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in trust_mod.SCRUBBED_ENV}
        env.update(
            GIT_DIR=str(self.git_dir),
            GIT_WORK_TREE=str(self.root),
            GIT_LITERAL_PATHSPECS="1",
            GIT_TERMINAL_PROMPT="0",
            LC_ALL="C",
            GIT_PAGER="cat",
            PAGER="cat",
            GIT_EDITOR=":",
            GIT_SEQUENCE_EDITOR=":",
        )
        env.pop("GIT_GLOB_PATHSPECS", None)
        env.pop("GIT_NOGLOB_PATHSPECS", None)
        env.pop("GIT_ICASE_PATHSPECS", None)
        if read or self.read_only:
            env["GIT_OPTIONAL_LOCKS"] = "0"
        # overrides travel as GIT_CONFIG_KEY_n (not ``-c``, which splits a key with '=' in it)
        try:
            count = int(env.get("GIT_CONFIG_COUNT", "0") or 0)
        except ValueError:
            count = 0
        for key, value in overrides:
            env[f"GIT_CONFIG_KEY_{count}"] = key
            env[f"GIT_CONFIG_VALUE_{count}"] = value
            count += 1
        env["GIT_CONFIG_COUNT"] = str(count)
        return env

    def _run_plain(self, args: list[str]) -> subprocess.CompletedProcess[bytes]:
        """A git command that runs no hook, filter or program by its nature
        (``git config -l``), used to read the setup itself."""
        return subprocess.run(
            ["git", "--no-pager", *args],
            cwd=self.root,
            env=self._env([], True),
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )

    def command(self, *args: str, read: bool = False, patterns: bool = False) -> tuple[list[str], dict[str, str]]:
        """The argv and environment of ``git args`` through the neutralising
        runner, for a process that outlives one call (``cat-file --batch``).
        ``read``: a command that must not write (no optional locks, no
        fsmonitor). ``patterns``: the pathspecs are our own globs, never store text."""
        if self.repo is None or self._profile is None:
            raise GitError(f"{self.root} is not a git repository; run `git init` there first")
        if self.on_command:
            self.on_command("git " + " ".join(args))
        env = self._env(self._profile.overrides(read_only=read or self.read_only), read)
        for key, value in self._profile.environment():
            env.setdefault(key, value)  # the person's own environment is theirs
        if patterns:
            del env["GIT_LITERAL_PATHSPECS"]
        return ["git", "--no-pager", *args], env

    def run_bytes(self, *args: str, read: bool = False, patterns: bool = False, stdin: bytes | None = None) -> bytes:
        """Run ``git args`` on this store through the neutralising runner and
        return its stdout; raises ``GitCommandFailed``."""
        argv, env = self.command(*args, read=read, patterns=patterns)
        feed: dict[str, object] = {"stdin": subprocess.DEVNULL} if stdin is None else {"input": stdin}
        proc = subprocess.run(argv, cwd=self.root, env=env, capture_output=True, **feed)  # type: ignore[call-overload]
        if proc.returncode != 0:
            stdout = proc.stdout.decode("utf-8", "surrogateescape")
            raise GitCommandFailed(list(args), proc.returncode, stdout, proc.stderr.decode("utf-8", "replace"))
        return proc.stdout

    def run(self, *args: str, read: bool = False) -> str:
        """``run_bytes`` as text (undecodable bytes kept as surrogates)."""
        return self.run_bytes(*args, read=read).decode("utf-8", "surrogateescape")

    # -- the remote side of a fetch or push -------------------------------------------
    def pack_program(self, remote: str, program: str) -> str:
        """What to run as the remote side of a fetch (``git-upload-pack``) or push
        (``git-receive-pack``) with ``remote``. A network remote runs it on its server:
        git's own program. A remote on this machine (a path, ``file://``) runs it here,
        in that repository, with its config and hooks (``pre-receive``, ``post-receive``...):
        while this store is untrusted, they are neutralised as ours are, by that
        repository's own overrides set in the environment of the command git runs."""
        if self.trusted:
            return program
        push = program == "git-receive-pack"
        try:
            urls = self.run("remote", "get-url", *(["--push", "--all"] if push else []), remote, read=True)
        except GitCommandFailed:  # not a configured remote: git reads it as a URL
            urls = self.run("ls-remote", "--get-url", remote, read=True)
        found = [u for u in urls.split("\n") if u]
        paths = [p for p in map(local_path, found) if p is not None]
        if not paths:
            return program
        if len(paths) != len(found):
            raise GitError(
                f"remote {escape_control(remote)} has URLs both on this machine and elsewhere; git would run "
                "one program for both, so none was used (give the remote one kind of URL)"
            )
        overrides: list[tuple[str, str]] = []
        for path in paths:
            where = Path(os.path.expanduser(path))
            git_dir = repository_at(where if where.is_absolute() else self.root / where)
            if git_dir is None:
                raise GitError(f"remote {escape_control(remote)}: {escape_control(path)} is not a git repository")
            root = git_dir.parent if git_dir.name == ".git" else git_dir
            overrides += trust_mod.build_profile(root, git_dir, _config_reader(git_dir)).neutral
        # git runs it through the shell with the repository path appended, GIT_CONFIG_COUNT cleared
        env = [*trust_mod.UNTRUSTED_ENV, ("GIT_CONFIG_COUNT", str(len(overrides)))]
        for i, (key, value) in enumerate(overrides):
            env += [(f"GIT_CONFIG_KEY_{i}", key), (f"GIT_CONFIG_VALUE_{i}", value)]
        return " ".join(f"{name}={shlex.quote(value)}" for name, value in env) + f" {program}"

    # -- trust --------------------------------------------------------------------
    @property
    def trusted(self) -> bool:
        return self._profile is not None and self._profile.current().trusted

    def setup(self) -> trust_mod.Profile | None:
        """What the store's own git config and hooks would run, and whether trusted."""
        return self._profile.current() if self._profile is not None else None

    # -- writes -------------------------------------------------------------------
    def preflight(self) -> None:
        """Refuse before anything is written when a commit could not be made safely."""
        if self.repo is None or self.git_dir is None:
            raise GitError(f"{self.root} is not a git repository; run `git init` there first")
        git_dir = self.git_dir
        if not os.access(self.root, os.W_OK) or not os.access(git_dir, os.W_OK):
            raise GitError(f"{self.root} is read-only; nothing can be written")
        what = self.in_progress()
        if what:
            raise GitError(f"{what} is in progress in {self.root}; finish or abort it first")
        # .git/HEAD names a branch unless detached; reading it saves a git process per apply
        try:  # never blocks on a FIFO or follows a link planted as HEAD
            attached = safeio.read_bytes(git_dir / "HEAD", max_bytes=4096).startswith(b"ref: ")
        except (OSError, ValueError):
            attached = False
        if not attached:
            raise GitError("HEAD is detached; check out a branch before changing the store")
        self._refuse_untrusted_signing()
        if not self._identity_ok:
            try:
                self._identity = _ident_name(self.run("var", "GIT_AUTHOR_IDENT", read=True))
            except GitCommandFailed as exc:
                raise GitError(
                    self._explain(exc, "no git identity is configured; set user.name and user.email")
                ) from None
            self._identity_ok = True
        lock = git_dir / "index.lock"
        for _ in range(20):  # another git process may be finishing; wait up to ~2 s
            if not lock.exists():
                break
            time.sleep(0.1)
        else:
            raise GitError(
                "another git process holds .git/index.lock; try again when it has finished "
                "(remove the lock only if no git command is running)"
            )

    def in_progress(self) -> str | None:
        """``a merge``, ``a rebase``… when git is in the middle of one, else None."""
        if self.git_dir is None:
            return None
        for marker, what in _UNFINISHED:
            if (self.git_dir / marker).exists():
                return what
        return None

    def unmerged(self) -> list[str]:
        """Files git left with conflicts (stages 1-3 in the index)."""
        try:
            out = self.run("ls-files", "-u", "-z", read=True)
        except GitCommandFailed:
            return []
        return sorted({r.partition("\t")[2] for r in out.split("\0") if "\t" in r})

    def tip(self) -> str:
        """The revision reads of history start from (a snapshot: its commit)."""
        return "HEAD"

    def shallow(self) -> bool:
        """A shallow clone: history before its boundary is not here to check against."""
        return self.git_dir is not None and (self.git_dir / "shallow").exists()

    def identity(self) -> str:
        """Who the store's commits are made by, as git names them (``Name <email>``):
        the author a decision is recorded under. Checked by ``preflight``."""
        if self._identity is None:
            try:
                self._identity = _ident_name(self.run("var", "GIT_AUTHOR_IDENT", read=True))
            except GitCommandFailed:
                return "unknown"
        return self._identity

    def _refuse_untrusted_signing(self) -> None:
        if self._profile is None:
            return
        setting = self._profile.current().signing_refusal
        if setting:
            raise GitError(
                f"this store's git config sets {setting}, which would run a signing program; "
                f"nothing was changed (if you trust this store: palinode-audit trust {self.root})"
            )

    def _refuse_untrusted_filters(self, paths: list[str]) -> None:
        """A clean filter the store's own config defines (git-crypt, say) is not
        run untrusted, and committing around it could store what it would have
        transformed: refuse, naming the setting."""
        profile = self._profile.current() if self._profile is not None else None
        if profile is None or profile.trusted or not profile.local_filters:
            return
        fields = self.run("check-attr", "-z", "filter", "--", *paths, read=True).split("\0")
        for path, _attr, value in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
            if value in profile.local_filters:
                raise GitError(
                    f"this store's git config runs filter.{value}.clean on {escape_control(path)}, "
                    f"which is not run for an untrusted store; nothing was committed "
                    f"(if you trust this store: palinode-audit trust {self.root})"
                )

    def _explain(self, exc: GitCommandFailed, default: str) -> str:
        """git's own complaint when it has one that matters, else ``default``."""
        if "dubious ownership" in exc.stderr:
            return f"git refuses {self.root}: it is owned by another user (see git's safe.directory)"
        return default

    def commit(
        self,
        paths: list[str],
        subject: str,
        trailers: dict[str, str] | None = None,
        attempts: int = 5,
        *,
        add_first: list[str] | None = None,
    ) -> str | None:
        """Stage exactly ``paths`` (literal names) and commit them alone. Returns
        the new sha, or None when there was nothing to commit. Retries while
        another process holds ``index.lock``. ``add_first``: the paths a pathspec
        commit cannot take from the worktree as they are (not in the index, or
        flagged skip-worktree / assume-unchanged); None: not known, all are added.
        ``head_after_commit`` then holds HEAD's commit and each path's blob in it."""
        message = commit_message(subject, trailers)
        self._refuse_untrusted_signing()
        self._refuse_untrusted_filters(paths)
        hooks = [] if self.trusted else ["--no-verify"]
        self.head_after_commit = None
        with _repo_lock(str(self.root)):
            delay = 0.1
            for attempt in range(attempts):
                try:
                    staged = paths if add_first is None else add_first
                    if staged:
                        self.run("add", "--", *staged)
                    self.run("commit", "-q", *hooks, "--cleanup=verbatim", "-m", message, "--", *paths)
                    break
                except GitCommandFailed as exc:
                    text = f"{exc.stderr}{exc.stdout}"
                    if add_first is not None and "did not match any file" in text and attempt < attempts - 1:
                        add_first = None  # a rival took a path out of the index since: stage them all
                        continue
                    if ".lock" in text and attempt < attempts - 1:
                        time.sleep(delay)
                        delay = min(delay * 2, 1.0)
                        continue
                    if any(words in text for words in ("nothing to commit", "nothing added", "no changes added")):
                        return None
                    raise GitError(f"git refused the commit: {git_complaint(text) or exc}") from None
        try:
            self.head_after_commit = self.head_objects(paths)
        except GitError:  # committed: only the read-back failed, so ask for HEAD alone
            return self.run("rev-parse", "--verify", "-q", "HEAD", read=True).strip()
        return self.head_after_commit.commit

    # -- reads --------------------------------------------------------------------
    def uncommitted(self, paths: list[str]) -> list[str]:
        """Which of ``paths`` differ from HEAD in the index or the worktree, untracked
        ones included: someone's own edits. Never refreshes or writes the index."""
        if self.repo is None or not paths:
            return []
        args = ["status", "--porcelain", "-z", "--ignore-submodules=all", "--no-renames", "--untracked-files=all"]
        found = {r[3:] for r in self.run(*args, "--", *paths, read=True).split("\0") if len(r) > 3}
        return sorted(p for p in set(paths) if p in found)

    def log(self, path: str | None = None, limit: int = 200, rev: str | None = None) -> list[Commit]:
        """Commits touching ``path`` (or all), newest first, with trailers;
        from ``rev`` back when given (else HEAD)."""
        if self.repo is None:
            return []
        args = ["log", f"-n{int(limit)}", *LOG_ARGS]
        if rev:
            args += ["--end-of-options", rev]  # a revision, never an option
        if path:
            args += ["--", path]
        try:
            out = self.run(*args, read=True)
        except GitCommandFailed:
            return []  # an empty repository has no HEAD yet
        return parse_log(out)

    def diff(self, sha: str, path: str | None = None) -> str:
        """One commit's patch, as git shows it, with no textconv or external diff."""
        if not SHA_RE.fullmatch(sha or ""):
            raise GitError(f"not a commit id: {escape_control(str(sha))!r}")
        args = ["show", "--format=", "--no-color", "--no-ext-diff", "--no-textconv", "--no-show-signature", sha]
        if path:
            args += ["--", path]
        return self.run(*args, read=True)

    def diff_between(self, old: str, new: str, paths: list[str]) -> str:
        """What changed in ``paths`` from commit ``old`` to commit ``new``."""
        return self.run("diff", "--no-color", "--no-ext-diff", "--no-textconv", old, new, "--", *paths, read=True)

    # -- the real state of a path, for rollback and recovery (issue 11, items 4-5) --
    def index_entries(self, paths: list[str]) -> dict[str, list[str]]:
        """``git ls-files -s`` of each path: [mode, blob, stage] per path that is in the index."""
        return self.index_state(paths)[0]

    def index_state(self, paths: list[str]) -> tuple[dict[str, list[str]], dict[str, str]]:
        """``index_entries``, and each entry's ``ls-files -v`` tag: "H" a plain entry (a pathspec
        commit takes it from the worktree as it is), "S" skip-worktree, "h" assume-unchanged."""
        try:
            out = self.run("ls-files", "-s", "-v", "-z", "--", *paths, read=True)
        except GitCommandFailed as exc:
            raise GitError(f"git could not read its index: {str(exc.stderr or exc).strip()}") from None
        entries: dict[str, list[str]] = {}
        tags: dict[str, str] = {}
        for record in out.split("\0"):
            meta, tab, path = record.partition("\t")
            if tab and path in paths:
                tags[path], _, fields = meta.partition(" ")
                entries[path] = fields.split(" ")
        return entries, tags

    def set_index_entry(self, path: str, entry: list[str] | None) -> None:
        """Put one index entry back as it was (``None``: not in the index), without touching the file.
        The entry is what ``index_entries`` read ([mode, blob, stage]); anything else is refused, never
        handed to git (a journal is a file on disk: its entry must not become an option or a path)."""
        if entry is not None and not is_index_entry(entry):
            raise GitError(f"not an index entry git wrote, not put back for {path}: {entry!r:.80}")
        try:
            if entry is None:
                self.run("update-index", "--force-remove", "--", path)
            else:
                self.run("update-index", "--add", "--cacheinfo", entry[0], entry[1], path)
        except GitCommandFailed as exc:
            busy = "index.lock" in str(exc.stderr or "")
            raise GitError(
                f"git could not put back the index entry of {path}"
                + (
                    ": another git process holds .git/index.lock; try again when it has finished"
                    if busy
                    else f": {str(exc.stderr or exc).strip()}"
                )
            ) from None

    def head_objects(self, paths: list[str]) -> HeadObjects:
        """HEAD's commit and each path's blob id in it (None: no such file), in one git process."""
        if self._batch_z:
            try:
                out = self.run_bytes("cat-file", "--batch-check", "-z", read=True, stdin=batch_check_input(paths))
                return parse_batch_check(out, paths)
            except GitCommandFailed:  # git before 2.38 has no -z for it: one process per path from now on
                self._batch_z = False
        ids = [self._object_id(name) for name in ["HEAD", *(f"HEAD:{path}" for path in paths)]]
        return HeadObjects(ids[0], dict(zip(paths, ids[1:], strict=True)))

    def _object_id(self, name: str) -> str | None:
        try:
            return self.run("rev-parse", "--verify", "-q", name, read=True).strip() or None  # "HEAD...": no option
        except GitCommandFailed:
            return None

    def blob_at(self, rev: str, path: str) -> str | None:
        """The text of ``path`` in ``rev`` (e.g. HEAD), or None when it has no such file."""
        if self.repo is None:
            return None
        try:
            return self.run("cat-file", "blob", f"{rev}:{path}", read=True)
        except GitCommandFailed:
            return None


def _ident_name(ident: str) -> str:
    """``Name <email> 1700000000 +0000`` without its time: who, not when."""
    name, bracket, _when = ident.strip().rpartition(">")
    return escape_control(name + bracket) if bracket else escape_control(ident.strip())
