"""Sentence-level evidence that a unit of a memory carries a preference:
which of the preference's words it shares (inflections folded by a small
stemmer, words used inside a name not counted), how close its sentence vector
is, and whose fact it states. Fused into one calibrated score.

The score is a logistic fit on the labelled planted stores in
``bench/thorough`` (units that carry a preference vs every other unit,
several seeds); see the constants below."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ..search.unit_index import SIM_FLOOR
from ..text.stem import stem_tokens, stems
from ..text.units import Unit, item_sentences
from .subject import _NOT_NAMES, _RELATION, _TOKEN_RE, Subject, relation_of, subject_of

# Set on bench/thorough (see bench/thorough/README.md). A unit sharing words:
# logit = A*lex + B*sim + D (lex: share of the preference's stems it carries,
# sim: cosine to the preference). A unit sharing none (a paraphrase): logit =
# P*(max(nsim, sim) - P0) where nsim is its cosine to the nearest "neighbour"
# (a store sentence carrying every stem of the preference), and only when it
# is nearer the preference than any other request's preference by CONTRAST.
A_LEX, B_SEM, D_BIAS = 6.0, 10.0, -6.0
P_SCALE, P_ZERO, CONTRAST = 25.0, 0.42, 0.08
P_FLOOR = SIM_FLOOR  # the unit index keeps every similarity at or above it
PROPOSE = 0.5  # a unit at or above this is proposed
PREAPPROVE = 0.8  # ... and pre-approved at or above this, only when it shares a word (issue 22)
PARTIAL_WORDS_SIM = 0.5  # ... and, carrying some of its words, this near: costs bench/thorough nothing
# Below P_ZERO a sentence sharing no word is as near as noise, store-wide; only the WEAK_TOP nearest
# of the sentences read (at least WEAK_NEAR, and the guards above) are proposed, labelled weak.
WEAK_NEAR, WEAK_TOP = 0.33, 2


@dataclass(frozen=True)
class Evidence:
    kind: str
    line: int
    text: str
    shared: tuple[str, ...]  # the unit's words (as written) whose stems the preference has
    name_use: tuple[str, ...]  # shared words used inside a proper name: not counted
    lexical: float  # share of the preference's stems the unit carries (name uses excluded)
    similarity: float | None  # cosine of the sentence vectors; None without vectors
    subject: Subject
    score: float
    field: str | None = None
    neighbour: str | None = None  # for a paraphrase: the store sentence it is nearest to
    neighbour_similarity: float | None = None
    partial: tuple[str, ...] = ()  # a partial mention: the entities it names, without the rest
    weak: int | None = None  # proposed as the n-th nearest in meaning of the sentences read (below P_ZERO)
    someone_named: bool = False  # names a person or body the preference does not, or reports someone's words

    @property
    def carries(self) -> bool:
        return self.subject != "other" and self.score >= PROPOSE

    @property
    def preapproved(self) -> bool:
        """Strong enough to act on without a person: a paraphrase (no shared
        word, no entity) is only ever proposed, however near in meaning."""
        # nobody else in it ("... is Ana's full-time job", "..., according to Tomas"): it may be theirs
        if not self.carries or self.lexical == 0 or self.partial or self.score < PREAPPROVE or self.someone_named:
            return False
        # some of the words only: also near in meaning ("The model answers for the loft
        # survey" shares two words of "I build a model railway in the loft" and waits)
        return self.lexical >= 1.0 or (self.similarity or 0.0) >= PARTIAL_WORDS_SIM

    @property
    def complete(self) -> bool:
        """Carries every content word of the preference (outside names)."""
        return self.carries and self.lexical >= 1.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "line": self.line,
            "text": self.text,
            "field": self.field,
            "shared_words": list(self.shared),
            "name_use": list(self.name_use),
            "lexical": round(self.lexical, 3),
            "similarity": None if self.similarity is None else round(self.similarity, 3),
            "subject": self.subject,
            "score": round(self.score, 3),
            "carries": self.carries,
            "neighbour": self.neighbour,
            "neighbour_similarity": None if self.neighbour_similarity is None else round(self.neighbour_similarity, 3),
            "preapproved": self.preapproved,
            "partial": list(self.partial),
            "weak": self.weak,
            "someone_named": self.someone_named,
        }


def fuse(
    lexical: float,
    similarity: float | None,
    name_use: bool = False,
    neighbour: float | None = None,
    contrast: float | None = None,
) -> float:
    """The calibrated probability that a unit carries the preference. Without
    a vector a lexical match counts as middling (similarity 0.45)."""
    if lexical == 0:
        if similarity is None or name_use or similarity < P_FLOOR:
            return 0.0  # no vector, its only link is a word inside a name, or far from the preference itself
        near = max(similarity, neighbour or 0.0)
        if contrast is not None and near - contrast < CONTRAST:
            return 0.0  # as near to another request's preference: not this one's
        return _sigmoid(P_SCALE * (near - P_ZERO))
    sem = 0.45 if similarity is None else similarity
    return _sigmoid(A_LEX * lexical + B_SEM * sem + D_BIAS)


def partial_mention(shared: tuple[str, ...], entities: frozenset[str], score: float) -> tuple[str, ...]:
    """The preference's entities a unit names when that is all it has (too
    weak to propose otherwise): "The Vespa failed its MOT" for "I ride a
    green Vespa to work". Proposed so a person decides; never pre-approved."""
    if score >= PROPOSE:
        return ()
    return tuple(w for w in shared if w.lower() in entities)


