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
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from .ops import lifecycle
from .ops.apply import apply
from .storage.store import Store
from .text.detect import detect_forget_request
from .undo.withdraw import apply_withdraw, plan_withdraw

EPOCH = datetime(2031, 4, 1, 9, 0, tzinfo=UTC)
MOONRISE = (
    "Moonrise Fair 2031 judging pipeline closeout. Handed the judging workflow to Wilhelmina Cragg after the "
    "June stage flood. Versions frozen at release candidate seven; ingest queue drained and verified against the "
    "submission manifest. Outstanding recovery items: rebuild thumbnail cache, reconcile duplicate performer "
    "registrations, restore the staging gallery snapshots, audit volunteer access grants. Flood log migrated to "
    "the tracker with twelve linked entries. Next steps: schedule retrospective, publish judging rubric, confirm "
    "pavilion contract renewal, decommission obsolete submission portals, rotate the shared credentials, document "
    "the escalation path Wilhelmina proposed during cleanup."
)

# (path, days after EPOCH, frontmatter extras, body)
CURATED: list[tuple[str, int, dict, str]] = [
    (
        "people/alice-chen.md",
        0,
        {"type": "PersonMemory", "core": True},
        "# Alice Chen\n\nProduct lead at Acme. Prefers async updates and short docs with a clear recommendation.\n\n"
        "- Timezone: US/Eastern\n- Best reached mornings before standup",
    ),
    (
        "people/bob-martinez.md",
        1,
        {"type": "PersonMemory"},
        "# Bob Martinez\n\nBackend engineer. Owns the Stripe integration and the webhook handlers.\n\n"
        "- Prefers TypeScript strict mode\n- Strong opinions on typed error unions",
    ),
    ("projects/moonrise-closeout.md", 3, {"type": "ProjectSnapshot"}, MOONRISE),
    (
        "people/wilhelmina-fair.md",
        4,
        {"type": "PersonMemory"},
        "Met Wilhelmina Cragg at the fair; she judges the Moonrise panel.",
    ),
    (
        "insights/pref-sneakers.md",
        5,
        {"type": "Insight"},
        "I collect vintage sneakers and track new sneaker drops every week.",
    ),
    ("insights/pref-tea.md", 6, {"type": "Insight"}, "I drink oolong tea every morning before work."),
    (
        "projects/tea-club-status.md",
        7,
        {"type": "ProjectSnapshot", "update_policy": "replace"},
        "Tea club status, regenerated weekly by the club bot. Hosting rotates monthly between members; the "
        "calendar lives in the shared spreadsheet. My oolong tea order keeps the pantry stocked. Budget review "
        "happens each quarter with receipts uploaded to the treasurer folder. Next tasting is scheduled for May at "
        "the community hall, featuring Darjeeling flights, Yunnan blacks, roasted barley, and a cold brew "
        "experiment. Volunteers handle cups, kettles, labels, cleanup and the newsletter.",
    ),
    (
        "projects/harbor-board.md",
        8,
        {"type": "ProjectSnapshot"},
        "## Ottoline Marsh review\n\nThe harbor board met on Tuesday to review dredging bids, mooring fees, the "
        "lighthouse restoration grant, ferry timetable changes, insurance renewals, volunteer training, storm "
        "drainage repairs, the fish market lease, kayak rental permits, and signage for the new boardwalk. "
        "Attendance was strong and public comments focused on parking near the marina.\n\n| role | name |\n|---|---|\n"
        '| treasurer | Ottoline Marsh |\n\n```\nowner = "Ottoline Marsh"\n```\n\n'
        "Minutes were approved without changes.",
    ),
    (
        "people/ottoline-marsh.md",
        9,
        {"type": "PersonMemory"},
        "Ottoline Marsh renewed the pavilion contract last spring and chairs the harbor board finance committee.",
    ),
    (
        "people/me-profile.md",
        10,
        {"type": "PersonMemory", "core": True},
        "Profile notes for the assistant. I live in Berlin and work at Stripe. I bike to the office most days, "
        "read science fiction on weekends, volunteer at the community garden, cook Sichuan food for friends, "
        "and keep a running list of museums to visit. Allergic to cats, fine with dogs. Favourite composers are "
        "Sibelius and Hildegard. Learning Portuguese with a tutor on Thursdays. Owns a cargo bike, a sourdough "
        "starter named Gustav, and too many notebooks. Dislikes phone calls before noon.",
    ),
    ("insights/pref-poker.md", 11, {"type": "Insight"}, "I play poker with friends on Fridays."),
    (
        "projects/weekly-plan.md",
        12,
        {"type": "ProjectSnapshot"},
        "Weekly plan. Monday is planning, Tuesday reviews, Wednesday deep work. Fridays are poker nights with "
        "friends. Saturday is the farmers market and a long run.",
    ),
    ("insights/pref-gym.md", 13, {"type": "Insight"}, "My gym schedule is Monday, Wednesday and Friday at 7am."),
    ("decisions/db-choice-v1.md", 14, {"type": "Decision"}, "Use SQLite for the prototype datastore."),
    ("decisions/db-choice-v2.md", 18, {"type": "Decision"}, "Move the datastore to Postgres for concurrency."),
    ("decisions/db-choice-v3.md", 22, {"type": "Decision"}, "Use managed Postgres with read replicas."),
    ("decisions/db-choice-v4.md", 26, {"type": "Decision"}, "Use managed Postgres; replicas only for reporting."),
    (
        "daily/2031-05-02.md",
        31,
        {"type": "Insight"},
        "Session notes. Talked through the harbor board minutes and the Moonrise retrospective.",
    ),
    # requests come last so the resolution boundary admits everything above
    ("insights/forget-poker.md", 40, {"type": "Insight"}, "Please forget that I play poker on Fridays."),
    ("insights/forget-gym.md", 41, {"type": "Insight"}, "Please forget my gym schedule."),
    ("insights/forget-w.md", 44, {"type": "Insight"}, "Please forget that I know Wilhelmina Cragg."),
    ("insights/forget-sneakers.md", 45, {"type": "Insight"}, "Please forget that I collect vintage sneakers."),
    ("insights/forget-tea.md", 46, {"type": "Insight"}, "Could you forget my oolong tea habit?"),
    ("insights/forget-ottoline.md", 47, {"type": "Insight"}, "Please forget that I hired Ottoline Marsh."),
    ("insights/forget-berlin.md", 48, {"type": "Insight"}, "Please forget that I live in Berlin."),
]

