"""Store text never acts on the terminal. The app runs with its real terminal
driver on a pty, is driven through every screen, toast and dialog on a store
whose file names, frontmatter, prefs, commit subjects, authors and ledger
notes carry OSC 52 (clipboard), OSC 0 (title), CSI and bidi sequences, and
every byte it writes is scanned."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
import fcntl
from pathlib import Path

from helpers import GIT_ENV, git, make_git_store, palinode_file

OSC52 = "\x1b]52;c;UFdORUQ=\x07"  # would put "PWNED" on the clipboard
OSC0 = "\x1b]0;PWNED-TITLE\x07"  # would set the window title
CSI = "\x1b[8;3;3t"  # would resize the window
BIDI = "\u202e"  # right-to-left override

MEMORY = f"people/zanzibar{OSC0}{BIDI}.md"
REQUEST = f"insights/forget{OSC52}.md"
ARCHIVED = f"people/old{CSI}.md"


def hostile_store(root: Path) -> Path:
    files = {
        MEMORY: palinode_file({"id": "people-z", "category": "people", "title": f"Title {OSC52}{CSI}",
                               "created_at": "2025-05-01T10:00:00+00:00", "update_policy": f"x{OSC0}"},
                              f"I love Zanzibar marmalade{OSC0} on toast. It is from the market{BIDI}.\n\n"
                              f"## Zanzibar marmalade {CSI}heading\n"),
        REQUEST: palinode_file({"id": "insights-f", "category": "insights", "created_at": "2025-06-01T10:00:00+00:00"},
                               f"Please forget that I love Zanzibar marmalade{OSC52}."),
        ARCHIVED: palinode_file({"id": "people-o", "category": "people", "created_at": "2025-04-01T10:00:00+00:00"},
                                f"Zanzibar marmalade is an old note{CSI}."),
        ".palinode-audit/ledger.jsonl": json.dumps({
            "at": "2025-06-01T09:00:00+00:00", "action": "flag", "request": REQUEST, "path": MEMORY, "line": 1,
            "kind": "live", "text": f"t{OSC52}", "note": f"note {OSC0}{CSI}{BIDI}"}) + "\n",
    }
    make_git_store(root, files)
    # A commit whose subject and author carry escapes, on the archived memory.
    path = root / ARCHIVED
    path.write_text(path.read_text() + f"\nEdited{OSC52}.\n")
    git(root, "add", "-A")
    subprocess.run(["git", "-C", str(root), "commit", "-qm", f"palinode auto-save: {ARCHIVED} {OSC0}"], check=True,
                   env={**os.environ, **GIT_ENV, "GIT_AUTHOR_NAME": f"Eve{OSC52}"})
    return root


# What Textual itself writes: CSI sequences, its pointer-shape OSC 22 and
# hyperlink OSC 8 (never from our text), and a few two-byte ESC sequences.
_OWN = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\](?:22|8);[^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[=>78]")
# Characters that act (C0 other than CR/LF/TAB/BS/BEL, C1, bidi, zero-width).
_ACTING = re.compile("[\x00-\x07\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]")


def scan_terminal_bytes(data: bytes) -> list[str]:
    """Every way the output could act on the terminal beyond Textual's own
    drawing, as readable findings (empty when clean)."""
    text = data.decode("utf-8", errors="replace")
    findings = []
    for payload, name in ((OSC52, "OSC 52"), (OSC0, "OSC 0"), (CSI, "CSI resize")):
        if payload in text:
            findings.append(f"{name} payload written raw")
    rest = _OWN.sub("", text)
    for match in re.finditer(r"\x1b.{0,12}", rest):
        findings.append(f"foreign escape {match.group()!r}")
    for match in _ACTING.finditer(rest):
        findings.append(f"acting character U+{ord(match.group()):04X}")
    return findings


def test_the_scanner_catches_each_payload():
    assert scan_terminal_bytes(b"\x1b[2J\x1b[1;1Hhello\x1b]22;default\x07") == []
    for payload in (OSC52, OSC0, CSI, BIDI, "\x1bP+q\x1b\\", "\u009b2J"):
        assert scan_terminal_bytes(f"ok {payload} ok".encode()), payload


def run_on_pty(args: list[str], env: dict[str, str], size: tuple[int, int], timeout: float) -> bytes:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
                            start_new_session=True)
    os.close(slave)
    out = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:  # the child closed the pty
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        os.close(master)
    assert proc.returncode == 0, out[-3000:].decode("utf-8", "replace")
    return bytes(out)


def test_no_store_text_reaches_the_terminal_as_control_sequences(tmp_path):
    root = hostile_store(tmp_path / "store")
    cache = tmp_path / "cache"
    cache.mkdir()
    env = {**os.environ, "TERM": "xterm-256color", "COLORTERM": "truecolor",
           "PYTHONPATH": os.pathsep.join(sys.path)}
    env.pop("TEXTUAL", None)
    script = Path(__file__).with_name("escape_drive.py")
    out = run_on_pty([sys.executable, str(script), str(root), str(cache), MEMORY, REQUEST], env, (120, 36), 240)
    steps = (cache / "steps.txt").read_text().splitlines()
    # The drive went everywhere it meant to.
    reached = {s.split(":")[1] for s in steps}
    assert {"BrowseScreen", "TraceScreen", "MemoryViewScreen", "ReviewScreen", "DiffScreen", "ConfirmModal",
            "NoteModal", "HelpScreen", "UndoScreen", "ResidueScreen", "ActivityScreen", "ErrorModal", "AsOfModal",
            "TimelineScreen", "ExportModal"} <= reached, steps
    # The hostile text did reach the screen, made visible.
    text = out.decode("utf-8", "replace")
    assert "\\x1b]52;c;UFdORUQ=" in text and "\\x1b]0;PWNED-TITLE" in text and "\\u202e" in text
    assert "AS OF" in text and "switch back to now" in text  # the as-of banner and a refused key were drawn
    findings = scan_terminal_bytes(out)
    if findings:
        (tmp_path / "terminal.bin").write_bytes(out)
    assert findings == [], (findings, steps)
