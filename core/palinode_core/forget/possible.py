"""Possible requests (issue 44): requests in other words found in the store's
memories (text.implied: "stop bringing that up", "I no longer live in Berlin"), and
blanket ones whose scope a person must choose (text.detect.detect_blanket: "forget
everything about me"). Each is shown with the sentence, the memory, what it points
at (a phrase of its own, the sentence before it, the same day's note), how sure,
and what confirming would do. Nothing here changes a file until a person confirms.

Confirming is a plan (``plan_confirm``: a value to show) and then an apply
(``apply_confirm``): a forget request memory in Palinode's own format ("Please
forget that I live in Berlin."), which Palinode 0.23's detector and ours both read as
a request for exactly that preference, naming the memory it came from, written with
the ledger's record of who confirmed it in one commit. The request then waits in
Review like any other. Dismissing records the decision, so the candidate does not
come back. Both are keyed by the candidate's id: its memory's path and its sentence."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from .. import __version__
from ..errors import PalinodeError, UsageError
from ..ops.lock import writer_lock
from ..storage import safeio
from ..storage.memory import Memory
from ..storage.paths import not_a_memory, subject_path
from ..storage.records import FileIntent, LedgerRecord
from ..storage.store import Store
from ..storage.textio import MAX_MEMORY_BYTES, fingerprint
from ..text.detect import blanket_scope, detect_blanket, detect_forget_request
from ..text.implied import CUE_PATTERN, Implied, Sentence, find_implied, last_statement, may_hold_request, sentences
from ..text.palinode_detect import detect_palinode_request
from ..text.stem import stems
from ..text.words import normalize_pref, retraction_id
from . import ledger as forget_ledger
from .judgment import user_names

if TYPE_CHECKING:
    from ..search.index import SearchIndex

Where = Literal["object", "previous", "note", "scope", "unknown"]
CandidateState = Literal["open", "confirmed", "dismissed"]
CONFIRM: Literal["confirm_possible"] = "confirm_possible"
DISMISS: Literal["dismiss_possible"] = "dismiss_possible"
REQUEST_FOLDER = "insights"
# Palinode's save writes these (core/save.py): the conformance version and the writer's name
AMR_SPEC_VERSION = "0.1"
SOURCE = "palinode-audit"

# The bytes of a memory worth reading: what some rule of text.implied needs, or a verb of a
# blanket request (most memories hold none, and are never parsed for this).
_CUE_BYTES_RE = re.compile(
    CUE_PATTERN.encode() + rb"|\b(?:forget|wipe|erase|delete|clear|purge|remove)\b"
)  # read lowered


@dataclass(frozen=True)
class Referent:
    """What a possible request points at."""

    where: Where  # object: a phrase of its own; previous: the sentence before; note: another memory of that day
    path: str | None  # the memory holding it
    text: str
    line: int | None = None  # 1-based body line, for a sentence

    def to_dict(self) -> dict[str, Any]:
        return {"where": self.where, "path": self.path, "text": self.text, "line": self.line}


@dataclass(frozen=True)
class Carrier:
    """A memory that likely holds what a possible request points at: by its words
    (the unit index), or by meaning (the sentence vectors the store already caches)."""

    path: str
    text: str
    how: Literal["words", "meaning"]
    similarity: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "text": self.text, "how": self.how, "similarity": self.similarity}


@dataclass(frozen=True)
class PossibleRequest:
    id: str  # stable: the memory's path and the sentence
    path: str  # the memory the sentence is in
    line: int  # its 1-based body line
    sentence: str  # as said (a transcript's speaker label left off)
    speaker: str  # "user" for a transcript's user line, else ""
    kind: str  # refusal, stop_mentioning, correction, retraction, blanket, asked_to_forget
    cue: str  # the words that make it one
    why: str
    referent: Referent
    sure: float
    voice: str
    pref: str | None  # the preference confirming writes; None for a blanket one until a person chooses
    state: CandidateState = "open"
    decision: LedgerRecord | None = None
    request: str | None = None  # a blanket request already in the store (detected explicitly): its path
    carriers: tuple[Carrier, ...] = ()  # memories that likely hold what it points at (with an index)

    @property
    def sure_words(self) -> str:
        return "likely" if self.sure >= 0.85 else "possible" if self.sure >= 0.65 else "unsure"

    @property
    def effect(self) -> str:
        """What confirming would do, in words."""
        if self.pref is None:
            what = f"a blanket request ({self.referent.text!r}): you choose what it covers"
            return (
                f"nothing until you name the fact to forget: confirming with a preference writes a forget request "
                f"for it naming {self.path} as its source; {what}, and it is never planned on the whole store"
            )
        return (
            f"writes {REQUEST_FOLDER}/forget-….md, a forget request in Palinode's format "
            f"('Please forget {request_object(self.pref)}.', r:{retraction_id(self.pref)}) naming {self.path} as its "
            "source, with the ledger's record, in one commit; nothing else changes until you review its plan"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "line": self.line,
            "sentence": self.sentence,
            "speaker": self.speaker,
            "kind": self.kind,
            "cue": self.cue,
            "why": self.why,
            "referent": self.referent.to_dict(),
            "sure": self.sure,
            "sure_words": self.sure_words,
            "voice": self.voice,
            "pref": self.pref,
            "effect": self.effect,
            "state": self.state,
            "decision": self.decision,
            "request": self.request,
            "carriers": [c.to_dict() for c in self.carriers],
        }


def candidate_id(path: str, sentence: str) -> str:
    key = f"{path}\0{' '.join(sentence.split()).lower()}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


# --- finding them ---------------------------------------------------------------------------
def possible_requests(
    store: Store, memories: Mapping[str, Memory], *, decided: bool = False, index: SearchIndex | None = None
) -> list[PossibleRequest]:
    """Every possible request in the live memories, most sure first; ``decided``:
    also those a person confirmed or dismissed (with their decision). With the
    store's ``index``, each names the memories that likely hold what it points at
    (read from the index as it is: nothing is indexed or embedded for this).

    What each memory version holds is kept in the store's cache folder by its
    fingerprint (possible.sqlite3): a listing reads only the files that changed."""
    names = user_names(memories)
    decisions = _decisions(store)
    cache = _SeedCache(store, names)
    known = cache.load()
    fresh: list[tuple[str, list[dict[str, Any]]]] = []
    out: list[PossibleRequest] = []
    for rel, memory in sorted(memories.items()):
        if memory.retired_reason or memory.is_history:
            continue
        if memory.forget_pref and not _may_be_blanket(memory.forget_pref):
            continue  # an explicit request: Review has it
        seeds = known.get(memory.fingerprint)
        if seeds is None:
            seeds, keep = _seeds(store, memory, names)
            if keep:
                fresh.append((memory.fingerprint, seeds))
        for seed in seeds:
            cand = _candidate(rel, memory, seed, memories, names)
            record = decisions.get(cand.id)
            if record is not None:
                if not decided:
                    continue
                cand = replace(
                    cand,
                    state="confirmed" if record.get("action") == CONFIRM else "dismissed",
                    decision=record,
                )
            out.append(cand)
    cache.save(fresh, {m.fingerprint for m in memories.values()})
    out.sort(key=lambda c: (c.state != "open", -c.sure, c.path, c.line))
    if index is not None:
        out = [replace(c, carriers=_carriers(index, memories, c)) for c in out]
    return out


class _SeedCache:
    """fingerprint -> what that memory version holds, before the store around it is read
    (its same day's note, the ledger's decisions). A cache, never a source of truth: any
    failure reading or writing it means the memories are read instead."""

    def __init__(self, store: Store, names: frozenset[str]) -> None:
        folder = getattr(store, "cache_dir", None)
        self.path = folder / "possible.sqlite3" if folder is not None else None
        # the user's names change a finding's voice; the rules' own source changes everything
        self.key = hashlib.sha256(f"{_rules_version()}\0{sorted(names)}".encode()).hexdigest()[:16]

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=5.0)
        db.execute(
            "CREATE TABLE IF NOT EXISTS seeds (key TEXT, fingerprint TEXT, data TEXT, PRIMARY KEY (key, fingerprint))"
        )
        return db

    def load(self) -> dict[str, list[dict[str, Any]]]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            db = self._connect()
            try:
                rows = db.execute("SELECT fingerprint, data FROM seeds WHERE key = ?", (self.key,)).fetchall()
            finally:
                db.close()
            return {fp: seeds for fp, data in rows if isinstance(seeds := json.loads(data), list)}
        except (sqlite3.Error, OSError, ValueError):
            return {}

    def save(self, rows: list[tuple[str, list[dict[str, Any]]]], live: set[str]) -> None:
        if self.path is None or not rows:
            return
        try:
            db = self._connect()
            try:
                with db:
                    db.execute("DELETE FROM seeds WHERE key != ?", (self.key,))  # the rules or the user's names changed
                    db.executemany(
                        "INSERT OR REPLACE INTO seeds VALUES (?, ?, ?)",
                        [(self.key, fp, json.dumps(seeds, ensure_ascii=False)) for fp, seeds in rows],
                    )
                    kept = [r[0] for r in db.execute("SELECT fingerprint FROM seeds")]
                    if len(kept) > 2 * len(live) + 100:  # versions no memory has any more
                        db.executemany("DELETE FROM seeds WHERE fingerprint = ?", [(f,) for f in kept if f not in live])
            finally:
                db.close()
        except (sqlite3.Error, OSError):
            return


@functools.cache
def _rules_version() -> str:
    """The rules' own text: a cached finding of other rules is never read back."""
    from ..text import detect, implied

    digest = hashlib.sha256(__version__.encode())
    for source in (detect.__file__, implied.__file__, __file__):
        try:
            digest.update(Path(str(source)).read_bytes())
        except (OSError, TypeError):  # no source beside the code: the release alone says which rules
            digest.update(str(source).encode())
    return digest.hexdigest()[:16]


