"""Sentence-level evidence that a unit of a memory carries a preference, as
the judgment (forget.judgment) finds it: which of the preference's words it
shares and how much they weigh, how close its sentence vector is, and whose
fact it states (and why). Fused into one calibrated score.

The score is a logistic fit on the labelled planted stores in
``bench/thorough`` (units that carry a preference vs every other unit,
several seeds); see the constants below."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from ..search.unit_index import SIM_FLOOR

Subject = Literal["user", "other", "none"]

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
NO_VECTOR_SIM = 0.35  # what a unit with no vector is taken to be near: its words must carry half the preference
PREAPPROVE = 0.8  # ... and pre-approved at or above this, only when it shares a word (issue 22)
PARTIAL_WORDS_SIM = 0.5  # ... and, carrying some of its words, this near: costs bench/thorough nothing
# Below P_ZERO a sentence sharing no word is as near as noise, store-wide; only the WEAK_TOP nearest
# of the sentences read (at least WEAK_NEAR, and the guards above) are proposed, labelled weak.
WEAK_NEAR, WEAK_TOP = 0.33, 4
WEAK_CAP = 0.49  # the score of a paraphrase not clearly nearer this preference than another's: below PROPOSE


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
    loose: tuple[str, ...] = ()  # shared words that say nothing alone (how often, when, a light verb)
    why: str = ""  # whose it is, and on what evidence

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
            "loose_words": list(self.loose),
            "whose": self.why,
        }


def fuse(
    lexical: float,
    similarity: float | None,
    name_use: bool = False,
    neighbour: float | None = None,
    contrast: float | None = None,
) -> float:
    """The calibrated probability that a unit carries the preference. Without
    a vector a lexical match counts as NO_VECTOR_SIM near: half the preference's
    words are then needed to carry it (one word of three is no mention by itself)."""
    if lexical == 0:
        if similarity is None or name_use or similarity < P_FLOOR:
            return 0.0  # no vector, its only link is a word inside a name, or far from the preference itself
        near = max(similarity, neighbour or 0.0)
        score = _sigmoid(P_SCALE * (near - P_ZERO))
        if contrast is None or near - contrast >= CONTRAST:
            return score
        if near <= contrast:
            return 0.0  # nearer another request's preference: not this one's
        # nearer this one, but not clearly: as weak as noise, so it is proposed only by rank
        return min(score, WEAK_CAP)
    sem = NO_VECTOR_SIM if similarity is None else similarity
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
