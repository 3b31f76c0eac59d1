"""The voices planted store (issue 39): every mention of a preference planted in a voice and
recorded in a manifest with its voice and kind, so a run is scored from the files alone.

A store per set (templates_dev.py or templates_test.py): a profile memory naming the user,
per preference an establishing memory, a memory about it, a paraphrase memory, two busy
memories (the full sentence, both compounds, an inflected mention, a paraphrase sentence, a
partial mention), a memory about something else with one sentence carrying a word, the
labelled negatives, and filler notes; about 300 memories in a real git repository. File
names say nothing about the preference (a path is no evidence).
"""

from __future__ import annotations

import importlib
import random
import re
import subprocess
import textwrap
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType

import yaml

SETS = ("dev", "test")
VOICES = ("first person", "they", "the user", "name", "subjectless", "transcript", "heading or field")
# what a careful person wants done with each kind of mention
ARCHIVE_KINDS = ("establishing", "about", "paraphrase memory")  # retire the memory
STRIKE_KINDS = (
    "busy sentence",
    "compound, preference first",
    "compound, preference last",
    "inflected",
    "paraphrase sentence",
)  # strike the carrying sentence or clause only
CALL_KINDS = ("partial", "aside")  # a person's call; an aside's memory is never archived whole
PARAPHRASE_KINDS = ("paraphrase memory", "paraphrase sentence")  # proposed, a person decides
KINDS = ARCHIVE_KINDS + STRIKE_KINDS + CALL_KINDS
# the slots a voice is chosen for (partial and aside take the voice their text allows)
_SLOTS = ("establishing", "about", "busy sentence", "compound, preference first", "compound, preference last")
_SLOTS += ("inflected", "paraphrase memory", "paraphrase sentence", "partial")


@dataclass(frozen=True)
class Mention:
    """One labelled mention: what carries it (sentences, a heading or a field value) and, for
    a compound or an aside, what must stay live beside it."""

    req: str
    path: str
    kind: str
    voice: str
    texts: tuple[str, ...]
    keep: tuple[str, ...] = ()
    where: str = "body"  # body | field (a frontmatter value) | heading

    @property
    def positive(self) -> bool:
        return self.kind not in CALL_KINDS


@dataclass(frozen=True)
class Negative:
    req: str
    path: str
    why: str
    text: str


@dataclass
class Manifest:
    set: str
    user: str
    mentions: list[Mention] = field(default_factory=list)
    negatives: list[Negative] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    pref_of: dict[str, str] = field(default_factory=dict)
    queries: list[tuple[str, str, str]] = field(default_factory=list)  # (request, kind, query)
    holders: set[str] = field(default_factory=set)  # busy, aside and profile memories: other facts beside mentions
    profile: str = ""
    files: int = 0

    def archive_files(self, req: str | None = None) -> dict[str, str]:
        """path -> request, for memories to retire whole."""
        return {m.path: m.req for m in self.mentions if m.kind in ARCHIVE_KINDS and (req is None or m.req == req)}

    def at(self, path: str, req: str | None = None) -> list[Mention]:
        return [m for m in self.mentions if m.path == path and (req is None or m.req == req)]


def module(name: str) -> ModuleType:
    return importlib.import_module(f"{__package__}.templates_{name}")


_VERB = re.compile(r"\{([^|{}]*)\|([^|{}]*)\}")