def _sigmoid(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


def _name_runs(text: str) -> dict[int, list[str]]:
    """Titlecase words that sit in a run of two or more Titlecase words
    ("Vintage Sneakers Ltd", "Lido Cafe"), by offset, each with the words of
    its run that could name something (not a word opening a sentence, not a
    function word): names, not the common word."""
    found = list(_TOKEN_RE.finditer(text))
    tokens = [(m.group(), m.start()) for m in found]
    caps = [t[0][:1].isupper() and t[0].lower() not in ("i", "i'm", "i've") for t in tokens]
    out: dict[int, list[str]] = {}
    i = 0
    while i < len(tokens):
        j = i
        # a run is Titlecase words separated by spaces only: "League. Playing" is two sentences
        while j < len(tokens) and caps[j] and (j == i or not text[found[j - 1].end() : found[j].start()].strip()):
            j += 1
        if j - i >= 2:
            first = i + (i == 0 or _opens(text, found, i))  # Titlecase opening a sentence is no name
            naming = [w.lower() for w, _ in tokens[first:j] if w.lower() not in _NOT_NAMES]
            for _w, off in tokens[i:j]:
                out[off] = naming
        i = max(j, i + 1)
    return out


def _opens(text: str, found: list[re.Match[str]], k: int) -> bool:
    """Token ``k`` opens a sentence or an item."""
    return any(c in ".!?:;-*" for c in text[found[k - 1].end() : found[k].start()])


# Someone's statement reported ("..., says Tom", "she said", "according to Tomas", "says my
# wife"): not the user's own ("I said", "I told Sarah"), nor a thing's ("a card that says so").
_SAYS = r"(?i:says|said|writes|wrote|reckons|claims|claimed|explains|explained|mentions|mentioned|adds|added|insists|insisted)"
# a speaker starts where a token starts (not at each hyphen or apostrophe inside one: quadratic)
_SPEAKER_BEFORE_RE = re.compile(rf"(?<![\w'\u2019-])(?P<s>[^\W\d_][\w'\u2019-]*+)\s+(?:{_SAYS}|(?i:tells|told))\b")
_SPEAKER_AFTER_RE = re.compile(rf"\b{_SAYS}\s+(?P<own>(?i:my|his|her|their|our)\s+)?(?P<s>[^\W\d_][\w'\u2019-]*)")
_ACCORDING_RE = re.compile(r"\b(?i:according to)\s+(?P<own>(?i:my|his|her|their|our)\s+)?(?P<s>[^\W\d_][\w'\u2019-]*)")
# "... is Tom's hobby", "was Ana’s job": the fact said to be someone's
_OWNED_RE = re.compile(
    r"\b(?i:is|was|are|were|remains|became|becomes)\s+(?P<o>[^\W\d_][\w-]*?)(?:['\u2019]s\b|(?<=s)['\u2019](?!\w))"
)
_PRONOUN_SPEAKERS = frozenset(["she", "he", "they"])
# a transcript's speaker label before a first-person line ("Tom: I keep bees."): the "I" is Tom
_LABEL_RE = re.compile(
    r"\A\s*(?P<s>[^\W\d_][\w'\u2019-]*+)(?:\s+[^\W\d_][\w'\u2019-]*+)?\s*:\s+(?i:i|i'm|i've|my|we|our)\b"
)
# labels a memory gives its own lines ("Update: I keep bees now."), not a person
_LABELS = frozenset(
    [
        "update",
        "context",
        "preference",
        "fact",
        "summary",
        "decision",
        "todo",
        "reminder",
        "question",
        "answer",
        "fyi",
        "ps",
        "nb",
        "edit",
        "status",
        "tip",
        "goal",
        "idea",
        "warning",
        "important",
        "source",
        "topic",
        "result",
        "outcome",
        "example",
        "me",
        "human",
        "ai",
        "bot",
        "agent",
        "system",
        "background",
        "observation",
        "insight",
        "lesson",
        "reason",
        "memory",
        "correction",
        "clarification",
        "detail",
        "details",
        "info",
        "plan",
        "quote",
    ]
)


def names_someone_else(text: str, pref_text: str, complete: bool = False) -> bool:
    """The sentence reports someone's words ("according to Tomas", "'I keep
    bees,' Maria said", "..., says my wife", "Tom: I keep bees."), says the fact is someone's ("...
    is Ana's full-time job") or, when it carries only some of the preference's
    words, names someone by a run of Titlecase words ("Father Brown"): it may
    be their fact, so a person decides. A lone Titlecase word (a place, "in
    Naples"; a weekday; a shop, "at Sainsbury's") or a relative ("Dad's
    tablets") is not enough; a venue in a sentence carrying every word ("I work
    nights at St Mary's Hospital") is the user's."""
    entities = pref_entities(pref_text)

    def someone(word: str) -> bool:  # a name (Titlecase) the preference does not hold, not a relative
        return word[:1].isupper() and named(word)

    def named(word: str) -> bool:
        low = word.lower().replace("\u2019", "'")
        owner = low[:-2] if low.endswith("'s") else low[:-1] if low.endswith("s'") else low
        return low not in entities and owner not in entities and owner not in _NOT_SOMEONE

    for pattern in (_SPEAKER_BEFORE_RE, _SPEAKER_AFTER_RE, _ACCORDING_RE):
        for m in pattern.finditer(text):
            speaker = m.group("s")
            own = m.groupdict().get("own")  # "says my wife": a relative speaks; "according to my notes" does not
            if speaker.lower() in _PRONOUN_SPEAKERS or someone(speaker) or (own and speaker.lower() in _RELATION):
                return True
    if any(someone(m.group("o")) for m in _OWNED_RE.finditer(text)):
        return True
    label = _LABEL_RE.match(text)
    if label and someone(label.group("s")) and label.group("s").lower() not in _LABELS:
        return True
    if complete:
        return False
    runs = {id(naming): naming for naming in _name_runs(text).values()}  # each run once: linear
    return any(named(w) for naming in runs.values() for w in naming)  # a run's naming words, lowercased


_NOT_SOMEONE = _NOT_NAMES | _RELATION | frozenset(["gran", "granny", "grandma", "grandad", "grandpa", "nan", "nana"])


def pref_entities(pref_text: str) -> frozenset[str]:
    """The preference's named entities: its Titlecase words besides "I"."""
    return frozenset(w.lower() for w in _TOKEN_RE.findall(pref_text) if w[:1].isupper()) - {"i", "i'm", "i've"}


def lexical_evidence(
    text: str, pref_stems: frozenset[str], pref_text: str
) -> tuple[tuple[str, ...], tuple[str, ...], float]:
    if not pref_stems:
        return (), (), 0.0
    runs = _name_runs(text)
    pref_caps = pref_entities(pref_text)
    shared: dict[str, str] = {}
    names: dict[str, str] = {}
    judged: dict[int, bool] = {}
    for word, st, off in stem_tokens(text):
        if st not in pref_stems or len(word) <= 2:
            continue
        # a word inside a name the preference does not hold ("Ingrid Holm Architects"
        # for "... with Ingrid") is that name, not the preference's entity
        if off in runs and (word.lower() not in pref_caps or _foreign(runs[off], pref_caps, judged)):
            names.setdefault(st, word)
        else:
            shared.setdefault(st, word)
    for st in shared:
        names.pop(st, None)
    return tuple(shared.values()), tuple(names.values()), len(shared) / len(pref_stems)


def _foreign(naming: list[str], pref_caps: frozenset[str], judged: dict[int, bool]) -> bool:
    """A run holds a word the preference's names do not; each run judged once (a run's
    tokens share its list), so a long run costs its length, not its length squared."""
    key = id(naming)
    if key not in judged:
        judged[key] = any(w not in pref_caps for w in naming)
    return judged[key]


def pref_stems_of(pref: str) -> frozenset[str]:
    return frozenset(stems(pref))


def unit_subject(unit: Unit, memory_other: bool, pref_stems: frozenset[str], pref: str) -> Subject:
    """Whose fact a unit states. A list item holding other sentences is judged
    by the sentence carrying most of the preference's words (its first
    sentence may be about anything; "Maria Okafor loves Zanzibar coffee. I
    had coffee." is Maria's, whatever the weaker second says)."""
    if unit.kind == "list_item":
        sentences = [unit.text[a:b] for a, b in item_sentences(unit.text)]
        shares = [lexical_evidence(t, pref_stems, pref)[2] for t in sentences]
        if 0 < sum(1 for x in shares if x) < len(sentences):
            strongest = sentences[shares.index(max(shares))]
            return subject_of(strongest, memory_other, pref_stems, relation_of(pref))
    return subject_of(unit.text, memory_other, pref_stems, relation_of(pref))
