"""Issue 44's implied-request bench: every item of a set (dev.yaml or test.yaml) is
written as a real store (the memory, and the same day's other memories), the
store's possible requests are listed exactly as `palinode-audit requests
--possible` lists them, and the list is scored against the labels:

- a candidate is a true positive when it is on the item's memory and its
  sentence is the labelled one; any other candidate is a false positive;
- its referent is right when it points where the label says (object, previous
  sentence, the same day's note at that path, or a blanket's scope) and names
  the same thing: every content word of the label is in it, and it adds no more
  than max(3, that many) others (a whole memory is not a referent).

    python -m bench.implied.run dev|test [--details] [--vectors]

--vectors first indexes each store with the embedding model (what the meaning
tier reads); without it the stores have no cached vectors, as a store nobody
indexed. Nothing here is part of the test suite."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_PATH = "inbox/note.md"
DEFAULT_DATE = "2031-06-03"

_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")
_STOP = set(
    """a an the and or of in on at to for with by from about as into my me i i'm i'd i've their them they they're
    his her he she him it its this that these those is are was were be been am do does did don't not no any more
    your you you're we our us user user's please so""".split()
)


_LABEL = re.compile(r"^\s*[\w' ]{1,30}:\s")


def content(text: str) -> set[str]:
    """Content words, a leading label ("Session notes:", "Assistant:") left out."""
    return {w.lower().replace("’", "'") for w in _WORD.findall(_LABEL.sub("", text))} - _STOP


def norm(sentence: str) -> str:
    return " ".join(sentence.replace("’", "'").split()).strip().lower()


@dataclass
class Outcome:
    item: dict
    found: list  # the candidates listed on the item's store
    tp: object | None  # the candidate that matched the label, if any
    referent_ok: bool | None


def referent_ok(label: dict, cand: object) -> bool:
    ref = cand.referent  # type: ignore[attr-defined]
    if ref.where != label["where"]:
        return False
    if label["where"] == "note" and ref.path != label.get("path"):
        return False
    gold, got = content(label["text"]), content(ref.text)
    if not gold:
        return True
    return gold <= got and len(got - gold) <= max(3, len(gold))


def build(root: Path, item: dict) -> None:
    """The item as a store: each memory with Palinode's frontmatter, committed."""
    date = str(item.get("date", DEFAULT_DATE))
    files = [*(item.get("notes") or ()), {"path": item.get("path", DEFAULT_PATH), "text": item["text"]}]
    for hour, spec in enumerate(files, start=8):
        rel = spec["path"]
        category = rel.split("/")[0]
        stem = rel.rsplit("/", 1)[-1][:-3]
        meta = {
            "category": category,
            "created_at": f"{date}T{hour:02d}:00:00+00:00",
            "id": f"{category}-{stem}",
            "type": "Insight",
        }
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        front = yaml.safe_dump(meta, default_flow_style=False, allow_unicode=True)
        path.write_text(f"---\n{front}---\n\n{spec['text'].strip()}\n", encoding="utf-8")
    git = ["git", "-C", str(root), "-c", "user.name=Bench", "-c", "user.email=bench@invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "--no-verify", "-m", "palinode auto-save: bench"], check=True)


def run_item(item: dict, vectors: bool) -> Outcome:
    from palinode_core.session import Session

    with tempfile.TemporaryDirectory(prefix="implied-bench-") as tmp:
        root = Path(tmp) / "store"
        root.mkdir()
        build(root, item)
        embedder = None
        if vectors:
            from palinode_core.search.embed import Embedder

            embedder = _EMBEDDER.setdefault("e", Embedder())
        session = Session.open(root, vectors=vectors, embedder=embedder, cache_dir=root.parent / "cache")
        try:
            if vectors:
                session.update_index(vectors=True)
            found = session.possible_requests()
        finally:
            session.close()
    path = item.get("path", DEFAULT_PATH)
    mine = [c for c in found if c.path == path and norm(c.sentence) == norm(item["sentence"])]
    tp = mine[0] if item["candidate"] and mine else None
    ok = referent_ok(item["referent"], tp) if tp is not None else None
    return Outcome(item, found, tp, ok)


_EMBEDDER: dict = {}


def score(outcomes: list[Outcome]) -> dict:
    tp = sum(1 for o in outcomes if o.tp is not None)
    fp = sum(len(o.found) - (1 if o.tp is not None else 0) for o in outcomes)
    pos = sum(1 for o in outcomes if o.item["candidate"])
    ref = sum(1 for o in outcomes if o.referent_ok)
    return {
        "items": len(outcomes),
        "candidates": pos,
        "tp": tp,
        "fp": fp,
        "fn": pos - tp,
        "precision": tp / (tp + fp) if tp + fp else 1.0,
        "recall": tp / pos if pos else 1.0,
        "referent": ref / tp if tp else 0.0,
    }


def table(outcomes: list[Outcome], name: str) -> str:
    lines = [
        f"### {name}",
        "",
        "| part | items | candidates | found right | false alarms | missed | P | R | referent right |",
        "|---|---|---|---|---|---|---|---|---|",
    ]

    def row(label: str, part: list[Outcome]) -> None:
        s = score(part)
        lines.append(
            f"| {label} | {s['items']} | {s['candidates']} | {s['tp']} | {s['fp']} | {s['fn']} | "
            f"{s['precision']:.3f} | {s['recall']:.3f} | {s['referent']:.3f} |"
        )

    row("all", outcomes)
    kinds = sorted({o.item["kind"] for o in outcomes if o.item["candidate"]})
    for kind in kinds:
        row(f"candidates: {kind}", [o for o in outcomes if o.item["candidate"] and o.item["kind"] == kind])
    wheres = sorted({o.item["referent"]["where"] for o in outcomes if o.item["candidate"]})
    for where in wheres:
        row(f"referent: {where}", [o for o in outcomes if o.item["candidate"] and o.item["referent"]["where"] == where])
    alarms = Counter(o.item["kind"] for o in outcomes if not o.item["candidate"] and o.found)
    near = Counter(o.item["kind"] for o in outcomes if not o.item["candidate"])
    lines += ["", "Near misses that raised a candidate, by kind: " + (
        ", ".join(f"{k} {alarms.get(k, 0)}/{n}" for k, n in sorted(near.items())) or "none"
    )]
    return "\n".join(lines)


def details(outcomes: list[Outcome]) -> str:
    out = []
    for o in outcomes:
        item = o.item
        if item["candidate"] and o.tp is None:
            out.append(f"- MISS {item['id']} ({item['kind']}): {item['sentence']!r}")
        for c in o.found:
            if c is not o.tp:
                out.append(f"- FALSE {item['id']} ({item['kind']}): {c.sentence!r} [{c.kind}, {c.path}]")
        if o.tp is not None and not o.referent_ok:
            r = o.tp.referent
            out.append(
                f"- REFERENT {item['id']}: got {r.where} {r.path or ''} {r.text!r}; "
                f"want {item['referent']['where']} {item['referent'].get('path', '')} {item['referent']['text']!r}"
            )
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("part", choices=("dev", "test"))
    parser.add_argument("--details", action="store_true")
    parser.add_argument("--vectors", action="store_true")
    args = parser.parse_args()
    items = yaml.safe_load((HERE / f"{args.part}.yaml").read_text(encoding="utf-8"))["items"]
    outcomes = [run_item(item, args.vectors) for item in items]
    print(table(outcomes, f"{args.part} ({'with cached sentence vectors' if args.vectors else 'no vectors'})"))
    if args.details:
        print()
        print(details(outcomes))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
