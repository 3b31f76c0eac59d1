"""External stores from two public datasets memory systems are evaluated on (issue 39's
"External stores" point): ForgetEval-Adv (WaylandYang/forgeteval-anon-supp, MIT) and
PersonaMem-v2 (bowen-upenn/PersonaMem-v2). Their text is read at run time from a copy of each
repository and never committed here; only where each case sits is recorded below.

    python -m bench.external2.run [--forgeteval PATH] [--personamem PATH] [--stores 47]
                                  [--details] [--out bench/out/external2.json]

PATH is a git directory (what the search tool's `fetch` brings to /work/.mirror/<owner>+<name>/)
or a plain folder holding the repository's files at their paths; PALINODE_BENCH_FORGETEVAL and
PALINODE_BENCH_PERSONAMEM set them too. Per case one store (a real git repo) and one request,
each run twice through the CLI as a user would: cold (a fresh store, `apply --yes` first) and
warm (a fresh copy, `index`, then `apply --yes`); each apply's plan is also taken with `plan`
on a third, untouched copy (cold) and after the warm index. See README.md beside this file.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.heldout.planted import _commit
from bench.heldout.run import Files, norm

FORGETEVAL = ("WaylandYang/forgeteval-anon-supp", "bench/forgeteval/adversarial.py")
PERSONAMEM = ("bowen-upenn/PersonaMem-v2", "data/raw_data")
ENV = {"forgeteval": "PALINODE_BENCH_FORGETEVAL", "personamem": "PALINODE_BENCH_PERSONAMEM"}

# ForgetEval-Adv categories whose first fact is the user's own (the rest are other people's,
# customers', the office's: the pool every store's other memories come from)
USER_CATEGORIES = (
    "substring_trap",
    "paraphrase_supersession",
    "negation_trap",
    "temporal_qualifier",
    "compound_fact",
    "recursive_supersession",
)

# PersonaMem-v2 cases: (persona file, conversation list, n-th ask_to_forget item in it, the
# sentences of that item's assistant turn that state the forgotten fact as the user's, the
# sentences of the user's first turn in the item that first showed the preference (an email draft,
# first person) that name it). The labels are ours, by sentence number (split at . ! ? and a
# space, or a blank line). Sentences not listed are "free": a strike there is counted, not
# scored; the email itself must not be archived when it names the preference (its other
# sentences are other facts), and is free as a whole when it only alludes to it.
PERSONAMEM_CASES: list[tuple[str, str, int, tuple[int, ...], tuple[int, ...]]] = [
    ("raw_data_250815_143643_persona0.json", "personal_email", 0, (0,), ()),  # answer presupposes it; email unread
    ("raw_data_250815_143643_persona0.json", "personal_email", 1, (), ()),  # answer is advice only; the email alludes
    ("raw_data_250815_143643_persona1.json", "personal_email", 0, (0,), ()),  # answer restates it in other words
    ("raw_data_250815_143643_persona2.json", "personal_email", 0, (), (4,)),  # answer is advice only; email names it
    ("raw_data_250815_143643_persona2.json", "personal_email", 1, (0,), ()),  # answer presupposes it; email alludes
    ("raw_data_250815_143643_persona2.json", "personal_email", 2, (0,), (3,)),  # answer and email name it
    ("raw_data_250815_143643_persona2.json", "professional_email", 0, (0,), ()),  # answer names it; email alludes
    ("raw_data_250815_143643_persona3.json", "personal_email", 0, (0, 1), (3,)),  # answer names it twice; email too
    ("raw_data_250815_143643_persona5.json", "personal_email", 0, (0,), (4,)),  # answer and email name it
    ("raw_data_250815_143643_persona5.json", "personal_email", 1, (), ()),  # answer is advice only; email unread
    ("raw_data_250815_143643_persona5.json", "professional_email", 0, (0,), (3,)),  # answer and email name it
]
PERSONA_LISTS = (
    "stereotypical_preferences",
    "anti_stereotypical_preferences",
    "neutral_preferences",
    "therapy_background",
    "health_and_medical_conditions",
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_STOP = frozenset(
    "with from that this their there about into over than then they them have does your when what "
    "some very more most also like likes enjoys loves prefers keeps takes uses".split()
)


class Source:
    """One repository's files: from a git directory (a `fetch` mirror) or a plain folder."""

    def __init__(self, path: Path, repo: str, kind: str) -> None:
        self.path, self.repo = path, repo
        self.git = (path / "HEAD").is_file() and (path / "objects").is_dir()
        if not self.git and not path.is_dir():
            raise SystemExit(
                f"{repo} not found at {path}. Bring it here with the search tool's fetch "
                f'(source "github:{repo}": it lands in /work/.mirror/{repo.replace("/", "+")}/), or clone '
                f"https://github.com/{repo} anywhere, and pass --{kind} PATH or set {ENV[kind]}."
            )

    def commit(self) -> str:
        if not self.git:
            return "a plain folder (no commit)"
        return subprocess.run(
            ["git", "--git-dir", str(self.path), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()

    def read(self, rel: str) -> str:
        if self.git:
            return subprocess.run(
                ["git", "--git-dir", str(self.path), "show", f"HEAD:{rel}"], capture_output=True, text=True, check=True
            ).stdout
        return (self.path / rel).read_text(encoding="utf-8")


@dataclass
class Case:
    name: str
    dataset: str
    kind: str  # ForgetEval: its attack category; PersonaMem: the list the fact is in
    request: str
    files: dict[str, tuple[dict, str]] = field(default_factory=dict)
    go: list[tuple[str, str]] = field(default_factory=list)  # (path, text) each must be gone
    stay_live: list[tuple[str, str]] = field(default_factory=list)  # (path, text) must stay live in a go file
    free: set[str] = field(default_factory=set)  # files whose other sentences are not scored
    no_archive: set[str] = field(default_factory=set)  # files holding other facts too: never archived whole

    def put(self, rel: str, body: str, **meta: object) -> None:
        cat = rel.split("/")[0]
        hour = len(self.files) + 1
        created = f"2031-01-{1 + hour // 24:02d}T{hour % 24:02d}:00:00+00:00"
        self.files[rel] = ({"id": f"{cat}-{Path(rel).stem}", "category": cat, "created_at": created, **meta}, body)


# ---- the first person ------------------------------------------------------------------------

_IRREGULAR = {"is": "am", "was": "was", "has": "have", "does": "do", "goes": "go"}


def _base(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if low.endswith("ies") and len(low) > 4:
        return verb[:-3] + "y"
    if low.endswith(("sses", "shes", "ches", "xes", "zes", "oes")):
        return verb[:-2]
    if low.endswith("s") and not low.endswith(("ss", "us", "is")):
        return verb[:-1]
    return verb


def first_person(fact: str, subjectless: bool = False) -> str:
    """A fact about the user ("User lives in Vienna.", or subjectless "Keeps indoor plants")
    as the words after "forget that": "I live in Vienna"."""
    words = fact.strip().rstrip(".!").split()
    if subjectless:
        words = ["User", words[0].lower(), *words[1:]]
    out: list[str] = []
    want_verb = seen_i = False
    for w in words:
        low = w.lower()
        if low == "user":
            out.append("I")
            want_verb = seen_i = True
        elif low == "user's" or low in ("their", "her", "his"):
            out.append("my")
        elif low == "them":
            out.append("me")
        elif want_verb and (low.endswith("ly") or low in ("not", "never", "also", "still", "often", "now")):
            out.append(w)
        elif want_verb:
            out.append(_base(w))
            want_verb = False
        else:
            out.append(w)
            want_verb = seen_i and low == "and"
    text = " ".join(out)
    return text if text.startswith("I ") else text[:1].lower() + text[1:]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 3 and w not in _STOP}


def _slug(name: str) -> str:
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")


def _sentence(text: str) -> str:
    text = text.strip()
    return text if text.endswith((".", "!", "?")) else text + "."


# ---- ForgetEval-Adv --------------------------------------------------------------------------


def forgeteval_cases(src: Source) -> list[dict[str, Any]]:
    """Every GeneratedCase(...) in adversarial.py, read as data (its code is never run)."""
    tree = ast.parse(src.read(FORGETEVAL[1]))
    cases = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "GeneratedCase":
            kw = {k.arg: k.value for k in node.keywords}
            case = {k: ast.literal_eval(kw[k]) for k in ("id", "setup_facts", "must_not_contain") if k in kw}
            case["category"] = re.sub(r"^adv_|_\d+$", "", case["id"])
            cases.append(case)
    return cases


def _is_users(fact: str) -> bool:
    return bool(re.search(r"\buser\b", fact, re.I))


def forgeteval_build(case: dict[str, Any], pool: list[str]) -> Case:
    facts = case["setup_facts"]
    target = facts[0]
    c = Case(case["id"], "ForgetEval-Adv", case["category"], "")
    for i, fact in enumerate(facts):
        c.put(f"insights/fact-{i:02d}.md", fact, type="Insight")
    for j, fact in enumerate(f for f in pool if f not in facts):
        c.put(f"insights/note-{j:03d}.md", fact, type="Insight")
    if case["category"] == "compound_fact":
        subject, _, rest = target.rstrip(".").partition(" ")  # "User", "lives in Berlin and works at ..."
        first, _, second = rest.partition(" and ")
        gone, kept = (first, second) if case["must_not_contain"][0] in first else (second, first)
        c.request = f"Please forget that {first_person(f'{subject} {gone}')}."
        c.go.append(("insights/fact-00.md", gone))
        c.stay_live.append(("insights/fact-00.md", kept))
    else:
        c.request = f"Please forget that {first_person(target)}."
        c.go.append(("insights/fact-00.md", target))
    c.put("insights/forget.md", c.request, type="Insight")
    return c


# ---- PersonaMem-v2 ---------------------------------------------------------------------------


def personamem_build(
    src: Source, locator: tuple[str, str, int, tuple[int, ...], tuple[int, ...]], personas: dict[str, dict]
) -> Case:
    fname, conv_list, nth, labelled, in_email = locator
    persona = personas[fname]
    items = [i for i in persona["conversations"][conv_list] if i.get("pref_type") == "ask_to_forget"]
    item = items[nth]
    pref = item["prev_pref"]
    turns = item["conversations"]
    said = turns[-1]["content"].strip()
    home = next(k for k in PERSONA_LISTS if pref in persona.get(k, []))
    request = said if said.startswith("Please forget that I ") else f"Please forget that {first_person(pref, True)}."
    c = Case(f"{fname.removesuffix('.json').rsplit('_', 1)[1]}/{conv_list}/{nth}", "PersonaMem-v2", home, request)
    name = persona["name"]
    profile = [f"- name: {name}", f"- age: {persona.get('age')}", f"- persona: {persona.get('short_persona')}"]
    c.put("insights/user-profile.md", f"# {name}\n\n" + "\n".join(profile), type="Insight")
    for key in PERSONA_LISTS:
        for i, entry in enumerate(persona.get(key, [])):
            rel = f"insights/{key.split('_')[0]}-{i:02d}.md"
            c.put(rel, _sentence(entry), type="Insight")
            if entry == pref:
                c.go.append((rel, entry))
    chat = f"projects/chat-{conv_list}-{nth}.md"
    lines = [f"{'User' if t['role'] == 'user' else 'Assistant'}: {t['content'].strip()}" for t in turns[:-1]]
    c.put(chat, "\n\n".join(lines), type="ProjectSnapshot")
    answer = [s for s in _SENTENCE_END.split(turns[-2]["content"].strip()) if s]
    c.go += [(chat, answer[k]) for k in labelled]
    c.free.add(chat)
    shown = [
        (key, k, i)
        for key, items in persona["conversations"].items()
        for k, i in enumerate(items)
        if i.get("preference") == pref and i.get("pref_type") != "ask_to_forget"
    ]
    for key, k, i in shown:  # the user's own email that first showed the preference
        email = f"projects/email-{key}-{k}.md"
        text = i["conversations"][0]["content"].strip()
        c.put(email, text, type="ProjectSnapshot")
        sentences = [s for s in _SENTENCE_END.split(text) if s.strip()]
        c.go += [(email, sentences[j]) for j in in_email]
        c.free.add(email)
        if in_email:
            c.no_archive.add(email)
    # someone else's fact sharing a word with it: another persona's preference under their name
    words = _words(pref)
    others = [
        (p["name"], e)
        for f, p in sorted(personas.items())
        if f != fname
        for k in PERSONA_LISTS
        for e in p.get(k, [])
        if _words(e) & words
    ]
    for name_other, entry in others[:2]:
        c.put(f"people/{_slug(name_other)}.md", f"# {name_other}\n\n{_sentence(entry)}", type="PersonMemory")
    c.put("insights/forget.md", request, type="Insight")
    return c


# ---- running and scoring ---------------------------------------------------------------------


def cli(env: dict[str, str], *args: str) -> tuple[dict[str, Any] | None, str]:
    out = subprocess.run(
        [sys.executable, "-m", "palinode_core", "--json", *args], capture_output=True, text=True, env=env, check=False
    )
    if out.returncode != 0:
        return None, (out.stderr.strip().splitlines() or [f"exit {out.returncode}"])[-1]
    return json.loads(out.stdout), ""


def _gone(f: Files, path: str, text: str) -> bool:
    return path in f.archived or norm(text) not in f.live.get(path, "")


def score(root: Path, c: Case) -> dict[str, Any]:
    f = Files(root)
    go_files = {p for p, _ in c.go}
    missed = [f"{p}: {t!r}" for p, t in c.go if not _gone(f, p, t)]
    kept_lost = [f"{p}: {t!r}" for p, t in c.stay_live if _gone(f, p, t)]
    kept_lost += [f"{p}: archived whole" for p in sorted(c.no_archive & f.archived)]
    touched = sorted(p for p in c.files if p not in go_files | c.free | {"insights/forget.md"} and f.touched(p))
    free_struck = sum(
        1
        for p in c.free
        for s in f.struck.get(p, [])
        if not any(norm(t) in s or s in norm(t) for q, t in c.go if q == p)
    )
    return {
        "pass": not missed and not kept_lost and not touched,
        "missed": missed,
        "kept_lost": kept_lost,
        "touched": touched,
        "free_struck": free_struck,
        "archived": sorted(f.archived & set(c.files)),
        "state": sorted(
            [*(f"archived {p}" for p in f.archived), *(f"struck {p}: {t}" for p, ts in f.struck.items() for t in ts)]
        ),
    }


def reviewer(plan: dict[str, Any] | None, c: Case) -> dict[str, Any]:
    """What a reviewer approving exactly the true proposals reaches: the labelled mentions the plan
    proposes in any form (the memory archived, or a strike proposed over its text), and the units
    it proposes that are not mentions (a whole memory, or one strike span)."""
    if plan is None:
        return {"proposed": 0, "mentions": len(c.go), "not_mentions": 0, "free": 0}
    proposed_units: list[tuple[str, str | None]] = []
    for cand in plan.get("candidates", []):
        if cand.get("route") == "archive":
            proposed_units.append((cand["path"], None))
        elif cand.get("route") == "strike":
            proposed_units += [(cand["path"], s.get("text", "")) for s in cand.get("spans", [])]

    def covers(unit: tuple[str, str | None], path: str, text: str) -> bool:
        p, span = unit
        return p == path and (span is None or norm(span) in norm(text) or norm(text) in norm(span))

    hits = sum(any(covers(u, p, t) for u in proposed_units) for p, t in c.go)
    not_mentions = [u for u in proposed_units if not any(covers(u, p, t) for p, t in c.go)]
    free = sum(1 for p, _ in not_mentions if p in c.free)
    return {"proposed": hits, "mentions": len(c.go), "not_mentions": len(not_mentions) - free, "free": free}


def run_case(c: Case, tmp: Path, env: dict[str, str]) -> dict[str, Any]:
    roots = {m: tmp / f"{re.sub(r'[^A-Za-z0-9]+', '-', c.name)}-{m}" for m in ("cold", "warm", "plan")}
    _commit(roots["cold"], c.files)
    for m in ("warm", "plan"):
        shutil.copytree(roots["cold"], roots[m], symlinks=True)
    out: dict[str, Any] = {"case": c.name, "dataset": c.dataset, "kind": c.kind, "request": c.request}
    out["memories"] = len(c.files) - 1
    t0 = time.perf_counter()
    _, err = cli(env, "apply", str(roots["cold"]), "insights/forget.md", "--yes")
    out["cold"] = {**score(roots["cold"], c), "error": err}
    cold_plan, _ = cli(env, "plan", str(roots["plan"]), "insights/forget.md")
    out["cold"]["reviewer"] = reviewer(cold_plan, c)
    cli(env, "index", str(roots["warm"]))
    warm_plan, _ = cli(env, "plan", str(roots["warm"]), "insights/forget.md")
    _, err = cli(env, "apply", str(roots["warm"]), "insights/forget.md", "--yes")
    out["warm"] = {**score(roots["warm"], c), "error": err, "reviewer": reviewer(warm_plan, c)}
    out["seconds"] = round(time.perf_counter() - t0, 1)
    for root in roots.values():
        shutil.rmtree(root, ignore_errors=True)
    return out


def failure_kinds(r: dict[str, Any]) -> list[str]:
    kinds = []
    if r["missed"]:
        kinds.append("must-go left live")
    if r["kept_lost"]:
        kinds.append("kept clause struck with it")
    if r["touched"]:
        kinds.append("must-stay memory touched")
    return kinds


def build_all(fe: Source, pm: Source, stores: int) -> list[Case]:
    parsed = forgeteval_cases(fe)
    pool = [f for case in parsed for f in case["setup_facts"] if not _is_users(f)]
    by_cat = {
        cat: [x for x in parsed if x["category"] == cat and _is_users(x["setup_facts"][0])] for cat in USER_CATEGORIES
    }
    personas: dict[str, dict] = {}
    for fname in sorted({loc[0] for loc in PERSONAMEM_CASES}):
        personas[fname] = next(iter(json.loads(pm.read(f"{PERSONAMEM[1]}/{fname}")).values()))
    cases = [personamem_build(pm, loc, personas) for loc in PERSONAMEM_CASES][:stores]
    depth = 0  # ForgetEval's user cases, one category after another, until there are enough stores
    while len(cases) < stores and any(len(v) > depth for v in by_cat.values()):
        for cat in USER_CATEGORIES:
            if depth < len(by_cat[cat]) and len(cases) < stores:
                cases.append(forgeteval_build(by_cat[cat][depth], pool))
        depth += 1
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    mirror = Path("/work/.mirror")
    ap.add_argument(
        "--forgeteval",
        type=Path,
        default=os.environ.get(ENV["forgeteval"]) or mirror / "WaylandYang+forgeteval-anon-supp" / "repo",
    )
    ap.add_argument(
        "--personamem",
        type=Path,
        default=os.environ.get(ENV["personamem"]) or mirror / "bowen-upenn+PersonaMem-v2" / "repo",
    )
    ap.add_argument("--stores", type=int, default=47)
    ap.add_argument("--only", help="run only the cases whose name contains this")
    ap.add_argument("--details", action="store_true", help="print each store's request and what failed")
    ap.add_argument("--out", default="bench/out/external2.json")
    args = ap.parse_args(argv)
    fe = Source(args.forgeteval, FORGETEVAL[0], "forgeteval")
    pm = Source(args.personamem, PERSONAMEM[0], "personamem")
    cases = [c for c in build_all(fe, pm, args.stores) if not args.only or args.only in c.name]
    results = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="external2-") as tmp:
        # one user cache for the run: no store sees another's, none is warm before its index
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(tmp) / "cache")}
        for c in cases:
            r = run_case(c, Path(tmp), env)
            results.append(r)
            if args.details:
                line = f"{r['case']} [{r['kind']}] {r['request']!r}: cold {'pass' if r['cold']['pass'] else 'FAIL'}, warm {'pass' if r['warm']['pass'] else 'FAIL'} ({r['seconds']} s)"
                print(line, file=sys.stderr)
                for mode in ("cold", "warm"):
                    for key in ("missed", "kept_lost", "touched", "error"):
                        if r[mode][key]:
                            print(f"  {mode} {key}: {r[mode][key]}", file=sys.stderr)
    summary = summarize(results)
    summary["seconds"] = round(time.perf_counter() - t0)
    summary["sources"] = {fe.repo: f"{fe.path} ({fe.commit()})", pm.repo: f"{pm.path} ({pm.commit()})"}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"summary": summary, "stores": results}, indent=1, ensure_ascii=False) + "\n")
    out.with_suffix(".md").write_text(table(results) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    return 0


def table(results: list[dict[str, Any]]) -> str:
    """One row a store: pass cold and warm, what failed, and what a reviewer approving exactly the
    true proposals reaches (labelled mentions proposed / labelled; proposals that are not mentions,
    + those in a free file's other sentences)."""

    def cell(r: dict[str, Any]) -> str:
        return "pass" if r["pass"] else "FAIL: " + ", ".join(failure_kinds(r))

    def rev(x: dict[str, Any]) -> str:
        return f"{x['proposed']}/{x['mentions']}; {x['not_mentions']} (+{x['free']} free)"

    lines = [
        "| store | kind | memories | cold | warm | reviewer, cold plan | reviewer, warm plan |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        lines.append(
            f"| {r['case']} | {r['kind']} | {r['memories']} | {cell(r['cold'])} | {cell(r['warm'])} "
            f"| {rev(r['cold']['reviewer'])} | {rev(r['warm']['reviewer'])} |"
        )
    return "\n".join(lines)


def summarize(results: list[dict[str, Any]]) -> dict[str, Any]:
    def tally(mode: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for r in rows:
            for k in failure_kinds(r[mode]):
                kinds[k] = kinds.get(k, 0) + 1
        rev = [r[mode]["reviewer"] for r in rows]
        return {
            "pass": sum(r[mode]["pass"] for r in rows),
            "stores": len(rows),
            "failures": kinds,
            "reviewer_mentions_proposed": f"{sum(x['proposed'] for x in rev)}/{sum(x['mentions'] for x in rev)}",
            "reviewer_not_mentions": sum(x["not_mentions"] for x in rev),
            "reviewer_free_proposed": sum(x["free"] for x in rev),
            "free_sentences_struck": sum(r[mode]["free_struck"] for r in rows),
            "errors": sum(bool(r[mode]["error"]) for r in rows),
        }

    datasets = sorted({r["dataset"] for r in results})
    return {
        "cold": tally("cold", results),
        "warm": tally("warm", results),
        # the same store and request ending differently: in what is archived or struck, and in pass or fail
        "end_differently": [r["case"] for r in results if r["cold"]["state"] != r["warm"]["state"]],
        "pass_differs": [r["case"] for r in results if r["cold"]["pass"] != r["warm"]["pass"]],
        "by_dataset": {
            d: {m: tally(m, [r for r in results if r["dataset"] == d])["pass"] for m in ("cold", "warm")}
            | {"stores": sum(r["dataset"] == d for r in results)}
            for d in datasets
        },
    }


if __name__ == "__main__":
    raise SystemExit(main())
