"""External persona stores (issue 22): forget one fact of a real persona and
check that exactly it goes, whatever else the store holds. The text is not
ours: personas and conversations from Google's Synthetic-Persona-Chat test
split (CC-BY 4.0, https://github.com/google-research-datasets/Synthetic-Persona-Chat),
read at run time and never committed here.

    python -m bench.external.run [--csv PATH] [--stores 50] [--details]

Per row of the CSV, one store (a real git repo):

- ``insights/fact-K.md``: each of user 1's persona facts, one memory each;
- ``projects/chat.md``: user 1's own lines of the conversation (real text that
  mentions the facts in other words; strikes there are counted, not scored),
  plus one compound sentence "<the forgotten fact>, and <a kept fact>";
- ``people/sam.md``: user 2's persona, as what Sam said (quoted: a third party);
- ``people/colleague-J.md``: up to two facts of other personas in the CSV that
  share a word with the forgotten one, also quoted (someone else's fact);
- ``insights/forget.md``: "Please forget that <fact K>." for one fact (row i: fact i mod 5).

Each request is planned and applied with defaults (what ``apply --yes``
does). A store passes when the request is detected, the fact's memory is
archived, the compound's forgotten clause is struck with its kept clause
left, and no other fact, Sam's note or a colleague's note is touched.
"""

from __future__ import annotations

import argparse
import csv
import io
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.heldout.planted import _commit
from bench.heldout.run import Files, norm
from palinode_core.errors import PalinodeError
from palinode_core.search.embed import Embedder
from palinode_core.session import Session
from palinode_core.text.words import content_words

MIRROR = Path("/work/.mirror/google-research-datasets+Synthetic-Persona-Chat/repo")
CSV_IN_REPO = "data/Synthetic-Persona-Chat_test.csv"
_USER1 = re.compile(r"^User 1:\s*(.+)$", re.M)


def rows(path: str | None) -> list[tuple[list[str], list[str], list[str]]]:
    """(user 1's facts, user 2's facts, user 1's lines) per conversation."""
    if path:
        text = Path(path).read_text(encoding="utf-8")
    else:
        text = subprocess.run(["git", "--git-dir", str(MIRROR), "show", f"HEAD:{CSV_IN_REPO}"],
                              capture_output=True, text=True, check=True).stdout
    out = []
    for row in csv.reader(io.StringIO(text)):
        if len(row) < 3 or row[0].startswith("user 1 personas"):
            continue
        one = [f.strip() for f in row[0].splitlines() if f.strip()]
        two = [f.strip() for f in row[1].splitlines() if f.strip()]
        if len(one) >= 4 and two:
            out.append((one, two, [m.strip() for m in _USER1.findall(row[2])]))
    return out


def clause(fact: str) -> str:
    """A fact as the words after "forget that": no final stop, lower-case unless "I"."""
    fact = fact.strip().rstrip(".!").strip()
    if fact.split(" ", 1)[0] in ("I", "I'm", "I've", "I'd", "I'll"):
        return fact
    return fact[:1].lower() + fact[1:]


def build(root: Path, i: int, table: list) -> dict:
    one, two, lines = table[i]
    k = i % len(one)
    forgotten, kept = one[k], one[(k + 1) % len(one)]
    files: dict[str, tuple[dict, str]] = {}
    hour = [0]

    def put(rel: str, body: str, **meta: object) -> None:
        hour[0] += 1
        cat = rel.split("/")[0]
        files[rel] = ({"id": f"{cat}-{Path(rel).stem}", "category": cat,
                       "created_at": f"2031-01-{1 + hour[0] // 24:02d}T{hour[0] % 24:02d}:00:00+00:00", **meta}, body)

    for j, fact in enumerate(one):
        put(f"insights/fact-{j}.md", fact, type="Insight")
    compound = f"{clause(forgotten)[:1].upper()}{clause(forgotten)[1:]}, and {clause(kept)}."
    put("projects/chat.md", "Chat notes.\n\n" + "\n".join([*lines[:6], compound, *lines[6:]]), type="ProjectSnapshot")
    put("people/sam.md", "# Sam\n\n" + " ".join(f'Sam said: "{f}"' for f in two), type="PersonMemory")
    words = content_words(forgotten)
    others = [f for j, (o, _t, _l) in enumerate(table) if j != i for f in o if content_words(f) & words]
    colleagues = []
    for j, fact in enumerate(others[:2]):
        put(f"people/colleague-{j}.md", f'# Colleague {j}\n\nThey said: "{fact}"', type="PersonMemory")
        colleagues.append(f"people/colleague-{j}.md")
    hour[0] += 24
    put("insights/forget.md", f"Please forget that {clause(forgotten)}.", type="Insight")
    _commit(root, files)
    return {"fact": f"insights/fact-{k}.md", "kept": [f"insights/fact-{j}.md" for j in range(len(one)) if j != k],
            "forgotten": forgotten, "compound": (clause(forgotten), clause(kept)),
            "distractors": ["people/sam.md", *colleagues]}


def run_store(root: Path, case: dict, embedder: Embedder) -> dict:
    session = Session.open(root, embedder=embedder)
    session.update_index()
    try:
        fplan = session.plan("insights/forget.md")
    except Exception as exc:  # not detected as a request: the store fails
        return {"detected": False, "error": str(exc).splitlines()[0]}
    try:
        session.apply_forget(fplan)
    except PalinodeError:  # nothing pre-approved: nothing changes (scored as such)
        pass
    f = Files(root)
    forgot, kept = case["compound"]
    out = {
        "detected": True,
        "archived": case["fact"] in f.archived,
        # the forgotten clause struck, every word of the kept one still live
        "compound": f.hit("projects/chat.md", forgot) and norm(kept) in f.live["projects/chat.md"],
        "kept_changed": [p for p in case["kept"] if f.touched(p)],
        "distractors_changed": [p for p in case["distractors"] if f.touched(p)],
        "chat_struck": [s for s in f.struck["projects/chat.md"] if norm(forgot) not in s],
        "distractors": len(case["distractors"]),
    }
    out["pass"] = out["archived"] and out["compound"] and not out["kept_changed"] and not out["distractors_changed"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--csv", help=f"the CSV (default: {CSV_IN_REPO} of the fetched repository)")
    ap.add_argument("--stores", type=int, default=60)
    ap.add_argument("--details", action="store_true")
    args = ap.parse_args(argv)
    table = rows(args.csv)
    embedder = Embedder()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(min(args.stores, len(table))):
            root = Path(tmp) / f"store-{i:03d}"
            case = build(root, i, table)
            r = run_store(root, case, embedder)
            results.append(r)
            if args.details and not r.get("pass"):
                print(f"store {i}: {case['forgotten']!r}: {r}", file=sys.stderr)
            elif args.details and r.get("chat_struck"):
                print(f"store {i}: {case['forgotten']!r}: also struck in the chat: {r['chat_struck']}", file=sys.stderr)
    n = len(results)
    detected = [r for r in results if r["detected"]]
    summary = {
        "stores": n,
        "pass": sum(r.get("pass", False) for r in results),
        "detected": len(detected),
        "fact archived": sum(r["archived"] for r in detected),
        "compound clause only": sum(r["compound"] for r in detected),
        "kept facts changed": sum(len(r["kept_changed"]) for r in detected),
        "distractors changed": f"{sum(len(r['distractors_changed']) for r in detected)}/"
                               f"{sum(r['distractors'] for r in detected)}",
        "other chat sentences struck": sum(len(r["chat_struck"]) for r in detected),
    }
    print(" | ".join(f"{k}: {v}" for k, v in summary.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
