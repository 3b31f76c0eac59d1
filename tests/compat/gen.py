"""Seeded generator of small Palinode stores for the differential suite.

A case is a target memory (a body and a frontmatter drawn from the shapes real
stores hold, including hostile and odd ones), a few neighbours linked by
``backed_by``, sometimes an existing history sibling, the pref to retract, and
the operation. Every draw comes from ``random.Random(seed)``: a seed names a
case for good.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field

import yaml

PREFS = [
    ("I know Wilhelmina Cragg", ["Wilhelmina", "Cragg", "Wilhelmina Cragg"]),
    ("my address on Larkspur Lane", ["Larkspur Lane", "Larkspur", "address on Larkspur"]),
    ("I love Zanzibar coffee", ["Zanzibar", "Zanzibar coffee", "coffee beans from Zanzibar"]),
    ("I hate cilantro soup", ["cilantro soup", "soup with cilantro", "cilantro and soup"]),
    ("my sister Odalys", ["Odalys", "sister Odalys"]),
]
FILLER = ("release pipeline", "ingest queue", "judging rubric", "pavilion contract", "volunteer grants",
          "thumbnail cache", "staging gallery", "flood log", "retrospective", "escalation path",
          "Café Zoë", "naïve résumé", "日本語メモ", "“smart quotes”", "the U.S. office", "Dr. Petrov",
          "e.g. the backlog", "approx. 3 p.m.", "v2.1 build", "Mr. Hale")
VERBS = ("reviewed", "moved", "handed over", "noted", "confirmed", "archived", "rebuilt", "discussed")


def _sentence(rng: random.Random, mention: str | None) -> str:
    words = [rng.choice(FILLER), rng.choice(VERBS), rng.choice(FILLER)]
    if mention:
        words.insert(rng.randrange(len(words) + 1), mention)
    if rng.random() < 0.15:
        words.append("and " + rng.choice(FILLER))
    text = " ".join(words)
    text = text[0].upper() + text[1:]
    return text + rng.choice((".", ".", ".", "!", "?"))


def _wrap(rng: random.Random, text: str) -> str:
    width = rng.choice((30, 45, 60, 72))
    out, line = [], ""
    for word in text.split(" "):
        if line and len(line) + 1 + len(word) > width:
            out.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    out.append(line)
    return "\n".join(out)


def _mention(rng: random.Random, forms: list[str], p: float = 0.5) -> str | None:
    return rng.choice(forms) if rng.random() < p else None


def _block(rng: random.Random, forms: list[str]) -> str:
    kind = rng.choice(("prose", "prose", "prose", "wrapped", "list", "list", "heading", "fence",
                       "tilde", "table", "quote", "user_strike", "marker", "abbrev", "spaces", "footer",
                       "yaml_fence"))
    if kind in ("prose", "wrapped"):
        text = " ".join(_sentence(rng, _mention(rng, forms)) for _ in range(rng.randint(1, 4)))
        return _wrap(rng, text) if kind == "wrapped" else text
    if kind == "list":
        bullet = rng.choice(("- ", "* ", "  - ", "-   "))
        lines = []
        for _ in range(rng.randint(1, 4)):
            item = _sentence(rng, _mention(rng, forms)).rstrip(".!?")
            if rng.random() < 0.4:
                item += f" <!-- fact:f{rng.randrange(1000):03d} -->"
            if rng.random() < 0.15:
                item += "  "
            lines.append(bullet + item)
        return "\n".join(lines)
    if kind == "heading":
        return f"{'#' * rng.randint(1, 3)} {rng.choice(FILLER)} {_mention(rng, forms) or ''}".rstrip()
    if kind in ("fence", "tilde", "yaml_fence"):
        fence = "```" if kind == "fence" else "~~~"
        info = "yaml" if kind == "yaml_fence" else rng.choice(("", "python", ""))
        inner = _sentence(rng, _mention(rng, forms, 0.7))
        if rng.random() < 0.1:
            return f"{fence}{info}\n{inner}"  # never closed
        return f"{fence}{info}\n{inner}\n{fence}"
    if kind == "table":
        return f"| item | note |\n|---|---|\n| {rng.choice(FILLER)} | {_mention(rng, forms, 0.7) or 'x'} |"
    if kind == "quote":
        return "> " + _sentence(rng, _mention(rng, forms))
    if kind == "user_strike":
        return f"~~{rng.choice(FILLER)}~~ {_sentence(rng, _mention(rng, forms, 0.8))} {_sentence(rng, None)}"
    if kind == "marker":
        return f"~~{_sentence(rng, None)}~~ [RETRACTED 2025-05-0{rng.randint(1, 9)} r:deadbeef]. " \
               + _sentence(rng, _mention(rng, forms))
    if kind == "abbrev":
        return f"Dr. Petrov met Mr. Hale e.g. at 3 p.m. {_sentence(rng, _mention(rng, forms, 0.8))}"
    if kind == "spaces":
        return " " * rng.choice((4, 300)) + _sentence(rng, _mention(rng, forms, 0.8))
    return "## See also\n<!-- palinode-auto-footer -->\n- " + _sentence(rng, _mention(rng, forms, 0.5))


def body(rng: random.Random, forms: list[str]) -> str:
    blocks = [_block(rng, forms) for _ in range(rng.randint(1, 5))]
    if not any(f in "".join(blocks) for f in forms) and rng.random() < 0.8:
        blocks.insert(0, _sentence(rng, rng.choice(forms)))
    return "\n\n".join(blocks)


@dataclass
class Case:
    seed: int
    op: str  # archive | retract | restore | unretract
    target: str
    pref: str
    files: dict[str, str] = field(default_factory=dict)
    tags: set[str] = field(default_factory=set)


def _meta(rng: random.Random, case: Case, pref: str, others: list[str]) -> dict:
    meta: dict = {}
    if rng.random() < 0.7:
        meta["id"] = f"notes-{case.seed}"
    meta["category"] = rng.choice(("notes", "projects", "insights"))
    if rng.random() < 0.5:
        meta["created_at"] = "2025-05-01T10:00:00+00:00"
    status = rng.choice((None, None, "active", "archived", "archived", "Archived", "ARCHIVED"))
    if status:
        meta["status"] = status
        if status != "archived":
            case.tags.add("status-variant" if status.lower() == "archived" else "status-active")
    if status == "archived" and rng.random() < 0.4:
        meta["superseded_by"] = "insights/newer.md"
    policy = rng.choice((None, None, None, "replace", "Replace", "append"))
    if policy:
        meta["update_policy"] = policy
    prefs = rng.choice((None, None, "list-other", "list-this", "empty", "scalar"))
    if prefs == "list-other":
        meta["retracted_prefs"] = ["i love zanzibar coffee" if "Zanzibar" not in pref else "i know wilhelmina cragg"]
    elif prefs == "list-this":
        meta["retracted_prefs"] = [" ".join(pref.lower().split())]
    elif prefs == "empty":
        meta["retracted_prefs"] = []
    elif prefs == "scalar":
        meta["retracted_prefs"] = " ".join(pref.lower().split())
    if others and rng.random() < 0.5:
        meta["backed_by"] = [o[:-3] for o in rng.sample(others, rng.randint(1, len(others)))]
        if rng.random() < 0.3:
            meta["backed_by"].append("insights/gone")  # a source that is missing
        if rng.random() < 0.3:
            meta["stale_backing"] = [{"ref": meta["backed_by"][0], "op": "archive",
                                      "at": "2025-05-01T00:00:00+00:00"}]
    elif others and rng.random() < 0.2:
        meta["backed_by"] = others[0][:-3] + ".md"  # a scalar, spelled with .md
    if rng.random() < 0.3:
        meta["tags"] = ["alpha", "beta"]
    if rng.random() < 0.2:
        meta["title"] = rng.choice(FILLER)
    return meta


def _render_meta(rng: random.Random, meta: dict, case: Case) -> str:
    """Frontmatter text: canonical dump, or a hand-written variant."""
    style = rng.choice(("canonical", "canonical", "hand", "hand", "empty_braces", "none", "odd"))
    if style == "none":
        case.tags.add("no-frontmatter")
        return ""
    if style == "empty_braces":
        case.tags.add("empty-braces")
        return "---\n{}\n---\n\n"
    if style == "canonical":
        return "---\n" + yaml.safe_dump(meta, default_flow_style=False, allow_unicode=True) + "---\n\n"
    keys = list(meta)
    rng.shuffle(keys)
    lines = []
    for key in keys:
        value = meta[key]
        if isinstance(value, list) and not all(isinstance(v, str) for v in value):
            if rng.random() < 0.5:
                lines.append(f"{key}: " + yaml.safe_dump(value, default_flow_style=True, allow_unicode=True,
                                                         sort_keys=False, width=10**6).strip())
            else:
                lines.append(yaml.safe_dump({key: value}, allow_unicode=True, sort_keys=False).rstrip("\n"))
        elif isinstance(value, list):
            if not value:
                lines.append(f"{key}: []")
            elif rng.random() < 0.5:
                lines.append(f"{key}: [{', '.join(value)}]")
            else:
                lines.append(f"{key}:\n" + "\n".join(f"  - {v}" for v in value))
        elif rng.random() < 0.3:
            lines.append(f'{key}: "{value}"')
        else:
            lines.append(f"{key}: {value}")
    if rng.random() < 0.3:
        lines.insert(rng.randrange(len(lines) + 1), "# a hand-written comment")
    fm = "\n".join(lines)
    if style == "hand":
        case.tags.add("hand-frontmatter")
        return f"---\n{fm}\n---\n\n"
    opener = rng.choice(("--- ", "----", "\n---", "  \n---", "\ufeff---", "---\n- a\n- b\n---", "unclosed"))
    case.tags.add({"--- ": "opener-trailing-space", "----": "opener-four-dashes", "\n---": "opener-blank-line",
                   "  \n---": "opener-blank-line", "\ufeff---": "bom", "unclosed": "unclosed-frontmatter",
                   "---\n- a\n- b\n---": "list-frontmatter"}[opener])
    if opener == "unclosed":
        return f"---\n{fm}\n\n"
    if opener.startswith("---\n- a"):
        return opener + "\n\n"
    return f"{opener}\n{fm}\n---\n\n"


def make_case(seed: int) -> Case:
    rng = random.Random(seed)
    pref, forms = rng.choice(PREFS)
    op = rng.choice(("archive", "archive", "retract", "retract", "retract"))
    case = Case(seed, op, f"notes/m{seed}.md", pref)
    others = [f"insights/o{seed}-{i}.md" for i in range(rng.choice((0, 0, 1, 2, 3)))]
    for i, other in enumerate(others):
        ometa: dict = {"category": "insights"}
        if rng.random() < 0.6:
            ometa["backed_by"] = [case.target[:-3]] if rng.random() < 0.7 else case.target[:-3]
        if rng.random() < 0.3:
            ometa["status"] = "archived"
        if rng.random() < 0.2:
            ometa["stale_backing"] = [{"ref": case.target[:-3], "op": "archive", "at": "2025-05-01T00:00:00+00:00"}]
        case.files[other] = "---\n" + yaml.safe_dump(ometa, allow_unicode=True) + "---\n\n" + _sentence(rng, None) + "\n"
        if "backed_by" in ometa:
            case.tags.add("backed-by-target")
    meta = _meta(rng, case, pref, others)
    text = _render_meta(rng, meta, case) + body(rng, forms)
    ending = rng.choice(("\n", "\n", "\n", "", "\n\n\n"))
    text += ending
    if ending == "":
        case.tags.add("unterminated")
    elif ending == "\n\n\n":
        case.tags.add("trailing-blank")
    if rng.random() < 0.15:
        text = text.replace("\n", "\r\n")
        case.tags.add("crlf")
    case.files[case.target] = text
    history = rng.choice((None, None, None, "canonical", "crlf", "legacy", "unterminated"))
    if history:
        case.tags.add(f"history-{history}")
        entry = "- [2025-05-01 10:00] Archived: old <!-- fact:old -->"
        htext = {"canonical": "---\ncategory: history\ncore: false\nstatus: archived\n---\n\n# History\n\n" + entry + "\n",
                 "crlf": ("---\ncategory: history\ncore: false\nstatus: archived\n---\n\n# History\n\n"
                          + entry + "\n").replace("\n", "\r\n"),
                 "legacy": "# History\n\n" + entry + "\n",
                 "unterminated": "---\ncategory: history\nstatus: archived\n---\n\n" + entry}[history]
        case.files[case.target[:-3] + "-history.md"] = htext
    return case
