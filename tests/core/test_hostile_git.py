"""A store copied as a folder carries its own git setup. Without the person's
trust, no git command of ours runs anything that setup names; with trust, the
store's hooks run as git runs them. Names are literal paths, never patterns,
and a name can never forge a commit trailer or confuse Undo."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import Clock, git, make_git_store, palinode_file
from palinode_core.errors import GitError, PalinodeError
from palinode_core.forget import ledger
from palinode_core.inspect.chain_history import chain_history
from palinode_core.inspect.integrity import integrity
from palinode_core.inspect.report import build_report
from palinode_core.inspect.residue import candidates_for, residue
from palinode_core.inspect.timeline import diff_between, timeline
from palinode_core.inspect.trace import trace
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.storage import trust
from palinode_core.storage.grep import files_containing
from palinode_core.storage.snapshot import SnapshotStore
from palinode_core.storage.store import Store
from palinode_core.undo.operations import operations

ANN = palinode_file({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays.")
BOB = palinode_file({"id": "people-bob"}, "Bob plays chess.")
HOOKS = ("pre-commit", "commit-msg", "post-commit", "prepare-commit-msg", "post-index-change",
         "reference-transaction", "pre-auto-gc", "post-checkout", "post-rewrite")


def _payload(tmp_path: Path) -> tuple[Path, Path]:
    """A program that records each run in a marker file, and passes data
    through as a filter or textconv would (so git does not fail on it)."""
    marker = tmp_path / "payload-ran"
    script = tmp_path / "payload.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> "{marker}"\n'
                      'if [ $# -eq 0 ]; then cat; elif [ -f "$1" ]; then cat "$1"; fi\nexit 0\n')
    script.chmod(0o755)
    return script, marker


def _hostile(root: Path, setting: str, payload: Path, tmp_path: Path) -> None:
    """Arm one hostile git setting in the store, as a copied store would carry it."""
    cfg = lambda *kv: git(root, "config", *kv)  # noqa: E731
    if setting == "fsmonitor":
        cfg("core.fsmonitor", str(payload))
    elif setting == "hooks":
        for name in HOOKS:
            (root / ".git/hooks" / name).write_text(f"#!/bin/sh\nexec {payload} {name} \"$@\"\n")
            (root / ".git/hooks" / name).chmod(0o755)
    elif setting == "hooksPath":
        folder = tmp_path / "elsewhere-hooks"
        folder.mkdir()
        for name in HOOKS:
            (folder / name).write_text(f"#!/bin/sh\nexec {payload} {name} \"$@\"\n")
            (folder / name).chmod(0o755)
        cfg("core.hooksPath", str(folder))
    elif setting == "filter":
        for var in ("clean", "smudge", "process"):
            cfg(f"filter.evil.{var}", str(payload) if var != "process" else f"{payload} process")
        cfg("filter.evil.required", "true")
        (root / ".git/info").mkdir(exist_ok=True)
        (root / ".git/info/attributes").write_text("* filter=evil diff=evil\n")
    elif setting == "textconv":
        cfg("diff.evil.textconv", str(payload))
        cfg("diff.evil.command", str(payload))
        cfg("diff.external", str(payload))
        (root / ".gitattributes").write_text("*.md diff=evil\n")
    elif setting == "programs":
        for key in ("core.pager", "pager.log", "pager.show", "core.editor", "sequence.editor", "core.sshCommand",
                    "credential.helper", "core.askPass"):
            cfg(key, str(payload))
        cfg("log.showSignature", "true")
        cfg("gpg.program", str(payload))
    elif setting == "include":
        (root / ".git/extra.cfg").write_text(f"[core]\n\tfsmonitor = {payload}\n[filter \"odd=name\"]\n"
                                             f"\tclean = {payload}\n")
        (root / ".git/info").mkdir(exist_ok=True)
        (root / ".git/info/attributes").write_text("* filter=odd=name\n")
        cfg("include.path", "extra.cfg")
    else:  # pragma: no cover
        raise AssertionError(setting)


@pytest.fixture
def store_root(tmp_path):
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN, "people/bob.md": BOB})
    (root / "insights").mkdir()
    (root / "insights/forget-ann.md").write_text(palinode_file({"id": "f"}, "Please forget that I know Ann Lee."))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "request")
    return root


def _every_git_command(root: Path, refused: str | None = None) -> None:
    """apply, ledger commit, log/trace/history, diff, status/integrity.
    ``refused``: the setting a commit must be refused for, in one line."""
    store = Store(root, clock=Clock())
    head = git(root, "rev-parse", "HEAD").strip()
    assert head
    if refused:
        before = (root / "people/ann.md").read_bytes()
        with pytest.raises(PalinodeError, match=refused) as err:
            apply(store, lifecycle.plan_archive(store, "people/ann.md", reason="hostile test"))
        assert "\n" not in str(err.value) and "trust" in str(err.value)
        with pytest.raises(PalinodeError, match=refused):
            ledger.record(store, {"action": "dismiss", "request": "insights/forget-ann.md", "note": "n"})
        assert (root / "people/ann.md").read_bytes() == before and git(root, "rev-parse", "HEAD").strip() == head
        assert store.git.log("insights/forget-ann.md")[0].sha == head
        assert "Please forget" in store.git.diff(head, "insights/forget-ann.md")
        assert trace(store, "insights/forget-ann.md", store.scan().memories).commits
    else:
        done = apply(store, lifecycle.plan_archive(store, "people/ann.md", reason="hostile test"))
        assert done.commit and set(git(root, "show", "--name-only", "--format=", "HEAD").split()) == {
            "people/ann.md", "people/ann-history.md"}
        assert ledger.record(store, {"action": "dismiss", "request": "insights/forget-ann.md", "note": "n"})
        assert store.git.log("people/ann.md")[0].sha == done.commit
        assert trace(store, "people/ann.md", store.scan().memories).commits
        assert "status: archived" in store.git.diff(done.commit, "people/ann.md")
        assert operations(store)[0].path == "people/ann.md"
    # an interrupted apply makes integrity ask git for the files' status
    def stop(step: str) -> None:
        if step == "after_history_write":
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        apply(store, lifecycle.plan_archive(store, "people/bob.md"), fault=stop)
    assert any(p.kind.startswith("interrupted_") for p in integrity(store, store.scan().memories))
    assert Store(root, read_only=True).git.uncommitted(["people/bob.md"]) == ["people/bob.md"]


SETTINGS = ("fsmonitor", "hooks", "hooksPath", "filter", "textconv", "programs", "include")


@pytest.mark.parametrize("setting", SETTINGS)
def test_no_payload_runs_without_trust(store_root, tmp_path, setting):
    payload, marker = _payload(tmp_path)
    _hostile(store_root, setting, payload, tmp_path)
    profile = Store(store_root).git.setup()
    assert profile is not None and not profile.trusted and profile.findings, "the setting is listed"
    # a filter the store's own config defines is refused by name: committing around it could store
    # what it exists to transform (git-crypt); every other setting is simply not run
    _every_git_command(store_root, refused={"filter": "filter.evil.clean", "include": "filter.odd=name.clean"}
                       .get(setting))
    assert not marker.exists(), marker.read_text()


def test_diff_between_points_shows_the_bytes_on_a_store_with_a_diff_driver(store_root, tmp_path):
    """A store's textconv is not run untrusted; the diff between two points is
    then git's plain one (it failed with "unable to read files to diff")."""
    payload, marker = _payload(tmp_path)
    _hostile(store_root, "textconv", payload, tmp_path)
    store = Store(store_root, clock=Clock())
    apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    before = _snapshot(store_root)
    shown = diff_between(store, "people/ann.md", "HEAD~1", "HEAD")["diff"]
    assert "+status: archived" in shown and "+- [2025-06-01 11:00] Archived: people/ann.md" in shown
    assert _snapshot(store_root) == before and not marker.exists()


