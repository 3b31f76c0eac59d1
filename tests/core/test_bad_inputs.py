"""The bad-input corpus: each file is reported with its reason or loaded and
shown safely; nothing is written; nothing outside the store is read."""
from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml

from helpers import ROOT, git, init_repo
from palinode_core.session import Session
from palinode_core.text.detect import detect_forget_request
from palinode_core.text.sanitize import has_unsafe
from palinode_core.storage.store import Store

DATA = ROOT / "tests" / "data" / "bad-inputs"
EXPECTED: dict[str, dict] = yaml.safe_load((DATA / "expected.yaml").read_text())
RUNTIME = {"huge-50mb.md": "over the", "symlink-loop.md": "a link leads to another link; not followed",
           "symlink-outside.md": "points outside the store", "symlink-dangling.md": "broken or looping symlink",
           "fifo.md": "not a regular file"}
SECRET = "TOP-SECRET-OUTSIDE-THE-STORE-7f3a"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    base = tmp_path_factory.mktemp("corpus")
    (base / "secret.md").write_text(f"---\nid: secret\n---\n{SECRET}\n")
    root = base / "store"
    (root / "bad").mkdir(parents=True)
    for name in EXPECTED:
        shutil.copyfile(DATA / name, root / "bad" / name)
    (root / "bad/symlink-loop.md").symlink_to("symlink-loop.md")
    (root / "bad/symlink-outside.md").symlink_to(base / "secret.md")
    (root / "bad/symlink-dangling.md").symlink_to("no-such-file.md")
    init_repo(root)
    with open(root / "bad/huge-50mb.md", "wb") as handle:  # untracked: git need not hold 50 MB
        handle.write(b"---\nid: huge\n---\n" + b"x" * (50 * 1024 * 1024))
    os.mkfifo(root / "bad/fifo.md")
    return root


def snapshot(root):
    out = {}
    for path in sorted(root.rglob("*")):
        if ".git" in path.parts or path.is_symlink() or not path.is_file():
            continue
        out[path] = path.stat().st_size if path.stat().st_size > 1_000_000 else path.read_bytes()
    return out


def test_corpus_is_large_enough():
    assert len(EXPECTED) + len(RUNTIME) >= 50


def test_scan_reports_every_bad_file_with_its_reason(corpus):
    scan = Store(corpus).scan()
    errors = {e.path.removeprefix("bad/"): e.reason for e in scan.errors}
    wanted = {name: exp["error"] for name, exp in EXPECTED.items() if "error" in exp} | RUNTIME
    assert set(errors) == set(wanted)
    for name, fragment in wanted.items():
        assert fragment in errors[name], (name, errors[name])
    loaded = {rel.removeprefix("bad/") for rel in scan.memories}
    assert loaded == {name for name, exp in EXPECTED.items() if exp.get("ok")}
    assert SECRET not in repr(scan.errors) and all(SECRET not in m.text for m in scan.memories.values())


def test_requests_with_invisible_characters_are_detected_verbatim(corpus):
    scan = Store(corpus).scan()
    for name, exp in EXPECTED.items():
        if "request" in exp:
            assert detect_forget_request(scan.memories[f"bad/{name}"].body) == exp["request"]


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    """The real CLI entry point, in process (a subprocess per file is slow)."""
    from palinode_core.cli import main
    capsys.readouterr()
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_nothing_is_written_and_no_link_is_followed(corpus, capsys):
    before = snapshot(corpus)
    status = git(corpus, "status", "--porcelain")
    store = Store(corpus)
    problems = Session(store).integrity()
    assert {p.path for p in problems if p.kind == "dangling_superseded_by"} == {
        f"bad/{n}" for n, e in EXPECTED.items() if e.get("dangling")}
    for name, exp in EXPECTED.items():
        if exp.get("dangling"):
            tr = Session(store).trace(f"bad/{name}").to_dict()
            assert tr["chain_note"].startswith("dangling") and len(tr["chain_forward"]) == 1
    Session(store).residue("I know Zed Quill")
    Session(store).request_states()
    outputs = []
    for name in [*EXPECTED, *RUNTIME]:
        for mode in ([], ["--json"]):
            code, out, err = run_cli(capsys, *mode, "show", str(corpus), f"bad/{name}")
            assert code == (0 if EXPECTED.get(name, {}).get("ok") else 1), (name, err)
            assert err.count("\n") == (0 if code == 0 else 1)
            outputs.append(out + err)
    assert all(SECRET not in out for out in outputs)
    assert snapshot(corpus) == before
    assert git(corpus, "status", "--porcelain") == status


@pytest.mark.parametrize("name", [n for n, e in EXPECTED.items() if "escaped" in e or "literal" in e])
def test_cli_text_output_is_inert(corpus, name, capsys):
    exp = EXPECTED[name]
    code, out, _ = run_cli(capsys, "show", str(corpus), f"bad/{name}")
    assert code == 0
    assert not has_unsafe(out)
    assert exp.get("escaped", exp.get("literal")) in out
    code, out, _ = run_cli(capsys, "--json", "show", str(corpus), f"bad/{name}")
    assert not has_unsafe(out)  # the JSON escapes controls as \uXXXX ...
    assert json.loads(out)["path"] == f"bad/{name}"  # ... and still carries the exact data


async def test_the_app_shows_the_corpus_safely(corpus, tmp_path):
    from textual.widgets import DataTable, Static

    from palinode_tui.app import PalinodeApp
    from tui.conftest import settle, wait_until
    before = snapshot(corpus)
    app = PalinodeApp(corpus, vectors=False, watch=False, cache_dir=tmp_path / "cache")
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(app, pilot)
        screen = app.screen
        for _ in range(5):  # all -> active -> archived -> struck -> history -> unparseable
            await pilot.press("s")
        await settle(app, pilot)
        assert screen.status_filter == "unparseable"
        wanted = {n for n, e in EXPECTED.items() if "error" in e} | set(RUNTIME)
        assert {r.removeprefix("bad/") for r in screen.rows} == wanted
        await pilot.press("s")
        await settle(app, pilot)
        table = screen.query_one("#memories", DataTable)
        for name, exp in EXPECTED.items():
            if "escaped" not in exp and "literal" not in exp:
                continue
            table.move_cursor(row=screen.rows.index(f"bad/{name}"))
            await wait_until(app, pilot, lambda: screen.shown_path == f"bad/{name}")
            shown = str(screen.query_one("#detail-body", Static).render()) + \
                str(screen.query_one("#detail-fields", Static).render())
            assert not has_unsafe(shown), name
            assert exp.get("escaped", exp.get("literal")) in shown, name
        assert app.is_running
    assert snapshot(corpus) == before


def test_an_integer_too_long_for_python_is_one_unreadable_memory(tmp_path):
    from helpers import make_git_store, palinode_file

    from palinode_core.storage.store import Store

    root = make_git_store(tmp_path / "s", {"people/ok.md": palinode_file({"id": "ok"}, "Fine.")})
    (root / "people/huge.md").write_text("---\nid: " + "7" * 5000 + "\n---\n\nBody.\n")
    scan = Store(root, use_scan_cache=False).scan()
    assert set(scan.memories) == {"people/ok.md"}
    [error] = scan.errors
    assert error.path == "people/huge.md" and error.reason.startswith("invalid YAML frontmatter: ")
    assert "\n" not in error.reason
