"""The thorough benchmark: build a labelled planted store per seed, copy it
once per resolver, plan and apply every request with defaults (what
``apply --yes`` does), then score from the files alone and print the table.

    python -m bench.thorough.run [--seeds 1,2,3] [--out bench/out/thorough.md]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

from palinode_core.search.embed import Embedder
from palinode_core.session import Session
from palinode_core.storage.paths import is_history
from palinode_core.text.markdown import struck_spans

from .planted import Manifest, build

RESOLVERS = ("palinode", "thorough")


def _norm(text: str) -> str:
    return " ".join(text.replace("- ", " ").split()).strip(" .").lower()


def _read(root: Path, rel: str) -> tuple[dict, str]:
    text = (root / rel).read_text(encoding="utf-8")
    _, fm, body = text.split("---\n", 2) if text.startswith("---\n") else ("", "", text)
    return yaml.safe_load(fm) or {}, body


def run_one(root: Path, m: Manifest, resolver: str, embedder: Embedder) -> dict:
    session = Session.open(root, embedder=embedder, resolver=resolver)
    session.update_index()
    t0 = time.perf_counter()
    plans = {}
    for req in m.requests:
        session.refresh()
        session.update_index()
        fplan = session.plan(req)
        plans[req] = fplan.to_dict()
        session.apply_forget(fplan)
    elapsed = time.perf_counter() - t0
    return score(root, m) | {"paraphrase_proposed": _para_proposed(m, plans),
                             "meaning_only_false": _meaning_only_false(m, plans), "seconds": round(elapsed, 1)}


def meaning_only(plan: dict) -> list[tuple[str, str]]:
    """(path, text) of the units a plan proposes on meaning alone: no shared
    word, no name, not a partial mention."""
    return [(c["path"], e["text"]) for c in plan["candidates"] if c["route"] in ("archive", "strike")
            for e in c.get("evidence", [])
            if e["carries"] and not (e["shared_words"] or e["name_use"] or e.get("partial"))]


def _meaning_only_false(m: Manifest, plans: dict[str, dict]) -> int:
    """Units proposed on meaning alone that are not that request's paraphrases:
    what the semantic arm costs a reviewer."""
    false = 0
    for req, plan in plans.items():
        key = req.removeprefix("insights/forget-").removesuffix(".md")
        own = [(p, _norm(t)) for p, t in m.para_sents if p == f"projects/journal-{key}.md"]
        for path, text in meaning_only(plan):
            false += not (path == f"insights/{key}-para.md" or any(q == path and t in _norm(text) for q, t in own))
    return false


def _para_proposed(m: Manifest, plans: dict[str, dict]) -> float:
    """Paraphrase files and sentences the plan of their own request proposes (approved or not)."""
    def req_of(path: str) -> str:  # insights/<k>-para.md, projects/journal-<k>.md
        stem = Path(path).stem
        return f"insights/forget-{stem.removesuffix('-para').removeprefix('journal-')}.md"

    def proposed(path: str, text: str | None) -> bool:
        for c in plans[req_of(path)]["candidates"]:
            if c["path"] == path and c["route"] in ("archive", "strike") and (
                    text is None or any(_norm(text) in _norm(e["text"]) and e["carries"]
                                        for e in c.get("evidence", []))):
                return True
        return False
    hits = sum(proposed(p, None) for p in m.para_files) + sum(proposed(p, t) for p, t in m.para_sents)
    return _ratio(hits, len(m.para_files) + len(m.para_sents))


def score(root: Path, m: Manifest) -> dict:
    files = {rel: p for p in root.rglob("*.md")
             if ".git" not in p.parts and not is_history(rel := str(p.relative_to(root)))}
    archived, struck = set(), {}
    for rel in files:
        meta, body = _read(root, rel)
        if str(meta.get("status", "")).lower() == "archived":
            archived.add(rel)
        struck[rel] = [_norm(s.text) for s in struck_spans(body)]
    expect_archive = m.archive_files | m.para_files
    arch_tp = len(archived & m.archive_files) + len(archived & m.para_files)
    positives = [(p, _norm(t)) for p, t in m.strike_pos]
    paras = [(p, _norm(t)) for p, t in m.para_sents]

    def hit(path: str, text: str) -> bool:  # a planted unit is struck if a strike covers (most of) it
        return any(text in s or (len(s) > 12 and s in text) for s in struck.get(path, []))
    all_struck = [(p, s) for p, ss in struck.items() for s in ss]
    good = 0
    for p, s in all_struck:
        if any(s in t or t in s for q, t in positives + paras if q == p):
            good += 1
    near_struck = sum(hit(p, _norm(t)) for p, t in m.near)
    collateral = sum(any(_norm(u) in s for s in struck.get(p, [])) for p, u in m.compound_unrel)
    touched = sum(1 for d in m.distractors if d in archived or struck.get(d))
    ledger = _ledger(root)
    recorded = 0
    for path, text, req in m.residue:
        rows = [r for e in ledger if e.get("action") == "residue" and e.get("request") == req
                for r in e.get("mentions", [])]
        if path in archived or any(r["path"] == path and _norm(text) in _norm(r["text"])
                                   and r["kind"] in ("unforgettable", "archived") for r in rows):
            recorded += 1
    kept = sum(1 for r in m.requests if r not in archived and not struck.get(r)
               and any(e.get("request") == r and e.get("action") == "apply" for e in ledger))
    return {
        "archive_precision": _ratio(arch_tp, len(archived)), "archive_recall": _ratio(len(archived & m.archive_files),
                                                                                   len(m.archive_files)),
        "strike_precision": _ratio(good, len(all_struck)),
        "strike_recall": _ratio(sum(hit(p, t) for p, t in positives), len(positives)),
        "distractors_touched": f"{touched}/{len(m.distractors)}", "near_miss_struck": f"{near_struck}/{len(m.near)}",
        "paraphrase_recall": _ratio(len(archived & m.para_files) + sum(hit(p, t) for p, t in paras),
                                    len(m.para_files) + len(paras)),
        "compound_collateral": f"{collateral}/{len(m.compound_unrel)}",
        "unforgettable_recorded": f"{recorded}/{len(m.residue)}", "requests_kept": f"{kept}/{len(m.requests)}",
        "archived": len(archived), "expected_archive": len(expect_archive), "struck": len(all_struck),
    }


def _ratio(a: int, b: int) -> float:
    return round(a / b, 3) if b else 1.0


def _ledger(root: Path) -> list[dict]:
    path = root / ".palinode-audit" / "ledger.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--out", default="bench/out/thorough.md")
    ap.add_argument("--resolvers", default=",".join(RESOLVERS))
    args = ap.parse_args(argv)
    embedder = Embedder()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in [int(s) for s in args.seeds.split(",")]:
            base = Path(tmp) / f"seed{seed}"
            m = build(base, seed)
            for resolver in args.resolvers.split(","):
                root = Path(tmp) / f"seed{seed}-{resolver}"
                shutil.copytree(base, root, symlinks=True)
                result = run_one(root, m, resolver, embedder)
                rows.append({"seed": seed, "resolver": resolver, **result})
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    table = _table(rows)
    print(table)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table + "\n", encoding="utf-8")
    return 0


def _table(rows: list[dict]) -> str:
    keys = [k for k in rows[0] if k not in ("seed", "resolver")]
    lines = ["| seed | resolver | " + " | ".join(k.replace("_", " ") for k in keys) + " |",
             "|" + "---|" * (len(keys) + 2)]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['resolver']} | " + " | ".join(str(r[k]) for k in keys) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