def _signed_commit(root: Path) -> None:
    """A commit carrying a (bogus) signature: with ``log.showSignature`` git
    would run ``gpg.program`` on it whenever it shows it."""
    tree, parent = git(root, "rev-parse", "HEAD^{tree}", "HEAD").split()
    body = (f"tree {tree}\nparent {parent}\nauthor A <a@x> 1700000000 +0000\ncommitter A <a@x> 1700000000 +0000\n"
            "gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n\nsigned\n")
    sha = subprocess.run(["git", "-C", str(root), "hash-object", "-t", "commit", "-w", "--stdin"], input=body,
                         capture_output=True, text=True, check=True).stdout.strip()
    git(root, "update-ref", "refs/heads/main", sha)


@pytest.mark.parametrize("setting", SETTINGS)
def test_history_reads_go_through_the_runner(store_root, tmp_path, setting, monkeypatch):
    """As-of snapshots, the report, the chain history, the timeline and the
    residue pre-filter read git too: the store's setup runs nothing there
    either, and the caller's GIT_DIR never points them at another repository."""
    payload, marker = _payload(tmp_path)
    _signed_commit(store_root)
    _hostile(store_root, setting, payload, tmp_path)
    other = make_git_store(tmp_path / "other", {"elsewhere.md": BOB})
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    snapshot = SnapshotStore.open(store_root, at="HEAD")
    try:
        assert set(snapshot.scan().memories) == {"people/ann.md", "people/bob.md", "insights/forget-ann.md"}
    finally:
        snapshot.close()
    store = Store(store_root, clock=Clock())
    memories = store.scan().memories
    assert [r["path"] for r in build_report(store, memories, since="2000-01-01")["requests"]] == [
        "insights/forget-ann.md"]
    assert chain_history(store) is not None
    assert [p.subject for p in timeline(store, "insights/forget-ann.md")] == ["request"]
    assert "Please forget" in diff_between(store, "insights/forget-ann.md", "HEAD~2", "HEAD")["diff"]
    assert files_containing(store, {"lee"}) == {"people/ann.md", "insights/forget-ann.md"}
    assert not marker.exists(), marker.read_text()


@pytest.mark.parametrize("where", ["store", "user"])
def test_colour_config_never_hides_a_live_mention(store_root, tmp_path, monkeypatch, where):
    """``color.ui = always`` (the store's or the person's own) once coloured
    git grep's file names, so the residue pre-filter matched none of them and
    a live mention of a forgotten preference went unreported."""
    if where == "store":
        git(store_root, "config", "color.ui", "always")
    else:
        (tmp_path / "gitconfig").write_text("[color]\n\tui = always\n\tgrep = always\n")
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "gitconfig"))
    store = Store(store_root, clock=Clock())
    assert files_containing(store, {"lee"}) == {"people/ann.md", "insights/forget-ann.md"}
    live = [m.path for m in residue("Ann Lee", store.scan().memories, candidates_for(store, "Ann Lee"))
            if m.kind == "live"]
    assert "people/ann.md" in live


