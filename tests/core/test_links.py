"""Links inside a store are never followed out of it: not for the ledger,
its folder, the store's config, a memory, or a folder swapped for a link
between our check and our write (a real race, >= 150 applies)."""
from __future__ import annotations

import ctypes
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from helpers import Clock, git, make_git_store, palinode_file
from palinode_core.errors import PalinodeError
from palinode_core.forget import ledger
from palinode_core.ops import lifecycle
from palinode_core.ops.apply import apply
from palinode_core.storage import safeio
from palinode_core.storage.store import Store
from palinode_core.storage.textio import atomic_write
from palinode_core.undo import recover

ANN = palinode_file({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays.")
SECRET = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-really-a-key\n"


def _tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file's bytes and mtime under ``folder`` (links as their target text)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            data = os.readlink(path).encode() if os.path.islink(path) else Path(path).read_bytes()
            out[os.path.relpath(path, folder)] = (data, st.st_mtime_ns)
    return out


@pytest.fixture
def outside(tmp_path):
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "id_ed25519").write_text(SECRET)
    return folder


@pytest.fixture
def root(tmp_path):
    return make_git_store(tmp_path / "s", {"people/ann.md": ANN})


def test_committed_ledger_link_is_refused_and_never_copied(root, outside):
    (root / ".palinode-audit").mkdir()
    os.symlink(outside / "id_ed25519", root / ".palinode-audit/ledger.jsonl")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "a link, as a clone would carry it")
    before = _tree(outside)
    store = Store(root, clock=Clock())
    with pytest.raises((PalinodeError, OSError)):
        ledger.record(store, {"action": "dismiss", "request": "x.md"})
    with pytest.raises(PalinodeError, match=r"(symbolic link|through a link)"):
        ledger.read_ledger(store)
    assert _tree(outside) == before
    assert "not-really-a-key" not in git(root, "log", "-p", "--all")
    assert os.path.islink(root / ".palinode-audit/ledger.jsonl")


def test_linked_audit_folder_gets_no_ledger_written_outside(root, outside):
    os.symlink(outside, root / ".palinode-audit")
    before = _tree(outside)
    store = Store(root, clock=Clock())
    with pytest.raises((PalinodeError, OSError)):
        ledger.record(store, {"action": "dismiss", "request": "x.md"})
    assert _tree(outside) == before and not (outside / "ledger.jsonl").exists()


def test_linked_journal_folder_gets_nothing_written_outside(root, outside):
    """``.git/palinode-audit`` (the writer lock and the journal) linked out of
    the store: the lock file and the journal folder were created there."""
    os.symlink(outside, root / ".git/palinode-audit")
    store = Store(root, clock=Clock())
    with pytest.raises((PalinodeError, OSError)):
        apply(store, lifecycle.plan_archive(store, "people/ann.md"))
    assert sorted(os.listdir(outside)) == ["id_ed25519"]
    assert git(root, "status", "--porcelain") == "" and (root / "people/ann.md").read_text() == ANN


