"""A deterministic demo store with real, dated git history.

The curated part holds one example of every situation the app is for: a
preference that archives whole, a dense snapshot that gets sentences struck,
mentions in a heading/table/code block (unforgettable), a living
``update_policy: replace`` document, a compound sentence, requests already
applied the way Palinode applies them, one withdrawn, and a three-hop
superseded_by chain. ``size`` adds generated memories of realistic length
(50 to 2,000 words) for benchmarks.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path

import yaml

from ..ops import lifecycle
from ..ops.apply import apply
from ..storage.store import Store
from ..text.detect import detect_forget_request
from ..undo.withdraw import apply_withdraw, plan_withdraw
from .data import _CATEGORIES, _NAMES, _WORDS, CONFIG, CURATED, EPOCH


def _frontmatter(rel: str, created: datetime, extras: dict) -> dict:
    category = rel.split("/")[0]
    stem = rel.rsplit("/", 1)[-1][:-3]
    meta = {
        "id": f"{category}-{stem}",
        "category": category,
        "created_at": created.isoformat(),
        "last_updated": created.isoformat(),
    }
    meta.update(extras)
    return meta


def _render(meta: dict, body: str) -> str:
    dumped = yaml.safe_dump(meta, default_flow_style=False, allow_unicode=True)
    return f"---\n{dumped}---\n\n{body.strip()}\n"


# The demo's one author, whatever the builder's git identity (GIT_AUTHOR_NAME and
# the like win over a repository's user.name): its history, and so each commit id
# the README and the --help examples name, is the same on every build.
_IDENTITY = {
    "GIT_AUTHOR_NAME": "Palinode Demo",
    "GIT_AUTHOR_EMAIL": "demo@palinode.invalid",
    "GIT_COMMITTER_NAME": "Palinode Demo",
    "GIT_COMMITTER_EMAIL": "demo@palinode.invalid",
}


class _Git:
    def __init__(self, root: Path):
        self.root = root

    def __call__(self, *args: str, when: datetime | None = None) -> None:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", **_IDENTITY}
        if when is not None:
            stamp = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
            env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
        if args and args[0] == "commit":
            args = ("commit", "--no-verify", *args[1:])  # the builder's own hooks never reword the demo
        subprocess.run(["git", "-C", str(self.root), *args], check=True, capture_output=True, env=env)


@contextmanager
def _dated(when: datetime) -> Iterator[None]:
    """Commits made by the core inside this block carry ``when`` as their date
    (and the demo's author)."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    saved = {k: os.environ.get(k) for k in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE", *_IDENTITY)}
    os.environ.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp, **_IDENTITY)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _bulk_body(rng: random.Random, index: int) -> tuple[str, str]:
    """A generated memory: log-uniform length between 50 and 2,000 words."""
    target = round(50 * (40 ** rng.random()))
    name = rng.choice(_NAMES)
    topic = f"{rng.choice(_WORDS)} {rng.choice(_WORDS)}"
    lines = [f"# {topic.title()} notes {index}", ""]
    words = 0
    section = 0
    while words < target:
        if words and rng.random() < 0.04:
            section += 1
            lines += ["", f"## Part {section}", ""]
        if rng.random() < 0.3:
            item = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 10)))
            lines.append(f"- {item.capitalize()}.")
            words += len(item.split())
            continue
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(8, 18)))
        if rng.random() < 0.2:
            sentence = f"{name} reviewed the {sentence}"
        lines.append(sentence.capitalize() + ".")
        words += len(sentence.split())
    return topic, "\n".join(lines)


