"""How far meaning alone can reach the held-out paraphrases with the model we
ship (all-MiniLM-L6-v2): for every unit of the held-out store sharing no word
with a request's preference, its nearness the way the resolver measures it
(the larger of its cosine to the preference and to the nearest store sentence
carrying every word of it), and its margin over the store's other
preferences. For a range of cuts it counts the paraphrases reached and the
other units that would be proposed with them. Not a tuning tool: it says
whether any cut of this kind could reach issue 22's 0.80.

    python -m bench.heldout.ceiling [--seed 1] [--bench heldout|dev2|thorough]

``--bench thorough`` or ``dev2`` measures a dev set, where cuts may be set.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np

from palinode_core.forget.gather import ANCHOR_SIM, _units_of
from palinode_core.forget.judgment import Judge, user_names
from palinode_core.forget.whose import memory_about
from palinode_core.search.embed import Embedder
from palinode_core.search.unit_index import SIM_FLOOR
from palinode_core.session import Session
from palinode_core.text.units import clauses

from .planted import SETS, build
from .run import norm

CUTS = (0.30, 0.33, 0.35, 0.36, 0.38, 0.40, 0.42)
MARGINS = (0.0, 0.08)


def _planted(bench: str, root: Path, seed: int) -> tuple[object, dict[str, str], list[tuple[str, str, str]]]:
    """The manifest, paraphrase files (path -> request) and sentences (path, text, request)."""
    if bench in SETS:
        m = build(root, seed, templates_set=bench)
        return m, dict(m.para_files), list(m.para_sents)
    from ..thorough.planted import build as build_dev

    dev = build_dev(root, seed)

    def request_of(path: str) -> str:  # insights/<key>-para.md, projects/journal-<key>.md
        key = Path(path).stem.removesuffix("-para").removeprefix("journal-")
        return f"insights/forget-{key}.md"

    return dev, {p: request_of(p) for p in dev.para_files}, [(p, t, request_of(p)) for p, t in dev.para_sents]


def measure(seed: int, bench: str = "heldout") -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "store"
        m, para_files, planted_sents = _planted(bench, root, seed)
        embedder = Embedder()
        session = Session.open(root, embedder=embedder)
        session.rescan()
        names = user_names(session.memories)
        units = [
            (rel, u, memory_about(mem.meta, mem.title, mem.category, names))
            for rel, mem in sorted(session.memories.items())
            if not mem.forget_pref
            for u in _units_of(mem)
        ]
        session.close()
    texts = [u.text for _, u, _ in units]
    vecs = np.asarray(embedder.encode(texts))
    prefs = [m.pref_of[r] for r in m.requests]
    sims = vecs @ np.asarray(embedder.encode(prefs)).T
    para_sents = [(p, norm(t), r) for p, t, r in planted_sents]
    rows = []  # (near, margin, the paraphrase it is, or None)
    by_words: set[object] = set()  # paraphrases inside a unit sharing a word: reached by the words
    for j, req in enumerate(m.requests):
        judge = Judge(prefs[j])
        read = [judge.words(t) for t in texts]
        lex = [x.lexical for x in read]
        anchors = [
            i for i, x in enumerate(lex) if x >= 1.0 and sims[i, j] >= ANCHOR_SIM and len(clauses(texts[i])) == 1
        ]
        nsim = (vecs @ vecs[anchors].T).max(axis=1) if anchors else np.zeros(len(texts))
        others = np.delete(sims, j, axis=1).max(axis=1)
        for i, (rel, unit, other) in enumerate(units):
            text = unit.text
            para: object = rel if para_files.get(rel) == req else None
            para = para or next(
                (k for k, (p, t, r) in enumerate(para_sents) if p == rel and r == req and t in norm(text)), None
            )
            if lex[i] > 0:
                if para is not None:
                    by_words.add(para)
                continue
            near = max(sims[i, j], nsim[i]) if sims[i, j] >= SIM_FLOOR else 0.0
            if near and (read[i].name_use or judge.judge(unit, other).subject == "other"):
                near = 0.0  # its words sit inside a name, or it is someone else's fact: the resolver's guards
            rows.append((near, near - others[i], para))
    total = len(para_files) + len(para_sents)
    lines = [
        f"{bench}, seed {seed}: {total} paraphrases, {len(by_words)} of them inside a unit sharing a word (counted as reached); "
        f"{sum(1 for r in rows if r[2] is None)} other units sharing no word",
        "| nearness cut | margin over other preferences | paraphrases reached | other units proposed |",
        "|---|---|---|---|",
    ]
    for cut in CUTS:
        for margin in MARGINS:
            hit = len(by_words | {p for n, g, p in rows if p is not None and n >= cut and g >= margin})
            false = sum(1 for n, g, p in rows if p is None and n >= cut and g >= margin)
            lines.append(f"| {cut:.2f} | {margin:.2f} | {hit}/{total} ({hit / total:.2f}) | {false} |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bench", choices=(*SETS, "thorough"), default="heldout")
    args = ap.parse_args(argv)
    print("\n".join(measure(args.seed, args.bench)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
