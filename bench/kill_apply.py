"""kill -9 at random moments of a 3-target forget apply and of its withdraw
(real subprocesses, a random delay), then ``integrity`` + ``recover``, and count
the runs that end with a staged leftover, a temp file, a lost ledger record,
or a request state that disagrees with the files. Every count must be 0.

    PYTHONPATH=core:. python bench/kill_apply.py [--runs 100] [--seed 11]

Only our Python process is killed; a git command it started runs to its end
on its own (as after a real kill -9 of the app), and the run waits for it.
Not part of ``make test`` (minutes of wall time)."""
from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REQUEST = "insights/forget-ann.md"
TARGETS = ("people/ann.md", "notes/trip.md", "insights/pref-ann.md")
ENV = {"GIT_AUTHOR_NAME": "Bench", "GIT_AUTHOR_EMAIL": "bench@example.test",
       "GIT_COMMITTER_NAME": "Bench", "GIT_COMMITTER_EMAIL": "bench@example.test"}


def memory(meta: dict, body: str) -> str:
    return f"---\n{yaml.safe_dump(meta, default_flow_style=False)}---\n\n{body}\n"


FILES = {
    "people/ann.md": memory({"id": "people-ann"}, "Ann Lee likes tea. She runs on Sundays."),
    "notes/trip.md": memory({"id": "notes-trip"}, "Went hiking with Ann Lee. The weather held."),
    "insights/pref-ann.md": memory({"id": "insights-pref-ann"}, "I know Ann Lee well."),
    "people/bob.md": memory({"id": "people-bob"}, "Bob."),
    REQUEST: memory({"id": "insights-forget-ann"}, "Please forget that I know Ann Lee."),
}

WORKER = """
import sys
from palinode_core.forget import review
from palinode_core.forget.requests import request_at
from palinode_core.forget.resolve import Candidate, ForgetPlan, Resolution
from palinode_core.ops import lifecycle
from palinode_core.session import Session
from palinode_core.storage.store import Store
from palinode_core.undo import withdraw

def three_targets(store, request_path):
    request = request_at(store, request_path)
    trailers = {"Forget-Request": request.path, "Retraction-Id": request.rid}
    cands = []
    for rank, path in enumerate(["people/ann.md", "notes/trip.md"], 1):
        plan = lifecycle.plan_retract(store, path, request.pref, superseded_by=request.path, trailers=trailers)
        cands.append(Candidate(path, rank, "bm25", ("ann", "lee"), 0.1, "strike", "bench", plan))
    plan = lifecycle.plan_archive(store, "insights/pref-ann.md", superseded_by=request.path,
                                  reason=f'forget request: "{request.pref}"', trailers=trailers)
    cands.append(Candidate("insights/pref-ann.md", 3, "bm25", ("ann", "lee"), 0.9, "archive", "bench", plan))
    return ForgetPlan(request, store.config.forget, tuple(cands), Resolution(request, (), 10, "lexical", None, None, ()))

root, mode = sys.argv[1:3]
store = Store(root)
print("ready", flush=True)
if mode == "apply":
    review.apply_forget(store, three_targets(store, "insights/forget-ann.md"))
else:
    withdraw.apply_withdraw(store, Session(store).plan_withdraw("insights/forget-ann.md"))
"""


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env={**os.environ, **ENV}).stdout


def make_store(root: Path) -> None:
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Bench")
    git(root, "config", "user.email", "bench@example.test")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "initial")