class Voice:
    """Renders a template sentence in one voice."""

    def __init__(self, profile: dict, rng: random.Random) -> None:
        self.profile, self.rng = profile, rng

    def subject(self, voice: str) -> str:
        if voice == "they":
            return "They"
        if voice == "the user":
            return self.rng.choice(("The user", "User"))
        if voice == "name":
            return self.rng.choice((self.profile["first"], self.profile["first"], self.profile["name"]))
        if voice in ("subjectless", "heading or field"):
            return ""
        return "I"  # first person, and the user's own line in a transcript

    def render(self, text: str, voice: str, subject: str | None = None) -> str:
        plural = voice in ("first person", "they", "transcript")
        my = {"first person": "my", "transcript": "my", "they": "their", "the user": "their"}.get(voice, "the")
        if voice == "name":
            my = self.profile["possessive"]
        out = text.replace("{S}", self.subject(voice) if subject is None else subject).replace("{my}", my)
        out = " ".join(_VERB.sub(lambda m: m.group(1) if plural else m.group(2), out).split())
        out = out.replace(" ,", ",")
        if voice == "heading or field":
            return (out[:1].lower() + out[1:]).rstrip(".")
        return out[:1].upper() + out[1:]


def _file(meta: dict, body: str) -> str:
    return f"---\n{yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)}---\n\n{body.strip()}\n"