def test_partial_clone_fetches_nothing_without_trust(tmp_path):
    """A partial clone fetches a missing blob on demand, running the remote's
    ``uploadpack`` program: reading history of an untrusted one runs nothing
    and reaches no remote, even when the store allows the protocol itself;
    what cannot be read is one line."""
    payload, marker = _payload(tmp_path)
    origin = make_git_store(tmp_path / "origin", {"people/ann.md": ANN})
    (origin / "people/ann.md").write_text(BOB)
    git(origin, "commit", "-qam", "second")
    git(origin, "config", "uploadpack.allowFilter", "true")
    root = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "--filter=blob:none", f"file://{origin}", str(root))
    git(root, "config", "remote.origin.uploadpack", str(payload))
    git(root, "config", "protocol.file.allow", "always")
    assert git(root, "rev-list", "--objects", "--missing=print", "--all").count("?") == 1
    for command in (["timeline", "people/ann.md"], ["diff", "people/ann.md", "--from", "HEAD~1", "--to", "HEAD"],
                    ["scan", "--at", "HEAD~1"], ["report", "--since", "2000-01-01"], ["trace", "people/ann.md"]):
        proc = subprocess.run([sys.executable, "-m", "palinode_core", command[0], str(root), *command[1:]],
                              capture_output=True, text=True)
        assert proc.returncode in (0, 1) and len(proc.stderr.strip().splitlines()) <= 1, (command, proc.stderr)
        assert not marker.exists(), (command, marker.read_text())
        if command[0] == "timeline":  # a blob read that cannot be fetched says why
            assert "may be missing" in proc.stderr and "partial clone" in proc.stderr, proc.stderr
    assert git(root, "rev-list", "--objects", "--missing=print", "--all").count("?") == 1, "nothing was fetched"


def test_hostile_setup_is_listed_by_trust_show(store_root, tmp_path):
    payload, marker = _payload(tmp_path)
    for setting in SETTINGS:
        if setting != "hooksPath":
            _hostile(store_root, setting, payload, tmp_path)
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", "trust", str(store_root), "--show"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    shown = {r["setting"].lower() for r in json.loads(proc.stdout)["runs"]}
    assert {"core.fsmonitor", "filter.evil.clean", "filter.evil.smudge", "diff.evil.textconv", "diff.external",
            "core.pager", "gpg.program", "include.path", "hook post-commit", "hook reference-transaction",
            "filter.odd=name.clean"} <= shown
    assert not json.loads(proc.stdout)["trusted"] and not marker.exists()


def test_trusted_store_runs_its_hooks_as_git_would(store_root, tmp_path):
    payload, marker = _payload(tmp_path)
    _hostile(store_root, "hooks", payload, tmp_path)
    store = Store(store_root, clock=Clock())
    trust.trust_store(store.root, store.git.setup())
    assert store.git.trusted
    apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    ran = {line.split()[1] for line in marker.read_text().splitlines()}
    assert {"pre-commit", "commit-msg", "prepare-commit-msg", "post-commit", "reference-transaction"} <= ran
    # a changed hook is a different setup: untrusted again, nothing more runs
    (store_root / ".git/hooks/post-commit").write_text(f"#!/bin/sh\nexec {payload} changed\n")
    marker.unlink()
    assert not store.git.trusted and store.git.setup().changed_since_trust
    apply(store, lifecycle.plan_restore(store, "people/ann.md"))
    assert not marker.exists()
    # untrust: the record goes
    trust.trust_store(store.root, store.git.setup())
    assert store.git.trusted and trust.untrust_store(store.root) and not store.git.trusted


def test_trusted_filter_runs(store_root, tmp_path):
    payload, marker = _payload(tmp_path)
    _hostile(store_root, "filter", payload, tmp_path)
    store = Store(store_root, clock=Clock())
    with pytest.raises(PalinodeError, match="filter.evil.clean"):
        apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    assert not marker.exists()
    git(store_root, "config", "--unset", "filter.evil.process")  # the payload does not speak that protocol
    trust.trust_store(store.root, store.git.setup())
    apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    assert marker.read_text().strip(), "the trusted store's clean filter ran, as git runs it"


def test_store_that_requires_signing_is_refused_in_one_line(store_root, tmp_path):
    payload, marker = _payload(tmp_path)
    git(store_root, "config", "commit.gpgSign", "true")
    git(store_root, "config", "gpg.program", str(payload))
    before = (store_root / "people/ann.md").read_bytes()
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "archive", str(store_root), "people/ann.md", "--yes"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "commit.gpgsign" in proc.stderr.lower() and "trust" in proc.stderr
    assert (store_root / "people/ann.md").read_bytes() == before and not marker.exists()
    store = Store(store_root, clock=Clock())
    with pytest.raises(GitError, match="gpgsign"):
        ledger.record(store, {"action": "note"})
    assert not marker.exists()