_MEANING_FLOOR = 0.55  # a sentence this near in meaning says the same thing in other words
_CARRIERS = 3


def _carriers(index: SearchIndex, memories: Mapping[str, Memory], cand: PossibleRequest) -> tuple[Carrier, ...]:
    """The memories (other than the candidate's own, and live) that hold what it points at:
    those sharing the referent's words, then those whose sentences are near in meaning to
    it (the referent sentence's cached vector, or the candidate sentence's for a phrase);
    a text with no cached vector is never embedded here."""
    ref = cand.referent
    if ref.where in ("scope", "unknown") or not ref.text:
        return ()
    by_print = {m.fingerprint: rel for rel, m in memories.items() if not m.retired_reason and not m.forget_pref}
    skip = {cand.path, ref.path if ref.where != "note" else ""}
    found: dict[str, Carrier] = {}
    try:
        wanted = stems(ref.text)
        if wanted:
            need = min(2, len(wanted))
            hits = sorted(
                ((len(wanted & stems(text)), by_print.get(fp), text) for fp, text in index.units.lexical_hits(wanted)),
                key=lambda h: -h[0],
            )
            for shared, rel, text in hits:
                if rel and rel not in skip and shared >= need and rel not in found and not find_implied(text):
                    found[rel] = Carrier(rel, " ".join(text.split()), "words")
        query = ref.text if ref.where in ("previous", "note") else cand.sentence
        blob = index.cached_blobs([query])[0]
        if blob is not None and len(found) < _CARRIERS:
            near = {h: s for h, s in index.units.near(query, blob).items() if s >= _MEANING_FLOOR}
            for h, fp, text in sorted(index.units.units_of(near), key=lambda u: -near[u[0]]):
                rel = by_print.get(fp)
                if (
                    rel
                    and rel not in skip
                    and rel not in found
                    and " ".join(text.split()) != query
                    and not find_implied(text)
                ):
                    found[rel] = Carrier(rel, " ".join(text.split()), "meaning", round(near[h], 3))
    except Exception:  # a damaged or missing index names no carriers: the list stands without them
        return ()
    return tuple(list(found.values())[:_CARRIERS])