def build_demo_store(root: Path, size: int = 0, seed: int = 7) -> dict:
    """Write the demo store into ``root`` (created; must be empty). Returns counts."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if any(root.iterdir()):
        raise FileExistsError(f"{root} is not empty; the demo store needs an empty folder")
    git = _Git(root)
    git("init", "-q", "-b", "main")
    git("config", "user.name", "Palinode Demo")
    git("config", "user.email", "demo@palinode.invalid")
    git("config", "commit.gpgsign", "false")
    (root / "palinode.config.yaml").write_text(yaml.safe_dump(CONFIG, sort_keys=False), encoding="utf-8")
    git("add", "palinode.config.yaml")
    git("commit", "-q", "-m", "palinode: init store", when=EPOCH - timedelta(days=1))

    rng = random.Random(seed)
    if size:
        for start in range(0, size, 2000):
            day = EPOCH - timedelta(days=60) + timedelta(days=(start // 2000) * 2)
            for i in range(start, min(size, start + 2000)):
                category = _CATEGORIES[i % len(_CATEGORIES)]
                _topic, body = _bulk_body(rng, i)
                rel = f"{category}/gen-{i:06d}.md"
                meta = _frontmatter(rel, day, {"type": "Insight"})
                (root / category).mkdir(exist_ok=True)
                (root / rel).write_text(_render(meta, body), encoding="utf-8")
            git("add", "-A")
            git(
                "commit",
                "-q",
                "-m",
                f"palinode auto-save: {min(size, start + 2000) - start} memories (demo bulk)",
                when=day,
            )

    def save(rel: str, when: datetime, extras: dict, body: str) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(_frontmatter(rel, when, extras), body), encoding="utf-8")
        git("add", rel)
        git("commit", "-q", "-m", f"palinode auto-save: {rel}", when=when)

    def clock_at(days: int) -> tuple[datetime, Callable[[], datetime]]:
        when = EPOCH + timedelta(days=days, hours=10)
        return when, (lambda: when)

    def retire(old: str, new: str, days: int) -> None:
        when, clock = clock_at(days)
        store = Store(root, clock=clock)
        with _dated(when):
            apply(
                store,
                lifecycle.plan_archive(
                    store,
                    f"decisions/db-choice-{old}.md",
                    superseded_by=f"decisions/db-choice-{new}.md",
                    reason="decision revised",
                ),
            )

    def poker_applied() -> None:  # a request Palinode applied itself: archive and strike, its subjects, no ledger
        when, clock = clock_at(40)
        store = Store(root, clock=clock)
        poker = store.load("insights/forget-poker.md")
        pref = detect_forget_request(poker.body) or ""
        with _dated(when):
            apply(
                store,
                lifecycle.plan_archive(
                    store, "insights/pref-poker.md", superseded_by=poker.rel, reason=f'forget request: "{pref}"'
                ),
            )
            apply(store, lifecycle.plan_retract(store, "projects/weekly-plan.md", pref, superseded_by=poker.rel))

    def gym_applied() -> None:  # a request applied, then (gym_withdrawn) withdrawn
        when, clock = clock_at(41)
        store = Store(root, clock=clock)
        gym = store.load("insights/forget-gym.md")
        gym_pref = detect_forget_request(gym.body) or ""
        with _dated(when):
            apply(
                store,
                lifecycle.plan_archive(
                    store, "insights/pref-gym.md", superseded_by=gym.rel, reason=f'forget request: "{gym_pref}"'
                ),
            )

    def gym_withdrawn() -> None:
        when, clock = clock_at(43)
        store = Store(root, clock=clock)
        with _dated(when):
            apply_withdraw(store, plan_withdraw(store, "insights/forget-gym.md", store.scan().memories))

    # Every save and operation in date order, so the history reads as it happened: the store as of a
    # date holds only what was written by then (the three-hop chain v1 -> v2 -> v3 -> v4 is retired
    # over the weeks it was decided, between the saves).
    events: list[tuple[datetime, int, Callable[[], None]]] = []
    for order, (rel, days, extras, body) in enumerate(CURATED):
        when = EPOCH + timedelta(days=days, hours=rng.randint(0, 8))
        events.append((when, order, partial(save, rel, when, extras, body)))
    for order, (old, new, days) in enumerate((("v1", "v2", 18), ("v2", "v3", 22), ("v3", "v4", 26))):
        events.append((clock_at(days)[0], 1000 + order, partial(retire, old, new, days)))
    events += [
        (clock_at(40)[0], 2000, poker_applied),
        (clock_at(41)[0], 2001, gym_applied),
        (clock_at(43)[0], 2002, gym_withdrawn),
    ]
    for _when, _order, event in sorted(events, key=lambda e: (e[0], e[1])):
        event()
    scan = Store(root).scan()
    return {"root": str(root), **scan.counts()}
