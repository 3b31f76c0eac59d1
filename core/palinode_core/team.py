"""``palinode-audit sync STORE``: bring a clone up to date with its remote and
check it again (issue 25). Fetch, integrate (merge or rebase), re-check
integrity and request states, push; through the one git runner, so nothing the
store or a remote on this machine configures (hooks, filters, drivers, its
pack programs' config) runs unless the store is trusted (docs/team.md, "What
sync runs"). Refused with one line, before anything is fetched, while the
store has uncommitted changes, an interrupted operation or a merge in progress,
or when an untrusted store's config has a say in verifying a merge's
signatures. A conflict is never resolved here: it names the files and leaves
the store as git left it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from .errors import PalinodeError
from .forget.requests import request_states
from .inspect.integrity import integrity
from .ops import journal
from .ops.lock import writer_lock
from .storage.gitstore import GitCommandFailed
from .storage.store import Store

How = Literal["merge", "rebase"]
# The runner allows no transport at all (a partial clone's on-demand fetch would run the
# remote's programs); sync's own fetch and push open the everyday ones, never ext::, and
# name git's own pack programs (GitStore.pack_program), so a store's remote.*.uploadpack/
# receivepack runs nothing, nor, untrusted, a local remote's hooks and config.
_TRANSPORT = tuple(arg for proto in ("file", "ssh", "https", "git") for arg in ("-c", f"protocol.{proto}.allow=always"))


def ready(store: Store, how: How = "merge") -> str | None:
    """Why ``sync`` would refuse now, or None (a preview: nothing fetched)."""
    with writer_lock(store):
        return _not_ready(store, how)


def upstream_of(store: Store) -> str | None:
    """The branch ``sync`` would integrate (``origin/main``), or None."""
    try:
        name = store.git.run("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}", read=True).strip()
    except GitCommandFailed:
        return None
    return name or None


def sync(store: Store, how: How = "merge", push: bool = True) -> dict[str, Any]:
    store.check_writable()
    store.git.preflight()
    with writer_lock(store):
        refusal = _not_ready(store, how)
        if refusal:
            raise PalinodeError(f"{refusal}; nothing was fetched")
        upstream = upstream_of(store)
        if not upstream:
            raise PalinodeError(
                "this branch has no upstream (git branch --set-upstream-to REMOTE/BRANCH); nothing done"
            )
        before = _git(store, "rev-parse", "HEAD", read=True).strip()
        remote = upstream.split("/", 1)[0]
        upload = f"--upload-pack={store.git.pack_program(remote, 'git-upload-pack')}"
        _git(store, *_TRANSPORT, "fetch", "--quiet", "--no-recurse-submodules", upload, remote)
        try:
            if how == "rebase":
                _git(store, "rebase", "--quiet", "@{u}")
            else:
                _git(store, "merge", "--quiet", "--no-edit", "@{u}")
        except PalinodeError as exc:
            unmerged = store.git.unmerged()
            if not unmerged and not store.git.in_progress():  # refused before anything changed: say why
                raise PalinodeError(f"git refused the {how} of {upstream} ({exc}); fetched only") from None
            raise PalinodeError(
                f"the {how} of {upstream} stopped on a conflict in {', '.join(unmerged) or 'the history'}: "
                f"resolve it with git (or git {how} --abort); the store is as git left it"
            ) from None
        after = _git(store, "rev-parse", "HEAD", read=True).strip()
        pushed = False
        if push and _git(store, "rev-list", "--count", "@{u}..HEAD", read=True).strip() not in ("", "0"):
            try:
                receive = f"--receive-pack={store.git.pack_program(remote, 'git-receive-pack')}"
                _git(store, *_TRANSPORT, "push", "--quiet", receive, remote, "HEAD")
            except PalinodeError as exc:
                raise PalinodeError(f"integrated {upstream} but the push was refused ({exc}); sync again") from None
            pushed = True
    scan = store.scan()
    problems = integrity(store, scan.memories)
    return {
        "upstream": upstream,
        "how": how,
        "before": before,
        "after": after,
        "pushed": pushed,
        "states": [s.to_dict() for s in request_states(store, scan.memories)],
        "problems": [p.to_dict() for p in problems],
    }


def _not_ready(store: Store, how: How) -> str | None:
    """Why the store cannot be synced now, or None."""
    profile = store.git.setup()
    if how == "merge" and profile is not None and profile.verify_refusal:
        return (
            f"this store's git config sets {profile.verify_refusal}, which would run a signature-checking program "
            f"on merge while the store is untrusted (palinode-audit trust {store.git.root} if you trust it)"
        )
    git_dir = Path(store.git.git_dir or "")
    if any((git_dir / name).exists() for name in ("MERGE_HEAD", "rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD")):
        return "a merge or rebase is in progress: finish or abort it first"
    if journal.pending(store):
        return "an interrupted operation is on record: recover it first (palinode-audit recover)"
    # a submodule's status would run its own repository's filters: none is looked into
    if _git(store, "status", "--porcelain", "--untracked-files=no", "--ignore-submodules=all", read=True).strip():
        return "the store has uncommitted changes: commit or stash them first"
    return None


def _git(store: Store, *args: str, read: bool = False) -> str:
    try:
        return store.git.run(*args, read=read)
    except GitCommandFailed as exc:
        detail = " ".join(str(exc.stderr or exc).split())[:300]
        verb = next((a for a in args if not a.startswith("-") and "=" not in a), "")
        raise PalinodeError(f"git {verb} failed: {detail}") from None
