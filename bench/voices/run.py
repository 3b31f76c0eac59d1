"""The voices benchmark (issue 39): a planted store whose every mention is labelled with the
voice it is written in and the kind of mention it is; every request planned and applied
through the CLI as a user would, scored from the files and the plans alone.

Modes (each on its own fresh store, same seed, same files):
  cold    `palinode-audit plan`, then `apply --yes`, per request, never `index`
  warm    the same after `palinode-audit index`
  review  after `index`: a reviewer approves exactly the true proposals of each plan
          (`plan --json`: an archive of a memory to retire, the strikes of spans that are
          labelled mentions and hold nothing that must stay), nothing else

    python -m bench.voices.run [--set dev|test] [--seed 1] [--modes cold,warm,review] [--details]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from hashlib import sha256
from pathlib import Path
from typing import Any

from bench.heldout.run import _STRUCK, _ledger, cli, norm, ratio, read
from palinode_core.forget.selection import Choice
from palinode_core.search.embed import Embedder
from palinode_core.session import Session
from palinode_core.storage.paths import is_history
from palinode_core.text.markdown import struck_spans

from .planted import (
    KINDS,
    PARAPHRASE_KINDS,
    SETS,
    STRIKE_KINDS,
    VOICES,
    Manifest,
    Mention,
    build,
    census,
)

MODES = ("cold", "warm", "review")
ACTING = ("archive", "strike")


def unlabel(text: str) -> str:
    """Normalized, without a transcript's speaker label ("User: I ..." is the user's "I ...")."""
    return re.sub(r"^(?:user|assistant): ", "", norm(text))


def overlaps(a: str, b: str) -> bool:
    a, b = unlabel(a), unlabel(b)
    return bool(a) and bool(b) and (a in b or b in a)


class State:
    """The store's memories after a run: archived, struck spans, live text, frontmatter."""

    def __init__(self, root: Path) -> None:
        self.archived: set[str] = set()
        self.archived_by: dict[str, str] = {}  # path -> the request it was archived for (superseded_by)
        self.struck: dict[str, list[str]] = {}
        self.rids: dict[str, list[str]] = {}  # path -> the retraction id of each struck span
        self.live: dict[str, str] = {}
        self.meta: dict[str, dict] = {}
        self.text: dict[str, str] = {}
        for p in root.rglob("*.md"):
            rel = str(p.relative_to(root))
            if ".git" in p.parts or is_history(rel):
                continue
            meta, body = read(root, rel)
            self.meta[rel] = meta
            self.text[rel] = p.read_text(encoding="utf-8")
            if str(meta.get("status", "")).lower() == "archived":
                self.archived.add(rel)
                self.archived_by[rel] = str(meta.get("superseded_by", ""))
            spans = struck_spans(body)
            self.struck[rel] = [norm(s.text) for s in spans]
            self.rids[rel] = [s.rid for s in spans]
            self.live[rel] = norm(_STRUCK.sub(" ", body))

    def is_live(self, m: Mention) -> bool:
        if m.path in self.archived or m.path not in self.live:
            return False
        if m.where == "field":
            values = " ".join(str(v) for v in self.meta[m.path].values() if isinstance(v, str))
            return any(norm(t) in norm(values) for t in m.texts)
        return any(norm(t) in self.live[m.path] for t in m.texts)

    def covered(self, path: str, text: str) -> bool:
        """A strike covers the text, or a clause of it (a sentence's consequence may stay)."""
        t = unlabel(text)
        return any(t in s or (s in t and len(s) > 12) for s in map(unlabel, self.struck.get(path, [])))

    def covered_for(self, path: str, text: str, req: str, req_of: dict[str, str]) -> bool:
        """covered, by a strike the request itself made."""
        t = unlabel(text)
        return any(
            (t in s or (s in t and len(s) > 12)) and req_of.get(rid) == req
            for s, rid in zip(map(unlabel, self.struck.get(path, [])), self.rids.get(path, []), strict=True)
        )

    def spans(self, req_of: dict[str, str]) -> list[tuple[str, str, str]]:
        """(path, struck text, the request that struck it)."""
        return [
            (p, s, req_of.get(rid, "?"))
            for p, ss in self.struck.items()
            for s, rid in zip(ss, self.rids[p], strict=True)
        ]

    def touched(self, path: str) -> bool:
        return path in self.archived or bool(self.struck.get(path))