CONFIG = {
    "consolidation": {
        "forget": {
            "enabled": True,
            "search_k": 10,
            "min_shared_words": 1,
            "max_targets": 2,
            "min_target_coverage": 0.05,
        }
    },
    "git": {"auto_commit": True, "commit_prefix": "palinode"},
}

_WORDS = [
    "account",
    "agenda",
    "anchor",
    "archive",
    "audit",
    "backlog",
    "balance",
    "basket",
    "beacon",
    "benchmark",
    "border",
    "bridge",
    "budget",
    "cabinet",
    "calendar",
    "canvas",
    "capture",
    "carbon",
    "castle",
    "channel",
    "chapter",
    "circuit",
    "climate",
    "cluster",
    "coastal",
    "column",
    "comfort",
    "compass",
    "contract",
    "corridor",
    "cotton",
    "council",
    "crystal",
    "culture",
    "current",
    "dataset",
    "debate",
    "delivery",
    "desert",
    "diagram",
    "digital",
    "district",
    "draft",
    "editor",
    "element",
    "engine",
    "estate",
    "export",
    "fabric",
    "factor",
    "festival",
    "fiber",
    "figure",
    "filter",
    "forest",
    "format",
    "fortune",
    "frame",
    "garden",
    "gateway",
    "glacier",
    "gravity",
    "harbor",
    "harvest",
    "horizon",
    "inventory",
    "island",
    "journal",
    "kernel",
    "kettle",
    "ladder",
    "lantern",
    "launch",
    "ledger",
    "library",
    "license",
    "lighthouse",
    "margin",
    "market",
    "meadow",
    "memory",
    "mentor",
    "method",
    "meter",
    "mirror",
    "module",
    "monitor",
    "mountain",
    "network",
    "notebook",
    "orbit",
    "orchard",
    "outline",
    "palette",
    "parcel",
    "pattern",
    "pavilion",
    "pepper",
    "pilot",
    "planet",
    "plaza",
    "portal",
    "prairie",
    "profile",
    "prompt",
    "protocol",
    "quarry",
    "radius",
    "ranch",
    "record",
    "region",
    "report",
    "ridge",
    "rocket",
    "routine",
    "saddle",
    "sample",
    "schedule",
    "script",
    "season",
    "sector",
    "signal",
    "silver",
    "sketch",
    "socket",
    "solar",
    "spring",
    "station",
    "stencil",
    "summit",
    "supply",
    "surface",
    "survey",
    "switch",
    "symbol",
    "talent",
    "target",
    "teacher",
    "temple",
    "theory",
    "thread",
    "timber",
    "token",
    "tower",
    "tractor",
    "trail",
    "transit",
    "tunnel",
    "update",
    "valley",
    "vector",
    "velvet",
    "venture",
    "vessel",
    "village",
    "voltage",
    "voyage",
    "wagon",
    "window",
    "winter",
    "worker",
    "yard",
]
_NAMES = (
    "Avery Brook",
    "Casey Dunmore",
    "Devon Ashby",
    "Emery Hale",
    "Finley Oakes",
    "Harper Voss",
    "Jordan Pike",
    "Kendall Marsh",
    "Logan Frey",
    "Morgan Tull",
    "Parker Quill",
    "Quinn Sorrel",
    "Reese Calder",
    "Sawyer Lund",
)
_CATEGORIES = ("people", "projects", "decisions", "insights", "research")


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


