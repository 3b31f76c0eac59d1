"""Whose fact a sentence states.

The user is written in many voices (shared/docs/memory-voices.md): "I", "we",
"my", "the user", "they"/"their" (summaries that avoid naming or gendering
the user), the user's own name, or nobody at all ("Plays the cello."). So a
sentence is the user's unless there is positive evidence that it is someone
else's, and ``Whose.why`` names that evidence:

- another person is its subject ("Tomás plays the violin", "My sister plays ..."),
- a reporting verb gives it another speaker ("..., says Kwame", "according to Ilse"),
- a transcript label gives its "I" to someone ("Tom: I keep bees."),
- a possessive names another owner ("... is Ana's hobby"),
- a memory that is itself about someone else (``people/tom.md``).

A pronoun after a sentence naming someone ("Met Tom. He plays ...") may be
theirs or the user's: it is the user's, but never acted on without a person
(``Whose.someone`` is set).

A name is a person's only where it stands like one: Titlecase, not the user's,
not a word the store writes in lower case ("Home is a rented flat ..."), not
the preference's own ("Leeds is home"), and not after a preposition of place."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ..text.letters import fold, tokens
from ..text.stem import stem

Who = Literal["user", "other", "none"]


@dataclass(frozen=True)
class Whose:
    who: Who
    why: str  # the evidence, in words ("first person", "Tomás is its subject", ...)
    someone: str | None = None  # the other person named, when there is one


@dataclass(frozen=True)
class Context:
    """What whose a sentence is depends on besides its own words."""

    user_names: frozenset[str] = frozenset()  # folded tokens of the user's name(s)
    memory_other: str | None = None  # the person a person memory is about (its title), when not the user
    antecedent: str | None = None  # a person the sentence before named: what "she", "they" may point at
    common: Callable[[str], bool] = lambda word: False  # the store writes this word in lower case
    named: Callable[[str], bool] = lambda word: False  # the store writes it with a capital inside a sentence
    entities: frozenset[str] = frozenset()  # the preference's own names (folded): never someone else
    relation: str | None = None  # the relative the preference is itself about ("my mother")
    stems: frozenset[str] = frozenset()  # the preference's stems: a verb it holds opens a subjectless note


FIRST_PERSON = frozenset(
    ["i", "i'm", "i've", "i'd", "i'll", "my", "me", "mine", "myself", "we", "we're", "we've", "our", "us"]
)
THIRD_PERSON = frozenset(
    ["she", "he", "they", "his", "her", "their", "hers", "theirs", "she's", "he's", "they're", "they've"]
)
SECOND_PERSON = frozenset(["you", "your", "yours", "yourself", "you're", "you've"])
USER_WORDS = frozenset(["user", "user's", "users", "client", "customer", "human", "me", "owner"])
RELATIONS = frozenset(
    """colleague colleagues coworker co-worker friend friends sister sisters brother brothers partner wife
    husband boss manager neighbour neighbor neighbours neighbors mother father mum mom dad son daughter
    cousin teammate flatmate roommate aunt uncle niece nephew grandmother grandfather landlord landlady
    client mentor girlfriend boyfriend fiancé fiancée fiance fiancee ex parents kids children child
    stepmother stepfather stepson stepdaughter gran granny grandma grandad grandpa nan nana
    team company employer family club band group department office staff customer customers""".split()
)
# Titlecase words that open sentences without naming anyone.
NOT_NAMES = frozenset(
    """the a an this that these those my our your i we it in on at for with and but or so if when while
    after before since during every each most some no not also then there here what which who how why all
    both monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays
    fridays saturdays sundays january february march april may june july august september october november
    december user assistant profile notes note today yesterday tomorrow weekly daily morning evening
    tonight mornings evenings weekends weekend home work lunch dinner breakfast family health diet music
    travel holidays holiday school university college job career office commute budget rent house flat
    apartment car bike garden kitchen coffee tea food sport sports exercise gym sleep weather hobbies
    hobby favourite favorite best first last next several many nothing everything something everyone
    nobody somebody reading cooking running writing update context preference fact summary decision
    todo reminder question answer fyi ps nb edit status tip goal idea warning important source topic
    result outcome example background observation insight lesson reason memory correction clarification
    detail details info plan quote mr mrs ms dr""".split()
)
HONORIFICS = frozenset(["mr", "mrs", "ms", "mx", "dr", "prof", "sir", "dame", "lady", "lord", "rev", "fr", "sr"])
# Labels a memory gives its own lines ("Update: I keep bees now."): not a speaker.
LABELS = frozenset(
    """update context preference fact summary decision todo reminder question answer fyi ps nb edit status
    tip goal idea warning important source topic result outcome example me human ai bot agent system
    background observation insight lesson reason memory correction clarification detail details info plan
    quote note notes""".split()
)
ASSISTANT_LABELS = frozenset(["assistant", "ai", "bot", "agent", "system", "model", "claude", "gpt", "chatgpt"])
# After these a name is a place or a thing ("moved to Leeds", "in São Paulo"), not a person.
PLACE_PREPOSITIONS = frozenset(
    """in at to from near into onto of on via around across through outside inside within towards toward
    by under over above below beyond past between behind opposite""".split()
)
# Words that follow a person as its verb, or open a subjectless note as one.
VERBS = frozenset(
    """is was are were has had have does did do goes went will would can could should may might must keeps
    plays swims bakes knits grows watches trains practises practices collects studies works runs builds
    tends feeds owns likes loves enjoys prefers hates dislikes avoids lives moved met began joined hired
    visited knew saw spent took made kept says said told thinks thought wants needs uses used rides
    drives cooks reads writes paints sings dances draws takes makes gets got teaches learns learned
    learnt attends volunteers brews climbs hikes sails fishes walks cycles also still often always never
    usually recently currently now just really too""".split()
)
_SAYS = r"(?i:says|said|writes|wrote|reckons|claims|claimed|explains|explained|mentions|mentioned|adds|added|insists|insisted)"
# a speaker starts where a token starts (not at each hyphen or apostrophe inside one: quadratic);
# "Tom told me" has a speaker, "I told Sarah" a listener
_SPEAKER_BEFORE_RE = re.compile(rf"(?<![\w'\u2019-])(?P<s>[^\W\d_][\w'\u2019-]*+)\s+(?:{_SAYS}|(?i:tells|told))\b")
_SPEAKER_AFTER_RE = re.compile(rf"\b{_SAYS}\s+(?P<own>(?i:my|his|her|their|our)\s+)?(?P<s>[^\W\d_][\w'\u2019-]*)")
_ACCORDING_RE = re.compile(r"\b(?i:according to)\s+(?P<own>(?i:my|his|her|their|our)\s+)?(?P<s>[^\W\d_][\w'\u2019-]*)")
# "... is Tom's hobby", "was Ana’s job": the fact said to be someone's
_OWNED_RE = re.compile(
    r"\b(?i:is|was|are|were|remains|became|becomes)\s+"
    r"(?P<o>[^\W\d_][\w-]*?(?:[ \t]+[^\W\d_][\w-]*?){0,3}?)(?:['\u2019]s\b|(?<=s)['\u2019](?!\w))"
)
_FIRST_PERSON_OPENING_RE = re.compile(r"(?i:i|i'm|i've|i'd|my|we|our)\b")
# a transcript's speaker label ("Tom: I keep bees.", "User: I play the cello.")
_LABEL_RE = re.compile(r"\A\s*(?P<s>[^\W\d_][\w'\u2019-]*+)(?:\s+(?P<s2>[^\W\d_][\w'\u2019-]*+))?\s*:\s+")


def whose(text: str, ctx: Context) -> Whose:
    """Whose fact ``text`` states, and why (see the module's rules)."""
    label = _LABEL_RE.match(text)
    if label:
        said = _label(label, ctx)
        if said is not None:
            return said
        text = text[label.end() :]
    reported = _reported(text, ctx)
    if reported is not None:
        return reported
    found = [(m.group(), m.start()) for _, m in zip(range(8), tokens(text), strict=False)]  # the opening is enough
    if not found:
        return Whose("none", "no words")
    opening = _opening(text, found, ctx)
    if opening is not None:
        return opening
    owner = _owner(text, ctx)
    if owner is not None:
        return Whose("other", f"said to be {owner}'s", owner)
    low = [fold(w) for w, _ in found]
    if any(w in FIRST_PERSON for w in low):
        return Whose("user", "first person")
    if text.rstrip().endswith("?") and any(w in SECOND_PERSON for w in low):
        return Whose("other", "a question asked of someone else")
    if ctx.memory_other:
        return Whose("other", f"a memory about {ctx.memory_other}", ctx.memory_other)
    return Whose("user", "no one else named: the user's")


def _label(label: re.Match[str], ctx: Context) -> Whose | None:
    speaker = " ".join(s for s in (label.group("s"), label.group("s2")) if s)
    low = fold(speaker)
    first = fold(label.group("s"))
    if first in USER_WORDS or _is_user(speaker, ctx):
        return Whose("user", f"the user's line ({speaker}:)")
    if first in ASSISTANT_LABELS or first in LABELS or low in LABELS:
        return None  # the rest decides: "Assistant: You play the cello." is still about the user
    # a speaker's label gives its "I" to them ("Tom: I keep bees."); before anything else
    # ("Tom: the hives need checking.") it is a topic, and the rest decides
    said = label.string[label.end() :]
    if _FIRST_PERSON_OPENING_RE.match(said) and _names_a_person(label.group("s"), ctx):
        return Whose("other", f"{speaker}'s words (a transcript line)", speaker)
    return None


def _reported(text: str, ctx: Context) -> Whose | None:
    """Someone's statement reported: "..., says Tom", "according to Ilse", "she said"."""
    for pattern in (_SPEAKER_BEFORE_RE, _SPEAKER_AFTER_RE, _ACCORDING_RE):
        for m in pattern.finditer(text):
            speaker, own = m.group("s"), m.groupdict().get("own")
            low = fold(speaker)
            if own and low in RELATIONS:
                return Whose("other", f"reported: {own.strip()} {speaker} says so", f"{own.strip()} {speaker}")
            if low in THIRD_PERSON:
                if ctx.antecedent or ctx.memory_other:
                    who = ctx.antecedent or ctx.memory_other
                    return Whose("other", f"reported: {speaker} ({who}) says so", who)
                continue  # "they said" with no one else named: the user, in the third person
            if _names_a_person(speaker, ctx):
                return Whose("other", f"reported: {speaker} says so", speaker)
    return None


def _opening(text: str, found: list[tuple[str, int]], ctx: Context) -> Whose | None:
    """What the sentence's first words say of its subject; None: they say nothing."""
    low = [fold(w) for w, _ in found]
    first = low[0]
    nxt = low[1] if len(low) > 1 else ""
    if first in FIRST_PERSON:
        if first in ("my", "our") and nxt in RELATIONS:
            return _relative(nxt, low, ctx, f"{found[0][0]} {found[1][0]}")
        return Whose("user", "first person")
    if first in USER_WORDS or (first == "the" and nxt in USER_WORDS):
        return Whose("user", "the user, by that word")
    if first in THIRD_PERSON:
        if first in ("his", "her", "their") and nxt in RELATIONS:
            return _relative(nxt, low, ctx, f"{found[0][0]} {found[1][0]}")
        if ctx.memory_other:
            return Whose("other", f'"{found[0][0]}" is {ctx.memory_other}: a memory about them', ctx.memory_other)
        if ctx.antecedent:
            # many stores call the user "they" (or "she", "he") throughout: someone named just before
            # makes it uncertain, not theirs; a person decides
            return Whose(
                "user", f'"{found[0][0]}" may be {ctx.antecedent}, named before it: a person decides', ctx.antecedent
            )
        return Whose("user", f'"{found[0][0]}" with no one else named before: the user')
    if first in ("the", "a", "an") and nxt in RELATIONS:
        return _relative(nxt, low, ctx, f"{found[0][0]} {found[1][0]}")
    if first in RELATIONS and len(found) > 1 and found[1][0][:1].islower():
        return _relative(first, low, ctx, found[0][0])  # "Team uses Slack", "Mum grows dahlias"
    if first in HONORIFICS and len(found) > 1 and found[1][0][:1].isupper() and _names_a_person(found[1][0], ctx):
        name = f"{found[0][0]} {found[1][0]}"  # "Mrs. Okafor, my landlord, loves ..."
        return Whose("other", f"{name} is its subject", name)
    head = found[0][0]
    if not head[:1].isupper() or first in NOT_NAMES:
        return None
    run = _name_run(text, found)
    words = [w for w, _ in found[:run]]
    if _is_user(" ".join(words), ctx):
        return Whose("user", f"{' '.join(words)} is the user")
    if not _subject_is_a_person(found, run, ctx):
        return None
    name = " ".join(words)
    if len(words) == 1 and head.endswith(("'s", "\u2019s")):
        name = head[:-2]
    return Whose("other", f"{name} is its subject", name)


def _relative(relation: str, low: list[str], ctx: Context, said: str) -> Whose:
    # the relative the preference is about, saying more of it ("My mum grows dahlias."), is the user's to forget
    if relation == ctx.relation and any(stem(t) in ctx.stems for t in low[2:]):
        return Whose("user", f"{said}: the relative the preference is about")
    return Whose("other", f"{said} is its subject", said)


def _name_run(text: str, found: list[tuple[str, int]]) -> int:
    """How many opening tokens form a Titlecase run separated by spaces only ("Ana Sousa")."""
    run = 1
    while run < len(found) and found[run][0][:1].isupper() and fold(found[run][0]) not in NOT_NAMES:
        between = text[found[run - 1][1] + len(found[run - 1][0]) : found[run][1]]
        if between.strip():
            break
        run += 1
    return run


def _subject_is_a_person(found: list[tuple[str, int]], run: int, ctx: Context) -> bool:
    """The opening Titlecase run stands like a person doing something, not like
    a verb opening a subjectless note ("Scrolls headlines from DR", "Plays the
    violin"): a name the store writes as one, or a word followed by the
    preference's own verb ("Tomás swims ..."), or by a verb after a word that
    is no verb itself; never a word the store writes in lower case, the
    preference's own name, or an activity ("Cooking relaxes them")."""
    head = found[0][0]
    first = fold(head)
    bare = first.removesuffix("'s").removesuffix("\u2019s")
    named = ctx.named(bare)
    if bare in ctx.entities or bare in VERBS or stem(bare) in ctx.stems:
        return False
    # a word, then the preference's own verb ("Frank lives in Tokyo" for "I lived in Tokyo"): a
    # person doing it, even where the store also writes the word in lower case ("a frank discussion")
    acts = (
        run == 1
        and len(found) > 1
        and found[1][0][:1].islower()
        and not first.endswith(("ing", "ed"))
        and stem(fold(found[1][0])) in ctx.stems
        and fold(found[1][0]).endswith(("s", "ed"))
    )
    if ctx.common(bare) and not named and not acts:
        return False
    if any(fold(w).removesuffix("'s") in ctx.entities for w, _ in found[:run]):
        return False  # "Hyde Park is close": the preference's own place
    if head.endswith(("'s", "\u2019s")):
        return True  # "Priya's allotment"
    if run >= 2:
        return run < len(found) and found[run][0][:1].islower()  # "Ana Sousa keeps bees"
    if len(found) < 2 or not found[1][0][:1].islower():
        return False
    nxt = fold(found[1][0])
    if named:
        return True  # "Manning keeps bees" where the store writes Manning as a name
    if first.endswith(("ed", "ing")):
        return False  # "Moved to Leeds", "Hosting rotates monthly": an activity, a subjectless note
    if stem(nxt) in ctx.stems:
        return True  # "Jonas swims twice a week": a word, then the preference's own verb
    if first.endswith("s") and not first.endswith(("ss", "us", "is")):
        return False  # "Scrolls headlines from DR": a verb opening a subjectless note
    return nxt in VERBS or nxt.endswith(("s", "ed"))


def _owner(text: str, ctx: Context) -> str | None:
    """The owner a possessive names ("... is Ana's hobby"), when another person."""
    for m in _OWNED_RE.finditer(text):
        owner = m.group("o")  # "Ana", "Hine Rāwiri"
        if owner[:1].isupper() and all(_names_a_person(w, ctx) for w in owner.split()):
            return owner
    return None


def _is_user(name: str, ctx: Context) -> bool:
    words = [fold(m.group()).removesuffix("'s").removesuffix("\u2019s") for m in tokens(name)]
    return bool(words) and bool(ctx.user_names) and all(w in ctx.user_names for w in words)


def _names_a_person(word: str, ctx: Context) -> bool:
    low = fold(word).removesuffix("'s").removesuffix("\u2019s")
    return (
        word[:1].isupper()
        and low not in NOT_NAMES
        and low not in ctx.entities
        and low not in ctx.user_names
        and low not in RELATIONS
        and not ctx.common(low)
    )


def people_named(text: str, ctx: Context) -> list[str]:
    """The people a sentence names besides the user: Titlecase runs standing
    like names (not opening the sentence, not after a preposition of place,
    not the preference's or the user's), and relatives ("my sister"). What a
    pronoun in the next sentence may point at, and what makes a sentence
    someone else's to decide."""
    found = list(tokens(text))
    out: list[str] = []
    i = 0
    while i < len(found):
        word = found[i].group()
        low = fold(word)
        if low in RELATIONS and i and fold(found[i - 1].group()) in ("my", "our", "his", "her", "their", "the"):
            out.append(f"{found[i - 1].group()} {word}")
            i += 1
            continue
        if not word[:1].isupper() or low in NOT_NAMES:
            i += 1
            continue
        j = i + 1
        while (
            j < len(found)
            and found[j].group()[:1].isupper()
            and not text[found[j - 1].end() : found[j].start()].strip()
        ):
            j += 1
        before = fold(found[i - 1].group()) if i else ""
        opens = before not in HONORIFICS and (
            i == 0 or any(c in ".!?:;" for c in text[found[i - 1].end() : found[i].start()])
        )
        # a run opening the sentence names someone by the words after its first ("Father Brown",
        # "Visited Tomás": the first may be a verb or a title); a lone opener is the subject's business
        rest = found[i + 1 : j] if opens else found[i:j]
        if rest and before not in PLACE_PREPOSITIONS and all(_names_a_person(m.group(), ctx) for m in rest):
            verb = low in VERBS or low.endswith(("ed", "ing"))
            out.append(" ".join(m.group() for m in (rest if opens and verb else found[i:j])))
        i = j
    return out


def memory_about(meta: Mapping[str, Any], title: str, category: str, user_names: frozenset[str]) -> str | None:
    """The person a person memory is about, when that is not the user: its
    subjectless sentences are theirs. None for every other memory."""
    kind = str(meta.get("type") or "")
    if kind != "PersonMemory" and category != "people":
        return None
    words = [fold(m.group()) for m in tokens(title)]
    if set(words) & {"me", "my", "user", "profile", "myself", "self", "about"}:
        return None
    if user_names and words and all(w in user_names for w in words):
        return None
    named = [m.group() for m in tokens(title) if m.group()[:1].isupper()]
    return " ".join(named) if named else None