@pytest.mark.parametrize("name", [":!x.md", "*.md", "[ab].md", "-rf.md", "a b.md", "x\ny.md", "q\"uote.md",
                                  ":(glob)**.md", "--all.md"])
def test_pathspec_like_names_commit_exactly_that_file(tmp_path, name):
    root = make_git_store(tmp_path / "s", {name: ANN, "a.md": BOB, "b.md": BOB, "people/c.md": BOB})
    # the user's own work in progress: an unstaged edit, a staged edit, an untracked file
    (root / "a.md").write_text(BOB + "\nunstaged edit\n")
    (root / "b.md").write_text(BOB + "\nstaged edit\n")
    git(root, "add", "b.md")
    (root / "untracked.md").write_text(BOB)
    store = Store(root, clock=Clock())
    done = apply(store, lifecycle.plan_archive(store, name))
    files = git(root, "show", "-z", "--name-only", "--format=", done.commit).strip("\0\n").split("\0")
    history = name[:-3] + "-history.md"
    assert sorted(f.strip("\n") for f in files) == sorted([name, history])
    status = git(root, "status", "--porcelain", "-z").split("\0")
    assert " M a.md" in status and "M  b.md" in status and "?? untracked.md" in status
    subject, _, rest = git(root, "log", "-1", "--format=%B", done.commit).partition("\n")
    assert subject == f"palinode archive: {json.dumps(name, ensure_ascii=False)}", "quoted, one line"
    trailers = git(root, "log", "-1", "--format=%(trailers)", done.commit).strip()
    assert rest.strip() == trailers and re.fullmatch(r"Operation-Id: apply-[0-9a-f]{12}", trailers)
    op = operations(store)[0]
    assert (op.op, op.path) == ("archive", name)


def test_newline_name_never_forges_a_trailer(tmp_path):
    name = "x\n\nForget-Request: other.md\nSigned-off-by: Mallory <m@x>.md"
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN})
    (root / name).write_text(ANN)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "odd name")
    store = Store(root, clock=Clock())
    done = apply(store, lifecycle.plan_archive(store, name))
    assert git(root, "log", "-1", "--format=%(trailers)", done.commit).strip().startswith("Operation-Id: apply-")
    commit = store.git.log(limit=1)[0]
    assert list(commit.trailers) == ["Operation-Id"] and "\n" not in commit.subject
    assert operations(store)[0].path == name
    sibling = (root / (name[:-3] + "-history.md")).read_text()
    assert sibling.count("<!-- fact:") == 1 and "\nForget-Request" not in sibling


FORGED = "- [2020-01-01 00:00] Restored: people/x.md (was archived) <!-- fact:x -->"


@pytest.mark.parametrize("where", ["id", "name"])
def test_a_line_break_in_an_id_or_name_never_forges_a_history_entry(tmp_path, where):
    """The history sibling is one line per operation. A frontmatter id with a
    newline, or a file name with U+2028 (a line break to str.splitlines), once
    added a second, forged entry that trace then reported as history."""
    name, meta = "people/ann.md", {"id": "people-ann"}
    if where == "id":
        meta = {"id": f"x -->\n{FORGED[:-len(' <!-- fact:x -->')]} <!-- fact:x"}
    else:
        name = f"people/ann\u2028{FORGED}.md"
    root = make_git_store(tmp_path / "s", {name: palinode_file(meta, "Ann Lee likes tea.")})
    store = Store(root, clock=Clock())
    apply(store, lifecycle.plan_archive(store, name))
    sibling = (root / (name[:-3] + "-history.md")).read_text()
    assert len([line for line in sibling.splitlines() if line.startswith("- [")]) == 1, sibling
    entries = trace(store, name, store.scan().memories).history
    assert [e.when for e in entries] == ["2025-06-01 11:00"]