class _Git:
    def __init__(self, root: Path):
        self.root = root

    def __call__(self, *args: str, when: datetime | None = None) -> None:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        if when is not None:
            stamp = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
            env.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
        subprocess.run(["git", "-C", str(self.root), *args], check=True, capture_output=True, env=env)


@contextmanager
def _dated(when: datetime) -> Iterator[None]:
    """Commits made by the core inside this block carry ``when`` as their date."""
    stamp = when.strftime("%Y-%m-%dT%H:%M:%S+00:00")
    saved = {k: os.environ.get(k) for k in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE")}
    os.environ.update(GIT_AUTHOR_DATE=stamp, GIT_COMMITTER_DATE=stamp)
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

    for rel, days, extras, body in CURATED:
        when = EPOCH + timedelta(days=days, hours=rng.randint(0, 8))
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_render(_frontmatter(rel, when, extras), body), encoding="utf-8")
        git("add", rel)
        git("commit", "-q", "-m", f"palinode auto-save: {rel}", when=when)

    def clock_at(days: int) -> tuple[datetime, Callable[[], datetime]]:
        when = EPOCH + timedelta(days=days, hours=10)
        return when, (lambda: when)

    # the three-hop chain v1 -> v2 -> v3 -> v4, retired over the weeks it was decided
    for old, new, days in (("v1", "v2", 18), ("v2", "v3", 22), ("v3", "v4", 26)):
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

    # requests Palinode already applied itself: archive and strike, Palinode's subjects, no ledger
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

    # a request applied, then withdrawn
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
    when, clock = clock_at(43)
    store = Store(root, clock=clock)
    with _dated(when):
        apply_withdraw(store, plan_withdraw(store, gym.rel, store.scan().memories))
    scan = Store(root).scan()
    return {"root": str(root), **scan.counts()}
