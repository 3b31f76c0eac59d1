"""One judgment of what carries a preference: given a unit of text, the
preference and what the store knows, does the unit carry the preference,
whose fact is it, how sure, and why. Plans (forget.gather, forget.narrow),
the leak check and recall check (forget.leak, forget.verify), residue,
deliveries and redaction all ask it, so they can never disagree.

- **Which words matter.** Words are whole words of any script (text.letters),
  stemmed by Snowball (text.stem). A shared word counts by its role in the
  preference (how often, when, a light verb count nothing: text.stem's
  UNSPECIFIC), and is specific unless this store uses it everywhere (the unit
  index counts the units holding each stem). A unit sharing no specific word
  is never proposed on its words: only by meaning, like a paraphrase.
- **Whose words** (forget.whose): the user in any voice; someone else only on
  positive evidence, which the judgment names.
- **How sure**: the words' weighted share and the cosine of the sentence
  vectors, fused into one calibrated score (forget.evidence.fuse).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from ..storage.memory import Memory
from ..text.letters import fold, tokens, words
from ..text.stem import LIGHT, UNSPECIFIC, WHEN, family, stem, stem_tokens, stems
from ..text.units import Unit, item_sentences
from .evidence import PREAPPROVE, PROPOSE, Evidence, fuse, partial_mention
from .whose import RELATIONS, THIRD_PERSON, VERBS, Context, Whose, memory_about, people_named, whose

if TYPE_CHECKING:
    from ..search.index import SearchIndex

SPECIFIC_SHARE = 0.2  # a word in more of a big store's units than this carries nothing alone
LIGHT_WEIGHT = 0.5  # a verb or quality any activity uses ("keep" in "I keep bees") counts for half
RARITY_FROM = 500  # units: in a smaller store a word's share says little (the request itself holds every word)
FAMILY_WEIGHT = 0.5  # "swimmer" for "swim": the same activity, less surely ("corner" is no corn-doer)


@dataclass(frozen=True)
class StoreFacts:
    """What the judgment knows of the store besides the unit it reads."""

    user_names: frozenset[str] = frozenset()  # folded tokens of the user's name(s)
    frequency: Mapping[str, int] = field(default_factory=dict)  # stem -> units holding it
    units: int = 0
    common: Callable[[str], bool] = lambda word: False  # the store writes it in lower case
    named: Callable[[str], bool] = lambda word: False  # the store writes it with a capital inside a sentence


@dataclass(frozen=True)
class Preference:
    text: str
    stems: frozenset[str]  # its content stems
    weights: Mapping[str, float]  # how much each stem counts (its role: 0 for how often, when, a light verb)
    specific: frozenset[str]  # the stems that can carry it on their own
    entities: frozenset[str]  # its own names (folded), never someone else
    relation: str | None  # the relative it is about ("my mother ..."), if any

    @classmethod
    def of(cls, pref: str, facts: StoreFacts | None = None) -> Preference:
        own = frozenset(stems(pref))
        facts = facts or StoreFacts()
        roles = {s: 0.0 if s in WHEN else LIGHT_WEIGHT if s in LIGHT else 1.0 for s in own}
        if all(s in UNSPECIFIC for s in own):  # "my weekly schedule": nothing else to go by
            roles = dict.fromkeys(own, 1.0)
        # a word in more than SPECIFIC_SHARE of a big store's units says nothing alone ("work" in a
        # work diary); the share a unit carries counts roles only, so a plan made while the index is
        # still being built (other frequencies) scores as the finished index's does
        weights = dict(roles)
        content = [s for s in own if roles[s] == 1.0]
        specific = frozenset(s for s in content if _share(facts.frequency.get(s), facts.units) <= SPECIFIC_SHARE)
        if not specific:  # every word is common here: the least common of them still say it
            least = min((_share(facts.frequency.get(s), facts.units) for s in content), default=0.0)
            specific = frozenset(s for s in content if _share(facts.frequency.get(s), facts.units) <= least)
        names = frozenset(
            fold(m.group()).removesuffix("'s").removesuffix("\u2019s") for m in tokens(pref) if m.group()[:1].isupper()
        ) - {"i", "i'm", "i've"}
        low = [fold(m.group()) for _, m in zip(range(2), tokens(pref), strict=False)]
        relation = low[1] if len(low) == 2 and low[0] == "my" and low[1] in RELATIONS else None
        return cls(pref, own, weights, specific, names, relation)

    @property
    def total(self) -> float:
        return sum(self.weights.values()) or 1.0


def _share(df: int | None, units: int) -> float:
    return 0.0 if units < RARITY_FROM or not df else df / units


@dataclass(frozen=True)
class Words:
    shared: tuple[str, ...]  # words (as written) that count, their stems the preference's
    loose: tuple[str, ...]  # shared words that say nothing alone (how often, when, a light verb)
    name_use: tuple[str, ...]  # shared words used inside a name the preference does not hold
    lexical: float  # the weighted share of the preference these words carry (0 when none is specific)


NO_WORDS = Words((), (), (), 0.0)


@lru_cache(maxsize=256)
def lookup_stems(stems: frozenset[str]) -> frozenset[str]:
    """The stems to look a preference up by: its own and its practitioners'
    ("swim": "swimmer"; "collect": "collector"), which ``family`` relates back."""
    out = set(stems)
    for s in stems:
        for word in (s + "er", s + "r", s + s[-1:] + "er", s + "or", s + "ist", s + "ian"):
            form = stem(word)
            if s in family(word) or s in family(form):
                out.add(form)
    return frozenset(out)


class Judge:
    """The judgment for one preference in one store."""

    def __init__(self, pref: str, facts: StoreFacts | None = None):
        self.facts = facts or StoreFacts()
        self.pref = Preference.of(pref, self.facts)
        self.context = Context(
            user_names=self.facts.user_names,
            common=lru_cache(maxsize=4096)(self.facts.common),
            named=lru_cache(maxsize=4096)(self.facts.named),
            entities=self.pref.entities,
            relation=self.pref.relation,
            stems=self.pref.stems,
        )

    # -- words -------------------------------------------------------------------------
    def words(self, text: str) -> Words:
        pref = self.pref
        if not pref.stems:
            return Words((), (), (), 0.0)
        runs = _name_runs(text, self.context)
        counted: dict[str, tuple[str, float]] = {}
        loose: dict[str, str] = {}
        names: dict[str, str] = {}
        for word, st, off in stem_tokens(text):
            if len(word) <= 2:
                continue
            key, weight = st, 1.0
            if st not in pref.stems:
                related = [f for f in family(word) if f in pref.stems]
                if not related:
                    continue
                key, weight = related[0], FAMILY_WEIGHT
            if word[:1].islower() and fold(word) in pref.entities:
                continue  # the preference's name written as a common word ("the marsh flooded" for "... Ottoline Marsh")
            # a word inside a name the preference does not hold ("Ingrid Holm Architects"
            # for "... with Ingrid") is that name, not the preference's entity
            if off in runs and (fold(word) not in pref.entities or runs[off]):
                names.setdefault(key, word)
            elif key not in pref.specific and pref.weights.get(key, 0.0) == 0.0:
                loose.setdefault(key, word)
            elif key not in counted or counted[key][1] < weight:
                counted[key] = (word, weight)
        for key in counted:
            names.pop(key, None)
        if not any(k in pref.specific for k in counted):
            # only words that are not specific here ("play", "twice", "Friday"): no evidence alone
            loose.update({k: w for k, (w, _) in counted.items()})
            counted = {}
        lexical = sum(pref.weights.get(k, 0.0) * w for k, (_, w) in counted.items()) / pref.total
        shown = tuple(w for w, _ in counted.values())
        return Words(shown, tuple(loose.values()), tuple(names.values()), min(1.0, lexical))

    # -- whose -------------------------------------------------------------------------
    def whose(self, text: str, about: str | None = None, antecedent: str | None = None) -> Whose:
        ctx = self.context
        if about is not None or antecedent is not None:
            ctx = replace(ctx, memory_other=about, antecedent=antecedent)
        return whose(text, ctx)

    def names_in(self, text: str) -> frozenset[str]:
        """The folded words of ``text`` written with a capital (what a preference's names are matched on)."""
        return frozenset(fold(m.group()).removesuffix("'s") for m in tokens(text) if m.group()[:1].isupper())

    def people(self, text: str) -> list[str]:
        """The people a text names besides the user (what a pronoun after it may point at)."""
        return people_named(text, self.context)

    def memory_about(self, memory: Memory) -> str | None:
        """The person a person memory is about, when not the user."""
        try:
            return memory_about(memory.meta, memory.title, memory.category, self.facts.user_names)
        except Exception:
            return None

    # -- the judgment of one unit ------------------------------------------------------------
    def owners(self, units: Sequence[Unit], about: str | None = None) -> Callable[[int], Whose]:
        """Whose each of a memory's units is (asked by position, each judged once): a
        pronoun's person is one the unit before named ("Met Tom at the fair. He plays
        the harp."), looked for only when the unit has a third-person word."""
        memo: dict[int, Whose] = {}

        def owner(k: int) -> Whose:
            chain = [k]  # how far back a pronoun's person may be carried: a few units
            while len(chain) <= ANTECEDENT_REACH and chain[-1] > 0 and chain[-1] not in memo:
                if not _third_person(units[chain[-1]].text):
                    break
                chain.append(chain[-1] - 1)
            for j in reversed(chain):
                if j in memo:
                    continue
                antecedent = None
                if j > 0 and _third_person(units[j].text):
                    named = self.people(units[j - 1].text)
                    before = memo.get(j - 1)
                    antecedent = named[-1] if named else (before.someone if before and before.who == "other" else None)
                memo[j] = self._owner(units[j], about, antecedent)
            return memo[k]

        return owner

    def evidence(
        self,
        unit: Unit,
        words: Words,
        owner: Whose | None,
        similarity: float | None = None,
        neighbour: float | None = None,
        contrast: float | None = None,
        text: str | None = None,
    ) -> Evidence:
        """The evidence that ``unit`` carries the preference: its words, whose
        it is, the fused score and why, shown wherever it is used."""
        text = unit.text if text is None else text
        score = fuse(words.lexical, similarity, bool(words.name_use), neighbour, contrast)
        subject = owner.who if owner is not None else "none"
        partial = partial_mention(words.shared, self.pref.entities, score) if subject != "other" else ()
        if partial:
            score = PROPOSE
        someone = False
        if owner is not None and subject == "user" and words.lexical > 0 and score >= PREAPPROVE:
            # nobody else in it ("..., reported by Tom"; "with Ingrid Holm" when not every word is there)
            someone = owner.someone is not None or (words.lexical < 1.0 and bool(self.people(text)))
        return Evidence(
            unit.kind,
            unit.line,
            text,
            words.shared,
            words.name_use,
            words.lexical,
            similarity,
            subject,
            score,
            unit.field,
            partial=partial,
            someone_named=someone,
            loose=words.loose,
            why=owner.why if owner is not None else "",
        )

    def judge(
        self,
        unit: Unit,
        about: str | None = None,
        similarity: float | None = None,
        owner: Whose | None = None,
    ) -> Evidence:
        """One unit on its own (no unit before it to point back at)."""
        words = self.words(unit.text)
        if owner is None and (words.shared or words.loose or similarity is not None):
            owner = self._owner(unit, about, None)
        return self.evidence(unit, words, owner, similarity)

    def _owner(self, unit: Unit, about: str | None, antecedent: str | None) -> Whose:
        """Whose a unit is: a list item holding several sentences by the sentence
        carrying most of the preference ("Maria Okafor loves Zanzibar coffee. I had coffee." is Maria's)."""
        text = unit.text
        if unit.kind == "list_item":
            sentences = [text[a:b] for a, b in item_sentences(text)]
            if len(sentences) > 1:
                shares = [self.words(s).lexical for s in sentences]
                if 0 < sum(1 for x in shares if x) < len(sentences):
                    text = sentences[shares.index(max(shares))]
        return self.whose(text, about, antecedent)


ANTECEDENT_REACH = 3  # units a pronoun's person is carried across ("Tom came. He swims. He also ...")


def _third_person(text: str) -> bool:
    return any(fold(m.group()) in THIRD_PERSON for m in tokens(text))


def _name_runs(text: str, ctx: Context) -> dict[int, bool]:
    """Offsets of Titlecase words in a run of two or more ("Vintage Sneakers
    Ltd", "Lido Cafe"), each with whether its run holds a word that is not the
    preference's own name: inside such a run a shared word is that name's. A
    word opening a sentence belongs to the run only when the run names
    something besides the preference and the word is no verb ("Bakes
    Lebkuchen in ..." is the user baking the preference's Lebkuchen)."""
    found = list(tokens(text))
    out: dict[int, bool] = {}
    i = 0
    while i < len(found):
        j = i
        while (
            j < len(found)
            and _capital(found[j].group())
            and (j == i or not text[found[j - 1].end() : found[j].start()].strip())
        ):
            j += 1
        if j - i >= 2:
            opens = i == 0 or any(c in ".!?:;-*" for c in text[found[i - 1].end() : found[i].start()])
            rest = [fold(m.group()) for m in found[i + opens : j]]
            foreign = any(w not in ctx.entities for w in rest if w not in _OPENERS)
            opener = fold(found[i].group())
            verb = opener in VERBS or opener.endswith(("s", "ed", "ing"))
            keep_opener = not opens or (foreign and (len(rest) >= 2 or not verb))
            for k in range(i if keep_opener else i + 1, j):
                out[found[k].start()] = foreign
        i = max(j, i + 1)
    return out


def _capital(word: str) -> bool:
    return word[:1].isupper() and fold(word) not in ("i", "i'm", "i've")


_OPENERS = frozenset(["the", "a", "an", "this", "that", "my", "our", "in", "on", "at", "for", "with", "and", "of"])


# -- the store's facts -------------------------------------------------------------------------
_PROFILE_WORDS = frozenset(["me", "my", "user", "profile", "myself", "self", "about", "whoami", "i"])
_NAME_LINE_RE = re.compile(
    r"(?im)^[\W_]*(?:full name|user's name|username|preferred name|name|goes by)\s*[:=\u2014\u2013-]\s*"
    r"(?P<n>[^\W\d_][\w'\u2019-]*(?:[ \t]+[^\W\d_][\w'\u2019-]*){0,3})"
)
_IS_USER_RE = re.compile(
    r"(?P<n>[A-Z\u00c0-\u024f][\w'\u2019-]*(?:[ \t]+[A-Z\u00c0-\u024f][\w'\u2019-]*){0,3})[ \t]+(?:is|,)[ \t]+the[ \t]+user\b"
)
_USER_IS_RE = re.compile(
    r"\b(?:(?i:the[ \t]+)?(?i:user)(?:'s[ \t]+name)?|(?i:the[ \t]+person[ \t]+)?(?i:this[ \t]+)?(?i:assistant[ \t]+works[ \t]+for))"
    r"[ \t]+(?i:is)?[ \t]*(?i:named[ \t]+|called[ \t]+)?"
    r"(?P<n>[A-Z\u00c0-\u024f][\w'\u2019-]*(?:[ \t]+[A-Z\u00c0-\u024f][\w'\u2019-]*){0,3})"
)
_MY_NAME_RE = re.compile(
    r"\b(?i:my[ \t]+name[ \t]+is|call[ \t]+me|i[ \t]+go[ \t]+by)[ \t]+"
    r"(?P<n>[A-Z\u00c0-\u024f][\w'\u2019-]*(?:[ \t]+[A-Z\u00c0-\u024f][\w'\u2019-]*){0,3})"
)


def is_profile(memory: Memory) -> bool:
    """A memory about the user themself, by its folder, title and file name (``people/me-profile.md``)."""
    named = f"{memory.title} {memory.rel.rsplit('/', 1)[-1]}"
    return memory.category in _PROFILE_FOLDERS and bool({fold(m.group()) for m in words(named)} & _PROFILE_WORDS)


_PROFILE_FOLDERS = ("people", "person", "profile", "user")
# "The person this assistant works for is Ólafur", "... is the user these memories belong to"
_DECLARES_RE = re.compile(r"(?i:\bis\s+the\s+user\b|\bthe\s+user\s+is\b|\bmy\s+name\s+is\b|assistant\s+works\s+for)")


def user_names(memories: Mapping[str, Memory]) -> frozenset[str]:
    """The user's names, from the store's profile memories: a ``name:`` field
    or a "Name: ..." line, "<Name> is the user", "The user is <Name>", "My name is ...".
    Folded tokens ("ingrid", "solberg"): a sentence naming the user is the user's."""
    found: set[str] = set()
    for memory in memories.values():
        if memory.forget_pref or memory.is_history or memory.category not in _PROFILE_FOLDERS:
            continue
        try:
            meta, body = memory.meta, memory.body
        except Exception:
            continue
        head = body[:20000]  # a profile says who it is near the top; bounded: the rest is not read
        if not is_profile(memory) and not _DECLARES_RE.search(head[:2000]):
            continue  # a person memory about someone else
        candidates = []
        value = meta.get("name") if isinstance(meta.get("name"), str) else None
        if value and not {fold(m.group()) for m in tokens(value)} & _PROFILE_WORDS:
            candidates.append(value)
        for pattern in (_NAME_LINE_RE, _IS_USER_RE, _USER_IS_RE, _MY_NAME_RE):
            candidates += [m.group("n") for m in pattern.finditer(head)]
        for name in candidates:
            parts = [fold(m.group()) for m in tokens(name)]
            if 1 <= len(parts) <= 4 and not set(parts) & _PROFILE_WORDS:
                found.update(p.removesuffix("'s") for p in parts if len(p) > 1)
    return frozenset(found)


def store_facts(index: SearchIndex | None, memories: Mapping[str, Memory], pref_stems: frozenset[str]) -> StoreFacts:
    """What the store tells the judgment: the user's names, how many units hold
    each of the preference's stems (the unit index), which words it writes in lower case."""
    if index is None:
        return StoreFacts(user_names(memories))
    try:
        # the profile memories are read once per indexed state of the store, not by every command
        names = frozenset(index.units.remembered("user_names", lambda: "\n".join(sorted(user_names(memories)))).split())
        frequency, units = index.units.stem_frequencies(pref_stems)
    except Exception:  # a damaged index: every word counts as specific, as before it was built
        return StoreFacts(user_names(memories))
    return StoreFacts(names, frequency, units, index.units.used_lowercase, index.units.used_as_name)


def judge_for(index: SearchIndex | None, pref: str, memories: Mapping[str, Memory]) -> Judge:
    """The judgment of ``pref`` in this store (its facts read once)."""
    return Judge(pref, store_facts(index, memories, frozenset(stems(pref))))
