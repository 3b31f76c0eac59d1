"""Git through the git command (via GitPython's ``repo.git``), never the index
API, which is ~10x slower. One pathspec commit per mutation, so the user's
other staged and unstaged work is left exactly as it was (spec §6)."""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import git

from ..errors import GitError

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()
_FIELD_SEP = "\x1f"
_RECORD_SEP = "\x1e"


def _repo_lock(root: str) -> threading.Lock:
    with _LOCKS_GUARD:
        return _LOCKS.setdefault(root, threading.Lock())


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    author: str
    date: str  # ISO 8601 author date
    trailers: dict[str, str] = field(default_factory=dict)
    files: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        return self.sha[:7]


def _parse_trailers(body: str) -> dict[str, str]:
    trailers: dict[str, str] = {}
    for line in body.splitlines():
        key, sep, value = line.partition(": ")
        if sep and key and " " not in key and key[0].isupper():
            trailers[key] = value.strip()
    return trailers


class GitStore:
    """The store's git repository, or a clear refusal when there is none."""

    def __init__(self, root: Path, on_command: Callable[[str], None] | None = None):
        self.root = Path(os.path.realpath(root))
        self.on_command = on_command
        self._identity_ok = False  # checked once per store: it does not change mid-session
        try:
            self.repo: git.Repo | None = git.Repo(self.root, search_parent_directories=False)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            self.repo = None

    @property
    def available(self) -> bool:
        return self.repo is not None

    def _git(self, *args: str) -> str:
        if self.repo is None:
            raise GitError(f"{self.root} is not a git repository; run `git init` there first")
        if self.on_command:
            self.on_command("git " + " ".join(args))
        return self.repo.git.execute(["git", *args], env={"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
                                     strip_newline_in_stdout=False)

    def preflight(self) -> None:
        """Refuse before anything is written when a commit could not be made safely."""
        if self.repo is None:
            raise GitError(f"{self.root} is not a git repository; run `git init` there first")
        git_dir = Path(self.repo.git_dir)
        if not os.access(self.root, os.W_OK) or not os.access(git_dir, os.W_OK):
            raise GitError(f"{self.root} is read-only; nothing can be written")
        for marker, what in (("MERGE_HEAD", "a merge"), ("rebase-merge", "a rebase"),
                             ("rebase-apply", "a rebase"), ("CHERRY_PICK_HEAD", "a cherry-pick"),
                             ("REVERT_HEAD", "a revert")):
            if (git_dir / marker).exists():
                raise GitError(f"{what} is in progress in {self.root}; finish or abort it first")
        # .git/HEAD names a branch unless detached; reading it saves a git process per apply
        try:
            attached = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").startswith("ref: ")
        except OSError:
            attached = False
        if not attached:
            raise GitError("HEAD is detached; check out a branch before changing the store")
        if not self._identity_ok:
            try:
                self._git("var", "GIT_COMMITTER_IDENT")
            except git.GitCommandError as exc:
                raise GitError(self._explain(exc, "no git identity is configured; set user.name and user.email")) from None
            self._identity_ok = True
        lock = git_dir / "index.lock"
        for _ in range(20):  # another git process may be finishing; wait up to ~2 s
            if not lock.exists():
                break
            time.sleep(0.1)
        else:
            raise GitError("another git process holds .git/index.lock; try again when it has finished "
                           "(remove the lock only if no git command is running)")

    def _explain(self, exc: git.GitCommandError, default: str) -> str:
        """git's own complaint when it has one that matters, else ``default``."""
        text = str(exc.stderr or "")
        if "dubious ownership" in text:
            return f"git refuses {self.root}: it is owned by another user (see git's safe.directory)"
        return default

    def commit(self, paths: list[str], subject: str, trailers: dict[str, str] | None = None,
               attempts: int = 5) -> str | None:
        """Stage exactly ``paths`` and commit them alone. Returns the new sha, or
        None when there was nothing to commit. Retries while another process
        holds ``index.lock``."""
        message = subject
        if trailers:
            message += "\n\n" + "\n".join(f"{k}: {v}" for k, v in trailers.items())
        with _repo_lock(str(self.root)):
            staged = self._git("ls-files", "-s", "--", *paths)  # to put the index back if the commit fails
            delay = 0.1
            for attempt in range(attempts):
                try:
                    self._git("add", "--", *paths)
                    self._git("commit", "--no-verify", "-q", "-m", message, "--", *paths)
                    return self._git("rev-parse", "HEAD").strip()
                except git.GitCommandError as exc:
                    text = f"{exc.stderr or ''}{exc.stdout or ''}"
                    if ".lock" in text and attempt < attempts - 1:
                        time.sleep(delay)
                        delay = min(delay * 2, 1.0)
                        continue
                    if "nothing to commit" in text or "nothing added" in text:
                        return None
                    self._restore_index(paths, staged)
                    raise GitError(f"git refused the commit: {text.strip().splitlines()[-1] if text.strip() else exc}") from None
        return None  # pragma: no cover

    def _restore_index(self, paths: list[str], staged: str) -> None:
        """The index entries of ``paths`` as ``ls-files -s`` saw them before a failed
        commit's ``git add``: the caller puts the files back, this the staging area."""
        try:
            self._git("update-index", "--force-remove", "--", *paths)
            for line in staged.splitlines():
                info, _, path = line.partition("\t")
                mode, sha, _stage = info.split()
                self._git("update-index", "--add", "--cacheinfo", f"{mode},{sha},{path}")
        except git.GitCommandError:
            pass  # best effort: the files themselves are restored by the caller either way

    def status(self, paths: list[str]) -> str:
        """``git status --porcelain`` for these paths: empty when committed as is."""
        return self._git("status", "--porcelain", "--", *paths) if self.repo is not None else ""

    def log(self, path: str | None = None, limit: int = 200, rev: str | None = None) -> list[Commit]:
        """Commits touching ``path`` (or all), newest first, with trailers;
        from ``rev`` back when given (else HEAD)."""
        if self.repo is None:
            return []
        fmt = _RECORD_SEP + _FIELD_SEP.join(["%H", "%s", "%an", "%aI", "%(trailers:only,unfold)", ""])
        args = ["log", f"-n{limit}", f"--format={fmt}", "--name-only"]
        if rev:
            args.append(rev)
        if path:
            args += ["--", path]
        try:
            out = self._git(*args)
        except git.GitCommandError:
            return []  # an empty repository has no HEAD yet
        commits = []
        for record in out.split(_RECORD_SEP):
            parts = record.split(_FIELD_SEP)
            if len(parts) < 6:
                continue
            sha, subject, author, date, trailer_text, files = parts[:6]
            commits.append(Commit(sha.strip(), subject, author, date, _parse_trailers(trailer_text),
                                  tuple(f for f in files.splitlines() if f.strip())))
        return commits

    def diff(self, sha: str, path: str | None = None) -> str:
        args = ["show", "--format=", "--no-color", "--no-ext-diff", sha]
        if path:
            args += ["--", path]
        return self._git(*args)

    def diff_between(self, old: str, new: str, paths: list[str]) -> str:
        """What changed in ``paths`` from commit ``old`` to commit ``new``."""
        return self._git("diff", "--no-color", "--no-ext-diff", old, new, "--", *paths)

    def head(self) -> str | None:
        try:
            return self._git("rev-parse", "HEAD").strip()
        except (git.GitCommandError, GitError):
            return None
