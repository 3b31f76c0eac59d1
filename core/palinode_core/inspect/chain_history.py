"""Integrity over the whole history: every strike marker ever written, with
whether its commit also wrote the ``retracted_prefs`` record and the history
line and was a retract commit; and every commit that broke (or repaired) a
memory's marker/record/history chain, named and dated.

One ``git log --raw`` pass (first parent, oldest first) keeps a running
path -> blob map; each memory a commit touched is checked with the same rules
as ``integrity``, reading blobs through one ``git cat-file --batch``."""

from __future__ import annotations

from typing import Any

from ..errors import UnreadableMemory
from ..ops.subjects import actor_of, parse_subject
from ..storage.commits import parse_trailers
from ..storage.paths import HISTORY_SUFFIX, history_rel_for, is_history
from ..storage.snapshot import GitObjects, is_memory_path, memory_from_bytes
from ..storage.store import Store
from ..text.history import parse_entries
from ..text.markdown import MARKER_RE
from ..text.words import retraction_id
from .integrity import chain_problems

_ZERO = "0" * 40
# (problems as (kind, detail), marker rids, record rids, history-line rids) of one memory at one point
Checked = tuple[frozenset[tuple[str, str]], frozenset[str], frozenset[str], frozenset[str]]
_HEADER = "%x1e%H%x1f%P%x1f%an%x1f%aI%x1f%s%x1f%(trailers:only,unfold)%x1f"


def _commits(store: Store, rev: str) -> list[tuple[dict[str, Any], list[tuple[str, str]]]]:
    """(commit, [(path, new blob or zeros)]) oldest first along the first parent."""
    out = store.git.run_bytes(
        "log",
        "--root",
        "--reverse",
        "--first-parent",
        "-m",
        "--raw",
        "--no-abbrev",
        "--no-renames",
        "-z",
        f"--format={_HEADER}",
        rev,
        "--",
        read=True,
    )
    commits = []
    for record in out.split(b"\x1e")[1:]:
        fields = record.split(b"\x1f", 6)
        sha, parents, author, date, subject, trailers = (f.decode("utf-8", "replace") for f in fields[:6])
        changes = []
        tokens = fields[6].split(b"\0") if len(fields) > 6 else []
        i = 0
        while i < len(tokens):
            token = tokens[i].lstrip(b"\n")
            if token.startswith(b":") and i + 1 < len(tokens):
                parts = token.split()
                changes.append((tokens[i + 1].decode("utf-8", "replace"), parts[3].decode()))
                i += 2
            else:
                i += 1
        commits.append(
            (
                {
                    "commit": sha,
                    "parents": parents.split(),
                    "author": author,
                    "date": date,
                    "subject": subject,
                    "trailers": parse_trailers(trailers),
                },
                changes,
            )
        )
    return commits


def _owner_of_history(sibling: str, state: dict[str, str]) -> list[str]:
    base = sibling[: -len(HISTORY_SUFFIX)]
    return [rel for rel in (base + ".md", base + "-status.md") if rel in state and history_rel_for(rel) == sibling]


def chain_history(store: Store, rev: str = "HEAD") -> dict[str, Any]:
    objects = GitObjects(store.git)
    prefix = store.config.commit_prefix
    state: dict[str, str] = {}  # path -> blob sha, markdown only
    checked: dict[tuple[str, str, str | None], Checked] = {}
    current: dict[str, Checked] = {}
    markers: list[dict[str, Any]] = []
    breaks: list[dict[str, Any]] = []
    repairs: list[dict[str, Any]] = []
    commits = _commits(store, rev)

    def check(rel: str) -> Checked:
        """(problems, marker rids, record rids, logged rids) of ``rel`` in the current state."""
        blob, sibling = state.get(rel), state.get(history_rel_for(rel))
        key = (rel, blob or "", sibling)
        if key not in checked:
            empty: frozenset[str] = frozenset()
            result: Checked = (frozenset(), empty, empty, empty)
            data = objects.read(blob) if blob else None
            if data is not None and (b"RETRACTED" in data or b"retracted_prefs" in data):
                try:
                    memory = memory_from_bytes(rel, data)
                except UnreadableMemory:
                    memory = None
                if memory is not None:
                    history = (objects.read(sibling) or b"").decode("utf-8", "replace") if sibling else ""
                    logged = frozenset(e.rid for e in parse_entries(history) if e.rid)
                    problems = frozenset(
                        (p.kind, p.detail)
                        for p in chain_problems(rel, memory, lambda: history)
                        if p.kind != "multiline_strike"
                    )
                    result = (
                        problems,
                        frozenset(m.group(2) for m in MARKER_RE.finditer(memory.body)),
                        frozenset(retraction_id(p) for p in memory.retracted_prefs),
                        logged,
                    )
            checked[key] = result
        return checked[key]

    walked = [0]

    def visit(info: dict[str, Any], changes: list[tuple[str, str]]) -> None:
        walked[0] += 1
        touched: set[str] = set()
        for path, blob in changes:
            if not path.endswith(".md"):
                continue
            if blob == _ZERO:
                state.pop(path, None)
            else:
                state[path] = blob
            if is_history(path):
                touched.update(_owner_of_history(path, state))
                base = path[: -len(HISTORY_SUFFIX)]
                touched.update(r for r in (base + ".md", base + "-status.md") if r in current)
            if is_memory_path(path) and not is_history(path):
                touched.add(path)
        parsed = parse_subject(info["subject"], prefix)
        who = {
            **info,
            "actor": actor_of(info["subject"], info["trailers"], prefix),
            "op": parsed.op if parsed else None,
        }
        who.pop("trailers")
        who.pop("parents")
        strikes = parsed is not None and parsed.kind.route == "strike"  # a commit that struck (a retract)
        for rel in sorted(touched):
            before = current.get(rel, (frozenset(), frozenset(), frozenset(), frozenset()))
            after = check(rel) if rel in state else (frozenset(), frozenset(), frozenset(), frozenset())
            current[rel] = after
            for rid in sorted(after[1] - before[1]):
                markers.append(
                    {
                        **who,
                        "path": rel,
                        "rid": rid,
                        "record": rid in after[2],
                        "history_line": rid in after[3],
                        "retract_commit": strikes,
                    }
                )
            for kind, detail in sorted(after[0] - before[0]):
                breaks.append(
                    {**who, "path": rel, "kind": kind, "detail": detail, "hand_edit": who["actor"] == "other"}
                )
            for kind, detail in sorted(before[0] - after[0]):
                repairs.append({**who, "path": rel, "kind": kind, "detail": detail})

    for info, changes in commits:
        if len(info["parents"]) > 1:
            # what a merge brings in was written by the merged side's own commits: walk them
            # first, so a strike merged in is its retract commit's; the merge keeps only what
            # it changed itself (a conflict resolved by hand)
            for side_info, side_changes in _commits(store, f"{info['parents'][0]}..{info['parents'][1]}"):
                visit(side_info, side_changes)
        visit(info, changes)
    objects.close()
    still = {
        (b["path"], b["kind"], b["detail"])
        for b in breaks
        if (b["kind"], b["detail"]) in current.get(b["path"], (frozenset(),))[0]
    }
    open_breaks = [b for b in breaks if (b["path"], b["kind"], b["detail"]) in still]
    unsound = [m for m in markers if not (m["record"] and m["history_line"] and m["retract_commit"])]
    return {
        "commits_walked": walked[0],
        "markers": markers,
        "unsound_markers": len(unsound),
        "breaks": breaks,
        "repairs": repairs,
        "open": open_breaks,
        "ok": not open_breaks and not unsound,
    }