def _may_be_blanket(pref: str) -> bool:
    return blanket_scope(pref) is not None or bool(re.search(r"\b(?:stuff|things|information|info|data)\b", pref, re.I))


def _body(store: Store, memory: Memory) -> tuple[str | None, bool]:
    """The memory's body, read now and not kept on the scan's memory (a store's
    memories stay summaries), and whether what it holds may be cached by the scan's
    fingerprint: no body when it holds no cue word (cacheable) or changed since the
    scan or cannot be read (not)."""
    try:
        data = (
            memory.text.encode() if memory.text_read else safeio.read_file(memory.rel, store.root, MAX_MEMORY_BYTES)[0]
        )
    except (OSError, ValueError):
        return None, False
    if fingerprint(data) != memory.fingerprint:
        return None, False
    if not _CUE_BYTES_RE.search(data.lower().replace(b"\xe2\x80\x99", b"'")):
        return None, True
    fresh = memory if memory.text_read or memory.reload is None else memory.reload()
    try:
        return fresh.body, fresh.fingerprint == memory.fingerprint
    except Exception:  # unreadable since the scan: nothing to show
        return None, False


def _seeds(store: Store, memory: Memory, names: frozenset[str]) -> tuple[list[dict[str, Any]], bool]:
    """What one memory version holds, as plain values (cached by its fingerprint):
    each possible request with its sentence, cue and what it points at, before the
    store around it (the same day's note) is read."""
    body, keep = _body(store, memory)
    if body is None:
        return [], keep
    out: list[dict[str, Any]] = []
    scope = detect_blanket(body)
    if scope:
        sent = _sentence_holding(body, scope)
        out.append(
            {
                "said": " ".join(sent.said.split()) if sent is not None else scope,
                "line": _line(body, sent.start) if sent is not None else 1,
                "speaker": sent.speaker if sent is not None else "",
                "kind": "blanket",
                "cue": scope,
                "why": "a blanket request: everything about the user, or a whole area of their life",
                "points": "scope",
                "phrase": scope,
                "sure": 0.9,
                "voice": "first",
                "pref": None,
                "request": bool(memory.forget_pref),
            }
        )
    if memory.forget_pref or not may_hold_request(body):
        return out, keep  # an explicit request's other sentences are its own; a body with no cue holds none
    for found in find_implied(body, names):
        said = " ".join(found.sentence.said.split())
        if out and said == out[0]["said"]:
            continue
        seed: dict[str, Any] = {
            "said": said,
            "line": _line(body, found.sentence.start),
            "speaker": found.sentence.speaker,
            "kind": found.kind,
            "cue": found.cue,
            "why": found.why,
            "points": found.points,
            "phrase": found.phrase,
            "sure": found.sure,
            "voice": found.voice,
            "pref": None,
            "request": False,
        }
        if found.points == "object":
            seed["pref"] = proposed_pref(found.phrase or "", found, found.sentence.said)
        elif found.points == "previous" and found.antecedent is not None:
            before = found.antecedent
            seed["antecedent"] = {"said": " ".join(before.said.split()), "line": _line(body, before.start)}
            seed["pref"] = first_person(before.said, before.speaker)
        if seed["pref"] is not None and not writable_pref(seed["pref"]):
            seed["pref"] = None
        out.append(seed)
    return out, keep