def start(script: Path, root: Path, mode: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, str(script), str(root), mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready", proc.stderr
    return proc


def wait_group(pgid: int, limit: float = 10.0) -> None:
    """Until every process the worker started (a git commit) has ended on its own."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.01)


def request_check(root: Path) -> tuple[str, bool]:
    """(why the request's state disagrees with its files, '' when it agrees; a ledger record lost?)"""
    from palinode_core.forget import ledger
    from palinode_core.session import Session
    from palinode_core.storage.store import Store
    store = Store(root, use_scan_cache=False)
    state = {s.path: s for s in Session(store).request_states()}[REQUEST].state
    memories = store.scan().memories
    changed = [t for t in TARGETS if memories[t].archived or "i know ann lee" in memories[t].retracted_prefs]
    records = ledger.decisions_for(ledger.read_ledger(store), REQUEST)
    applies = [r for r in records if r["action"] == "apply"]
    withdraws = [r for r in records if r["action"] == "withdraw"]
    withdrawn = memories[REQUEST].archived
    lost = (bool(changed) and not applies) or (withdrawn and not withdraws)
    if state == "withdrawn":
        ok = not changed and bool(withdraws) and withdraws[-1]["complete"]
    elif state == "applied":
        ok = len(changed) == 3 and bool(applies) and applies[-1]["complete"] and len(applies[-1]["approved"]) == 3 \
            and not withdrawn
    elif state == "pending":
        ok = not changed and not applies
    else:
        ok = False
    return ("" if ok else f"{state}: {len(changed)} changed, {len(records)} record(s)"), lost


def one_run(script: Path, template: Path, work: Path, mode: str, span: float, rng: random.Random) -> dict:
    from palinode_core.errors import PalinodeError
    from palinode_core.inspect.integrity import integrity
    from palinode_core.ops import journal
    from palinode_core.storage.store import Store
    from palinode_core.undo import recover
    root = work / "store"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(template, root, symlinks=True)
    proc = start(script, root, mode)
    time.sleep(rng.uniform(0, span))
    finished = proc.poll() is not None
    if not finished:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_group(proc.pid)
    how = rng.choice(["complete", "rollback"])
    row = {"finished": finished, "how": how, "interrupted": 0, "recover_error": "", "staged": False,
           "worktree": False, "temp": False, "lost": False, "state": "", "integrity_after": False}
    store = Store(root, use_scan_cache=False)
    row["interrupted"] = len([p for p in integrity(store) if p.kind.startswith("interrupted_")])
    try:
        recover.recover(store, how)
    except PalinodeError as exc:
        row["recover_error"] = str(exc)
    row["staged"] = git(root, "diff", "--cached", "--name-only") != ""
    row["worktree"] = git(root, "status", "--porcelain") != ""
    row["temp"] = bool(list(root.rglob(".*.tmp")))
    row["state"], row["lost"] = request_check(root)
    store = Store(root, use_scan_cache=False)
    row["integrity_after"] = bool(integrity(store)) or bool(journal.pending(store))
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    base = Path(tempfile.mkdtemp(prefix="kill-apply-"))
    script = base / "worker.py"
    script.write_text(WORKER)
    fresh, applied = base / "fresh", base / "applied"
    fresh.mkdir()
    make_store(fresh)
    spans = {}
    for mode in ("apply", "withdraw"):
        times = []
        for attempt in range(3):  # the median of three whole runs, timed from the worker's "ready"
            run_root = base / f"calib-{mode}-{attempt}"
            shutil.copytree(fresh if mode == "apply" else applied, run_root, symlinks=True)
            proc = start(script, run_root, mode)
            began = time.monotonic()
            proc.wait()
            times.append(time.monotonic() - began)
            assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
            if mode == "apply" and attempt == 0:
                shutil.copytree(run_root, applied, symlinks=True)  # the withdraw runs start from here
        spans[mode] = sorted(times)[1]  # a kill lands anywhere in a typical run
    print(f"calibration: apply {spans['apply']:.2f} s, withdraw {spans['withdraw']:.2f} s (kill window)")
    header = ("mode", "runs", "killed mid-run", "journal seen", "recover errors", "staged leftover", "worktree leftover",
              "temp file", "lost ledger record", "state disagrees", "integrity after")
    rows = []
    for mode, template in (("apply", fresh), ("withdraw", applied)):
        results: list[dict] = []
        # until --runs runs were really killed mid-way (a run that finished first is counted, not kept out)
        while sum(not r["finished"] for r in results) < args.runs and len(results) < args.runs * 3:
            results.append(one_run(script, template, base / "work", mode, spans[mode], rng))
        bad = [r for r in results if r["recover_error"] or r["staged"] or r["worktree"] or r["temp"] or r["lost"]
               or r["state"] or r["integrity_after"]]
        for r in bad[:5]:
            print(f"  {mode}: {r}")
        rows.append((mode, len(results), sum(not r["finished"] for r in results),
                     sum(r["interrupted"] > 0 for r in results), sum(bool(r["recover_error"]) for r in results),
                     sum(r["staged"] for r in results), sum(r["worktree"] for r in results),
                     sum(r["temp"] for r in results), sum(r["lost"] for r in results),
                     sum(bool(r["state"]) for r in results), sum(r["integrity_after"] for r in results)))
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows, strict=True)]
    for line in (header, *rows):
        print("  ".join(str(x).rjust(w) for x, w in zip(line, widths, strict=True)))
    shutil.rmtree(base, ignore_errors=True)
    if any(sum(row[4:]) for row in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
