"""Whose fact a sentence states: the user's (first person, or Palinode's
subjectless third-person style), a named other person's, or nobody's; and
whether a memory as a whole is about someone else."""

from __future__ import annotations

import re
from typing import Any, Literal

from ..text.stem import stem

Subject = Literal["user", "other", "none"]

_PRONOUN_OTHER = frozenset(["she", "he", "they", "his", "her", "their", "hers", "theirs"])
_FIRST_PERSON = frozenset(["i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine", "myself"])
_SECOND_PERSON = frozenset(["you", "your", "yours", "yourself", "you're", "you've"])
_RELATION = frozenset(
    [
        "colleague",
        "colleagues",
        "coworker",
        "co-worker",
        "friend",
        "friends",
        "sister",
        "brother",
        "partner",
        "wife",
        "husband",
        "boss",
        "manager",
        "neighbour",
        "neighbor",
        "mother",
        "father",
        "mum",
        "mom",
        "dad",
        "son",
        "daughter",
        "cousin",
        "teammate",
        "flatmate",
        "roommate",
        "aunt",
        "uncle",
        "niece",
        "nephew",
        "grandmother",
        "grandfather",
        "landlord",
        "client",
        "mentor",
    ]
)
_NOT_NAMES = frozenset(
    [
        "the",
        "a",
        "an",
        "this",
        "that",
        "these",
        "those",
        "my",
        "our",
        "your",
        "i",
        "we",
        "it",
        "in",
        "on",
        "at",
        "for",
        "with",
        "and",
        "but",
        "or",
        "so",
        "if",
        "when",
        "while",
        "after",
        "before",
        "since",
        "during",
        "every",
        "each",
        "most",
        "some",
        "no",
        "not",
        "also",
        "then",
        "there",
        "here",
        "what",
        "which",
        "who",
        "how",
        "why",
        "all",
        "both",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "mondays",
        "tuesdays",
        "wednesdays",
        "thursdays",
        "fridays",
        "saturdays",
        "sundays",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "user",
        "assistant",
        "profile",
        "notes",
        "note",
        "today",
        "yesterday",
        "tomorrow",
        "weekly",
        "daily",
        "morning",
        "evening",
    ]
)
_TOKEN_RE = re.compile(r"[A-Za-z][A-Za-z'\-]*")


_ADVERBS = frozenset(
    [
        "also",
        "too",
        "still",
        "often",
        "always",
        "usually",
        "never",
        "really",
        "now",
        "recently",
        "currently",
        "has",
        "is",
        "was",
        "does",
        "did",
        "had",
        "will",
        "would",
        "can",
    ]
)


def relation_of(pref: str) -> str | None:
    """The relative a preference is itself about ("my mother was not part of my life"), if any."""
    low = [t.lower() for t in _TOKEN_RE.findall(pref)[:2]]
    return low[1] if len(low) == 2 and low[0] == "my" and low[1] in _RELATION else None