def _sentence_holding(body: str, phrase: str) -> Sentence | None:
    low = " ".join(phrase.split()).lower()
    return next((s for s in sentences(body) if low in " ".join(s.said.split()).lower()), None)


def _line(body: str, offset: int) -> int:
    return body.count("\n", 0, offset) + 1


def _candidate(
    rel: str, memory: Memory, seed: dict[str, Any], memories: Mapping[str, Memory], names: frozenset[str]
) -> PossibleRequest:
    sure, pref = float(seed["sure"]), seed.get("pref")
    points = seed["points"]
    if points == "scope":
        referent = Referent("scope", rel, seed.get("phrase") or "")
    elif points == "object":
        referent = Referent("object", rel, seed.get("phrase") or "")
    elif points == "previous" and seed.get("antecedent"):
        referent = Referent("previous", rel, seed["antecedent"]["said"], seed["antecedent"]["line"])
    else:
        referent = _note_referent(rel, memory, memories, names)
        if referent.where == "note":
            pref = first_person(referent.text, "")
            pref = pref if writable_pref(pref) else None
        else:
            pref, sure = None, round(sure - 0.15, 2)
    return PossibleRequest(
        candidate_id(rel, seed["said"]),
        rel,
        int(seed["line"]),
        seed["said"],
        seed.get("speaker") or "",
        seed["kind"],
        seed["cue"],
        seed["why"],
        referent,
        sure,
        seed.get("voice") or "first",
        pref,
        request=rel if seed.get("request") else None,
    )


