"""Deterministic detection of an explicit first-person forget request (spec §4.2,
its known misses fixed and more request frames accepted; issue 14). Kept apart
from forget.py so the store can record each memory's request when it parses a file.

Memory text is hostile: every regex here either runs once per "forget" token on a
bounded window around it, or is anchored/guarded so that no start position can
rescan a run (blank lines, spaces, dots) another start already scanned. The total
is linear in the text (bench/linear_detect.py measures it).

Extraction rules (tests/core/detection_cases.yaml pins each one):
- the preference is the request's object with framing stripped, never content;
- where Palinode 0.23 detects a genuine request we extract what it extracts (the
  retraction id is derived from the phrase), except where its cut is wrong: at an
  abbreviation's dot, a second instruction kept in, a quote or emphasis kept;
- "what I said about X" is a request only if X is about the user, and names X;
- a bare pronoun or possessive is never a preference; talk about the conversation
  (my last message, my last post, that typo, the filter, what I said) is not a request,
  nor taking back what was said about a topic not the user's ("that I mentioned anything
  about complex numbers");
- a run of bare "Forget X." sentences is rhetoric ("Forget the busy box errors. Forget
  the disk ... Forget the fact that ..."), and a that-clause whose subject is "it" is a
  thing's doing, not the user's fact;
- a blanket request ("forget everything (you know) about me", "my work stuff") names a
  scope, not a preference (detect_blanket): a person chooses what it covers, it is never
  planned on the whole store. One Palinode 0.23 detects keeps its preference and rid."""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator

from .request_lines import _BEFORE, _line_shape, _logical_line
from .sentence_ends import _sentence

_I = re.IGNORECASE
_FORGET_RE = re.compile(r"\bforget\b", _I)
_FP = r"(?:my|me|i)\b"
_FP_RE = re.compile(_FP, _I)
_FP_HINT_RE = re.compile(rf"\b{_FP}", _I)
_FENCE_RE = re.compile(r"^[ \t]{0,3}(?:`{3}|~{3})", re.MULTILINE)
_LAST_WORD_RE = re.compile(r"([A-Za-z]+)[^A-Za-z\n]{0,3}$")
_FRAME_TAIL = frozenset(
    [
        "please",
        "kindly",
        "pls",
        "plz",
        "just",
        "also",
        "now",
        "simply",
        "completely",
        "totally",
        "really",
        "actually",
        "finally",
        "you",
        "to",
        "and",
        "so",
        "then",
        "oh",
        "ok",
        "okay",
        "hey",
        "well",
        "but",
        "btw",
        "yes",
        "no",
        "thanks",
        "alright",
        "right",
        "anyway",
        "lastly",
        "again",
        "would",
        "could",
        "can",
        "will",
    ]
)

