"""The app's settings file is the person's: warnings name the offending
keymap line, saving the theme keeps every comment; ``make demo`` says where
its temporary store is when the app closes."""
from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time

from helpers import Clock
from palinode_tui.app import PalinodeApp
from palinode_tui.screens.review import ReviewScreen
from palinode_tui.settings import Settings, config_path
from tui.conftest import settle

CONFIG = """\
# my palinode-tui settings
theme: nord   # the dark one
keymap:
  review.aply: ctrl+a        # a typo
  review.apply: d            # d is already Diff on the Review screen
  app.review: f9
# end
"""


def test_unknown_and_clashing_keymap_entries_are_warnings_with_their_line():
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(CONFIG)
    settings = Settings.load()
    assert settings.keymap == {"app.review": "f9"}  # the clashing entry is refused, not applied
    unknown, clash = settings.notices
    assert unknown.startswith(f"{config_path()}:4: keymap entry 'review.aply: ctrl+a' names no action")
    assert clash.startswith(f"{config_path()}:5: keymap entry 'review.apply: d' takes d, already the key of "
                            "'review.diff'; ignored")


async def test_warnings_show_and_saving_the_theme_keeps_comments(tmp_path, spec_store):
    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text(CONFIG)
    app = PalinodeApp(spec_store, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        shown = [n.message for n in app._notifications]
        assert any("review.aply" in m and ":4:" in m for m in shown)
        assert app.theme == "nord"
        await pilot.press("f9")  # the valid remap still applies
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
        app.theme = "gruvbox"
        await settle(app, pilot)
    assert config_path().read_text() == CONFIG.replace('theme: nord   # the dark one',
                                                       'theme: "gruvbox"   # the dark one')
    assert Settings.load().theme == "gruvbox"


def test_make_demo_says_where_its_store_is_on_close(tmp_path):
    """The real entry point on a pty; Ctrl+Q closes it like a person would."""
    env = {**os.environ, "TERM": "xterm-256color", "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 36, 120, 0, 0))
    code = "import sys; from palinode_tui.app import main; sys.exit(main(['demo', '--no-vectors']))"
    proc = subprocess.Popen([sys.executable, "-c", code], stdin=slave, stdout=slave, stderr=slave, env=env,
                            cwd=tmp_path, start_new_session=True)
    os.close(slave)
    out = bytearray()
    sent = False
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
            if not sent and b"Activity" in out:  # the app is drawn
                time.sleep(1.0)
                os.write(master, b"\x11")  # Ctrl+Q
                sent = True
            if proc.poll() is not None and not select.select([master], [], [], 0.2)[0]:
                break
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        os.close(master)
    text = out.decode("utf-8", "replace")
    assert sent and proc.returncode == 0, text[-2000:]
    store = next(p for p in tmp_path.glob("palinode-demo-*/store"))
    assert f"The demo store is in {store}" in text and f"Reopen it with: palinode-tui {store}" in text


async def test_a_clashing_remap_is_refused_so_no_screen_becomes_unreachable(tmp_path, spec_store):
    """Issue 23, item 11: `app.review: 1` was reported and applied anyway: Browse unreachable."""
    from palinode_tui.screens.browse import BrowseScreen

    config_path().parent.mkdir(parents=True, exist_ok=True)
    config_path().write_text("keymap:\n  app.review: 1\n")
    app = PalinodeApp(spec_store, vectors=False, watch=False, clock=Clock(), cache_dir=tmp_path / "cache")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        assert any("app.review: 1" in n.message and "ignored" in n.message for n in app._notifications)
        await pilot.press("2")
        await settle(app, pilot)
        assert isinstance(app.screen, ReviewScreen)
        await pilot.press("1")
        await settle(app, pilot)
        assert isinstance(app.screen, BrowseScreen)
