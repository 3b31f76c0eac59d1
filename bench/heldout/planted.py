"""The held-out planted store: every planted unit recorded in a manifest, so a
run is scored from the files alone. File names say nothing about the
preference (a path is no evidence)."""

from __future__ import annotations

import importlib
import random
import subprocess
import textwrap
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from . import templates

FILLER_FILE = Path(__file__).with_name("filler.txt")


@dataclass
class Manifest:
    archive_files: dict[str, str] = field(default_factory=dict)  # path -> request: establishing, about
    para_files: dict[str, str] = field(default_factory=dict)
    strike_pos: list[tuple[str, str, str]] = field(default_factory=list)  # (path, text, request)
    para_sents: list[tuple[str, str, str]] = field(default_factory=list)
    compound: list[tuple[str, str, str, str]] = field(default_factory=list)  # (path, clause, unrelated, request)
    partial: list[tuple[str, str, str]] = field(default_factory=list)
    distractors: dict[str, str] = field(default_factory=dict)  # path -> kind (third, frag, name)
    summaries: list[tuple[str, str, str]] = field(default_factory=list)  # (path, text, request)
    busy: set[str] = field(default_factory=set)  # memories with planted sentences among others
    requests: list[str] = field(default_factory=list)
    pref_of: dict[str, str] = field(default_factory=dict)
    queries: list[tuple[str, str, str]] = field(default_factory=list)  # (request, kind, query)


def filler_sentences(diary: list[str]) -> list[str]:
    real = [s for s in FILLER_FILE.read_text(encoding="utf-8").splitlines() if s and not s.startswith("#")]
    return real + diary


def _file(meta: dict, body: str) -> str:
    return f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n\n{body.strip()}\n"


SETS = ("heldout", "dev2")  # templates.py (the test); templates_dev2.py (a second dev set, for setting cuts)


def build(root: Path, seed: int, fillers: int = 150, templates_set: str = "heldout") -> Manifest:
    t_mod = (
        templates if templates_set == "heldout" else importlib.import_module(f"{__package__}.templates_{templates_set}")
    )
    rng = random.Random(seed)
    root.mkdir(parents=True)
    m = Manifest()
    files: dict[str, tuple[dict, str]] = {}
    filler = filler_sentences(t_mod.DIARY)
    day = [0]

    def put(rel: str, body: str, **meta: object) -> None:
        day[0] += 1
        created = (datetime(2031, 1, 1, tzinfo=UTC) + timedelta(hours=6 * day[0])).isoformat()
        cat = rel.split("/")[0]
        files[rel] = ({"id": f"{cat}-{Path(rel).stem}", "category": cat, "created_at": created, **meta}, body)

    unrelated = t_mod.UNRELATED[:]
    rng.shuffle(unrelated)
    for i, t in enumerate(t_mod.T):
        req = f"insights/forget-{i:02d}.md"
        m.requests.append(req)
        m.pref_of[req] = t["pref"]
        m.queries += [(req, "preference", t["pref"]), (req, "topic", t["topic"]), (req, "question", t["question"])]
        # the memories that establish it: a one-liner, and a memory about it (name: and mostly about it)
        put(f"insights/fact-{i:02d}.md", t["clause"] + ".", type="Insight")
        put(f"insights/about-{i:02d}.md", " ".join(t["about"]), type="Insight", name=t["title"])
        m.archive_files |= {f"insights/fact-{i:02d}.md": req, f"insights/about-{i:02d}.md": req}
        put(f"insights/aside-{i:02d}.md", t["para"][0], type="Insight")
        m.para_files[f"insights/aside-{i:02d}.md"] = req
        # a busy memory: the full sentence, a compound (preference first), a partial mention, a summary
        a = f"projects/notes-week-{i:02d}.md"
        un_a, un_b = unrelated[i], unrelated[(i + 7) % len(unrelated)]
        sents = rng.sample(filler, rng.randint(5, 8))
        for s in (t["full"], f"{t['clause']}, and {un_a}.", t["partial"]):
            sents.insert(rng.randint(0, len(sents)), s)
        para = " ".join(sents)
        if rng.random() < 0.5:
            para = textwrap.fill(para, 72)  # hard-wrapped: sentences across lines
        put(a, f"# Notes, week {i + 1}\n\n{para}", type="ProjectSnapshot", summary=t["summary"])
        m.strike_pos += [(a, t["full"], req), (a, t["clause"], req)]
        m.compound.append((a, t["clause"], un_a, req))
        m.partial.append((a, t["partial"], req))
        m.summaries.append((a, t["summary"], req))
        # another busy memory: an inflected mention, a paraphrase, a compound the other way round
        b = f"projects/diary-{i:02d}.md"
        sents = rng.sample(filler, rng.randint(5, 8))
        back = f"{un_b[0].upper()}{un_b[1:]}, and {t['clause']}."
        for s in (t["infl"], t["para"][1], back):
            sents.insert(rng.randint(0, len(sents)), s)
        lines = [f"- {s}" if j % 3 == 2 else s for j, s in enumerate(sents)]
        half = len(lines) // 2
        put(b, "Diary.\n\n" + "\n".join(lines[:half]) + "\n\n" + " ".join(lines[half:]), type="ProjectSnapshot")
        m.strike_pos += [(b, t["infl"], req), (b, t["clause"], req)]
        m.para_sents.append((b, t["para"][1], req))
        m.compound.append((b, t["clause"], un_b, req))
        m.busy |= {a, b}
        # what must never be touched: a third party's fact, a shared word on another topic, a name
        who = t["third"].split(" ")[:2]
        p = f"people/{'-'.join(who).lower()}.md"
        put(p, f"# {' '.join(who)}\n\nWorks in the data team. {t['third']}", type="PersonMemory")
        m.distractors[p] = "third party"
        f = f"research/snippet-{i:02d}.md"
        put(f, " ".join([*rng.sample(filler, 2), t["frag"]]), type="Insight")
        m.distractors[f] = "shared word, other topic"
        n = f"projects/vendor-{i:02d}.md"
        put(n, t["namedis"], type="ProjectSnapshot")
        m.distractors[n] = "inside a name"
    for j in range(fillers):
        put(f"research/note-{j:03d}.md", " ".join(rng.sample(filler, rng.randint(2, 7))), type="Insight")
    day[0] += 60
    for req in m.requests:
        put(req, f"Please forget that {m.pref_of[req]}.", type="Insight")
    _commit(root, files)
    return m


def _commit(root: Path, files: dict[str, tuple[dict, str]]) -> None:
    for rel, (meta, body) in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_file(meta, body), encoding="utf-8")
    (root / "palinode.config.yaml").write_text(yaml.safe_dump({"consolidation": {"forget": {"enabled": True}}}))
    env = {
        "GIT_AUTHOR_NAME": "b",
        "GIT_AUTHOR_EMAIL": "b@b.invalid",
        "GIT_COMMITTER_NAME": "b",
        "GIT_COMMITTER_EMAIL": "b@b.invalid",
        "PATH": "/usr/bin:/bin",
    }
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "planted store"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env, capture_output=True)
