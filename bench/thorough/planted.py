"""A labelled planted store for the thorough benchmark: every planted unit
is recorded in a manifest, so a run is scored from the files alone."""
from __future__ import annotations

import random
import subprocess
import textwrap
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from .templates import FILLER, NAMES, UNRELATED_CLAUSES, T


@dataclass
class Manifest:
    archive_files: set[str] = field(default_factory=set)
    para_files: set[str] = field(default_factory=set)
    strike_pos: list[tuple[str, str]] = field(default_factory=list)  # (path, text) to strike
    para_sents: list[tuple[str, str]] = field(default_factory=list)
    near: list[tuple[str, str]] = field(default_factory=list)
    compound_unrel: list[tuple[str, str]] = field(default_factory=list)
    distractors: set[str] = field(default_factory=set)
    residue: list[tuple[str, str, str]] = field(default_factory=list)  # (path, text, request)
    requests: list[str] = field(default_factory=list)
    pref_of: dict[str, str] = field(default_factory=dict)


def _slug(text: str) -> str:
    return "-".join(text.lower().split())


def _file(meta: dict, body: str) -> str:
    return f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n\n{body.strip()}\n"


def build(root: Path, seed: int, fillers: int = 170) -> Manifest:
    rng = random.Random(seed)
    root.mkdir(parents=True)
    m = Manifest()
    files: dict[str, tuple[dict, str]] = {}
    day = [0]

    def put(rel: str, body: str, **meta: object) -> None:
        day[0] += 1
        created = (datetime(2031, 1, 1, tzinfo=UTC) + timedelta(hours=6 * day[0])).isoformat()
        cat = rel.split("/")[0]
        files[rel] = ({"id": f"{cat}-{Path(rel).stem}", "category": cat, "created_at": created, **meta}, body)

    names = NAMES[:]
    rng.shuffle(names)
    for i, t in enumerate(T):
        k, name = t["key"], names[i % len(names)]
        req = f"insights/forget-{k}.md"
        m.requests.append(req)
        m.pref_of[req] = t["pref"]
        # establishing memories (for about a third of the preferences none: only dense
        # mentions, so Palinode's top hits reach the distractors)
        if rng.random() >= 0.34:
            put(f"insights/pref-{k}.md", t["clause"] + ".", type="Insight")
            put(f"insights/pref-{k}-2.md", " ".join(t["est"]), type="Insight", name=t["head"][3:])
            m.archive_files |= {f"insights/pref-{k}.md", f"insights/pref-{k}-2.md"}
        put(f"insights/{k}-para.md", t["para"][0], type="Insight")
        m.para_files.add(f"insights/{k}-para.md")
        # dense memory A: one stating sentence, a near miss, a compound, residue
        a = f"projects/weekly-notes-{k}.md"
        unrel = rng.choice(UNRELATED_CLAUSES)
        compound = f"{t['clause']}, and {unrel}."
        near = t["near"].format(name=name.split()[0])
        stating = rng.choice([t["est"][1], t["infl"], t["one"]])
        sents = rng.sample(FILLER, rng.randint(7, 11))
        for s in (stating, near, compound):
            sents.insert(rng.randint(0, len(sents)), s)
        para = " ".join(sents)
        if rng.random() < 0.5:
            para = textwrap.fill(para, 72)  # hard-wrapped: sentences across lines
        body = (f"# Weekly notes {i}\n\n{para}\n\n{t['head']}\n\n| slot | what |\n|---|---|\n{t['row']}\n\n"
                f"```\n{t['code']}\n```\n\nNothing else this week.")
        put(a, body, type="ProjectSnapshot", tags=[t["head"][3:].lower()])
        m.strike_pos += [(a, stating), (a, t["clause"])]
        m.near.append((a, near))
        m.compound_unrel.append((a, unrel))
        for text in (t["head"], t["row"], t["code"], t["head"][3:].lower()):
            m.residue.append((a, text, req))
        # dense memory B: inflected form, a paraphrase sentence, a compound the other way round
        b = f"projects/journal-{k}.md"
        unrel2 = rng.choice([u for u in UNRELATED_CLAUSES if u != unrel])
        back = f"{unrel2[0].upper()}{unrel2[1:]}, and {t['clause'][0]}{t['clause'][1:]}."
        sents = rng.sample(FILLER, rng.randint(6, 10))
        for s in (t["infl"] if stating != t["infl"] else t["one"], t["para"][1], back):
            sents.insert(rng.randint(0, len(sents)), s)
        lines = [f"- {s}" if j % 4 == 3 else s for j, s in enumerate(sents)]
        put(b, "Journal.\n\n" + "\n".join(lines[:len(lines) // 2]) + "\n\n" + " ".join(lines[len(lines) // 2:]),
            type="ProjectSnapshot")
        m.strike_pos += [(b, t["infl"] if stating != t["infl"] else t["one"]), (b, t["clause"])]
        m.para_sents.append((b, t["para"][1]))
        m.compound_unrel.append((b, unrel2))
        # someone else's memory stating the same thing, and distractors
        p = f"people/{_slug(name)}.md"
        put(p, f"# {name}\n\nColleague from the platform team. {t['est'][0]}", type="PersonMemory")
        m.near.append((p, t["est"][0]))
        m.distractors.add(p)
        for j, d in enumerate(t["dis"]):
            rel = f"projects/{k}-venue-{j}.md"
            put(rel, d, type="ProjectSnapshot")
            m.distractors.add(rel)
    for i in range(fillers):
        sents = rng.sample(FILLER, rng.randint(2, 9))
        put(f"research/note-{i:03d}.md", " ".join(sents), type="Insight")
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
    env = {"GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b.invalid", "GIT_COMMITTER_NAME": "b",
           "GIT_COMMITTER_EMAIL": "b@b.invalid", "PATH": "/usr/bin:/bin"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "planted store"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, env=env, capture_output=True)