# ---- what a plan proposes ------------------------------------------------------------


def candidates(plan: dict[str, Any], path: str) -> list[dict[str, Any]]:
    return [c for c in plan["candidates"] if c["path"] == path and c["route"] in ACTING]


def carried(c: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in c.get("evidence", []) if e.get("carries")]


def plan_status(plan: dict[str, Any], m: Mention) -> str:
    """How the plan treats a labelled mention: 'no' (never proposed), 'archive' or 'strike'
    (proposed that way, waiting for a person), 'archive, pre-approved', 'strike, pre-approved'."""
    for c in candidates(plan, m.path):
        if c["route"] == "archive":
            return "archive, pre-approved" if c["preapproved"] else "archive"
        hits = [e for e in carried(c) if any(overlaps(e["text"], t) for t in m.texts)]
        if hits:
            sel = any(s.get("selected") and any(overlaps(s["text"], t) for t in m.texts) for s in c.get("spans", []))
            return "strike, pre-approved" if c["preapproved"] and sel else "strike"
    return "no"


def non_mentions(plan: dict[str, Any], m: Manifest, req: str) -> list[str]:
    """Each proposal of the plan that is not a labelled mention of its request, described."""
    out = []
    retire = m.archive_files(req)
    for c in plan["candidates"]:
        if c["route"] not in ACTING:
            continue
        path, mine = c["path"], m.at(c["path"], req)
        if c["route"] == "archive":
            if path in retire:
                continue
            why = "archive whole of a memory holding other facts" if mine else _what(m, path, "")
            out.append(f"{why}: {path}")
            continue
        for e in carried(c):
            if not any(overlaps(e["text"], t) for x in mine for t in x.texts):
                out.append(f"{_what(m, path, e['text'])}: {path}: {' '.join(e['text'].split())[:100]!r}")
    return out


def _what(m: Manifest, path: str, text: str) -> str:
    for n in m.negatives:
        if n.path == path and (not text or overlaps(n.text, text)):
            return f"negative ({n.why})"
    if any(x.path == path and any(overlaps(t, text) for t in x.texts) for x in m.mentions if text):
        return "another request's mention"
    if path == m.profile:
        return "the profile"
    if path in m.holders:
        return "another sentence of a memory holding mentions"
    return "other memory"


# ---- a reviewer approving exactly the true proposals ---------------------------------


def true_selection(plan: dict[str, Any], m: Manifest, req: str) -> dict[str, tuple[str, frozenset[int]]]:
    """path -> (route, span indexes) a reviewer approving exactly the true proposals keeps:
    an archive of a memory to retire; the spans that are labelled mentions (not a partial or
    an aside: those are a person's call, kept) and strike nothing that must stay."""
    retire = m.archive_files(req)
    chosen: dict[str, tuple[str, frozenset[int]]] = {}
    for c in plan["candidates"]:
        if c["route"] == "archive" and c["path"] in retire:
            chosen[c["path"]] = ("archive", frozenset())
        elif c["route"] == "strike":
            mine = [x for x in m.at(c["path"], req) if x.positive]
            keep = [k for x in m.at(c["path"]) for k in x.keep]
            spans = frozenset(
                s["index"]
                for s in c.get("spans", [])
                if any(overlaps(s["text"], t) for x in mine for t in x.texts)
                and not any(norm(k) in norm(s["text"]) for k in keep)
            )
            if spans:
                chosen[c["path"]] = ("strike", spans)
    return chosen


