"""Requests in other words (issue 44): sentences that ask, without an explicit
"forget", that something about the user be dropped: a refusal to discuss it ("I'd
rather not talk about my divorce"), a wish it stop coming up ("please stop bringing
that up", "don't mention the Berlin flat again"), a correction that retires a fact
("that's not true anymore, I quit smoking last year", "I no longer live in Berlin"),
a retraction of what was just said ("scratch that, I shouldn't have said it"), and a
forget request reported in the user's voice ("User asked the assistant to forget
...").

Deterministic, and deliberately apart from the explicit detector (detect.py): what it
finds is never acted on, only shown for a person to confirm. Each finding says which
words made it one (``cue``), what it points at (a phrase of its own, the sentence
before, or something outside the memory), and how sure it is.

Near misses it declines, each for a reason it can name: news of a change ("I stopped
smoking!"), politeness ("don't mention it"), someone else's wish or a meeting's ("told
Dana to stop bringing up the budget in standup"), a temporary one ("until Q3"), a
secret kept from someone ("don't mention the party to Sam"), a hypothetical ("what if
I asked you to ..."), a thing or someone else that is no longer so ("the café no
longer serves oat milk"), and talk about the conversation ("forget my last post").

Linear in the text: sentences come from the strike walker's segmentation
(units.memory_units), each is read up to ``_WINDOW`` characters by a fixed set of
patterns whose repeats are bounded."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .detect import blanket_scope
from .letters import fold
from .units import memory_units

Kind = Literal["refusal", "stop_mentioning", "correction", "retraction", "blanket", "asked_to_forget"]
Points = Literal["object", "previous", "outside", "scope"]
Voice = Literal["first", "user", "they", "name", "subjectless", "transcript"]

_I = re.IGNORECASE
_WINDOW = 600  # a request is said in a sentence's first few hundred characters; the rest is not read
_LOOK_BACK = 3  # the sentences before a finding its "that" may point at


@dataclass(frozen=True)
class Sentence:
    index: int
    start: int  # offsets in the body
    end: int
    text: str  # as written, with any speaker label
    speaker: Literal["user", "assistant", "other", ""]  # a transcript line's label says whose words
    said: str  # without the label, apostrophes straightened (same length as the text it came from)


@dataclass(frozen=True)
class Implied:
    kind: Kind
    sentence: Sentence
    cue: str  # the words that make it a request
    why: str  # the rule, in words
    points: Points
    phrase: str | None  # what it names itself (points: object or scope)
    sure: float  # 0..1
    voice: Voice
    antecedent: Sentence | None = None  # points: previous, the sentence it points at


# --- sentences ------------------------------------------------------------------------
_ABBREV_END_RE = re.compile(r"(?:\b(?:Mr|Mrs|Ms|Mx|Dr|Prof|Sr|Jr|St|Mt|vs|etc|No|approx)|\b[A-Z])\.$")
_LABEL_RE = re.compile(r"(?:\*\*|__)?(?P<name>[A-Za-z][\w' -]{0,24}?)(?:\*\*|__)?[ \t]*:(?:\*\*|__)?[ \t]+")
# a newline, then a label: found from the newline (a pattern opening with a run of spaces
# would rescan a long run from each of its spaces)
_NEXT_SPEAKER_RE = re.compile(r"\n[ \t]{0,8}(?=(?:\*\*|__)?[A-Za-z][\w' -]{0,24}?(?:\*\*|__)?[ \t]*:[ \t])")
_USER_LABELS = frozenset(["user", "me", "i", "human", "you", "q", "customer", "client"])
_ASSISTANT_LABELS = frozenset(
    ["assistant", "ai", "bot", "claude", "chatgpt", "gpt", "agent", "system", "model", "copilot", "gemini", "a"]
)
# Labels that head a note's own text: not a speaker (what follows is the memory's voice).
_NOTE_LABELS = frozenset(
    """update correction note notes reminder todo fyi ps nb edit summary context preference fact heads up
    important addendum clarification big day session log journal entry diary status goal goals idea""".split()
)


def sentences(body: str) -> list[Sentence]:
    """The body's sentences and list items, as Palinode's strike walker cuts them
    (so each is a unit the store caches a vector for), a cut after a title's dot
    ("Dr. Okafor") joined back, each with its speaker when a transcript label
    heads it."""
    spans = [u.span for u in memory_units(body, {}) if u.span is not None]
    merged: list[tuple[int, int]] = []
    for span in spans:
        if merged and _ABBREV_END_RE.search(body, max(merged[-1][0], merged[-1][1] - 8), merged[-1][1]):
            gap = body[merged[-1][1] : span.start]
            if gap.strip() == "" and "\n\n" not in gap:
                merged[-1] = (merged[-1][0], span.end)
                continue
        merged.append((span.start, span.end))
    pieces: list[tuple[int, int]] = []
    for start, end in merged:  # a transcript's next speaker starts a sentence of their own
        cut = start
        for m in _NEXT_SPEAKER_RE.finditer(body, start, end):
            pieces.append((cut, m.start()))
            cut = m.end()
        pieces.append((cut, end))
    out: list[Sentence] = []
    for i, (start, end) in enumerate(p for p in pieces if body[p[0] : p[1]].strip()):
        text = body[start:end].rstrip()
        speaker: Literal["user", "assistant", "other", ""] = ""
        said = text
        label = _LABEL_RE.match(text)
        if label:
            name = label.group("name").strip().lower()
            if not set(name.split()) & _NOTE_LABELS:
                speaker = "user" if name in _USER_LABELS else "assistant" if name in _ASSISTANT_LABELS else "other"
                said = text[label.end() :]
        out.append(Sentence(i, start, start + len(text), text, speaker, said.replace("\u2019", "'")))
    return out


# --- who is speaking, and about whom ------------------------------------------------------
_OPENERS_RE = re.compile(
    r"(?:(?:oh|ok|okay|yeah|yes|no(?=\s*[,.!])|well|so|also|and|but|actually|honestly|seriously|look|listen|hey|hi|just|"
    r"heads\s+up|fyi|btw|by\s+the\s+way|update|correction|note|edit|ps|one\s+more\s+thing|again|sorry|"
    r"on\s+second\s+thought|to\s+be\s+clear|for\s+the\s+record|big\s+news|quick\s+note)\b[\s,:;!.-]*)*",
    _I,
)
_INTRO_RE = re.compile(r"(?:in|at|during|when|while|after|before|on|for|whatever)\b[^,;:]{0,50},\s*", _I)
_AUX = (
    r"(?:no\s+longer|isn't|is|was|wasn't|doesn't|does|didn't|did|don't|do|said|says|told|tells|asked|asks|wants|"
    r"wanted|would|will|has|had|can|could|never|always|still|just|and|thinks|agreed|agrees|begs|begged|'s|'d|"
    r"hates|prefers|likes|keeps|made|makes|got|gets|isn't|aren't|are)"
)
_NAME_SUBJECT_RE = re.compile(rf"(?P<name>[A-Z\u00c0-\u024f][\w'-]*)(?:\s+[A-Z\u00c0-\u024f][\w'-]*)?\s+{_AUX}\b")
_RELATIONS = (
    r"(?:mum|mom|mother|dad|father|parents?|sister|brother|wife|husband|partner|boss|manager|friend|colleague|"
    r"coworker|co-worker|therapist|doctor|gp|sponsor|co-?founder|team|son|daughter|kids?|children|aunt|uncle|"
    r"grand(?:ma|pa|mother|father)|gran|cousin|landlord|landlady|neighbou?r|coach|teacher|ex|girlfriend|"
    r"boyfriend|fianc[ée]e?|roommate|flatmate|mentor|client|lawyer|accountant|dentist|family)"
)
_OTHER_SUBJECT_RE = re.compile(
    rf"(?:(?:my|our|his|her|your)\s+(?:\w+\s+)?{_RELATIONS}\b(?!['’]s)|(?:he|she|it|there)\b(?!['’]?s\s+(?:no\s+longer|not))|"
    r"(?:the|a|an|this|that|these|those|some|every|each|our|their)\s+(?!user\b|bit\b|part\b|note\b|info|detail)[a-z0-9]"
    r"|(?:grand(?:ma|pa)|mum|mom|dad|gran|nana)\b)",
    _I,
)
_USER_SUBJECT_RE = re.compile(r"(?:the\s+user|user|they|they're|they've|they'd|i|i'm|i'd|i've|we|let's)\b", _I)
_NOT_NAMES = frozenset(
    """i i'm i'd i've i'll we let's please don't do stop quit never no not can could would will you your that this it
    it's that's this's user they their he she my the a an in at on when while whatever leave keep spare enough avoid
    steer skip forget pretend scratch take ignore disregard drop correction update heads prefers wants asked does
    did doesn't didn't works lives drives mentioned told said says asks requested has had is was are were""".split()
)


def _voice(sent: Sentence, clause: str, user_names: frozenset[str]) -> Voice:
    if sent.speaker == "user":
        return "transcript"
    first = clause.split(None, 1)[0].lower().strip(",.:;!?") if clause.split() else ""
    if first in ("user", "the"):
        return "user"
    if first in ("they", "they're", "they've", "they'd", "their"):
        return "they"
    if first and fold(first.removesuffix("'s")) in user_names:
        return "name"
    if first in ("i", "i'm", "i'd", "i've", "my", "we", "let's", "please", "don't", "stop", "never", "can", "could"):
        return "first"
    if first and first[0].isalpha() and (first.endswith(("s", "ed")) or first in ("not", "no")):
        return "subjectless"
    return "first"


def _subject_is_other(clause: str, user_names: frozenset[str]) -> bool:
    """Whether the clause's subject is someone or something other than the user (and
    the assistant, addressed): a person named (not the user), a relative, a thing."""
    if _USER_SUBJECT_RE.match(clause):
        return False
    name = _NAME_SUBJECT_RE.match(clause)
    if name and name.group("name").lower() not in _NOT_NAMES:
        return fold(name.group("name").removesuffix("'s")) not in user_names
    return bool(_OTHER_SUBJECT_RE.match(clause))


# --- what makes a sentence one: the cues ------------------------------------------------------
_DISCUSS = (
    r"(?:talk(?:ing)?\s+about|speak(?:ing)?\s+about|chat(?:ting)?\s+about|discuss(?:ing)?|revisit(?:ing)?|"
    r"get(?:ting)?\s+into|go(?:ing)?\s+into|go(?:ing)?\s+over|dwell(?:ing)?\s+on|rehash(?:ing)?|reliv(?:e|ing)|"
    r"bring(?:ing)?\s+up|think(?:ing)?\s+about|deal(?:ing)?\s+with)"
)
_MENTION = (
    r"(?:mention(?:ing)?|bring(?:ing)?\s+up|rais(?:e|ing)|remind(?:ing)?\s+me\s+(?:of|about)|referenc(?:e|ing)|"
    r"refer(?:ring)?\s+to|talk(?:ing)?\s+about|ask(?:ing)?\s+(?:me\s+)?about|going\s+on\s+about|harp(?:ing)?\s+on(?:\s+about)?)"
)
_PRONOUN = r"(?:that|it|this|those|them|these)"
_RULES: tuple[tuple[Kind, str, re.Pattern[str]], ...] = (
    # --- stop mentioning
    (
        "stop_mentioning",
        "asks that it stop coming up",
        re.compile(
            rf"\b(?:stop(?:ped)?|quit|cease)\s+(?:bringing\s+(?P<p>{_PRONOUN})\s+up|{_MENTION})\b",
            _I,
        ),
    ),
    (
        "stop_mentioning",
        "asks that it not be mentioned",
        re.compile(
            r"\b(?:(?:please\s+)?(?:don't|do\s+not|never)|won't\s+you|(?:can|could)\s+(?:you|we)\s+not|"
            r"let's\s+(?:not|never)|would\s+you\s+mind\s+not|(?:i'd|i\s+would)\s+(?:rather|prefer)\s+you\s+"
            r"(?:didn't|did\s+not|not|never))\s+(?:ever\s+|again\s+|please\s+)?"
            rf"(?:bring(?:ing)?\s+(?P<p>{_PRONOUN})\s+up|{_MENTION})\b",
            _I,
        ),
    ),
    (
        "stop_mentioning",
        "asks for no more mentions",
        re.compile(
            r"\b(?:no\s+more\s+|enough\s+(?:with|of)\s+(?:the\s+|all\s+the\s+)?|spare\s+me\s+(?:the\s+|any\s+|all\s+the\s+)?)"
            r"(?:references|mentions|reminders|questions|talk|comments|jokes)\s+(?:to|of|about|on)\b",
            _I,
        ),
    ),
    (
        "stop_mentioning",
        "asks that it not be brought up",
        re.compile(
            r"\b(?:asked|requested|request|ask|prefers?|wants?|would\s+like|'d\s+(?:like|prefer|rather))\s+(?:that\s+)?"
            r"(?P<o>[^.;:!?]{1,80}?)\s+(?:not|never|isn't|is\s+not|wasn't|was\s+not|weren't|no\s+longer)\s+(?:be\s+|get\s+)?"
            r"(?:mentioned|raised|brought\s+up|discussed|referenced|come\s+up|coming\s+up)\b",
            _I,
        ),
    ),
    (
        "stop_mentioning",
        "asks that it not be brought up",
        re.compile(
            r"\b(?:don't|doesn't|do\s+not|does\s+not)\s+want\s+(?P<o>[^.;:!?]{1,80}?)\s+"
            r"(?:mentioned|raised|brought\s+up|discussed|referenced|coming\s+up)\b",
            _I,
        ),
    ),
    (
        "stop_mentioning",
        "asks that it not be brought up",
        re.compile(
            r"\b(?:asked|requested|asks|wants?)\s+(?:me\s+|us\s+|you\s+|the\s+assistant\s+)?(?:not|never)\s+to\s+"
            rf"(?:bring\s+(?P<p>{_PRONOUN})\s+up|{_MENTION}|discuss)\b",
            _I,
        ),
    ),
    (
        "stop_mentioning",
        "asks that it be left out",
        re.compile(r"\b(?:leave|keep)\s+(?P<o>[^.;:!?]{1,60}?)\s+out\s+of\b", _I),
    ),
    # --- refusals to discuss
    (
        "refusal",
        "won't discuss it",
        re.compile(
            r"\b(?:don't|doesn't|didn't|do\s+not|does\s+not|never)\s+(?:really\s+|even\s+|ever\s+)?"
            rf"(?:want|wish|like|care|feel\s+like|need)\s+(?:to\s+)?{_DISCUSS}\b",
            _I,
        ),
    ),
    (
        "refusal",
        "would rather not discuss it",
        re.compile(
            r"\b(?:(?:i'd|he'd|she'd|they'd|we'd|would)\s+(?:really\s+|much\s+)?(?:rather|prefer)|prefers?|preferring)\s+"
            rf"(?:not|we\s+(?:didn't|did\s+not|don't|not))\s+(?:to\s+)?{_DISCUSS}\b",
            _I,
        ),
    ),
    (
        "refusal",
        "asks not to discuss it",
        re.compile(
            rf"\b(?:can|could)\s+we\s+(?:please\s+)?(?:not|skip|avoid|stop|drop)\s+(?:{_DISCUSS}\b|the\s+(?:subject|topic)\s+of\b)?",
            _I,
        ),
    ),
    (
        "refusal",
        "asks not to discuss it",
        re.compile(r"\blet's\s+(?:not|never)\s+(?:go\s+there|" + _DISCUSS + r"\b)", _I),
    ),
    (
        "refusal",
        "calls it off limits",
        re.compile(
            r"\b(?:is|are|was|were)\s+(?:(?:completely|totally|strictly|now|a)\s+)?(?:off[\s-]limits|off\s+the\s+table|"
            r"not\s+(?:up|open)\s+for\s+(?:discussion|debate)|(?:a\s+)?(?:sore|touchy|sensitive|painful)\s+"
            r"(?:subject|topic|point|spot))\b",
            _I,
        ),
    ),
    (
        "refusal",
        "won't discuss it",
        re.compile(
            r"\b(?:i'm|i\s+am|they're|they\s+are|is|are)\s+(?:(?:done|finished|through)\s+(?:talking|discussing|"
            r"dealing)(?:\s+about|\s+with)?|not\s+comfortable\s+(?:talking\s+about|discussing|sharing))\b",
            _I,
        ),
    ),
    (
        "refusal",
        "asks to avoid it",
        re.compile(
            r"(?:^|please\s+)(?:avoid|steer\s+clear\s+of|stay\s+away\s+from|skip)\s+(?:the\s+(?:topic|subject)\s+of\b|"
            r"any\s+(?:talk|mention)\s+of\b)?",
            _I,
        ),
    ),
    (
        "refusal",
        "doesn't want it kept",
        re.compile(
            r"\b(?:don't|do\s+not|doesn't|does\s+not)\s+want\s+(?P<o>[^.;:!?]{1,60}?)\s+(?:in|on)\s+"
            r"(?:my|the|your|their)\s+(?:profile|memory|memories|notes|records?|file)\b",
            _I,
        ),
    ),
    # --- corrections that retire a fact
    (
        "correction",
        "says it is no longer true",
        re.compile(
            rf"^(?P<p>{_PRONOUN})(?:'s|\s+is|\s+was|\s+isn't|\s+is\s+not|\s+was\s+not|\s+wasn't)?\s*(?:(?:simply|just|also|all|so|definitely)\s+)?"
            r"(?:not\s+(?:true|accurate|correct|right|the\s+case|current|valid)|no\s+longer\s+(?:true|accurate|correct|"
            r"the\s+case|current|valid|relevant)|(?:true|accurate|correct|right|valid|current|relevant)\s+(?:anymore|"
            r"any\s+more|any\s+longer)|outdated|out\s+of\s+date|old\s+news|wrong|incorrect|inaccurate|obsolete|stale|"
            r"false|changed|has\s+changed|ended|over|fell\s+through|didn't\s+happen|never\s+happened)\b",
            _I,
        ),
    ),
    (
        "correction",
        "says it is no longer true",
        re.compile(
            r"^(?:(?:all|this|that)\s+)?(?:outdated|out\s+of\s+date|no\s+longer\s+(?:true|accurate|the\s+case)|"
            r"not\s+true\s+(?:anymore|any\s+more))\s*[.!]*$",
            _I,
        ),
    ),
    (
        "correction",
        "says it is no longer true",
        re.compile(
            r"^it(?:'s|\s+is|\s+was)?\s*(?:no\s+longer|not|n't|isn't|is\s+not)\s+(?:the\s+case|true|accurate)"
            r"(?:\s+(?:anymore|any\s+more))?\s+that\s+(?P<o>.{1,120})",
            _I,
        ),
    ),
    (
        "correction",
        "says a note about it is out of date",
        re.compile(
            r"\b(?:your|the|that|my)\s+(?:note|info|information|record|memory|entry|bit|part|detail|line|stuff)s?\s+"
            r"(?:about|on|that|saying)\s+(?P<o>[^.;!?]{1,80}?)\s+(?:is|are|was|'s)\s+(?:now\s+)?(?:outdated|out\s+of\s+date|"
            r"wrong|incorrect|stale|old|obsolete|no\s+longer\s+(?:true|accurate|correct|relevant)|not\s+(?:true|accurate|"
            r"correct)(?:\s+(?:anymore|any\s+more))?)\b",
            _I,
        ),
    ),
    (
        "correction",
        "says a note about it no longer applies",
        re.compile(
            r"\b(?:your|the|that|my)\s+(?:note|info|information|record|memory|entry|bit|part|detail|line|stuff)s?\s+"
            r"(?:about|on|that|saying)\s+(?P<o>[^.;!?]{1,80}?)\s+(?:doesn't|does\s+not|no\s+longer|don't)\s+"
            r"(?:apply|hold|stand)\b",
            _I,
        ),
    ),
    ("correction", "says it is no longer so", re.compile(r"\bno\s+longer\s+(?P<o>[^;:!?]{1,80})", _I)),
    (
        "correction",
        "says it is not so anymore",
        re.compile(
            r"(?:\b(?:'m|am|'re|are|'s|is|was)\s+not|\b(?:am|are|is|was)n't|\b(?:do|does|did)n't|\b(?:do|does|did)\s+not|"
            r"^not)\s+(?P<o>[^.;:!?]{1,60}?)\s+(?:anymore|any\s+more|any\s+longer)\b",
            _I,
        ),
    ),
    (
        "correction",
        "says it used to be so",
        re.compile(
            r"\bused\s+to\s+(?P<o>[^.;:!?]{1,60}?),?\s+but\s+(?:not\s+(?:anymore|any\s+more|now)|no\s+longer)\b", _I
        ),
    ),
    # --- retractions of what was just said
    (
        "retraction",
        "takes back what was just said",
        re.compile(
            r"\b(?:(?:please\s+)?(?:forget|ignore|disregard|never\s+mind|strike|scratch|unsay)\s+"
            r"(?:(?:that\s+)?i\s+(?:just\s+)?(?:said|mentioned|told\s+you|wrote|shared)\s+)?(?:that|this|it|anything|"
            r"all\s+that|what\s+i\s+(?:just\s+)?(?:said|wrote|told\s+you|shared|mentioned))"
            r"(?=\s*(?:[.!?,;:\u2026\u2014\u2013-]|$|(?:and|please|ok|okay|sorry)\b))"
            r"|pretend\s+i\s+(?:never|didn't)\s+(?:said|say|mentioned|mention|told\s+you|tell\s+you)"
            r"|take\s+(?:that|it|this)\s+back|i\s+(?:shouldn't|should\s+not)\s+have\s+(?:said|told\s+you|mentioned|shared)"
            r"|(?:i\s+)?(?:wish|regret)\s+(?:i\s+)?(?:hadn't|had\s+not|never)\s+(?:said|told\s+you|mentioned|shared))\b",
            _I,
        ),
    ),
    # --- a request to forget reported in the user's voice
    (
        "asked_to_forget",
        "reports the user asking to forget it",
        re.compile(
            r"\b(?:asked|requested|wants?|wanted|would\s+like)\s+(?:the\s+assistant\s+|you\s+|me\s+|us\s+)?"
            r"(?:to\s+)?(?:forget|erase|wipe|delete|drop|remove)\s+(?P<o>[^.;!?]{1,100})",
            _I,
        ),
    ),
)
# What some rule above needs, in one pattern: a sentence (or a memory) holding none of it is no
# request in other words, and is never read by the rules (most of a store's text holds none).
CUE_PATTERN = (
    r"\b(?:stop(?:ped)?|quit|cease)\s+(?:bring|mention|referenc|refer|rais|remind|talk|ask|go|harp)"
    r"|mention|bring(?:ing)?\s+(?:\w+\s+)?up\b|brought\s+up|com(?:e|ing)\s+up|rais(?:e|ed|es|ing)\b|remind|referenc"
    r"|refer(?:ring)?\s+to|(?:talk|speak|chat)\w*\s+about|ask(?:ing)?\s+(?:me\s+)?about|going\s+on\s+about|harp"
    r"|discuss|revisit|get(?:ting)?\s+into|go(?:ing)?\s+(?:into|over|there)|dwell|rehash|reliv|think(?:ing)?\s+about"
    r"|deal(?:ing)?\s+with|no\s+more|enough\s+(?:with|of)|spare\s+me|\b(?:leave|keep)\b[^.!?]{1,60}?\bout\s+of\b"
    r"|(?:can|could)\s+we\s+(?:please\s+)?(?:not|skip|avoid|stop|drop)|let'?s\s+(?:not|never)"
    r"|off[\s-]limits|off\s+the\s+table|(?:up|open)\s+for\s+(?:discussion|debate)"
    r"|(?:sore|touchy|sensitive|painful)\s+(?:subject|topic|point|spot)"
    r"|(?:done|finished|through)\s+(?:talking|discussing|dealing)|comfortable\s+(?:talking|discussing|sharing)"
    r"|avoid|steer\s+clear|stay\s+away|\bskip\b"
    r"|want\b[^.!?]{1,60}?\b(?:in|on)\s+(?:my|the|your|their)\s+(?:profile|memor|notes|record|file)"
    r"|\b(?:that|this|it|those|them|these)(?:'s|\s+(?:is|was|isn't|is\s+not|was\s+not|wasn't))?\s*"
    r"(?:(?:simply|just|also|all|so|definitely)\s+)?(?:not\s+|no\s+longer\s+)?(?:true|accurate|correct|right|the\s+case"
    r"|current|valid|relevant|outdated|out\s+of\s+date|old\s+news|wrong|incorrect|inaccurate|obsolete|stale|false"
    r"|changed|has\s+changed|ended|over|fell\s+through|didn't\s+happen|never\s+happened)"
    r"|outdated|out\s+of\s+date|no\s+longer|not\s+true|any\s*more|any\s+longer|(?:not|n't)\s+(?:the\s+case|true|accurate)"
    r"|(?:note|info|information|record|memory|entry|bit|part|detail|line|stuff)s?\s+(?:about|on|that|saying)"
    r"|forget|ignore|disregard|never\s+mind|strike|scratch|unsay|pretend\s+i|take\s+(?:that|it|this)\s+back"
    r"|should(?:n't|\s+not)\s+have|wish\s+i|regret|hadn't|had\s+not"
    r"|(?:asked|requested|wants?|wanted|would\s+like)\b[^.!?]{0,40}?\b(?:forget|erase|wipe|delete|drop|remov)"
    r"|correction|actually"
)
_PREFILTER_RE = re.compile(CUE_PATTERN)  # searched in lower case: a case-blind search is five times slower


def may_hold_request(text: str) -> bool:
    """Whether ``text`` holds anything some rule needs (a memory holding nothing is skipped whole)."""
    return _PREFILTER_RE.search(text.lower().replace("\u2019", "'")) is not None


# --- guards: why a near miss is not one --------------------------------------------------------------
_HYPOTHETICAL_RE = re.compile(
    r"\b(?:what\s+if|suppose|supposing|imagine|hypothetically|is\s+it\s+possible|i\s+wonder|say\s+i\b|"
    r"would\s+you\s+(?:ever|be\s+able)|if\s+(?:i|we|you)\b(?!['’]d\s+(?:stop|not))(?!\s+(?:would|could)\s+(?:stop|not)))",
    _I,
)
_POLITE_IF_RE = re.compile(
    r"\b(?:appreciate\s+it|grateful|glad|thankful|mind)\s+if\s+you\b|\bif\s+you\s+(?:would|could)\s+(?:stop|not|please)",
    _I,
)
_ASKED_SOMEONE_RE = re.compile(
    r"\b(?:asked|asks|told|tells|begged|begs|reminded|instructed|warned|wants|wanted|got|requested)\s+"
    r"(?P<who>(?!the\s+assistant\b|the\s+ai\b|the\s+bot\b|you\b|that\b|not\b|never\b)[\w'-]+(?:\s+[\w'-]+)?)\s+"
    r"(?:to|not\s+to|never\s+to)\s",
    _I,
)
_SELF_RESTRAINT_RE = re.compile(
    r"\b(?:i|we)\s+(?:really\s+)?(?:should|must|need\s+to|have\s+to|will|'ll|want\s+to|try\s+to|am\s+trying\s+to|"
    r"'m\s+trying\s+to|can't|cannot|could|'d|would)\s+(?:really\s+)?(?:stop|quit|avoid|not\s+(?:mention|bring|talk))",
    _I,
)
_TEMPORARY_RE = re.compile(
    r"\b(?:until|till|tonight|today|this\s+(?:week|evening|morning|afternoon|time|weekend)|right\s+now|for\s+now|"
    r"yet|before\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|next|the|his|her|their))\b",
    _I,
)
_RECIPIENT_RE = re.compile(
    r"\bto\s+(?!me\b|us\b|you\b|anyone\s+else\b)(?:[A-Z][\w'-]+|him|her|them|anyone|anybody|my\s+\w+|the\s+(?:kids|team|"
    r"family|boss|others))\b"
)
_PERSISTENT_RE = re.compile(
    r"\b(?:again|anymore|any\s+more|ever|from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|any\s+longer|"
    r"at\s+all|no\s+more|for\s+good)\b",
    _I,
)
_THANKS_RE = re.compile(r"\b(?:thanks|thank\s+you|thanked|cheers|grateful|appreciate)\b|happy\s+to\s+help", _I)
_COGNITIVE_RE = re.compile(
    r"(?:(?:really\s+)?(?:remember|recall|know|think|believe|understand|see|hear|get|mind|care|sure|certain|able|"
    r"feel\s+(?:sure|like)|need\s+to|have\s+to|recognis|recogniz)\b|can\b|could\b)",
    _I,
)
_PERSONAL_RE = re.compile(
    r"\b(?:my|mine|me|i|i'm|i've|i'd|myself|their|them|they|they're|theirs|user's|the\s+user's|our)\b", _I
)
_CONVERSATION_RE = re.compile(
    r"^(?:my|the|that|this)\s+(?:(?:last|previous|earlier|other|first)\s+)*(?:post|posting|message|comment|email|"
    r"question|draft|reply|answer|pr|pull\s+request|log|thread|typo|mistake|link)s?\b",
    _I,
)

# --- the phrase a request names -----------------------------------------------------------------------
_OBJECT_END_RE = re.compile(
    r"[,;:()\u2014\u2013]|\s-\s|\s(?:again|anymore|any\s+more|ever(?:\s+again)?|from\s+now\s+on|going\s+forward|"
    r"in\s+(?:the\s+)?future|at\s+all|please|any\s+longer|with\s+me|to\s+me|for\s+now|for\s+good|because|since|"
    r"as|so|when|whenever|every\s+time|unless|until|if|though|now|anywhere|in\s+(?:every|any|all|our|your|the\s+"
    r"future|future|summaries|emails?|drafts?|conversations?|chats?|messages?|replies|answers|recommendations?)|"
    r"not\s+be|isn't|is\s+not|not|never|be\s+(?:mentioned|raised)|out\s+of)\b",
    _I,
)
_OBJECT_LEAD_RE = re.compile(
    r"^(?:(?:about|regarding|on|of|to|the\s+(?:topic|subject|matter)\s+of|the\s+fact\s+that|that\s+(?=\w+\s+\w))\s+)*",
    _I,
)
_CHANGE_RE = re.compile(
    r"\bi(?:'ve|\s+have)?\s+(?:(?:quit|stopped|gave\s+up|left|sold|moved\s+out\s+of|moved\s+away\s+from|broke\s+up\s+with|"
    r"finished|ended|dropped|lost|retired\s+from)\s+(?P<o>[^.;:!?,]{1,60})|never\s+(?P<n>[^.;:!?,]{1,60}))",
    _I,
)
_NEGATED_FACT_RE = re.compile(
    r"^(?:i\s+(?:don't|do\s+not|didn't|did\s+not|never|have\s+never|'ve\s+never)|i'm\s+not|i\s+am\s+not|i\s+wasn't)\s+"
    r"(?P<o>[^.;:!?,]{1,60})",
    _I,
)
_TIME_TAIL_RE = re.compile(
    r"\s+(?:last|this|next|in|on|since|ago|yesterday|today|recently|back\s+in|years?|months?|weeks?|\d+)\b.*$", _I
)


def _object(text: str) -> str:
    """The phrase at the start of ``text`` a cue names: up to a clause break or a tail
    ("again", "in summaries", "please")."""
    text = _OBJECT_LEAD_RE.sub("", text.strip())
    for dot in re.finditer(r"[.!?](?=\s|$)", text):
        if not _ABBREV_END_RE.search(text, max(0, dot.start() - 6), dot.end()):
            text = text[: dot.start()]
            break
    cut = _OBJECT_END_RE.search(text)
    phrase = text[: cut.start()] if cut else text
    return phrase.strip().rstrip(".!?\"'”").strip()


def _is_pronoun(phrase: str) -> bool:
    words = phrase.lower().split()
    return not words or words[0] in (
        "that",
        "it",
        "this",
        "those",
        "them",
        "these",
        "what",
        "anything",
        "all",
        "everything",
    )


def find_implied(body: str, user_names: frozenset[str] = frozenset()) -> list[Implied]:
    """Every sentence of ``body`` that reads as a request in other words, at most one
    finding per sentence, in body order. ``user_names``: folded tokens of the user's
    names (a sentence with one as its subject is the user's)."""
    sents = sentences(body)
    out: list[Implied] = []
    for i, sent in enumerate(sents):
        # only the few sentences before it are read (a "that" points close by): a slice of
        # the whole list for each sentence would be quadratic
        found = _one(sent, sents[max(0, i - _LOOK_BACK) : i], user_names)
        if found is not None:
            out.append(found)
    return out


def _one(sent: Sentence, before: list[Sentence], user_names: frozenset[str]) -> Implied | None:
    if sent.speaker in ("assistant", "other"):
        return None  # the assistant's words, or someone else's
    said = sent.said[:_WINDOW]
    if not _PREFILTER_RE.search(said.lower()):
        return None
    opener = _OPENERS_RE.match(said)
    clause = said[opener.end() if opener else 0 :]
    label = said[: opener.end()].lower() if opener else ""
    intro = _INTRO_RE.match(clause)
    main = clause[intro.end() :] if intro else clause
    best: Implied | None = None
    for kind, why, rule in _RULES:
        m = rule.search(main) if not rule.pattern.startswith("^") else rule.match(main)
        if m is None:
            continue
        found = _judge(kind, why, m, sent, main, before, user_names)
        if found is not None and (
            best is None or (_RANK[found.points], -found.sure) < (_RANK[best.points], -best.sure)
        ):
            best = found
    if best is None and re.search(r"\b(?:correction|actually)\b", label):
        # "Correction: I don't have a peanut allergy, that was my sister."
        negated = _NEGATED_FACT_RE.match(main)
        if negated and not _HYPOTHETICAL_RE.search(main):
            phrase = _TIME_TAIL_RE.sub("", _object(negated.group("o"))).strip()
            if phrase:
                voice = _voice(sent, main, user_names)
                return Implied(
                    "correction",
                    sent,
                    label.strip() + " " + negated.group().strip(),
                    "corrects a fact",
                    "object",
                    phrase,
                    0.75,
                    voice,
                )
    return best


_THEIR_RE = re.compile(r"\b(?:their|them|themselves|his|her|him)\b", _I)
_MINE = {"their": "my", "them": "me", "themselves": "myself", "his": "my", "her": "my", "him": "me"}
_TRUTH_RE = re.compile(r"(?:true|accurate|correct|right|valid|current|relevant|the\s+case)(?:\s+(?:now|either))?", _I)
_RANK = {"scope": 0, "object": 0, "previous": 1, "outside": 2}


def _judge(
    kind: Kind,
    why: str,
    m: re.Match[str],
    sent: Sentence,
    main: str,
    before: list[Sentence],
    user_names: frozenset[str],
) -> Implied | None:
    """The finding the cue ``m`` makes of the sentence, or None when a guard says it is a near miss."""
    prefix, rest = main[: m.start()], main[m.end() :]
    if _HYPOTHETICAL_RE.search(main) and not _POLITE_IF_RE.search(main):
        return None  # "what if I asked you to ...", "if I weren't at Acme anymore"
    asked = _ASKED_SOMEONE_RE.search(main, 0, m.end() + 12)
    if (asked and asked.group("who").lower().split()[0] not in ("me", "us")) or (
        asked and _subject_is_other(main, user_names)
    ):
        return None  # "told Dana to stop ...", "Mum asked me to stop ...": someone else is asked, or asks
    if _SELF_RESTRAINT_RE.search(main, 0, m.end()):
        return None  # "I should stop bringing up the past": the user restraining themselves
    voice = _voice(sent, main, user_names)
    # the subject: whose wish, or whose fact
    other = _subject_is_other(main, user_names)
    groups = m.groupdict()
    pronoun = groups.get("p")
    own = groups.get("o")
    borrowed = False
    if kind in ("stop_mentioning", "refusal"):
        if other and not (why == "calls it off limits" and _PERSONAL_RE.search(prefix)):
            return None  # "Priya doesn't want to talk about her divorce", "My manager would rather not ..."
        if _TEMPORARY_RE.search(main):
            return None  # "until Q3", "tonight": a wish for now, not to forget
        if _RECIPIENT_RE.search(rest if own is None else main[m.start("o") :]):
            return None  # "don't mention the party to Sam": a secret kept from someone
        if why == "calls it off limits":
            phrase = _object(prefix.rsplit(",", 1)[-1]) if prefix.strip() else ""
        elif own is not None:
            phrase = _object(own)
        elif pronoun:
            phrase = pronoun
        else:
            phrase = _object(rest)
        if why == "asks not to discuss it" and "go there" in m.group().lower() and "," in prefix:
            phrase = _object(prefix.rsplit(",", 1)[0].split(",")[-1].split(" is ")[0])
        if _CONVERSATION_RE.match(phrase):
            return None
        persistent = _PERSISTENT_RE.search(main) is not None
        if (
            re.fullmatch(r"it", phrase, _I)
            and not persistent
            and (_POLITE_RE.search(m.group()) or _THANKS_RE.search(main) or _THANKS_RE.search(_last_said(before)))
        ):
            return None  # "don't mention it": politeness
        borrowed = False
        if _is_pronoun(phrase):
            earlier = _earlier_phrase(prefix)  # "you keep referencing my PhD dropout; please don't bring it up"
            if earlier:
                phrase, borrowed = earlier, True
        if not _is_pronoun(phrase) and phrase:
            personal = _PERSONAL_RE.search(phrase) or _names_user(phrase, user_names) or voice in ("name",)
            conversational = re.search(r"bring|rais|remind|refer|harp|going\s+on", m.group(), _I)
            first_person_wish = kind == "refusal" and why != "asks to avoid it"
            if not (personal or persistent or conversational or first_person_wish):
                return None  # "never mention competitor names": an instruction, not about the user
            if not personal and not first_person_wish and why in ("asks to avoid it", "asks that it be left out"):
                return None
    elif kind == "correction":
        if other and why not in (
            "says it is no longer true",
            "says a note about it is out of date",
            "says a note about it no longer applies",
        ):
            return None  # "the café no longer serves oat milk", "my sister isn't vegetarian anymore"
        if why in ("says it is no longer so", "says it is not so anymore"):
            if not (
                _USER_SUBJECT_RE.match(main)
                or voice in ("subjectless", "name", "they", "user")
                or re.match(r"not\b", main, _I)
            ):
                return None
            if prefix and not re.search(
                r"(?:^|\s)(?:i|i'm|i\s+am|they|they're|user|the\s+user|we|we're|"
                r"[\w'-]+)\s*$",
                prefix,
                _I,
            ):
                return None
            if _TRUTH_RE.fullmatch(_object(own or "")):
                return None  # "that's not true anymore": the pronoun rule's
            if _COGNITIVE_RE.match(own or "") or re.search(r"\b(?:can't|cannot|couldn't|won't)\b", prefix, _I):
                return None  # "I no longer remember", "I'm not sure anymore", "I can't keep up anymore"
        phrase = _object(own) if own is not None else (pronoun or "")
        if why == "says it is no longer true" and own is not None and not _PERSONAL_RE.search(own):
            return None  # "it isn't true that the bus runs": not the user's fact
    elif kind == "retraction":
        phrase = "that"
    else:  # asked_to_forget
        if other or (voice == "first" and not sent.speaker):
            return (
                None  # "Mum wants me to forget ...": someone else; a first-person "forget" is the explicit detector's
            )
        scope = blanket_scope(_THEIR_RE.sub(lambda w: _MINE[w.group().lower()], own or ""))
        if scope:
            return Implied("blanket", sent, _cue(m), "a blanket request, reported", "scope", scope, 0.85, voice)
        phrase = _object(own or "")
        if not phrase or (_is_pronoun(phrase) and phrase.lower() not in ("that", "it", "this")):
            return None
    sure = 0.9 if kind in ("stop_mentioning", "refusal", "asked_to_forget") else 0.75
    if kind in ("stop_mentioning", "refusal") and borrowed:
        sure = 0.85  # what "it" names was read from earlier in the sentence
    if kind == "correction" and why.startswith("says it is no"):
        sure = 0.7  # could be news as much as a correction
    cue = _cue(m)
    if phrase and not _is_pronoun(phrase):
        return Implied(kind, sent, cue, why, "object", phrase, sure, voice)
    if kind == "correction":
        # "that's not true anymore, I quit smoking last year": the clause after says what it was, when
        # nothing before does
        explained = _explained(rest)
        if explained and not _previous(before):
            return Implied(kind, sent, cue, why, "object", explained, 0.75, voice)
    previous = _previous(before, personal=kind == "retraction")
    if previous is not None:
        return Implied(kind, sent, cue, why, "previous", None, round(sure - 0.1, 2), voice, previous)
    if kind == "retraction":
        return None  # nothing personal was said before: talk about the conversation ("forget I said anything")
    return Implied(kind, sent, cue, why, "outside", None, round(sure - 0.25, 2), voice)


_POLITE_RE = re.compile(r"^(?:please\s+)?(?:don't|do\s+not)\s+mention$", _I)
_POSSESSED_RE = re.compile(r"\b(?:my|their|the\s+user's|user's)\s+[^\W\d_]", _I)


def _earlier_phrase(prefix: str) -> str | None:
    """The last phrase owned by the user before the cue in the same sentence."""
    found = list(_POSSESSED_RE.finditer(prefix))  # bounded: the prefix is a window's part
    if not found:
        return None
    phrase = _object(prefix[found[-1].start() :])
    return phrase or None


def _cue(m: re.Match[str]) -> str:
    """The words that made the finding, what they name shown as "…"."""
    if m.groupdict().get("o") is None:
        return " ".join(m.group().split())
    text = m.string[m.start() : m.start("o")] + "…" + m.string[m.end("o") : m.end()]
    return " ".join(text.split())


def _names_user(phrase: str, user_names: frozenset[str]) -> bool:
    return any(fold(w.strip("'s,.")) in user_names for w in phrase.split())


def _last_said(before: list[Sentence]) -> str:
    return before[-1].said if before else ""


def _explained(rest: str) -> str | None:
    """The fact a correction's own clause retires: "..., I quit smoking last year" ->
    "smoking"; "..., I've never had a cat" -> "had a cat"."""
    clause = rest.lstrip(" ,;:-\u2014\u2013")
    m = _CHANGE_RE.search(clause[:200]) or _NEGATED_FACT_RE.match(clause[:200])
    if m is None:
        return None
    phrase = m.group("o") if m.groupdict().get("o") else m.groupdict().get("n")
    if not phrase:
        return None
    phrase = _TIME_TAIL_RE.sub("", phrase).strip()
    return phrase or None


# what a retraction takes back is a fact of the user's own ("my landlord is suing me", "I'm thinking of ...");
# "I can't tell you that" is talk, not a fact
_OWN_FACT_RE = re.compile(
    r"\b(?:my|mine|their|user's|your)\b|\b(?:i'm|i\s+am|i\s+was|i've|i\s+have|i\s+had|i\s+got|i\s+owe|i\s+lost|"
    r"they're|they\s+are|they\s+were|user\s+(?:is|was|has))\b",
    _I,
)
_FILLER_RE = re.compile(
    r"^(?:ok(?:ay)?|sure|thanks?|thank\s+you|of\s+course|noted|got\s+it|understood|right|yes|no|yeah)\b", _I
)


def _previous(before: list[Sentence], personal: bool = False) -> Sentence | None:
    """The sentence a "that" or "it" points at: the nearest one before that says
    something (not "Okay." or "Thanks!"); with ``personal``, only one about the user
    (in their first person, as "the user" or "they", or the assistant's "you")."""
    for sent in reversed(before[-_LOOK_BACK:]):
        text = sent.said.strip()
        if len(re.findall(r"[^\W\d_]{3,}", text)) < 3 or (_FILLER_RE.match(text) and len(text) < 40):
            continue
        if personal and not _OWN_FACT_RE.search(text):
            return None
        return sent
    return None


def last_statement(body: str, user_names: frozenset[str] = frozenset()) -> Sentence | None:
    """The sentence of another memory (the same day's note) that a "that" most likely
    points at: its last one that says something about the user, else its last one
    that says something."""
    sents = [s for s in sentences(body) if s.speaker != "other"]
    said = [s for s in sents if len(re.findall(r"[^\W\d_]{3,}", s.said)) >= 3 and not s.said.rstrip().endswith("?")]
    about = [
        s
        for s in said
        if _PERSONAL_RE.search(s.said)
        or re.search(r"\b(?:user|the\s+user)\b", s.said, _I)
        or _names_user(s.said, user_names)
    ]
    pool = about or said
    return pool[-1] if pool else None