# --- line structure ---------------------------------------------------------------
_OPENER = (
    r"(?:hey|hi|hello|oh|ok|okay|so|and|also|but|well|now|then|actually|honestly|seriously|"
    r"btw|right|alright|um|uh|thanks|thank\s+you|yes|no|sorry|again|finally|lastly|anyway)"
)
_ADV = r"(?:just|also|now|simply|completely|totally|really|actually|finally|please|kindly)"
_CLAUSE_RE = re.compile(
    rf"""\s*(?:{_OPENER}[\s,!.]*){{0,3}}(?:(?:hey|hi|hello)\s+[a-z][\w-]{{0,20}}[\s,]*)?
    (?P<frame>
        (?P<polite>(?:please|kindly|pls|plz),?\s+)?(?:{_ADV}\s+){{0,2}}
      | (?P<ask>(?:can|could|would|will)\s+you\s+(?:{_ADV}\s+){{0,2}})
      | i(?:['’]d|\s+would)?\s+(?:really\s+)?(?:like|want|need)\s+you\s+to\s+(?:{_ADV}\s+){{0,2}}
      | i(?:['’]d|\s+would)\s+(?:appreciate\s+it|be\s+(?:grateful|glad|thankful))\s+if\s+you
            \s+(?:would|could|can|will)\s+(?:{_ADV}\s+){{0,2}}
      | i(?:['’]m|\s+am)\s+asking\s+you\s+to\s+
      | (?:please\s+)?(?:go\s+ahead\s+and|make\s+sure\s+(?:to|you)|(?:delete|erase|remove|drop)\s+and)\s+
    )""",
    _I | re.VERBOSE,
)
_BARE_HEAD_RE = re.compile(
    rf"\s*(?:{_OPENER}[\s,!.]*){{0,3}}(?:(?:(?:hey|hi|hello)\s+)?(?:claude|palinode|assistant|bot|chatgpt)"
    r"|(?:hey|hi|hello)\s+[a-z][\w-]{0,20})?[\s,!.]*(?:please|kindly|pls|plz)?[\s,!.]*",
    _I,
)
_BARE_ADV = frozenset(["just", "also", "now", "simply", "completely", "totally", "really", "actually", "finally"])
_CLAUSE_BREAK_RE = re.compile(r"[,;:(\"“—–]|\s-\s")
_REPORTED_RE = re.compile(
    r"\b(?:asked|told|said|says|wrote|writes|texted|messaged|begged|wants?|wanted|"
    r"requested|replied|emailed|asks|tells|begs|shouted|yelled|added|whispered)\b",
    _I,
)
_WORD_BEFORE_RE = re.compile(r"(\w+)(?:['’]\w+)?\s+$")
# A request framed as an example or a supposition is talk about a request, not one.
_HYPOTHETICAL_RE = re.compile(
    r"\b(?:suppose|supposing|imagine|pretend|hypothetically|what\s+if|for\s+(?:example|instance)|"
    r"such\s+as|say\s+something\s+like)\b|\b(?:e\.g|i\.e)\b",
    _I,
)


def _frame(prefix: str) -> str | None:
    """'bare', 'polite' or 'ask' when ``prefix`` (sentence start to "forget") is a
    request frame said by the user, else None."""
    breaks = list(_CLAUSE_BREAK_RE.finditer(prefix))
    head, clause = (prefix[: breaks[-1].start()], prefix[breaks[-1].end() :]) if breaks else ("", prefix)
    m = _CLAUSE_RE.fullmatch(clause.replace("*", " ").replace("_", " "))  # **Please** forget
    if not m or _HYPOTHETICAL_RE.search(head):
        return None
    for r in _REPORTED_RE.finditer(head):
        who = _WORD_BEFORE_RE.search(head, max(0, r.start() - 24), r.start())
        if not who or who.group(1).lower() != "i":
            return None  # reported speech: someone else's words
    if m.group("ask"):
        return "ask"
    words = set(m.group("frame").lower().replace(",", " ").split())
    if (
        words & {"please", "kindly", "pls", "plz"}
        or not words <= _BARE_ADV
        or re.search(r"\b(?:please|kindly)\W*$", head, _I)
    ):
        return "polite"
    # A bare imperative after a label or a clause ("Goals: forget my ex") is a note,
    # not a request; only greetings and openers may come before it.
    return "bare" if not head.strip() or _BARE_HEAD_RE.fullmatch(head) else None


