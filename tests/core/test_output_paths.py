"""Where ``-o`` may write (issue 24, findings 3 and 4): a regular file is
replaced atomically, a device or a FIFO is opened and written (never replaced),
a link is refused with one line and what it points at is left alone, and
nothing is ever written inside the store."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest
from helpers import make_git_store, palinode_file

from palinode_core.errors import PalinodeError
from palinode_core.storage.output import write_output


@pytest.fixture
def store(tmp_path):
    return make_git_store(tmp_path / "s", {"people/ann.md": palinode_file({"id": "ann"}, "Ann likes tea.")})


def _report(store, out) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "palinode_core",
            "report",
            str(store),
            "--since",
            "2000-01-01",
            "--format",
            "md",
            "-o",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=120,  # a write that waits for a reader fails the test, not the suite
    )


def test_a_regular_file_is_replaced_whole(store, tmp_path):
    out = tmp_path / "r.md"
    out.write_text("old " * 10000)
    inode = out.stat().st_ino
    proc = _report(store, out)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().startswith("#") and "old old" not in out.read_text()
    assert out.stat().st_ino != inode  # a new file renamed into place, the old inode untouched


def test_dev_null_is_written_never_replaced(store):
    proc = _report(store, "/dev/null")
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_fifo_is_opened_and_written(store, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()))  # noqa: SIM115
    reader.start()
    proc = _report(store, fifo)
    reader.join(30)
    assert proc.returncode == 0, proc.stderr
    assert got and got[0].startswith(b"#") and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_nobody_reads_is_refused_at_once(store, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    proc = _report(store, fifo)  # it had waited for a reader for ever
    assert proc.returncode == 1 and "no program is reading" in proc.stderr and proc.stderr.count("\n") == 1


@pytest.mark.parametrize("target", ["outside", "memory"])
def test_a_link_is_refused_and_its_target_left_alone(store, tmp_path, target):
    pointed = tmp_path / "precious.txt" if target == "outside" else store / "people/ann.md"
    if target == "outside":
        pointed.write_text("precious")
    before = pointed.read_bytes()
    link = tmp_path / "link.md"
    link.symlink_to(pointed)
    proc = _report(store, link)
    assert proc.returncode == 1 and proc.stderr.count("\n") == 1 and "is a link" in proc.stderr
    assert pointed.read_bytes() == before and link.is_symlink()


def test_never_inside_the_store_nor_over_a_folder(store, tmp_path):
    with pytest.raises(PalinodeError, match="inside the store"):
        write_output(store, "x", store / "people" / "new.md")
    with pytest.raises(PalinodeError, match="a folder"):
        write_output(store, "x", tmp_path)
    assert not (store / "people" / "new.md").exists()


def test_a_strike_is_shown_as_words_wrapped_to_the_terminal_and_exactly_on_request(tmp_path):
    """Issue 23, item 15: a one-paragraph memory's strike was two 500-character lines."""
    paragraph = ("Profile notes. I live in Berlin and work at Stripe. " + "I bike to the office most days. " * 15).strip()
    root = make_git_store(tmp_path / "w", {
        "people/me.md": palinode_file({"id": "me", "created_at": "2025-04-01T10:00:00+00:00"}, paragraph),
        "insights/forget-berlin.md": palinode_file({"id": "f", "created_at": "2025-05-20T10:00:00+00:00"},
                                                   "Please forget that I live in Berlin."),
    })

    def plan(*extra: str) -> list[str]:
        proc = subprocess.run([sys.executable, "-m", "palinode_core", "plan", str(root), "insights/forget-berlin.md",
                               "--lexical", *extra], capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": "80", "XDG_CACHE_HOME": str(tmp_path / "c")})
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.splitlines()

    words = plan()
    assert any("[-I-]{+~~I+}" in line for line in words) and any("[RETRACTED" in line for line in words)
    assert max(len(line) for line in words if line.startswith("    ~ ") or line.startswith("      ")) <= 80
    exact = plan("--exact")
    assert any(line.startswith("    -Profile notes.") and len(line) > 400 for line in exact)