# --- the same day's note ------------------------------------------------------------------------
_DATE_RE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")


def _day(memory: Memory) -> str | None:
    if memory.created_at and _DATE_RE.match(memory.created_at):
        return memory.created_at[:10]
    m = _DATE_RE.search(memory.rel.rsplit("/", 1)[-1])
    return m.group(1) if m else None


def _note_referent(rel: str, memory: Memory, memories: Mapping[str, Memory], names: frozenset[str]) -> Referent:
    """What a "that" with nothing before it in its own memory points at: the same
    day's daily note, else the latest other memory saved earlier that day; in it, the
    last sentence that says something about the user."""
    day = _day(memory)
    if day is None:
        return Referent("unknown", None, "")
    mine = memory.created_at or ""
    same = [
        m
        for r, m in memories.items()
        if r != rel and not m.retired_reason and not m.forget_pref and _day(m) == day and (m.created_at or "") <= mine
    ]
    same.sort(key=lambda m: (not m.rel.startswith("daily/"), "" if m.rel.startswith("daily/") else m.created_at or ""))
    daily = [m for m in same if m.rel.startswith("daily/")]
    others = sorted((m for m in same if not m.rel.startswith("daily/")), key=lambda m: m.created_at or "", reverse=True)
    for note in [*daily, *others]:
        try:
            text = note.body if note.text_read or note.reload is None else note.reload().body
        except Exception:
            continue
        said = last_statement(text, names)
        if said is not None:
            return Referent("note", note.rel, " ".join(said.said.split()), _line(text, said.start))
    return Referent("unknown", None, "")


# --- the preference confirming writes ------------------------------------------------------------------
_REPORT_RE = re.compile(
    r"^(?:(?:session\s+notes?|notes?)\s*:\s*)?(?:the\s+)?(?:user|they)\s+(?:has\s+|have\s+)?(?:shared|said|mentioned|"
    r"explained|disclosed|revealed|reported|noted|told\s+(?:me|us|the\s+assistant))\s+(?:that\s+)?",
    re.I,
)
_ASSISTANT_RE = re.compile(
    r"^(?:(?:last\s+time|earlier|before)\s*,?\s*)?(?:you\s+(?:told\s+me|said|mentioned|shared)\s+(?:that\s+)?|"
    r"i\s+remember\s+(?:that\s+)?you\s+|are\s+you\s+still\s+)",
    re.I,
)
_SUBJECT_RE = re.compile(r"^(?:the\s+user's|user's|their)\s+|^(?:the\s+user|user|they)\s+(?P<verb>[\w']+)", re.I)
_THIRD_RE = re.compile(r"\b(?:their|them|themselves|theirs|the\s+user's|user's)\b", re.I)
_MINE = {"their": "my", "them": "me", "themselves": "myself", "theirs": "mine", "the user's": "my", "user's": "my"}
_SECOND_RE = re.compile(r"\b(?:your|you|yours|yourself)\b", re.I)
_YOURS = {"your": "my", "you": "I", "yours": "mine", "yourself": "myself"}
_VERB_FORMS = {"is": "am", "are": "am", "were": "was", "has": "have", "does": "do", "'s": "'m", "'re": "'m"}


