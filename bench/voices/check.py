"""Checks a voices template set before it is used (run it after writing or editing one):

- novelty: the set's names, places and key words must not occur in bench/heldout, bench/thorough,
  core/ or tests/ (whole words, any case; only the word and a file count are printed);
- paraphrases share no content word with their preference;
- filler lines and unrelated facts share no content word with any preference (else they are
  unlabelled distractors and blur what the labelled negatives measure).

    python -m bench.voices.check dev|test
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ELSEWHERE = ("bench/heldout", "bench/thorough", "core", "tests")
_STOP = (
    "the a an and or of in on at to for with by from into over under my their her his its is are was were be been "
    "has have had do does did go goes make makes get gets i they user users this that these those every each "
    "so then than as it about after before not no up out off only all most more less one two three four five six "
    "seven eight nine ten year years week weeks day days time times"
)
STOP = set(_STOP.split())
# generic words that may be capitalised (in names of venues, as months and days): not names
_GENERIC = (
    "january february march april may june july august september october november december monday tuesday "
    "wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays saturdays sundays "
    "morning evening office street home job lines systems flowers bar bakery café cafe co dental exchange ferry "
    "button black aunt uncle dr c b1 learning christmas easter japanese spain sea blue asian bistro coffee east english hotel house kitchen lab living o profile running tours "
    "work"
)
GENERIC = set(_GENERIC.split())
WORD = re.compile(r"[^\W\d_][\w'-]*")


def content_words(text: str) -> set[str]:
    text = re.sub(r"\{([^|{}]*)\|[^{}]*\}", r"\1", text).replace("{S}", "").replace("{my}", "")
    return {w.lower().strip("'-") for w in WORD.findall(text)} - STOP


def stems(words: set[str]) -> set[str]:
    # crude on purpose: enough to catch "bake"/"baking", "swim"/"swimming" in a paraphrase
    return {w[:5] for w in words if len(w) > 3} | {w for w in words if len(w) <= 3}


def names(text: str) -> set[str]:
    """Names, places and brands: capitalised words not opening a sentence, and words with
    letters beyond ASCII."""
    text = re.sub(r"\{[^{}]*\}", "x", text)
    out = set()
    for sentence in re.split(r"(?<=[.!?:\"])\s+", text):
        words = WORD.findall(sentence)
        out |= {w for w in words[1:] if w[0].isupper()} | {w for w in words if not w.isascii()}
    return {w.lower().strip("'-") for w in out} - STOP - GENERIC - {"i"}


def novelty(mod) -> list[str]:
    words: set[str] = names(mod.PROFILE["name"] + " " + mod.PROFILE["body"])
    for t in mod.T:
        texts = [t["pref"], t["title"], t["full"], t["infl"], t["partial"], *t["about"], *t["para"], *t["aside"]]
        words |= names(" ".join(texts) + " " + " ".join(text for _why, text in t["neg"]))
        words.add(t["key"])
    found = []
    for w in sorted(words):
        out = subprocess.run(
            ["grep", "-rliw", "--", w, *ELSEWHERE], cwd=REPO, capture_output=True, text=True, check=False
        ).stdout.split()
        if out:
            found.append(f"{w}: in {len(out)} file(s)")
    return found


def overlaps(mod) -> list[str]:
    problems = []
    prefs = {t["key"]: stems(content_words(t["pref"])) for t in mod.T}
    for t in mod.T:
        for p in [t["para_title"], *t["para"]]:
            shared = stems(content_words(p)) & prefs[t["key"]]
            if shared:
                problems.append(f"{t['key']}: paraphrase {p!r} shares {sorted(shared)}")
    for line in [*mod.DIARY, *mod.UNRELATED]:
        for key, ws in prefs.items():
            shared = stems(content_words(line)) & ws
            if shared:
                problems.append(f"filler {line!r} shares {sorted(shared)} with {key}")
    return problems


def main(argv: list[str]) -> int:
    mod = importlib.import_module(f"{__package__}.templates_{argv[0] if argv else 'dev'}")
    found, problems = novelty(mod), overlaps(mod)
    for line in found:
        print("not new:", line)
    for line in problems:
        print("overlap:", line)
    print(f"{len(mod.T)} preferences; {len(found)} words not new; {len(problems)} overlaps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