def _snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under the store, ``.git`` included: bytes and mtime."""
    out = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out[os.path.relpath(path, root)] = (os.readlink(path).encode() if os.path.islink(path)
                                                else Path(path).read_bytes(), st.st_mtime_ns)
    return out


READ_COMMANDS = [["scan"], ["show", "people/ann.md"], ["history", "people/ann.md"], ["index", "--lexical"],
                 ["search", "tea", "--lexical"], ["requests"], ["plan", "insights/forget-ann.md", "--lexical"],
                 ["residue", "--pref", "I know Ann Lee"], ["integrity"], ["trace", "people/ann.md"], ["recover"],
                 ["trust", "--show"], ["archive", "people/bob.md", "--dry-run"],
                 ["apply", "insights/forget-ann.md", "--lexical"], ["withdraw", "insights/forget-ann.md", "--dry-run"]]
REFUSED_COMMANDS = [["archive", "people/bob.md", "--yes"], ["recover", "--complete", "--yes"],
                    ["dismiss", "insights/forget-ann.md", "--note", "x", "--yes"]]


@pytest.mark.parametrize("trusted", [False, True])
def test_read_only_never_writes_a_byte_under_the_store(store_root, tmp_path, trusted):
    """With an interrupted operation pending (integrity asks git for status)
    and a store whose fsmonitor and hooks would write: every read-only
    command leaves every byte and mtime under the store, .git included."""
    payload, marker = _payload(tmp_path)
    for setting in ("fsmonitor", "hooks"):
        _hostile(store_root, setting, payload, tmp_path)
    store = Store(store_root, clock=Clock())

    def stop(step: str) -> None:
        if step == "after_history_write":
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        apply(store, lifecycle.plan_archive(store, "people/ann.md"), fault=stop)
    if trusted:
        trust.trust_store(store.root, store.git.setup())
    time.sleep(0.01)  # a rewrite within the same clock tick would keep the mtime
    before = _snapshot(store_root)
    commands = [(c, {}) for c in (READ_COMMANDS if not trusted else READ_COMMANDS[:3] + READ_COMMANDS[8:11])]
    commands += [(c, {"PALINODE_AUDIT_READ_ONLY": "1"}) for c in REFUSED_COMMANDS + READ_COMMANDS[8:10]]
    for cmd, env in commands:
        proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", cmd[0], str(store_root), *cmd[1:]],
                              capture_output=True, text=True, env={**os.environ, **env})
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, (cmd, proc.stderr)
        after = _snapshot(store_root)
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        assert not changed, (cmd, changed)
    assert not marker.exists(), marker.read_text()


def test_no_gitpython_on_any_path():
    """Every git command goes through the one runner: GitPython (which runs
    git on its own terms) is not even imported."""
    code = ("import sys, palinode_core.cli, palinode_core.session, palinode_core.storage.gitstore\n"
            "print('git' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_linked_worktree_s_hooks_are_the_common_dir_s(tmp_path):
    """Issue 24, finding 5: git runs a linked worktree's hooks from the main
    repository's folder; trust lists those, and one added after trust makes
    the store untrusted again (nothing of it runs)."""
    main = make_git_store(tmp_path / "main", {"people/ann.md": palinode_file({"id": "ann"}, "Ann likes tea.")})
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", str(linked))
    hook = main / ".git/hooks/post-commit"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o755)
    store = Store(linked, clock=Clock())
    profile = store.git.setup()
    assert profile is not None and "hook post-commit" in {f.setting for f in profile.findings}
    hook.unlink()
    trust.trust_store(store.root, store.git.setup())
    assert store.git.trusted
    marker = tmp_path / "ran"
    late = main / ".git/hooks/post-commit"
    late.write_text(f"#!/bin/sh\ntouch {marker}\n")
    late.chmod(0o755)
    assert not store.git.trusted and store.git.setup().changed_since_trust
    apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    assert not marker.exists()


@pytest.mark.parametrize("when", ["branch switch", "file appears"])
def test_a_conditional_include_that_becomes_active_untrusts_the_store(store_root, tmp_path, when):
    """Issue 24, finding 5: an ``includeIf "onbranch:…"`` file is read only on that branch, and an
    include whose file is missing is read once it appears; either ends a trust made before."""
    payload, marker = _payload(tmp_path)
    hooks = tmp_path / "evil-hooks"
    hooks.mkdir()
    (hooks / "post-commit").write_text(f"#!/bin/sh\nexec {payload} post-commit\n")
    (hooks / "post-commit").chmod(0o755)
    included = store_root / ".git" / "evil.inc"
    if when == "branch switch":
        included.write_text(f"[core]\n\thooksPath = {hooks}\n")
        git(store_root, "config", "includeIf.onbranch:evil.path", "evil.inc")
    else:
        git(store_root, "config", "include.path", "evil.inc")  # names a file not there yet
    store = Store(store_root, clock=Clock())
    trust.trust_store(store.root, store.git.setup())
    assert store.git.trusted
    if when == "branch switch":
        git(store_root, "checkout", "-q", "-b", "evil")
    else:
        included.write_text(f"[core]\n\thooksPath = {hooks}\n")
    assert not store.git.trusted, "the newly read include changes what git would run"
    assert any("post-commit" in f.setting for f in store.git.setup().findings)
    apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    assert not marker.exists(), "the include's hook did not run"


@pytest.mark.parametrize("name", ["notes/*.md", ":!x.md", "notes/[ab].md", "notes/?.md"])
def test_pattern_names_are_json_quoted_in_every_subject(tmp_path, name):
    """Issue 24, finding 8 (README: names that are not one plain word are JSON-quoted in
    subjects): struck, restored and archived through the CLI, with a dependent flagged and a
    forget request of such a name dismissed, no subject holds the bare name."""
    ref, request = name[:-3], name[:-3] + "-forget.md"
    root = make_git_store(tmp_path / "s", {
        name: palinode_file({"id": "n"}, "I live in Berlin. The cat sleeps."),
        "people/dep.md": palinode_file({"id": "dep", "backed_by": [ref]}, "Depends on it."),
        request: palinode_file({"id": "f", "category": "insights", "created_at": "2025-05-20T10:00:00+00:00"},
                               "Please forget that I keep bees."),
    })
    start = git(root, "rev-parse", "HEAD").strip()

    def audit(*args: str) -> None:
        proc = subprocess.run([sys.executable, "-m", "palinode_core", args[0], str(root), *args[1:], "--yes"],
                              capture_output=True, text=True, env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "c")})
        assert proc.returncode == 0, (args, proc.stderr)
        return git(root, "log", "-1", "--format=%s").rstrip("\n")

    quoted, quoted_ref, quoted_request = (json.dumps(n, ensure_ascii=False) for n in (name, ref, request))
    assert audit("retract", name, "--pref", "I live in Berlin") == f"palinode backed_by review: {quoted_ref} " \
                                                                    "retract -> 1 dependent(s)"
    assert audit("unretract", name, "--pref", "I live in Berlin") == f"palinode unretract: {quoted} (1 mentions)"
    assert audit("archive", name) == f"palinode archive: {quoted}"  # the dependent is flagged already
    assert audit("dismiss", request, "--note", "not mine") == f"palinode-audit ledger: dismiss {quoted_request}"
    subjects = git(root, "log", "--format=%s", f"{start}..HEAD").splitlines()
    assert f"palinode retract: {quoted} (1 mentions)" in subjects
    for subject in subjects:  # the bare name or ref never stands outside its quotes
        assert ref not in subject.replace(quoted, "").replace(quoted_ref, "").replace(quoted_request, ""), subject


@pytest.mark.parametrize("when", ["gitdir file appears", "gitdir file changes", "nested onbranch", "gitdir elsewhere"])
def test_a_gitdir_include_and_a_nested_include_are_watched_by_trust(store_root, tmp_path, when):
    """Issue 24, finding 5: ``includeIf "gitdir:…"`` (true for this store) names a file read once
    it appears and read again when it changes; an ``onbranch:`` file may itself include another.
    Each ends a trust made before; an include whose gitdir: is another folder is never read."""
    payload, marker = _payload(tmp_path)
    hooks = tmp_path / "evil-hooks"
    hooks.mkdir()
    (hooks / "post-commit").write_text(f"#!/bin/sh\nexec {payload} post-commit\n")
    (hooks / "post-commit").chmod(0o755)
    evil = f"[core]\n\thooksPath = {hooks}\n"
    gitdir = os.path.realpath(store_root) + "/"  # ``<folder>/`` is ``<folder>/**``: its .git matches
    included = tmp_path / "outside" / "store.inc"  # outside the store, named by absolute path
    included.parent.mkdir()
    if when == "gitdir file changes":
        included.write_text("[user]\n\tname = Ann\n")
    if when == "nested onbranch":
        (store_root / ".git" / "outer.inc").write_text(f"[include]\n\tpath = {included}\n")
        included.write_text(evil)
        git(store_root, "config", "includeIf.onbranch:evil.path", "outer.inc")
    else:
        git(store_root, "config", f"includeIf.gitdir:{tmp_path / 'elsewhere' if when == 'gitdir elsewhere' else gitdir}"
                                  ".path", str(included))
    store = Store(store_root, clock=Clock())
    trust.trust_store(store.root, store.git.setup())
    assert store.git.trusted
    if when == "nested onbranch":
        git(store_root, "checkout", "-q", "-b", "evil")
    else:
        included.write_text(evil)
        os.utime(included, ns=(time.time_ns() + 10**9,) * 2)  # a new stamp even within the clock's granularity
    if when == "gitdir elsewhere":
        assert store.git.trusted, "git never reads it here: nothing it would run changed"
        return
    assert not store.git.trusted, "the file git now reads changes what it would run"
    assert any("post-commit" in f.setting for f in store.git.setup().findings)
    apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    assert not marker.exists(), "the include's hook did not run"


def test_a_config_rewritten_with_its_old_time_still_untrusts_the_store(store_root, tmp_path):
    """Issue 24, finding 5: the trust watcher decides by stat, not by reading. A same-size
    rewrite of an included config whose mtime is set back (``touch -d``, as anything that can
    write the file can) keeps mtime, size and inode; the inode's change time cannot be set."""
    payload, marker = _payload(tmp_path)
    for name in ("hooksA", "hooksB"):
        (tmp_path / name).mkdir()
    (tmp_path / "hooksB" / "post-commit").write_text(f"#!/bin/sh\nexec {payload} post-commit\n")
    (tmp_path / "hooksB" / "post-commit").chmod(0o755)
    included = store_root / ".git" / "store.inc"
    included.write_text(f"[core]\n\thooksPath = {tmp_path / 'hooksA'}\n")
    git(store_root, "config", "includeIf.onbranch:main.path", "store.inc")
    git(store_root, "checkout", "-q", "-B", "main")
    store = Store(store_root, clock=Clock())
    trust.trust_store(store.root, store.git.setup())
    assert store.git.trusted
    before = os.stat(included)
    with open(included, "r+") as handle:  # same size, same inode
        handle.write(f"[core]\n\thooksPath = {tmp_path / 'hooksB'}\n")
    os.utime(included, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(included)
    assert (after.st_mtime_ns, after.st_size, after.st_ino) == (before.st_mtime_ns, before.st_size, before.st_ino)
    assert not store.git.trusted, "the rewrite changes what git would run"
    apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    assert not marker.exists(), "the new hook did not run"


def test_a_path_taken_out_of_the_index_since_it_was_read_is_staged_again(tmp_path):
    """A commit told a path is tracked (so no `git add` first) still commits it
    when a rival ran `git rm --cached` in between."""
    from palinode_core.storage.gitstore import GitStore

    root = make_git_store(tmp_path / "s", {"notes/a.md": "one\n"})
    git(root, "rm", "-q", "--cached", "--", "notes/a.md")
    (root / "notes/a.md").write_text("two\n")
    sha = GitStore(root).commit(["notes/a.md"], "palinode-audit: test", add_first=[])
    assert sha and git(root, "show", "HEAD:notes/a.md") == "two\n"
    assert git(root, "status", "--porcelain") == ""


def test_a_skip_worktree_file_is_never_half_committed(tmp_path):
    """git leaves a skip-worktree entry out of a pathspec commit: such a target
    goes through `git add` (which refuses it), so nothing is committed in part."""
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN, "people/bob.md": BOB})
    git(root, "update-index", "--skip-worktree", "--", "people/ann.md")
    before = git(root, "rev-parse", "HEAD")
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "archive", str(root), "people/ann.md", "--yes"],
                          capture_output=True, text=True)
    commits = git(root, "log", "--format=%s", f"{before.strip()}..HEAD").splitlines()
    assert not commits and "people/ann.md marked skip-worktree" in proc.stderr, (proc.stderr, commits)
    assert (root / "people/ann.md").read_text() == ANN and not (root / "people/ann-history.md").exists()