def _verb(word: str) -> str:
    low = word.lower()
    if low in _VERB_FORMS:
        return _VERB_FORMS[low]
    if low.endswith("ies") and len(low) > 4:
        return word[:-3] + "y"
    if low.endswith(("ches", "shes", "sses", "xes", "zes")):
        return word[:-2]
    if low.endswith("s") and not low.endswith("ss") and len(low) > 3:
        return word[:-1]
    return word


def first_person(sentence: str, speaker: str) -> str:
    """A sentence about the user as the user says it: "User's dog Pepper was put
    down" -> "my dog Pepper was put down"; "They were fired" -> "I was fired";
    "Works as a night nurse" -> "I work as a night nurse"; the assistant's "you
    mentioned your sister's wedding" -> "my sister's wedding"."""
    text = " ".join(sentence.split()).rstrip(".!?;: ")
    if speaker == "assistant" or _ASSISTANT_RE.match(text):
        text = _ASSISTANT_RE.sub("", text)
        text = _SECOND_RE.sub(lambda m: _YOURS[m.group().lower()], text)
        text = re.split(r",\s*(?:how|what|is|are|do|does|did|was|were)\b", text, maxsplit=1)[0]
    text = _REPORT_RE.sub("", text)
    m = _SUBJECT_RE.match(text)
    if m and m.group("verb"):
        text = f"I {_verb(m.group('verb'))}{text[m.end() :]}"
    elif m:
        text = "my " + text[m.end() :]
    elif text[:1].isupper() and text.split(None, 1)[0].lower() not in ("i", "i'm", "i've", "i'd", "my", "me"):
        head = text.split(None, 1)
        if head[0].lower().endswith("s") and head[0].lower() not in ("this", "his", "its"):
            text = f"I {_verb(head[0]).lower()}" + (f" {head[1]}" if len(head) > 1 else "")  # "Works as ..."
    text = _THIRD_RE.sub(lambda w: _MINE[" ".join(w.group().lower().split())], text)
    if text[:2].lower() == "my" or text[:3].lower() == "me ":
        text = text[0].lower() + text[1:]
    return text


def proposed_pref(phrase: str, found: Implied, said: str) -> str:
    """The preference a phrase a request names makes: "my divorce"; a retired fact in
    the first person ("I live in Berlin", "I am vegetarian"); "I mentioned X" for
    anything else (Palinode reads only a first-person object)."""
    phrase = " ".join(phrase.split()).strip(" .,;:!?\"'")
    phrase = _THIRD_RE.sub(lambda w: _MINE[" ".join(w.group().lower().split())], phrase)
    phrase = re.sub(r"^(?:his|her)\b", "my", phrase, flags=re.I) if found.voice == "name" else phrase
    if re.match(r"(?:my|me|i)\b", phrase, re.I):
        return phrase[0].lower() + phrase[1:] if phrase[:2].lower() in ("my", "me") else phrase
    if found.kind == "correction":
        verb = re.search(r"\b(?:'m|am|'re|are|is|'s|was)\s+(?:not|no\s+longer)\b|\b(?:am|are|is|was)n't\b", said, re.I)
        words = phrase.split()
        if verb and words:
            return f"I am {phrase}"
        if words and words[0].lower() not in ("a", "an", "the"):
            return f"I {_verb(words[0])}" + (f" {' '.join(words[1:])}" if len(words) > 1 else "")
        return f"I had {phrase}"
    if re.match(r"(?:the|a|an)\s", phrase, re.I):
        phrase = phrase[0].lower() + phrase[1:]
    return f"I mentioned {phrase}"


def request_object(pref: str) -> str:
    """How the request names its preference: "my divorce" as is, a clause after "that"."""
    return pref if re.match(r"(?:my|me)\b", pref, re.I) else f"that {pref}"


def request_body(pref: str, source: str) -> str:
    # the source as a commit subject spells it: one line whatever its name holds
    return (
        f"Please forget {request_object(pref)}.\n\n"
        f"Confirmed from a possible request in {subject_path(source)} "
        "(a request in other words, reviewed with palinode-audit).\n"
    )