def subject_of(
    text: str, memory_other: bool, pref_stems: frozenset[str] = frozenset(), pref_relation: str | None = None
) -> Subject:
    """Whose fact a unit states: the user's (first person, or Palinode's
    subjectless third-person style), a named other person's, or nobody's.
    "My dad ..." is the dad's fact, unless the preference is itself about
    the user's dad (``pref_relation``): then it is the user's to forget."""
    tokens = _TOKEN_RE.findall(text)
    if not tokens:
        return "none"
    low = [t.lower() for t in tokens]
    first = low[0]
    if first in _FIRST_PERSON:
        if first == "my" and len(low) > 1 and low[1] in _RELATION:
            # the relative the preference is about, saying more of it ("My mum grows dahlias."),
            # not anything about them ("My mum works as a nurse.")
            said = low[1] == pref_relation and any(stem(t) in pref_stems for t in low[2:])
            return "user" if said else "other"
        return "user"
    if first in _PRONOUN_OTHER:
        return "other"
    if first in ("the", "a", "an") and len(low) > 1 and low[1] in _RELATION:
        return "other"
    head = tokens[0]
    if head[:1].isupper() and first not in _NOT_NAMES and len(tokens) > 1:
        nxt = tokens[1]
        # a sentence-initial verb ("Met Wilhelmina Cragg", "Keeps bees") is Palinode's
        # subjectless style; a name the preference itself holds is its own subject
        verbish = (
            first in _VERB_WORDS
            or (first in _LINKING_GERUNDS and nxt[:1].islower())
            or stem(first) in _VERBISH
            or first.endswith("ed")
            or stem(first.removesuffix("'s")) in pref_stems
        )
        if not verbish:
            # "Priya keeps bees", "Priya Shah keeps bees", "Priya's allotment", "Ines also plays"
            if head.endswith("'s") or (
                nxt[:1].isupper() and nxt.lower() not in _NOT_NAMES and stem(nxt.lower()) not in pref_stems
            ):
                return "other"
            if nxt[:1].islower() and (nxt.lower() in _ADVERBS or nxt.endswith(("s", "ed"))):
                return "other"
    if any(t in _FIRST_PERSON for t in low):
        return "user"
    if text.rstrip().endswith("?") and any(t in _SECOND_PERSON for t in low):
        return "other"  # "what kind of music do you like?": asked of someone else, about them
    if memory_other:
        return "other"
    return "user"


# Sentence-initial words Palinode's subjectless style starts with: verbs, not names.
_VERBISH = frozenset(
    stem(w)
    for w in (
        [
            "collect",
            "keep",
            "play",
            "swim",
            "run",
            "drink",
            "eat",
            "cook",
            "bake",
            "read",
            "write",
            "paint",
            "grow",
            "brew",
            "ride",
            "bike",
            "climb",
            "knit",
            "sew",
            "watch",
            "listen",
            "practise",
            "practice",
            "learn",
            "study",
            "go",
            "visit",
            "attend",
            "own",
            "has",
            "have",
            "prefer",
            "like",
            "love",
            "enjoy",
            "hate",
            "dislike",
            "avoid",
            "spend",
            "spends",
            "volunteer",
            "train",
            "hike",
            "sail",
            "fish",
            "garden",
            "walk",
            "sing",
            "dance",
            "draw",
            "take",
            "make",
            "use",
            "track",
            "follow",
            "support",
            "work",
            "live",
            "lives",
            "owns",
            "started",
            "stopped",
            "tries",
        ]
    )
)
_VERB_WORDS = frozenset(
    [
        "goes",
        "does",
        "is",
        "was",
        "has",
        "had",
        "spends",
        "takes",
        "makes",
        "keeps",
        "plays",
        "swims",
        "bakes",
        "knits",
        "grows",
        "watches",
        "trains",
        "boulders",
        "practises",
        "practices",
        "collects",
        "studies",
        "works",
        "runs",
        "builds",
        "tends",
        "feeds",
        "mails",
        "turns",
        "hunts",
        "owns",
        "likes",
        "loves",
        "enjoys",
        "prefers",
        "met",
        "went",
        "began",
        "joined",
        "hired",
        "visited",
        "moved",
        "knew",
        "saw",
        "spent",
        "took",
        "made",
        "kept",
    ]
)
# A linking verb's gerund before a lowercase word opens a subjectless clause ("Being estranged
# from Ines makes Christmas hard"), not a name; before a name ("Being Maria's neighbour, Tom
# keeps bees") the name decides, as before.
_LINKING_GERUNDS = frozenset(["being", "having", "getting", "becoming", "feeling"])


def memory_is_other(meta: dict[str, Any], title: str, category: str) -> bool:
    """A person memory about someone else: its subjectless sentences are theirs."""
    kind = str(meta.get("type") or "")
    if kind != "PersonMemory" and category != "people":
        return False
    if set(re.findall(r"[a-z]+", title.lower())) & {"me", "my", "user", "profile", "myself", "self"}:
        return False
    return any(w[:1].isupper() for w in _TOKEN_RE.findall(title))