# --- the object after "forget" -------------------------------------------------------
_QUOTES = "\"'\u201c\u201d\u2018\u2019"
_TRIM = _QUOTES + "*_"
_LEAD_RE = re.compile(
    r"(?:about\s+(?=the\s+fact))?(?:(?P<that>that|the\s+fact\s+that)\s+(?=\S))?(?:the\s+)?"
    r"(?:(?:stuff|bit|part|things?)\s+(?:about|regarding|on|of)\s+)?"
    r"(?:(?:everything|all|anything|any)\s+(?:(?:stored|saved|you\s+know|you\s+have|you['’]ve\s+got)\s+)?"
    r"(?:(?:the\s+)?(?:details?|info(?:rmation)?|notes?|memories)\s+)?(?:(?:about|of|on|regarding)\s+)?)?"
    r"(?:details?\s+(?:about|of)\s+)?(?:about\s+)?",
    _I,
)
_SAID = r"(?:said|told\s+you|mentioned|wrote|shared|typed|asked|brought\s+up)"
_WHAT_SAID_RE = re.compile(
    rf"(?:what|everything|anything|all|whatever)\s+(?:that\s+)?i(?:['’]ve|\s+have)?\s+(?:just\s+|ever\s+)?"
    rf"{_SAID}(?:\s+(?:earlier|before|above|previously|yesterday|last\s+time|today))?"
    r"(?:\s+(?:about|regarding|concerning|on|re:?)\s+|\s*$)",
    _I,
)
_I_SAID_RE = re.compile(
    r"i\s+(?:just\s+|ever\s+)?(?:said|mentioned|asked|wrote|typed|meant|brought\s+up)\b"
    r"(?:\s+(?:that|anything|about|anything\s+about)\b)?\s*",
    _I,
)
_WH_RE = re.compile(r"(?:where|what|when|how|who|whose|which|why|whether)\b", _I)
_CONVO = (
    r"(?:message|msg|repl(?:y|ies)|response|question|comment|sentence|text|answer|request|prompt|"
    r"instruction|typo|mistake|misspelling|spelling|wording|phrasing|filter|query|search|correction|"
    r"edit|input|command|example|suggestion|post|posting|thread)s?"
)
# "my last message" always; "my mistake" only when nothing about the user follows
# ("my mistake at work" is a fact, "my typo above" is the chat).
_CORRECTION_RE = re.compile(
    rf"(?:(?:my|the|that|this|those|these)\s+)?(?:(?:(?:last|previous|earlier|prior|above|other|latest|"
    rf"recent|first|few|couple\s+of|two|three|\d{{1,2}})\s+){{1,3}}{_CONVO}\b|{_CONVO}(?=\s*(?:$|[,.;:!?)]|(?:above|earlier|before|there|"
    rf"again|here|and)\b|(?:about|on|regarding)\s+(?!(?:my|me|i)\b))))",
    _I,
)
# "forget my wrong answer", "my technically incorrect math": a self-correction.
_ERROR_RE = re.compile(
    r"(?:my|the|that|this)\s+(?:[a-z]+\s+)?(?:wrong|incorrect|mistaken|erroneous|garbled|botched)\b", _I
)
_I_MEANT_RE = re.compile(r",\s*i\s+meant\b", _I)
_CAPABILITY_RE = re.compile(
    r"\b(?:if\s+i|eventually|automatically|over\s+time|after\s+a\s+while|someday|"
    r"one\s+day|by\s+default|on\s+your\s+own)\b",
    _I,
)
# Instructions to the assistant that may follow a request ("and remind me to ...");
# content verbs ("I write and record music") must not cut the preference.
_VERB = (
    r"(?:remember|remind|tell\s+me|show\s+me|give\s+me|help\s+me|let['’]?s|let\s+us|don['’]t|do\s+not|"
    r"make\s+sure|could\s+you|can\s+you|would\s+you|will\s+you|note\s+that|instead)"
)
_CUT_RE = re.compile(  # the lookahead lets the engine skip most positions at once
    rf"""(?=[;,\-–—abtABT])(?:;
      | ,\s*(?:(?:and|but|then|also|so)\s+){{0,2}}(?:(?:please|just|also|now|then)\s+){{0,2}}
        (?:{_VERB}|(?<=but\s)(?:keep|save|store|update|use|add|record))\b
      | ,\s*(?:thanks|thank\s+you|cheers|ta|please|it['’]s|that['’]s|this\s+is)\b
      | (?<=\s)[-–—]+\s
      | \b(?:and|but|then)\s+(?:(?:also|then|please|just|now)\s+){{0,2}}{_VERB}\b)""",
    _I | re.VERBOSE,
)
_RHETORIC_RE = re.compile(
    r",\s*(?:let['’]?s|let\s+us|just|we|what|how|why|who|where|focus|tell|give|show|ship|merge)\b", _I
)
_TAILS_RE = re.compile(
    r"(?:^|\s)(?:from\s+(?:your|the)\s+(?:memory|memories|records|notes)|from\s+memory|from\s+now\s+on|"
    r"for\s+good|permanently|forever|please|for\s+me|thanks|thank\s+you|completely|entirely)$",
    _I,
)
_BARE = frozenset(
    [
        "i",
        "me",
        "my",
        "mine",
        "myself",
        "it",
        "that",
        "this",
        "those",
        "these",
        "them",
        "everything",
        "all",
        "anything",
        "about",
        "stuff",
    ]
)
_WORDS_RE = re.compile(r"[a-z0-9]+")
_THING_SUBJECT_RE = re.compile(r"(?:it|this|there)\b(?!\s*(?:['’]s|is|was)\s+(?:my|me)\b)", _I)
# A run of bare "Forget X." sentences is rhetoric ("Forget the busy box errors. Forget the
# disk that ... Forget the fact that ..."; "Forget 'I can never eat that again.' Forget ..."),
# not a list of requests: counted in the token's bounded window.
_BARE_FORGET_RE = re.compile(r"(?:^|[.!?,;:]\s+|[\"“”]\s*)forget\b", _I)
_ANAPHORA = 3


