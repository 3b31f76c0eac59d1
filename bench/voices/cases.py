"""The six literal cases of issue 39's "Measured" section, run through the CLI as a user
would, each on a fresh store (cold: no `index`) and again after `index` (warm). Prints
pass or fail per case and state; exits 1 when any fails.

    python -m bench.voices.cases [--only swim,violin,leeds,berlin,vinyl,stems]

1. swim    six unrelated notes "Twice this month the nightly build failed on a flaky test."
           on the demo store, request "I swim twice a week": none of the six is proposed.
2. violin  "Book the van for March. Pack the violin case separately." for "I play the
           violin": after apply --yes the memory is not archived and the van stays live.
3. leeds   "I live in Leeds and work at Harwick. Weekends are for the allotment." for
           "I live in Leeds": after apply --yes the employer and the weekends stay live.
4. berlin  the demo store's "I live in Berlin and work at Stripe." (people/me-profile.md) for
           its request "I live in Berlin": after apply --yes the employer stays live.
5. vinyl   "They collect vinyl records from the 1970s ..." for "I collect vinyl records":
           the plan proposes it.
6. stems   "I visited Jürgen Müller in Zürich." for "I visit Jürgen Müller in Zürich": no
           shared word in the plan is a fragment of a word (j, rgen, m, ller, z, rich), and
           the notes holding those fragments as words are neither proposed nor reported as
           mentions by `leaks --lexical` (the unit index's stems).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from bench.heldout.run import _STRUCK, norm, read

ENV = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b.invalid", "GIT_COMMITTER_NAME": "b"}
ENV |= {"GIT_COMMITTER_EMAIL": "b@b.invalid"}


def audit(root: Path, *args: str, json_out: bool = True) -> Any:
    cmd = [sys.executable, "-m", "palinode_core", *(["--json"] if json_out else []), args[0], str(root), *args[1:]]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if out.returncode != 0 and not (args[0] == "apply" and "nothing to apply" in out.stderr):
        raise SystemExit(f"palinode-audit {' '.join(args)} failed: {out.stderr.strip()}")
    if out.returncode != 0:  # apply --yes with nothing pre-approved: it says so and changes nothing
        return {}
    return json.loads(out.stdout) if json_out else out.stdout


def demo(root: Path) -> None:
    audit(root, "demo-store", json_out=False)


def add(root: Path, files: dict[str, str]) -> None:
    """Write memories (store-relative path -> body) and commit them."""
    for i, (rel, body) in enumerate(files.items()):
        cat = rel.split("/")[0]
        meta = {"id": f"{cat}-{Path(rel).stem}", "category": cat, "type": "Insight"}
        meta["created_at"] = f"2031-03-{i % 28 + 1:02d}T09:00:00+00:00"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n\n{body}\n")
    env = {**os.environ, **ENV}
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
    subprocess.run(["git", "-C", str(root), "commit", "-q", "-m", "case"], check=True, env=env)


def request(pref: str) -> str:
    return f"Please forget that {pref}."


def proposed(plan: dict[str, Any], path: str, text: str | None = None) -> bool:
    """The plan proposes acting on the memory (text None) or on a unit holding text."""
    for c in plan["candidates"]:
        if c["path"] != path or c["route"] not in ("archive", "strike"):
            continue
        if c["route"] == "archive" or text is None:
            return True
        if any(e.get("carries") and norm(text) in norm(e["text"]) for e in c.get("evidence", [])):
            return True
    return False


def live(root: Path, rel: str, text: str) -> bool:
    meta, body = read(root, rel)
    return str(meta.get("status", "")).lower() != "archived" and norm(text) in norm(_STRUCK.sub(" ", body))


def swim(root: Path, warm: bool) -> tuple[bool, str]:
    demo(root)
    notes = {f"projects/ci-note-{i}.md": "Twice this month the nightly build failed on a flaky test." for i in range(6)}
    add(root, notes | {"insights/forget-swim.md": request("I swim twice a week")})
    if warm:
        audit(root, "index")
    plan = audit(root, "plan", "insights/forget-swim.md")
    hit = [p for p in notes if proposed(plan, p)]
    return not hit, f"{len(hit)} of 6 build notes proposed"


def _kept(root: Path, rel: str, req: str, pref: str, body: str, keep: list[str], warm: bool) -> tuple[bool, str]:
    add(root, {rel: body, req: request(pref)})
    if warm:
        audit(root, "index")
    audit(root, "apply", req, "--yes")
    lost = [k for k in keep if not live(root, rel, k)]
    meta, _ = read(root, rel)
    state = "archived" if str(meta.get("status", "")).lower() == "archived" else "active"
    return not lost, f"memory {state}; lost: {lost}" if lost else f"memory {state}; kept {len(keep)} other fact(s)"


def violin(root: Path, warm: bool) -> tuple[bool, str]:
    demo(root)
    body = "Book the van for March. Pack the violin case separately."
    return _kept(
        root,
        "projects/moving.md",
        "insights/forget-violin.md",
        "I play the violin",
        body,
        ["Book the van for March."],
        warm,
    )


def leeds(root: Path, warm: bool) -> tuple[bool, str]:
    demo(root)
    body = "I live in Leeds and work at Harwick. Weekends are for the allotment."
    keep = ["work at Harwick", "Weekends are for the allotment."]
    return _kept(root, "insights/home.md", "insights/forget-leeds.md", "I live in Leeds", body, keep, warm)


def berlin(root: Path, warm: bool) -> tuple[bool, str]:
    demo(root)
    if warm:
        audit(root, "index")
    audit(root, "apply", "insights/forget-berlin.md", "--yes")
    ok = live(root, "people/me-profile.md", "work at Stripe")
    return ok, "employer kept" if ok else "'work at Stripe' struck or archived"


def vinyl(root: Path, warm: bool) -> tuple[bool, str]:
    demo(root)
    body = "They collect vinyl records from the 1970s and keep them in crates by the turntable."
    add(root, {"insights/records.md": body, "insights/forget-vinyl.md": request("I collect vinyl records")})
    if warm:
        audit(root, "index")
    plan = audit(root, "plan", "insights/forget-vinyl.md")
    ok = proposed(plan, "insights/records.md", body)
    return ok, "proposed" if ok else "not proposed"


FRAGMENTS = {"j", "rgen", "m", "ller", "z", "rich"}


def stems(root: Path, warm: bool) -> tuple[bool, str]:
    demo(root)
    bait = {
        "projects/ferry.md": "The ller ferry leaves at nine.",
        "projects/tea.md": "Rich tea biscuits are on the shopping list.",
        "projects/rgen.md": "The rgen build target is deprecated.",
    }
    add(
        root,
        bait
        | {
            "insights/trip.md": "I visited Jürgen Müller in Zürich last spring.",
            "insights/forget-zurich.md": request("I visit Jürgen Müller in Zürich"),
        },
    )
    if warm:
        audit(root, "index")
    plan = audit(root, "plan", "insights/forget-zurich.md")
    words = set(_shared_words(plan))
    leaks = audit(root, "leaks", "insights/forget-zurich.md", "--lexical")
    leaked = sorted({x["path"] for c in leaks.get("checks", []) for x in c.get("mentions", []) if x["path"] in bait})
    frags = sorted(w for w in words if w.lower() in FRAGMENTS)
    hit = [p for p in bait if proposed(plan, p)]
    ok = not frags and not hit and not leaked
    why = f"fragments in the plan {frags}; bait proposed {hit}; bait reported by leaks {leaked}"
    return ok, why if not ok else "no fragment; no bait proposed or reported"


def _shared_words(obj: Any) -> list[str]:
    """Every word listed under a key naming shared or matched words, anywhere in the JSON."""
    out: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if re.search(r"shared|words|stems|terms", k) and isinstance(v, list):
                out += [w for w in v if isinstance(w, str)]
            else:
                out += _shared_words(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _shared_words(v)
    return out


CASES = {"swim": swim, "violin": violin, "leeds": leeds, "berlin": berlin, "vinyl": vinyl, "stems": stems}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(CASES))
    args = ap.parse_args(argv)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        for name in args.only.split(","):
            for warm in (False, True):
                root = Path(tmp) / f"{name}-{'warm' if warm else 'cold'}"
                ok, why = CASES[name](root, warm)
                failed += not ok
                print(f"{'pass' if ok else 'FAIL'}  {name:<7} {'warm' if warm else 'cold'}  {why}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