@pytest.mark.parametrize("fifo", ["write.lock", "journal/apply-x.json"])
def test_a_fifo_in_the_audit_folder_never_hangs_a_read(root, fifo):
    """Opening a FIFO for reading waits for a writer that never comes:
    integrity and recover hung there (both reach the lock and the journal)."""
    path = root / ".git/palinode-audit" / fifo
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    for command in ("integrity", "recover"):
        proc = subprocess.run([sys.executable, "-m", "palinode_core", command, str(root)], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, (command, proc.stderr)


def test_linked_config_is_not_read(root, outside):
    (outside / "palinode.config.yaml").write_text("consolidation:\n  forget:\n    enabled: true\n")
    os.symlink(outside / "palinode.config.yaml", root / "palinode.config.yaml")
    store = Store(root)  # not followed: Palinode's defaults, said, and no write until it is a file
    assert not store.config.forget.enabled and "symbolic link" in str(store.config_error)
    with pytest.raises(PalinodeError, match="symbolic link"):
        store.check_writable()


def test_memory_links_inside_the_store_still_read_and_outside_ones_refused(root, outside):
    os.symlink("ann.md", root / "people/ann-alias.md")
    (outside / "evil.md").write_text(ANN)
    os.symlink(outside / "evil.md", root / "people/evil.md")
    scan = Store(root).scan()
    assert scan.memories["people/ann-alias.md"].via_link
    assert "people/evil.md" in {e.path for e in scan.errors}


def test_safe_write_refuses_a_folder_link_on_the_way(root, outside):
    os.symlink(outside, root / "linked")
    before = _tree(outside)
    with pytest.raises(safeio.LinkRefused):
        atomic_write(root / "linked/x.md", "data")
    with pytest.raises(safeio.LinkRefused):
        atomic_write("linked/x.md", "data", root=root)
    with pytest.raises(safeio.LinkRefused):
        safeio.read_bytes("linked/id_ed25519", root)
    with pytest.raises(safeio.LinkRefused):
        safeio.unlink("linked/id_ed25519", root)
    assert _tree(outside) == before


def exchange(a: Path, b: Path) -> None:
    """Swap two names atomically (Linux renameat2 RENAME_EXCHANGE): the folder
    is never missing, so the race is only ever folder-or-link."""
    if _LIBC.renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


_LIBC = ctypes.CDLL(None, use_errno=True)


@pytest.mark.skipif(not hasattr(_LIBC, "renameat2"), reason="needs Linux renameat2")
def test_folder_swap_race_writes_nothing_outside(tmp_path, outside):
    """A thread swaps the memory's folder for a link to an outside folder
    (holding look-alike files) at random moments while applies run."""
    files = {f"people/p{i}.md": palinode_file({"id": f"p{i}"}, f"Person {i} likes tea.") for i in range(4)}
    root = make_git_store(tmp_path / "s", files)
    for rel, text in files.items():  # the decoy: same names, same text, so reads there would succeed
        (outside / Path(rel).name).write_text(text)
    before = _tree(outside)
    store = Store(root, clock=Clock(), use_scan_cache=False)
    people = root / "people"
    stop = threading.Event()
    swaps = [0]

    link = root / ".swap"
    os.symlink(outside, link)

    in_place = threading.Lock()  # held by the swapper while people is the link

    def swapper() -> None:
        rng = random.Random(11)
        while not stop.is_set():
            time.sleep(rng.uniform(0, 0.004))
            with in_place:
                exchange(people, link)  # people is now the link to outside
                swaps[0] += 1
                time.sleep(rng.uniform(0, 0.002))
                exchange(people, link)

    thread = threading.Thread(target=swapper, daemon=True)
    thread.start()
    attempts = succeeded = 0
    rng = random.Random(5)
    try:
        deadline = time.monotonic() + 240
        # on a loaded machine every one of 150 applies can meet a swap: go on until one gets through
        while (attempts < 150 or not succeeded) and time.monotonic() < deadline:
            rel = rng.choice(sorted(files))
            try:
                memory = store.load(rel)
                plan = (lifecycle.plan_restore if memory.archived else lifecycle.plan_archive)(store, rel)
            except (PalinodeError, OSError):
                continue  # could not even plan while swapped
            attempts += 1
            try:
                apply(store, plan)
                succeeded += 1
            except (PalinodeError, OSError):
                # a write the swap cut short is journaled: put back with the folder in place, as a user
                # runs recover later (an apply refuses to commit a file that differs from HEAD)
                with in_place:
                    recover.recover(store, "rollback")
    finally:
        stop.set()
        thread.join()
    assert attempts >= 150 and swaps[0] > 20, "the race really ran"
    after = _tree(outside)
    assert after == before, sorted(set(after) ^ set(before)) or "outside bytes changed"
    assert succeeded > 0 and not os.path.islink(people) and os.path.islink(link)


def test_reading_many_files_follows_no_link_and_waits_on_no_fifo(root, outside, tmp_path):
    """The leak check reads every memory's bytes in one walk (safeio.read_files): a link, a
    linked folder, a FIFO or a file over the limit is None, never the bytes elsewhere."""
    (root / "notes").mkdir()
    (root / "notes/a.md").write_text(ANN)
    (root / "notes/linked.md").symlink_to(outside / "id_ed25519")
    (root / "linked-folder").symlink_to(outside)
    os.mkfifo(root / "notes/fifo.md")
    (root / "notes/big.md").write_bytes(b"x" * 101)
    wanted = ["notes/a.md", "notes/linked.md", "linked-folder/id_ed25519", "notes/fifo.md", "notes/big.md", "notes/gone.md"]
    got = dict(safeio.read_files(root, wanted, 100))
    assert got == {"notes/a.md": ANN.encode(), "notes/linked.md": None, "linked-folder/id_ed25519": None,
                   "notes/fifo.md": None, "notes/big.md": None, "notes/gone.md": None}