def _strip_tails(s: str) -> str:
    while True:
        s = s.rstrip().rstrip(".!?,;:" + _TRIM).rstrip()
        # Only the last few characters can hold a tail: search those, never the whole.
        window = s[-40:]
        m = _TAILS_RE.search(window)
        if not m:
            return s
        s = s[: len(s) - len(window) + m.start()]


def _preference(obj: str, frame: str) -> str | None:
    """The preference ``obj`` (the sentence after "forget") names, or None."""
    obj = obj.strip().lstrip(_TRIM).strip()
    # Anchored checks on the object's start first: they settle most hostile tokens
    # before anything scans the whole object.
    lead = _LEAD_RE.match(obj)
    assert lead is not None  # every part of the pattern is optional: it always matches
    rest = obj[lead.end() :]
    if _CORRECTION_RE.match(rest) or _ERROR_RE.match(rest):
        return None
    if not (_FP_RE.match(rest) or _WH_RE.match(rest) or lead.group("that")):
        return None
    if frame == "bare" and _RHETORIC_RE.search(obj):
        return None  # "forget my diet, let's get pizza": rhetorical, not a request
    if frame == "bare" and "," in obj and obj.rstrip(_TRIM).endswith(("?", "!")):
        return None  # "forget about me for a second, how are you?"
    cut = _CUT_RE.search(obj)
    if cut:
        obj = obj[: cut.start()]
    obj = _strip_tails(obj)
    if frame == "ask" and _CAPABILITY_RE.search(obj):
        return None  # a question about forgetting, not a request
    said = _WHAT_SAID_RE.match(obj)
    if said:  # "what I said about my commute" names "my commute"
        rest = obj[said.end() :]
        return _bare_or(rest) if _FP_RE.match(rest) else None
    lead = _LEAD_RE.match(obj)
    assert lead is not None  # every part of the pattern is optional: it always matches
    rest = obj[lead.end() :]
    if _CORRECTION_RE.match(rest) or _I_MEANT_RE.search(rest):
        return None
    m = _I_SAID_RE.match(rest)
    if m:  # "I said that" is about the chat; "I said I smoke" is Palinode's phrase, kept
        after = rest[m.end() :]
        # "that I mentioned anything about complex numbers": taking back what was said
        # about a topic, a request only when the topic is the user's
        topic = "anything" in m.group().lower()
        about_me = (lead.group("that") and not topic) or _FP_HINT_RE.search(after.split(",", 1)[0])
        return _bare_or(rest) if about_me and _bare_or(after) else None
    if _FP_RE.match(rest):
        return _bare_or(rest)
    if lead.group("that") and _THING_SUBJECT_RE.match(rest):
        return None  # "the fact that it reformatted some of my drives": a thing's doing, not the user's fact
    head = rest.split(",", 1)[0]
    if _WH_RE.match(rest) and _FP_HINT_RE.search(head, 0, 60):
        return _bare_or(rest)
    if lead.group("that") and _FP_HINT_RE.search(head):
        return _bare_or(rest)
    return None