def build(root: Path, seed: int, templates_set: str = "dev", fillers: int | None = None) -> Manifest:
    t_mod = module(templates_set)
    rng = random.Random(seed)
    prof = t_mod.PROFILE
    voice = Voice(prof, rng)
    root.mkdir(parents=True)
    m = Manifest(set=templates_set, user=prof["name"], profile=prof["path"])
    files: dict[str, tuple[dict, str]] = {}
    diary = t_mod.DIARY
    hour = [0]
    numbers = list(range(1000))
    rng.shuffle(numbers)

    def name(cat: str) -> str:
        return f"{cat}/note-{numbers.pop():03d}.md"

    def put(rel: str, body: str, **meta: object) -> None:
        hour[0] += 5
        created = (datetime(2031, 1, 1, tzinfo=UTC) + timedelta(hours=hour[0])).isoformat()
        cat = rel.split("/")[0]
        files[rel] = ({"id": f"{cat}-{Path(rel).stem}", "category": cat, "created_at": created, **meta}, body)

    def said(text: str) -> str:
        return f"User: {text}\nAssistant: {rng.choice(t_mod.ASSISTANT)}"

    # voices: each slot of each preference gets the least used voice its text allows
    used: Counter[str] = Counter()
    per_slot: Counter[tuple[str, str]] = Counter()

    def pick(slot: str, has_subject: bool) -> str:
        allowed = VOICES if has_subject else ("subjectless", "transcript", "heading or field")
        if slot == "partial":
            allowed = tuple(v for v in allowed if v != "heading or field")
        best = min(allowed, key=lambda v: (used[v] + per_slot[(slot, v)], rng.random()))
        if slot != "partial":  # not a labelled mention: it does not count toward the balance
            used[best] += 1
        per_slot[(slot, best)] += 1
        return best

    meta = {k: v for k, v in prof["meta"].items()}
    put(prof["path"], prof["body"], **meta)
    m.holders.add(prof["path"])
    unrelated = t_mod.UNRELATED[:]
    rng.shuffle(unrelated)
    order = list(enumerate(t_mod.T))
    for i, t in order:
        req = f"insights/forget-{i:02d}.md"
        m.requests.append(req)
        m.pref_of[req] = t["pref"]
        m.queries += [(req, "preference", t["pref"]), (req, "topic", t["topic"]), (req, "question", t["question"])]
        clause = "{S} " + t["vp"]

        def mention(
            path: str, kind: str, v: str, texts: list[str], keep: tuple[str, ...] = (), where: str = "body", req=req
        ) -> None:
            m.mentions.append(Mention(req, path, kind, v, tuple(texts), keep, where))

        # the establishing one-liner
        p, v = name("insights"), pick("establishing", True)
        if v == "heading or field":
            put(p, f"# {t['title']}", type="Insight", summary=voice.render(clause, v))
            mention(p, "establishing", v, [t["title"]], where="heading")
        else:
            s = voice.render(clause + ".", v)
            put(p, said(s) if v == "transcript" else s, type="Insight")
            mention(p, "establishing", v, [s])
        # the memory about it
        p, v = name("insights"), pick("about", True)
        sents = [voice.render(s, v) for s in t["about"]]
        if v == "heading or field":
            put(p, f"# {t['title']}\n\n" + "\n".join(f"- {s}" for s in sents), type="Insight", name=t["title"])
        elif v == "transcript":
            put(p, "\n".join(said(s) for s in sents), type="Insight", name=t["title"])
        else:
            put(p, " ".join(sents), type="Insight", name=t["title"])
        mention(p, "about", v, sents)
        # a paraphrase memory
        p, v = name("insights"), pick("paraphrase memory", True)
        s = voice.render(t["para"][0], v)
        if v == "heading or field":
            put(p, f"# {t['para_title']}", type="Insight", summary=s)
            mention(p, "paraphrase memory", v, [t["para_title"]], where="heading")
        else:
            put(p, said(s) if v == "transcript" else s, type="Insight")
            mention(p, "paraphrase memory", v, [s])

        # busy memories: planted sentences among everyday lines; a heading voice goes to `summary:`
        def busy(slots: list[tuple[str, str, str, tuple[str, ...]]], title: str, listed: bool) -> str:
            """slots: (kind, voice, rendered sentence, what must stay); returns the path."""
            path = name("projects")
            blocks: list[str] = rng.sample(diary, rng.randint(5, 8))
            summary = [s.rstrip(".") for s in rng.sample(diary, 1)]
            planted = []
            for _kind, v, text, _keep in slots:
                if v == "heading or field":
                    summary.insert(rng.randint(0, len(summary)), text)
                    continue
                block = said(text) if v == "transcript" else text
                at = rng.randint(0, len(blocks))
                blocks.insert(at, block)
                planted.append(block)
            paragraphs: list[str] = []
            run: list[str] = []
            for j, b in enumerate(blocks):
                if b.startswith("User: "):
                    paragraphs += [" ".join(run)] if run else []
                    paragraphs.append(b)
                    run = []
                elif listed and j % 3 == 2:
                    paragraphs += [" ".join(run)] if run else []
                    paragraphs.append(f"- {b}")
                    run = []
                else:
                    run.append(b)
            paragraphs += [" ".join(run)] if run else []
            if rng.random() < 0.5:
                paragraphs = [textwrap.fill(x, 72) if not x.startswith(("User: ", "- ")) else x for x in paragraphs]
            put(path, f"# {title}\n\n" + "\n\n".join(paragraphs), type="ProjectSnapshot", summary="; ".join(summary))
            m.holders.add(path)
            return path

        def compound(first: bool, other: str, t=t) -> tuple[str, str, str, str]:
            """(voice, sentence, the preference clause, the other fact) for a compound."""
            v = pick("compound, preference first" if first else "compound, preference last", True)
            subj = voice.subject(v)
            join = rng.choice((" and ", ", and "))
            head = voice.render("{S} " + (t["vp"] if first else other), v, subject=subj)
            tail_raw = other if first else t["vp"]
            again = not first and v not in ("subjectless", "heading or field") and rng.random() < 0.4
            tail = voice.render(("{S} " if again else "") + tail_raw, v, subject=subj if again else "")
            if not again or subj in ("They", "The user"):
                tail = tail[:1].lower() + tail[1:]
            sentence = head + join + tail + ("" if v == "heading or field" else ".")
            if v == "heading or field":
                head = head[:1].lower() + head[1:]
            return (v, sentence, head, tail) if first else (v, sentence, tail, head)

        others = t.get("unrelated") or [unrelated[i % len(unrelated)], unrelated[(i + 7) % len(unrelated)]]
        v_full = pick("busy sentence", True)
        full = voice.render(t["full"], v_full)
        va, comp_a, clause_a, other_a = compound(True, others[0])
        v_part = pick("partial", True) if "{S}" in t["partial"] else "impersonal"
        part = voice.render(t["partial"], v_part)
        a = busy(
            [("busy sentence", v_full, full, ()), ("compound", va, comp_a, ()), ("partial", v_part, part, ())],
            f"Notes for the week of {rng.randint(1, 28)} {rng.choice(['March', 'May', 'October'])}",
            listed=False,
        )
        where = {"heading or field": "field"}
        mention(a, "busy sentence", v_full, [full], where=where.get(v_full, "body"))
        mention(a, "compound, preference first", va, [clause_a], (other_a,), where=where.get(va, "body"))
        if v_part != "heading or field":
            mention(a, "partial", v_part, [part])
        v_infl = pick("inflected", "{S}" in t["infl"])
        infl = voice.render(t["infl"], v_infl)
        v_para = pick("paraphrase sentence", True)
        para = voice.render(t["para"][1], v_para)
        vb, comp_b, clause_b, other_b = compound(False, others[1])
        b = busy(
            [("inflected", v_infl, infl, ()), ("paraphrase sentence", v_para, para, ()), ("compound", vb, comp_b, ())],
            "Diary",
            listed=True,
        )
        mention(b, "inflected", v_infl, [infl], where=where.get(v_infl, "body"))
        mention(b, "paraphrase sentence", v_para, [para], where=where.get(v_para, "body"))
        mention(b, "compound, preference last", vb, [clause_b], (other_b,), where=where.get(vb, "body"))
        # a memory about something else: only the marked sentence carries a word of the preference
        p = name("daily")
        sents = [s.lstrip("*") for s in t["aside"]]
        carrying = next(s.lstrip("*") for s in t["aside"] if s.startswith("*"))
        put(p, " ".join(sents), type="Insight")
        mention(p, "aside", "impersonal", [carrying], tuple(s for s in sents if s != carrying))
        m.holders.add(p)
        # the negatives: never touched
        for why, text in t["neg"]:
            who = re.match(r"([A-ZÀ-ÞŁŚŻŹĆŃØÆÅÇŞĞÖÜÄ][\w'-]+ [A-ZÀ-ÞŁŚŻŹĆŃØÆÅÇŞĞÖÜÄ][\w'-]+) ", text)
            if why == "third party" and who:
                p = f"people/{'-'.join(who.group(1).lower().split())}.md"
                body = f"# {who.group(1)}\n\nContact details are in the phone. {text}"
                put(p, body, type="PersonMemory")
            else:
                p = name(rng.choice(("research", "projects", "daily")))
                around = rng.sample(diary, rng.randint(0, 2))
                around.insert(rng.randint(0, len(around)), text)
                put(p, " ".join(around), type="Insight")
            m.negatives.append(Negative(req, p, why, text))
    planted = len(files) + len(m.requests)
    for _ in range(max(0, (300 - planted) if fillers is None else fillers)):
        put(name("research"), " ".join(rng.sample(diary, rng.randint(2, 6))), type="Insight")
    hour[0] += 24 * 60
    for req in m.requests:
        put(req, f"Please forget that {m.pref_of[req]}.", type="Insight")
    _commit(root, files)
    m.files = len(files)
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


def census(m: Manifest) -> str:
    """How the labelled mentions spread over voices and kinds."""
    pos = [x for x in m.mentions if x.positive]
    lines = [
        f"{m.files} memories, {len(m.requests)} requests, {len(pos)} labelled mentions, {len(m.negatives)} negatives"
    ]
    for v, n in Counter(x.voice for x in pos).most_common():
        lines.append(f"  {v}: {n} ({n / len(pos):.0%})")
    for k, n in Counter(x.kind for x in m.mentions).items():
        lines.append(f"  {k}: {n}")
    for w, n in Counter(x.why for x in m.negatives).most_common():
        lines.append(f"  negative, {w}: {n}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        for s in sys.argv[1:] or SETS:
            print(s, census(build(Path(tmp) / s, 1, s)))