def apply_selection(root: Path, req: str, chosen: dict[str, tuple[str, frozenset[int]]], embedder: Embedder) -> None:
    session = Session.open(root, embedder=embedder)
    try:
        fplan = session.plan(req, verified=False)
        selection = {}
        for c in fplan.actionable:
            if c.path not in chosen or c.plan is None or not c.plan.changes:
                continue
            route, spans = chosen[c.path]
            if route != c.route:
                raise SystemExit(f"review: {req}: {c.path} is {c.route} in-process, {route} in the CLI's plan")
            selection[c.path] = Choice(approved=True, spans=spans if route == "strike" else None)
        missing = sorted(set(chosen) - set(selection))
        if missing:  # the CLI's plan and this one disagree: say so rather than score a different review
            print(f"review: {req}: not actionable in-process: {', '.join(missing)}", file=sys.stderr)
        if selection:
            session.apply_forget(fplan, selection)
    finally:
        session.close()


# ---- recall: what the store's own hybrid search still hands over ---------------------


def leakage(root: Path, m: Manifest, embedder: Embedder) -> dict[str, Any]:
    """Per recall query (3 per request), whether its top 10 in the store's hybrid search
    holds an active memory with a live labelled mention of that request (a partial, an
    aside, or a mention only in a frontmatter field not counted), and through which voices
    and kinds."""
    session = Session.open(root, embedder=embedder)
    try:
        index = session.update_index(vectors=True)
        state = State(root)
        by: dict[str, list[Mention]] = defaultdict(list)
        for x in m.mentions:
            if x.positive and x.where != "field":
                by[x.req].append(x)
        leaked, voices, kinds, worded = [], Counter(), Counter(), 0
        for req, kind, query in m.queries:
            hits = [h.path for h in index.search(query, limit=10).hits]
            live = [x for x in by[req] if x.path in hits and state.is_live(x)]
            if live:
                leaked.append(f"{req} {kind} {query!r}: " + ", ".join(sorted({f"{x.path} ({x.voice})" for x in live})))
                voices.update({x.voice for x in live})
                kinds.update({x.kind for x in live})
            worded += any(x.kind not in PARAPHRASE_KINDS for x in live)
        return {
            "n": len(leaked),
            "of": len(m.queries),
            "worded": worded,
            "voices": voices,
            "kinds": kinds,
            "lines": leaked,
        }
    finally:
        session.close()