def _quoted_mention(line: str, start: int, pos: int) -> bool:
    """Whether the "forget" at ``pos`` sits in a double-quoted phrase that someone
    else's sentence mentions ('The button "Forget my device" clears it', 'say
    "forget that I like churches"'), rather than a quotation that is the whole
    utterance. Bounded: ``line`` is a window around the token."""
    straight = line.count('"', start, pos) % 2 == 1
    opening = line.rfind('"', start, pos) if straight else line.rfind("“", start, pos)
    if opening < 0 or (not straight and line.rfind("”", start, pos) > opening):
        return False
    if re.search(r"\w", line[start:opening]):
        return True
    close = line.find('"' if straight else "”", pos)
    if close < 0 or line[:close].rstrip().endswith((".", "!", "?")):
        return False  # the quotation is a whole sentence; what follows is another
    tail = re.split(r"[.!?\n]", line[close + 1 : close + 1 + _TAIL_WINDOW], maxsplit=1)[0]
    return bool(re.search(r"\w", tail))


_TAIL_WINDOW = 160


def _bare_or(pref: str) -> str | None:
    """``pref`` cleaned, or None when it is only pronouns/possessives ("me", "it, that")."""
    pref = pref.strip().strip(_TRIM).strip()
    words = _WORDS_RE.findall(pref.lower())
    return None if not words or all(w in _BARE for w in words) else pref


def _requests(text: str, verb_re: re.Pattern[str]) -> Iterator[tuple[str, int, int, str]]:
    """Each token of ``verb_re`` that a user's request frame says, in text order:
    (its logical line, the token's index and the sentence's end in it, the frame).
    Tokens in code, headings, tables, assistant turns, block quotes, quoted
    mentions, reported speech or suppositions are skipped."""
    fences = None
    # The physical line of the current token, found once per line (tokens come in
    # order, so each line is scanned once however long it is), and its backticks so far.
    line_start = line_end = ticks_at = ticks = 0
    for m in verb_re.finditer(text):
        s, e = m.span()
        # Cheap rejections first, so a body of a million tokens stays fast.
        if e >= len(text) or not text[e].isspace() or not _FP_HINT_RE.search(text, e, e + 80):
            continue
        last = _LAST_WORD_RE.search(text, max(0, s - 16), s)
        before = text[max(0, s - 4) : s].rstrip(" \t*_")
        if last and last.group(1).lower() not in _FRAME_TAIL and before[-1:].isalpha():
            continue
        if fences is None:
            fences = [f.start() for f in _FENCE_RE.finditer(text)] if "``" in text or "~~" in text else []
        if bisect.bisect_right(fences, s) % 2:
            continue  # inside a fenced code block
        if s >= line_end:
            line_start = text.rfind("\n", 0, s) + 1
            line_end = text.find("\n", s) % (len(text) + 1)
            ticks_at, ticks = line_start, 0
        ticks, ticks_at = ticks + text.count("`", ticks_at, s), s
        if ticks % 2:
            continue  # inside inline code
        if s - line_start > _BEFORE:
            kind, _, _, quoted = _line_shape(text[line_start : line_start + _BEFORE])
            if kind != "text" or quoted:
                continue  # a long heading, table row, assistant turn or block quote
        found = _logical_line(text, s, e)
        if found is None:
            continue
        line, pos, own = found
        start, end = _sentence(line, pos)
        if _quoted_mention(line, start, pos):
            continue
        frame = _frame(line[start:pos])
        if frame is None and own > start and not _REPORTED_RE.search(line, start, own):
            frame = _frame(line[own:pos])  # "Notes\nplease forget ...": the join was wrong
        if frame is not None:
            yield line, pos, end, frame


def detect_forget_request(text: str) -> str | None:
    """The preference a first-person forget request names, or None."""
    if not text or "forget" not in text.lower():
        return None
    for line, pos, end, frame in _requests(text, _FORGET_RE):
        pref = _preference(line[pos + 6 : end], frame)
        if pref and not (frame == "bare" and len(_BARE_FORGET_RE.findall(line)) >= _ANAPHORA):
            return pref
    return None