def writable_pref(pref: str) -> bool:
    """Whether the request written for ``pref`` reads, to Palinode 0.23's detector and
    to ours alike, as a request for exactly ``pref`` (so its retraction id is r:<md5>)."""
    body = request_body(pref, "x")
    return detect_forget_request(body) == pref and detect_palinode_request(body) == pref


# --- decisions --------------------------------------------------------------------------------------
def _decisions(store: Store) -> dict[str, LedgerRecord]:
    """Each candidate's latest decision, in history's order, believed records only."""
    out: dict[str, LedgerRecord] = {}
    ledger = forget_ledger.read(store)
    for entry in ledger.believed:
        if entry.get("action") in (CONFIRM, DISMISS) and isinstance(entry.get("candidate"), str):
            out[str(entry["candidate"])] = entry
    return out


def find_candidate(store: Store, memories: Mapping[str, Memory], ref: str) -> PossibleRequest:
    """The possible request with id ``ref`` (or its first digits), decided or not."""
    ref = ref.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{4,12}", ref):
        raise UsageError(
            f"{ref[:40]!r} is no possible request's id (4 to 12 hex digits; requests --possible lists them)"
        )
    found = [c for c in possible_requests(store, memories, decided=True) if c.id.startswith(ref)]
    if not found:
        raise PalinodeError(f"no possible request {ref} in this store (requests --possible lists them)")
    if len(found) > 1:
        raise UsageError(f"{ref} names {len(found)} possible requests; give more of its id")
    return found[0]


def _open(cand: PossibleRequest) -> None:
    if cand.state != "open":
        who = (cand.decision or {}).get("decided_by") or "someone"
        raise PalinodeError(f"possible request {cand.id} was already {cand.state} by {who}; nothing was changed")


# --- confirming: a plan, then its apply ---------------------------------------------------------------
@dataclass(frozen=True)
class ConfirmPlan:
    """What confirming a possible request writes: the request memory's path and exact
    text, and the ledger's record; ``source_sha256``: the source memory as it was read
    (apply refuses when it changed, or the candidate is gone or decided)."""

    candidate: PossibleRequest
    request: str
    pref: str
    rid: str
    text: str
    source_sha256: str
    note: str | None
    record: LedgerRecord

    @property
    def subject(self) -> str:
        return f"palinode-audit ledger: {CONFIRM} {self.request}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate.to_dict(),
            "request": self.request,
            "pref": self.pref,
            "rid": self.rid,
            "text": self.text,
            "source_sha256": self.source_sha256,
            "subject": self.subject,
            "record": self.record,
        }


def plan_confirm(
    store: Store, memories: Mapping[str, Memory], ref: str, pref: str | None = None, note: str | None = None
) -> ConfirmPlan:
    """The request confirming ``ref`` would write (nothing is written). ``pref``: the
    preference to write instead of the one proposed (a blanket request needs one)."""
    cand = find_candidate(store, memories, ref)
    _open(cand)
    chosen = " ".join((pref if pref is not None else cand.pref or "").split())
    if not chosen:
        if cand.kind == "blanket":
            raise UsageError(
                f"{cand.id} is a blanket request ({cand.referent.text!r}): name the one fact to forget "
                "(--pref 'my ...' or 'I ...'); it is never planned on the whole store"
            )
        raise UsageError(f"{cand.id} points at nothing that can be written as a preference: give one (--pref)")
    if blanket_scope(chosen) is not None or detect_blanket(f"Please forget {chosen}.") is not None:
        raise UsageError(f"{chosen!r} is itself a blanket scope: name one fact to forget")
    if not writable_pref(chosen):
        raise UsageError(
            f"{chosen!r} would not read as a request for exactly that preference (to Palinode or to us): "
            "give one in the first person, starting 'my' or 'I' (e.g. 'I live in Berlin')"
        )
    text_now, sha = store.read_optional(cand.path)
    if text_now is None or sha is None:
        raise PalinodeError(f"{cand.path} is gone; nothing was changed")
    now = store.now()
    rel = _request_path(store, memories, chosen)
    body = request_body(chosen, cand.path)
    if not (detect_forget_request(body) == detect_palinode_request(body) == chosen):
        raise PalinodeError(f"the request for {chosen!r} would not read back as that preference; nothing was written")
    text = _palinode_save_layout(rel, body, now, cand.path)
    record: LedgerRecord = {
        "action": CONFIRM,
        "request": rel,
        "pref": chosen,
        "rid": retraction_id(chosen),
        "path": cand.path,
        "line": cand.line,
        "text": cand.sentence,
        "kind": cand.kind,
        "candidate": cand.id,
        "referent": cand.referent.to_dict(),
        "note": note,
    }
    return ConfirmPlan(cand, rel, chosen, retraction_id(chosen), text, sha, note, record)