def test_an_edit_git_is_told_not_to_look_at_is_never_committed_as_ours(tmp_path):
    """`git status` skips an assume-unchanged file, so someone's edit there went into
    our archive commit: the file is compared with git's index instead, and refused."""
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN, "people/bob.md": BOB})
    git(root, "update-index", "--assume-unchanged", "--", "people/ann.md")
    (root / "people/ann.md").write_text(ANN + "\nMY PRIVATE DRAFT\n")
    before = git(root, "rev-parse", "HEAD")
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "archive", str(root), "people/ann.md", "--yes"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "people/ann.md differ from the last commit but are marked assume-unchanged" in proc.stderr
    assert proc.stderr.count("\n") == 1 and git(root, "rev-parse", "HEAD") == before
    assert (root / "people/ann.md").read_text() == ANN + "\nMY PRIVATE DRAFT\n"
    git(root, "update-index", "--no-assume-unchanged", "--", "people/ann.md")
    git(root, "checkout", "--", "people/ann.md")
    git(root, "update-index", "--assume-unchanged", "--", "people/ann.md")  # marked, but unedited: applied
    done = subprocess.run([sys.executable, "-m", "palinode_core", "archive", str(root), "people/ann.md", "--yes"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "status: archived" in git(root, "show", "HEAD:people/ann.md")


def test_a_git_without_batch_check_z_still_records_each_commit(tmp_path):
    """git before 2.38 has no `cat-file --batch-check -z`: HEAD is read path by path."""
    import shutil

    real = shutil.which("git")
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "git").write_text(
        "#!/bin/sh\nfor a in \"$@\"; do [ \"$a\" = --batch-check ] && { echo 'usage: old git' >&2; exit 129; }; done\n"
        f'exec {real} "$@"\n')
    (shim / "git").chmod(0o755)
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN})
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", "archive", str(root), "people/ann.md",
                           "--yes"], capture_output=True, text=True,
                          env={**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["commit"] == git(root, "rev-parse", "HEAD").strip()


def test_an_assume_unchanged_file_is_compared_as_git_would_store_it():
    """Under core.autocrlf the worktree holds CRLF and the index LF: no edit."""
    from palinode_core.errors import UncommittedEdits
    from palinode_core.ops.apply import _refuse_marked
    from palinode_core.storage.gitparse import blob_id
    from palinode_core.storage.records import FileIntent

    stored = blob_id("a\nb\n", "0" * 40)
    index = {"people/a.md": ["100644", stored, "0"]}
    _refuse_marked([FileIntent("people/a.md", "a\r\nb\r\n", None)], index, {"people/a.md": "h"})
    with pytest.raises(UncommittedEdits, match="assume-unchanged"):
        _refuse_marked([FileIntent("people/a.md", "a\nb\nmine\n", None)], index, {"people/a.md": "h"})
    _refuse_marked([FileIntent("people/a.md", "a\nb\nmine\n", None)], index, {"people/a.md": "H"})  # status sees it


def test_an_archive_under_autocrlf_commits_and_leaves_nothing_staged(tmp_path):
    """With core.autocrlf the worktree holds CRLF and git stores LF: HEAD holds what was
    written as git converts it. It had been taken for a rival's revert: the archive was
    committed, then half put back, and the memory's revert left staged."""
    root = make_git_store(tmp_path / "s", {"people/ann.md": ANN, "people/bob.md": BOB})
    git(root, "config", "core.autocrlf", "true")
    (root / "people/ann.md").unlink()
    git(root, "checkout", "--", "people/ann.md")
    assert b"\r\n" in (root / "people/ann.md").read_bytes()
    proc = subprocess.run([sys.executable, "-m", "palinode_core", "--json", "archive", str(root), "people/ann.md",
                           "--yes"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["commit"] == git(root, "rev-parse", "HEAD").strip()
    assert "status: archived\n" in git(root, "show", "HEAD:people/ann.md")
    assert git(root, "status", "--porcelain") == "" and git(root, "log", "--format=%s", "-1").startswith(
        "palinode archive")


# -- issue 38: what trust --show lists and what an untrusted store runs are one table ----------------------
_ARMED_VALUES = {"receive.denycurrentbranch": "updateInstead", "protocol.allow": "always",
                 "protocol.*.allow": "always", "push.recursesubmodules": "on-demand", "gpg.format": "ssh"}


def _arm(program: trust.Program, root: Path, payload: Path, tmp_path: Path) -> str:
    """Set, in the store's own config, a key ``program`` recognises to a value that runs something."""
    key = program.key.replace("*", "https://evil.example" if program.key.startswith("http.") else "evil")
    value = _ARMED_VALUES.get(program.key) or ("true" if program.harmless else str(payload))
    if program.key.startswith("include"):  # the included file names a program of its own
        driver = "inc" if program.key == "include.path" else "incif"
        value = str(tmp_path / f"{driver}.cfg")
        Path(value).write_text(f'[diff "{driver}"]\n\ttextconv = {payload}\n')
        if program.key == "includeif.*.path":
            key = f"includeif.gitdir:{os.path.realpath(root)}/.path"  # every repository under root
    elif program.key == "core.worktree":
        (tmp_path / "elsewhere").mkdir()
        value = str(tmp_path / "elsewhere")
    elif program.key == "remote.*.vcs":
        git(root, "config", "remote.evil.url", str(tmp_path / "nowhere"))
    git(root, "config", key, value)
    return key


def _effective(store: Store, key: str) -> str | None:
    """The value git itself reads for ``key`` under the runner's overrides (None: unset)."""
    argv, env = store.git.command("config", "--get", key, read=True)
    proc = subprocess.run(argv, cwd=store.root, env=env, capture_output=True, text=True)
    return proc.stdout[:-1] if proc.returncode == 0 else None


def _included_setting_is_neutral(store: Store, driver: str) -> None:
    assert f"diff.{driver}.textconv" in {f.setting for f in store.git.setup().findings}
    assert _effective(store, f"diff.{driver}.textconv") == ""


def _no_helper_transport(store: Store, tmp_path: Path, monkeypatch) -> None:
    from palinode_core.storage.gitstore import GitCommandFailed
    from palinode_core.team import _TRANSPORT

    helper = tmp_path / "bin" / "git-remote-evil"
    helper.parent.mkdir()
    helper.write_text(f"#!/bin/sh\necho helper >> {tmp_path / 'payload-ran'}\n")
    helper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{helper.parent}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(GitCommandFailed, match="not allowed"):
        store.git.run(*_TRANSPORT, "fetch", "evil")


def _git_ignores_it_in_a_repository(store: Store, tmp_path: Path) -> None:
    """A plain clone from the store runs its upload-pack: git reads this hook only from protected config."""
    subprocess.run(["git", "-c", "protocol.file.allow=always", "clone", "-q", "--no-local", f"file://{store.root}",
                    str(tmp_path / "copy")], check=True, capture_output=True)


# How each setting the table neutralises by other means than an override is shown to run nothing
_BY = {
    "core.worktree": lambda store, tmp_path, mp: _is_root(store),
    "remote.*.vcs": _no_helper_transport,
    "uploadpack.packobjectshook": lambda store, tmp_path, mp: _git_ignores_it_in_a_repository(store, tmp_path),
    "include.path": lambda store, tmp_path, mp: _included_setting_is_neutral(store, "inc"),
    "includeif.*.path": lambda store, tmp_path, mp: _included_setting_is_neutral(store, "incif"),
}


def _is_root(store: Store) -> None:
    assert store.git.run("rev-parse", "--show-toplevel", read=True).strip() == str(store.root)


@pytest.mark.parametrize("program", trust.PROGRAMS, ids=lambda p: p.key)
def test_every_setting_trust_lists_runs_nothing_untrusted(tmp_path, monkeypatch, program):
    """For every setting `trust --show` recognises, a store that sets it lists it, and, untrusted, git
    itself reads the value that runs nothing (or the table says, and this shows, what else stops it)."""
    monkeypatch.delenv("GIT_PROXY_COMMAND", raising=False)
    payload, marker = _payload(tmp_path)
    root = make_git_store(tmp_path / "s", {})
    key = _arm(program, root, payload, tmp_path)
    store = Store(root)
    profile = store.git.setup()
    assert profile is not None and not profile.trusted
    assert key in {f.setting for f in profile.findings}, "trust --show lists it"
    assert trust.program_of(key) is program
    if program.off is not None:
        assert _effective(store, key) == program.off
        section, _, rest = key.partition(".")
        for var, value in program.also:
            assert _effective(store, f"{section}.{rest.rpartition('.')[0]}.{var}") == value
    elif program.env is not None:
        name, value = program.env
        assert store.git.command("status", read=True)[1][name] == value
    else:
        assert program.by, "a setting with no override says what else stops it"
        _BY[program.key](store, tmp_path, monkeypatch)
    assert not marker.exists(), marker.read_text()


def test_what_is_always_off_is_off_in_a_store_that_sets_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("GIT_PROXY_COMMAND", raising=False)
    store = Store(make_git_store(tmp_path / "s", {}))
    env = store.git.command("status", read=True)[1]
    for program in trust.PROGRAMS:
        if program.always and program.off is not None:
            assert _effective(store, program.key) == program.off, program.key
        elif program.always:
            assert env[program.env[0]] == program.env[1], program.key
    assert set(_BY) == {p.key for p in trust.PROGRAMS if p.off is None and p.env is None}, "each has its check"