# --- blanket requests: a scope, not a preference (issue 44) ----------------------------
# "forget everything (you know) about me", "wipe whatever you have stored on me", "all my
# personal data", and a whole area of the user's life ("everything about my work", "my work
# stuff", "all my health information"). Never planned on the whole store: the person
# chooses what the scope covers. A request that names a fact ("everything about my ex",
# "my bank details") is no blanket one.
_BLANKET_VERB_RE = re.compile(r"\b(?:forget|wipe|erase|delete|clear|purge|remove)\b", _I)
_QUANT = r"(?:everything|all|anything|whatever|every\s+(?:single\s+)?(?:thing|detail|bit|fact))"
_KIND = r"(?:info|information|data|details?|stuff|things|facts|memories|notes|records)"
_KNOWN = (
    r"(?:(?:that\s+)?(?:you(?:['’]ve|\s+have)?\s+(?:ever\s+)?(?:know|knew|learned|learnt|remember|stored|saved|"
    r"collected|gathered|got|have|kept|recorded)|(?:is\s+|was\s+|are\s+)?(?:stored|saved|known|kept|recorded)|"
    r"i(?:['’]ve|\s+have)?\s+(?:ever\s+)?(?:told|shared|said|given|mentioned)(?:\s+you)?))"
)
_ABOUT = r"(?:about|on|of|regarding|concerning|related\s+to|to\s+do\s+with)"
_AREA = (
    r"(?:work|job|career|health|family|finances?|money|past|life|personal\s+life|private\s+life|love\s+life|"
    r"relationships?|dating\s+life|medical\s+history)"
)
_BLANKET_RE = re.compile(
    rf"""(?:about\s+)?(?:(?:all\s+of\s+it|everything)\s*[,;:–—-]\s*)?(?:
        (?:the\s+)?{_QUANT}(?:\s+(?:of\s+)?(?:the\s+)?(?:personal\s+|private\s+)?{_KIND})?(?:\s+{_KNOWN})?
            \s+{_ABOUT}\s+(?:me|myself)\b(?!\s*['’]s)
      | (?:the\s+)?{_QUANT}(?:\s+(?:of\s+)?(?:the\s+)?{_KIND})?(?:\s+{_KNOWN})?\s+{_ABOUT}\s+my\s+
            (?:(?:old|previous|former|last|current|whole|entire)\s+)?{_AREA}\b
      | (?:all\s+(?:of\s+)?)?my\s+(?:personal\s+|private\s+)?(?:data|info|information|memories|profile)\b
      | (?:all\s+(?:of\s+)?)?my\s+(?:[^\W\d_]+\s+){{1,2}}(?:stuff|things)\b
      | all\s+(?:of\s+)?my\s+(?:[^\W\d_]+\s+){{0,2}}{_KIND}\b
    )""",
    _I | re.VERBOSE,
)


_SCOPE_LEAD_RE = re.compile(r"^(?:about\s+)?(?:(?:all\s+of\s+it|everything)\s*[,;:–—-]\s*)?", _I)


def detect_blanket(text: str) -> str | None:
    """The scope of a blanket request (everything about the user, or a whole area of
    their life) the text makes, or None. A person chooses what it covers; it is never
    resolved against the whole store."""
    if not text or not _BLANKET_VERB_RE.search(text):
        return None
    for line, pos, end, frame in _requests(text, _BLANKET_VERB_RE):
        verb = _BLANKET_VERB_RE.match(line, pos)
        assert verb is not None  # _requests yields the token's own index
        obj = line[verb.end() : end]
        if frame == "bare" and len(_BARE_FORGET_RE.findall(line)) >= _ANAPHORA:
            continue
        scope = blanket_scope(obj)
        if scope:
            return scope
    return None


def blanket_scope(obj: str) -> str | None:
    """The blanket scope an object phrase ("everything you know about me", "my work
    stuff") names, or None; implied requests reuse it ("asked to forget everything ...")."""
    m = _BLANKET_RE.match(obj.strip().lstrip(_TRIM))
    if m is None:
        return None
    scope = _strip_tails(m.group())
    return _SCOPE_LEAD_RE.sub("", scope) or None
    return None
