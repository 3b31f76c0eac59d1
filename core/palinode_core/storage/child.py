"""Long, CPU-bound work (a first scan or index of a huge store) run as a
``palinode-audit`` command in a low-priority child process, so it competes
with the caller's threads (an app's UI) for neither the GIL nor the CPU."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from typing import Literal, cast

from ..errors import Cancelled, PalinodeError

# Work moves to a child above this many files still to read or index.
ISOLATE_ABOVE = 2000
# What long work reports as it goes, (phase, done, total): reading the store (a scan), its
# lexical index, segmenting its sentences, loading the embedding model, embedding its chunks
# (vectors) and then its sentences; the cascade (search.cascade) embeds a sample, screens every
# sentence with the cheap vectors and embeds the candidates.
ProgressPhase = Literal[
    "reading", "lexical", "segmenting", "model", "vectors", "sentences", "sample", "screening", "candidates"
]
Progress = Callable[[ProgressPhase, int, int], None]


def run_audit(
    args: list[str], progress: Progress | None, cancel: threading.Event, preempt: threading.Event | None = None
) -> None:
    """Run ``palinode-audit --json <args> --progress --background`` read-only,
    relaying its progress lines; raise Cancelled when ``cancel`` (or ``preempt``:
    newer work goes first) is set (the child and everything it forked are killed)
    and PalinodeError if it fails (callers then do the work in-process: the child
    only ever saves time)."""
    # -P and a working directory of ours: `-m` would put the caller's directory (a store opened from inside
    # it, holding a palinode_core/ folder) first on the child's import path, and run that code
    command = [sys.executable, "-P", "-m", "palinode_core", "--json", *args, "--progress", "--background"]
    env = {**os.environ, "PALINODE_AUDIT_READ_ONLY": "1"}  # the child only reads the store
    with tempfile.TemporaryFile() as errors:
        # its own session, so its whole process group can be ended with it (see _end_group)
        try:
            child = subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=errors,
                stdin=subprocess.DEVNULL,
                env=env,
                cwd=os.path.dirname(os.path.abspath(__file__)),
                start_new_session=True,
            )
        except OSError as exc:
            raise PalinodeError(f"{args[0]} in the background could not start: {exc}") from None
        stdout = child.stdout
        assert stdout is not None  # stdout=PIPE
        try:
            while True:
                if cancel.is_set() or (preempt is not None and preempt.is_set()):
                    raise Cancelled()
                ready, _, _ = select.select([stdout], [], [], 0.2)
                if not ready:
                    continue
                line = stdout.readline()
                if not line:
                    break
                if progress and line.startswith(b'{"progress"'):  # then the (multi-line) result
                    event = json.loads(line)
                    # the child is this same code: its phases are ours
                    progress(cast(ProgressPhase, event["progress"]), event["done"], event["total"])
            code = child.wait()
        finally:
            _end_group(child)
            stdout.close()
        if code != 0:
            errors.seek(0)
            reason = errors.read().decode("utf-8", "replace").strip().splitlines()
            raise PalinodeError(f"{args[0]} in the background failed: {reason[-1] if reason else f'exit {code}'}")


def _end_group(child: subprocess.Popen) -> None:
    """Kill whatever is left of the child's process group: orphaned
    workers would keep the index's write lock (a flock they inherited) held."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(child.pid, signal.SIGKILL)
    child.wait()