_SLUG_RE = re.compile(r"[a-z0-9]+")


def _request_path(store: Store, memories: Mapping[str, Memory], pref: str) -> str:
    words = [w for w in _SLUG_RE.findall(normalize_pref(pref)) if w not in ("i", "my", "me", "a", "an", "the")]
    stem = "forget-" + ("-".join(words[:6])[:48].strip("-") or "request")
    for n in range(1, 1000):
        rel = f"{REQUEST_FOLDER}/{stem}{'' if n == 1 else f'-{n}'}.md"
        if rel not in memories and store.read_optional(rel)[0] is None:
            return rel
    raise PalinodeError(f"no free name for {stem} in {REQUEST_FOLDER}/; nothing was changed")


def _palinode_save_layout(rel: str, body: str, now: datetime, source: str) -> str:
    """The file Palinode's save writes (core/save.py): sorted keys, safe_dump, then the body."""
    category = rel.split("/", 1)[0]
    stamp = now.isoformat()
    meta = {
        "auditable_memory": AMR_SPEC_VERSION,
        "category": category,
        "content_hash": hashlib.sha256(body.encode("utf-8")).hexdigest(),
        "created_at": stamp,
        "entities": [],
        "id": f"{category}-{rel.rsplit('/', 1)[-1][:-3]}",
        "last_updated": stamp,
        "request_source": source,
        "source": SOURCE,
        "type": "Insight",
    }
    dumped = yaml.safe_dump(meta, default_flow_style=False, allow_unicode=True)
    return f"---\n{dumped}---\n\n{body.strip()}\n"


def apply_confirm(store: Store, memories: Mapping[str, Memory], plan: ConfirmPlan) -> str | None:
    """Write exactly ``plan``: the request memory and the ledger's record of who
    confirmed it, one commit. Refused (nothing written) when the source memory
    changed, the candidate was decided meanwhile, or the request's path is taken."""
    store.check_writable()
    why = not_a_memory(plan.request)
    if why:
        raise PalinodeError(f"{plan.request} is {why}; nothing was changed")
    with writer_lock(store):
        if store.read_optional(plan.candidate.path)[1] != plan.source_sha256:
            raise PalinodeError(
                f"{plan.candidate.path} changed since this was planned; plan again; nothing was changed"
            )
        if store.read_optional(plan.request)[0] is not None:
            raise PalinodeError(f"{plan.request} exists already; plan again; nothing was changed")
        if plan.candidate.id in _decisions(store):
            raise PalinodeError(f"possible request {plan.candidate.id} was decided meanwhile; nothing was changed")
        return forget_ledger.record(store, plan.record, extra=[FileIntent(plan.request, None, plan.text)])


def dismiss_possible(store: Store, memories: Mapping[str, Memory], ref: str, note: str) -> str | None:
    """Record that a person dismissed the possible request: it is not listed again."""
    if not note.strip():
        raise UsageError("a dismissal needs a note saying why")
    cand = find_candidate(store, memories, ref)
    _open(cand)
    record: LedgerRecord = {
        "action": DISMISS,
        "path": cand.path,
        "line": cand.line,
        "text": cand.sentence,
        "kind": cand.kind,
        "candidate": cand.id,
        "note": note,
    }
    return forget_ledger.record(store, record)
