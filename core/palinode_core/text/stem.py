"""Word stems for lexical evidence: the Snowball English stemmer (Porter2,
maintained, through PyStemmer) on whole words of any script (text.letters),
so "collect / collecting / collection / collects" meet, "news" and "new" or
"corner" and "corn" stay apart, and "Jürgen Müller" stays two whole names.
Both sides of every comparison go through it, so a stem need not be a word.

Besides the stem, a word may belong to the family of a shorter one by an
agent or practitioner ending ("collector", "violinist", "swimmer"): asked of
a preference's stems only (``family``), never folded into the stem, since
"corner", "dinner" and "letter" are not people who corn, din or let."""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import Stemmer

from .letters import fold, words
from .words import STOPWORDS

EXTRA_STOP = frozenset(
    [
        "also",
        "really",
        "very",
        "much",
        "some",
        "any",
        "every",
        "each",
        "just",
        "still",
        "always",
        "often",
        "usually",
        "never",
        "mostly",
        "most",
        "more",
        "will",
        "would",
        "could",
        "should",
        "can",
        "may",
        "might",
        "must",
        "shall",
        "not",
        "no",
        "yes",
        "than",
        "then",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "when",
        "where",
        "why",
        "how",
        "all",
        "both",
        "few",
        "other",
        "such",
        "only",
        "own",
        "same",
        "too",
        "into",
        "over",
        "under",
        "after",
        "before",
        "again",
        "once",
        "during",
        "while",
        "because",
        "until",
        "against",
        "between",
        "through",
        "above",
        "below",
        "off",
        "out",
        "up",
        "down",
        "like",
        "likes",
        "liked",
        "love",
        "loves",
        "loved",
        "enjoy",
        "enjoys",
        "enjoyed",
        "prefer",
        "prefers",
        "preferred",
        "fact",
        "said",
        "say",
        "thing",
        "things",
        "stuff",
        "habit",
        "habits",
        "lot",
        "lots",
        "one",
        "two",
        "new",
        "old",
        "get",
        "gets",
        "got",
        "make",
        "makes",
        "made",
        "day",
        "days",
        "week",
        "weeks",
        "time",
        "times",
        "year",
        "years",
        "being",
        "having",
        "doing",
        "him",
        "her",
        "his",
        "hers",
        "them",
        "we",
        "us",
        "ours",
        "mine",
        "user",
        "assistant",
        "remember",
        "know",
    ]
)
_SNOWBALL = Stemmer.Stemmer("english")
_SNOWBALL_LOCK = threading.Lock()  # a Stemmer object is not thread-safe; the app stems from workers


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """The Snowball stem of one word, compared case-folded and composed."""
    w = fold(word)
    if len(w) <= 2:
        return w
    with _SNOWBALL_LOCK:
        return _SNOWBALL.stemWord(w)


# Endings that make a practitioner of an activity, longest first: "cyclist" is one who cycles.
_AGENT_ENDINGS = ("ists", "ist", "ers", "er", "ors", "or")


@lru_cache(maxsize=65536)
def family(word: str) -> tuple[str, ...]:
    """The stems ``word`` may be a practitioner of ("swimmer" -> swim, "collector"
    -> collect, "violinist" -> violin), besides its own stem; empty for most words."""
    w = fold(word)
    for ending in _AGENT_ENDINGS:
        if w.endswith(ending) and len(w) - len(ending) >= 3:
            base = w[: -len(ending)]
            forms = {base, base + "e"}
            if len(base) >= 4 and base[-1] == base[-2]:
                forms.add(base[:-1])  # swimm -> swim, runn -> run
            return tuple(sorted({stem(f) for f in forms} - {stem(w)}))
    return ()


_ASCII_WORD_RE = re.compile(r"[a-z]+")


def _folded(text: str) -> list[str]:
    if text.isascii():  # most text: one lower() and one findall, not a fold per word (5x at a first sync)
        return _ASCII_WORD_RE.findall(text.lower())
    return [fold(m.group()) for m in words(text)]


def stems(text: str) -> set[str]:
    """The content stems of ``text``: words longer than 2 letters, neither
    Palinode's stopwords nor filler, stemmed."""
    return {stem(w) for w in _folded(text) if len(w) > 2 and w not in STOPWORDS and w not in EXTRA_STOP}


def counted_stems(text: str) -> set[str]:
    """The stems lexical evidence counts (forget/judgment.py): of every word
    longer than 2 letters, filler included ("time" stems as "timing" does)."""
    return {stem(w) for w in _folded(text) if len(w) > 2}


def stem_tokens(text: str) -> list[tuple[str, str, int]]:
    """(word as written, its stem, offset) for every word of ``text``."""
    return [(m.group(), stem(m.group()), m.start()) for m in words(text)]


# Words a preference may hold that say how often or when ("I swim twice a week", "my gym
# schedule", "poker every Friday"): shared alone they are no evidence, and they count for
# nothing in the share of a preference a sentence carries ("Swims at the lido" carries it all).
WHEN_WORDS = frozenset(
    """
    once twice thrice daily weekly fortnightly monthly yearly annually nightly hourly
    sometimes occasionally regularly frequently rarely seldom usually often always never ever
    every each again lately recently currently nowadays anymore already soon later early late
    day days week weeks weekend weekends weekday weekdays month months year years hour hours
    minute minutes night nights morning mornings afternoon afternoons evening evenings noon
    midnight today tonight tomorrow yesterday time times season seasons date dates
    monday tuesday wednesday thursday friday saturday sunday
    mondays tuesdays wednesdays thursdays fridays saturdays sundays
    january february march april june july august september october november december
    schedule schedules routine routines session sessions
    thing things stuff way ways kind kinds sort sorts part parts lot lots bit bits
    many few several much more most less least first last next other another
    """.split()
)
# Verbs and qualities any activity uses ("I keep bees", "I go kayaking", "a new bike"): shared
# alone they are no evidence, and they count for half in the share a sentence carries.
LIGHT_WORDS = frozenset(
    """
    go goes going went gone get gets getting got do does doing did done have has having had
    make makes making made take takes taking took taken give gives gave put puts come comes came
    keep keeps kept let lets use uses used using try tries tried want wants wanted need needs needed
    start starts started stop stops stopped begin began continue continues see sees saw seen
    look looks feel feels felt find finds found think thinks thought tell tells told ask asks asked
    spend spends spent plan plans habit habits
    good great nice big small little long short new old usual normal regular
    """.split()
)
WHEN = frozenset(stem(w) for w in WHEN_WORDS)
LIGHT = frozenset(stem(w) for w in LIGHT_WORDS) - WHEN
UNSPECIFIC = WHEN | LIGHT