def apply_yes(root: Path, req: str) -> None:
    """`palinode-audit apply --yes`; a plan with nothing pre-approved says so and changes nothing."""
    out = subprocess.run(
        [sys.executable, "-m", "palinode_core", "--json", "apply", str(root), req, "--yes"],
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0 and "nothing to apply" not in out.stderr:
        raise SystemExit(f"palinode-audit apply {req} --yes failed: {out.stderr.strip()}")


# ---- one mode ------------------------------------------------------------------------


def cache_folder(root: Path) -> Path:
    """docs/cache.md: one folder per store, named by the store and its real path."""
    real = str(root.resolve())
    return Path(os.environ["XDG_CACHE_HOME"]) / "palinode-tui" / f"{root.name}-{sha256(real.encode()).hexdigest()[:16]}"


def run_mode(set_name: str, seed: int, mode: str, embedder: Embedder, tmp: Path, warm_cache: Path) -> dict:
    """warm_cache: where the warm store's cache is kept after `index`, for the review
    store's `index` to start from (the same texts' vectors, keyed by content)."""
    root = tmp / f"{set_name}-{mode}"
    m = build(root, seed, set_name)
    t0 = time.perf_counter()
    if mode in ("warm", "review"):
        if mode == "review" and warm_cache.is_dir():
            shutil.copytree(warm_cache, cache_folder(root))
        cli(root, "index")
        if mode == "warm":
            shutil.copytree(cache_folder(root), warm_cache)
    indexed = round(time.perf_counter() - t0, 1)
    before = leakage(root, m, embedder) if mode == "warm" else None
    t0 = time.perf_counter()
    plans = {}
    for req in m.requests:
        plans[req] = cli(root, "plan", req)
        if mode == "review":
            apply_selection(root, req, true_selection(plans[req], m, req), embedder)
        else:
            apply_yes(root, req)
    seconds = round(time.perf_counter() - t0, 1)
    state = State(root)
    after = leakage(root, m, embedder)
    return {
        "mode": mode,
        "m": m,
        "root": root,
        "plans": plans,
        "state": state,
        "before": before,
        "after": after,
        "seconds": seconds,
        "index_seconds": indexed,
        "ledger": _ledger(root),
    }


# ---- scoring -------------------------------------------------------------------------


def score(r: dict) -> dict[str, Any]:
    m: Manifest = r["m"]
    st: State = r["state"]
    plans = r["plans"]
    pos = [x for x in m.mentions if x.positive]
    retire_est = {x.path for x in m.mentions if x.kind in ("establishing", "about")}
    archived = st.archived - set(m.requests)
    right = {p for p in archived if p in m.archive_files(st.archived_by[p])}
    req_of = {p["rid"]: req for req, p in plans.items()}
    # strikes: good when inside a labelled mention of the request that struck it (any kind)
    texts_at: dict[tuple[str, str], list[str]] = defaultdict(list)
    for x in m.mentions:
        texts_at[(x.path, x.req)] += list(x.texts)
    spans = st.spans(req_of)
    good = [(p, s, q) for p, s, q in spans if any(overlaps(s, t) for t in texts_at.get((p, q), []))]
    wrong = [f"{q}: {p}: {s[:80]!r} ({_what(m, p, s)})" for p, s, q in spans if (p, s, q) not in good]
    to_strike = [x for x in pos if x.kind in STRIKE_KINDS and x.kind not in PARAPHRASE_KINDS and x.where == "body"]
    struck_ok = [x for x in to_strike if all(st.covered_for(x.path, t, x.req, req_of) for t in x.texts)]
    paras = [x for x in pos if x.kind in PARAPHRASE_KINDS]
    para_done = [x for x in paras if not st.is_live(x)]
    negatives_touched = sorted({f"{n.why}: {n.path}: {n.text!r}" for n in m.negatives if st.touched(n.path)})
    planted = {x.path for x in m.mentions} | {n.path for n in m.negatives} | set(m.requests) | m.holders
    bystanders = sorted(p for p in st.archived | {p for p, s in st.struck.items() if s} if p not in planted)
    collateral = []
    for x in m.mentions:
        collateral += [f"{x.path}: {k!r} ({x.kind})" for k in x.keep if any(norm(k) in s for s in st.struck[x.path])]
    for p in sorted(m.holders):
        if p in st.archived:
            collateral.append(f"{p}: archived whole (a memory holding other facts)")
    calls_struck = [x for x in m.mentions if not x.positive and any(st.covered(x.path, t) for t in x.texts)]
    status = {x: plan_status(plans[x.req], x) for x in m.mentions}
    proposed = [x for x in pos if status[x] != "no"]
    nonm = [f"{req}: {line}" for req in m.requests for line in non_mentions(plans[req], m, req)]
    neg_proposed = sorted(
        {
            f"{n.why}: {n.path}: {n.text!r}"
            for n in m.negatives
            for c in candidates(plans[n.req], n.path)
            if c["route"] == "archive" or any(overlaps(e["text"], n.text) for e in carried(c))
        }
    )
    residue_rows = [
        (e.get("request"), row["path"], row.get("text", ""))
        for e in r["ledger"]
        if e.get("action") == "residue"
        for row in e.get("mentions", [])
    ]
    live_pos = [x for x in pos if st.is_live(x)]
    in_residue = [x for x in live_pos if any(q == x.req and p == x.path for q, p, _t in residue_rows)]
    return {
        "archive P": ratio(len(right), len(archived)),
        "archive R": ratio(len(right & retire_est), len(retire_est)),
        "strike P": ratio(len(good), len(spans)),
        "strike R": ratio(len(struck_ok), len(to_strike)),
        "paraphrases gone": f"{len(para_done)}/{len(paras)}",
        "distractors touched": f"{len(negatives_touched)}/{len({n.path for n in m.negatives})}",
        "bystanders": len(bystanders),
        "collateral": len(collateral),
        "calls struck": f"{len(calls_struck)}/{len(m.mentions) - len(pos)}",
        "proposed": f"{len(proposed)}/{len(pos)} ({len(proposed) / len(pos):.2f})",
        "not mentions per true": round(len(nonm) / len(pos), 2),
        "negatives proposed": f"{len(neg_proposed)}/{len(m.negatives)}",
        "live left in residue": f"{len(in_residue)}/{len(live_pos)}",
        "leaking": f"{r['after']['n']}/{r['after']['of']}"
        + (f" (before {r['before']['n']})" if r["before"] else "")
        + f"; {r['after']['worded']} sharing a word",
        "seconds": r["seconds"],
        "_status": status,
        "_missed": [
            f"{x.kind} | {x.voice} | {x.path}: {x.texts[0][:90]!r}: {status[x]}"
            for x in pos
            if st.is_live(x) or status[x] == "no"
        ],
        "_touched": negatives_touched,
        "_bystanders": bystanders,
        "_collateral": collateral,
        "_struck_wrong": wrong,
        "_archived_wrong": sorted(f"{st.archived_by[p]}: {p} ({_what(m, p, '')})" for p in archived - right),
        "_not_mentions": nonm,
        "_negatives_proposed": neg_proposed,
        "_leaked": r["after"]["lines"],
        "_calls_struck": [f"{x.kind} | {x.path}: {x.texts[0]!r}" for x in calls_struck],
    }


def breakdown(results: dict[str, dict], scores: dict[str, dict], attr: str, values: tuple[str, ...]) -> str:
    """Per voice (or kind), each cell one figure per mode (in the order of the header): the
    labelled mentions proposed in any form; gone after the run (archived or struck); the
    strike recall (mentions to strike in a body, struck for their own request) and archive
    recall (establishing and about memories archived for theirs); recall queries whose top
    10 holds a live mention in this voice (or of this kind)."""
    modes = list(results)
    head = [attr, "n", "proposed", "gone", "strike R", "archive R", "leaking via"]
    rows = [f"{' / '.join(modes)}:", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    first = results[modes[0]]["m"]
    for v in values:
        group = [x for x in first.mentions if getattr(x, attr) == v and (attr == "kind" or x.positive)]
        if not group:
            continue
        strike = [x for x in group if x.kind in STRIKE_KINDS and x.kind not in PARAPHRASE_KINDS and x.where == "body"]
        archive = [x for x in group if x.kind in ("establishing", "about")]
        cells = [v, str(len(group))]
        cells.append(" / ".join(f"{sum(scores[md]['_status'][x] != 'no' for x in group)}" for md in modes))
        cells.append(" / ".join(f"{sum(not results[md]['state'].is_live(x) for x in group)}" for md in modes))
        own = {md: {p["rid"]: q for q, p in results[md]["plans"].items()} for md in modes}
        cells.append(
            " / ".join(
                f"{sum(all(results[md]['state'].covered_for(x.path, t, x.req, own[md]) for t in x.texts) for x in strike)}"
                for md in modes
            )
            + f" of {len(strike)}"
            if strike
            else "-"
        )
        cells.append(
            " / ".join(f"{sum(results[md]['state'].archived_by.get(x.path) == x.req for x in archive)}" for md in modes)
            + f" of {len(archive)}"
            if archive
            else "-"
        )
        cells.append(
            " / ".join(str(results[md]["after"]["voices" if attr == "voice" else "kinds"].get(v, 0)) for md in modes)
        )
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def not_mentions_table(scores: dict[str, dict]) -> str:
    """What the plans propose that is not a labelled mention of the request, by what it is."""
    modes = list(scores)
    counts = {md: Counter(line.split(": ", 2)[1] for line in scores[md]["_not_mentions"]) for md in modes}
    whats = sorted({w for c in counts.values() for w in c})
    rows = ["| proposal that is not a mention | " + " | ".join(modes) + " |", "|" + "---|" * (len(modes) + 1)]
    rows += ["| " + w + " | " + " | ".join(str(counts[md][w]) for md in modes) + " |" for w in whats]
    return "\n".join(rows)


def negatives_table(results: dict[str, dict], scores: dict[str, dict]) -> str:
    modes = list(results)
    m = results[modes[0]]["m"]
    head = ["negative", "n"] + [f"proposed {md}" for md in modes] + [f"touched {md}" for md in modes]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for why in sorted({n.why for n in m.negatives}):
        group = [n for n in m.negatives if n.why == why]
        cells = [why, str(len(group))]
        for md in modes:
            cells.append(
                str(
                    sum(
                        any(line.startswith(f"{why}: {n.path}:") for line in scores[md]["_negatives_proposed"])
                        for n in group
                    )
                )
            )
        for md in modes:
            cells.append(str(sum(results[md]["state"].touched(n.path) for n in group)))
        rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def same_warm_cold(results: dict[str, dict]) -> list[str]:
    """Memories whose text after apply --yes differs between the cold and the warm store
    (history siblings, ledger and dates of strike markers aside)."""
    if "cold" not in results or "warm" not in results:
        return []
    a, b = results["cold"]["state"], results["warm"]["state"]
    return sorted(p for p in a.text if (p in a.archived, a.live.get(p)) != (p in b.archived, b.live.get(p)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", choices=SETS, default="dev")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--modes", default=",".join(MODES))
    ap.add_argument("--out", default=None, help="default bench/out/voices-<set>.md")
    ap.add_argument("--details", action="store_true", help="also every miss, touch, collateral, non-mention, leak")
    args = ap.parse_args(argv)
    modes = [x for x in args.modes.split(",") if x]
    if not set(modes) <= set(MODES):
        ap.error(f"modes are {', '.join(MODES)}")
    embedder = Embedder()
    results: dict[str, dict] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")  # every store's cache, removed with it
        for md in modes:
            results[md] = run_mode(args.set, args.seed, md, embedder, Path(tmp), Path(tmp) / "index-after-warm")
            print(
                f"{md}: {results[md]['seconds']} s planning and applying, index {results[md]['index_seconds']} s",
                file=sys.stderr,
            )
        scores = {md: score(r) for md, r in results.items()}
        differ = same_warm_cold(results)
    total = round(time.perf_counter() - started)
    m = results[modes[0]]["m"]
    keys = [k for k in scores[modes[0]] if not k.startswith("_")]
    lines = [
        f"## voices bench, set {args.set}, seed {args.seed} ({total} s in all)",
        "",
        "```",
        census(m),
        "```",
        "",
        "| mode | " + " | ".join(keys) + " |",
        "|" + "---|" * (len(keys) + 1),
    ]
    for md in modes:
        lines.append(f"| {md} | " + " | ".join(str(scores[md][k]) for k in keys) + " |")
    if differ:
        lines += ["", f"Memories that differ after apply --yes, cold vs warm: {len(differ)} ({', '.join(differ[:12])})"]
    elif "cold" in results and "warm" in results:
        lines += ["", "Memories that differ after apply --yes, cold vs warm: 0"]
    lines += ["", "### by voice", "", breakdown(results, scores, "voice", VOICES)]
    lines += ["", "### by kind", "", breakdown(results, scores, "kind", (*KINDS,))]
    lines += ["", "### negatives", "", negatives_table(results, scores)]
    lines += ["", "### proposals that are not mentions", "", not_mentions_table(scores)]
    table = "\n".join(lines)
    print(table)
    out = Path(args.out or f"bench/out/voices-{args.set}.md")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table + "\n", encoding="utf-8")
    if args.details:
        for md in modes:
            for key in [k for k in scores[md] if k.startswith("_") and k != "_status"]:
                for line in scores[md][key]:
                    print(f"{md} {key[1:]}: {line}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
