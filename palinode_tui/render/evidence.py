"""Why a target is a target, as Rich text: which resolver found it (the
thorough one, Palinode's, or both), the sentence evidence behind it, and
what Palinode's own plan of the same request would do beside it."""

from __future__ import annotations

from rich.text import Text

from palinode_core.api import Candidate, Evidence, ForgetPlan, stem, stem_tokens

from .text import plain

TARGET_ROUTES = ("archive", "strike", "unforgotten")
_LETTER = {"thorough": "T", "palinode": "P"}
FOUND_BY_STYLE = {"T": "bold cyan", "P": "dim", "T+P": "green"}


def found_by_marker(cand: Candidate, resolver: str) -> Text:
    """``T``, ``P`` or ``T+P``. Under Palinode's own resolver every target is
    Palinode's and a hit it skipped was found by nobody: no marker."""
    if resolver != "thorough" and cand.route not in TARGET_ROUTES:
        return Text("")
    marker = "+".join(_LETTER[r] for r in ("thorough", "palinode") if r in cand.found_by)
    return Text(marker, style=FOUND_BY_STYLE.get(marker, ""))


def found_by_line(cand: Candidate, resolver: str) -> Text:
    text = Text()
    if resolver != "thorough":
        text.append("found by Palinode's own resolution", style="dim")
    elif cand.found_by == ("thorough",):
        text.append("found by thorough · ", style="bold cyan")
        text.append("missed by Palinode", style="bold yellow")
    elif "thorough" in cand.found_by:
        text.append("found by thorough and Palinode", style="green")
    else:
        text.append("found by Palinode only · thorough does not take it", style="bold yellow")
    return text


def matched_words(ev: Evidence, pref: str) -> Text:
    """The unit's words that carry the preference, each inflection shown with
    the preference's own word (``drinks≈drink``); words inside a name apart."""
    own = {word.lower(): word for word, _stem, _off in stem_tokens(pref)}
    by_stem = {s: word for word, s, _off in stem_tokens(pref)}
    text = Text()
    for i, word in enumerate(ev.shared):
        if i:
            text.append(", ")
        text.append_text(plain(word, "bold"))
        if word.lower() not in own and stem(word) in by_stem:
            text.append_text(plain(f"≈{by_stem[stem(word)]}", "dim"))
    if not ev.shared:
        text.append("no shared word (a paraphrase)", style="italic")
    if ev.name_use:
        text.append("; inside a name, not counted: ", style="dim")
        text.append_text(plain(", ".join(ev.name_use), "dim"))
    if ev.loose:
        text.append("; says nothing alone (how often, when): ", style="dim")
        text.append_text(plain(", ".join(ev.loose), "dim"))
    return text


def evidence_text(cand: Candidate, pref: str) -> Text:
    """One entry per unit that carries the preference: where, the calibrated
    score (strong enough to pre-approve, or ask the reviewer), the vector similarity, the matched words,
    the unit itself and, for a paraphrase, the store sentence it is nearest to."""
    text = Text()
    offset = cand.plan.body_line_offset if cand.plan is not None else 0
    for ev in cand.evidence:
        where = f"frontmatter {ev.field}" if ev.kind == "frontmatter" else f"{ev.kind} line {ev.line + offset}"
        text.append("  ")
        text.append_text(plain(where, "bold"))  # a frontmatter key is store text
        text.append(f" · score {ev.score:.2f} ")
        # strong enough to pre-approve, or not (then the reviewer is asked)
        text.append("strong" if ev.preapproved else "ask", style="green" if ev.preapproved else "bold yellow")
        sim = "no vector (lexical only)" if ev.similarity is None else f"similarity {ev.similarity:.2f}"
        text.append(f" · {sim}\n", style="dim")
        text.append("    words: ", style="dim")
        text.append_text(matched_words(ev, pref))
        text.append("\n    ")
        text.append_text(plain(ev.text, "italic"))
        text.append("\n")
        if ev.weak:
            text.append(
                f"    below the usual cut: number {ev.weak} of the nearest in meaning, shown so you decide\n",
                style="dim",
            )
        if ev.someone_named:
            text.append("    names someone else or reports their words: it may be their fact\n", style="dim")
        if ev.why:
            text.append("    whose: ", style="dim")
            text.append_text(plain(ev.why, "dim"))
            text.append("\n")
        if ev.neighbour:
            near = "" if ev.neighbour_similarity is None else f" ({ev.neighbour_similarity:.2f})"
            text.append(f"    nearest sentence that states it{near}: ", style="dim")
            text.append_text(plain(ev.neighbour, "dim italic"))
            text.append("\n")
    return text


def _count(cands: list[Candidate]) -> str:
    counts: dict[str, int] = {}
    for c in cands:
        counts[c.route] = counts.get(c.route, 0) + 1
    return ", ".join(f"{n} {route}" for route, n in counts.items())


def comparison_line(plan: ForgetPlan, baseline: ForgetPlan | None) -> Text:
    """ "Palinode would (hybrid): N targets (…); thorough adds M": the thorough plan set
    beside Palinode's own plan of the same request and knobs."""
    text = Text()
    if plan.resolver != "thorough" or baseline is None:
        text.append("resolver: Palinode's own plan (exactly what Palinode would do)", style="dim")
        return text
    theirs = [c for c in baseline.candidates if c.route in TARGET_ROUTES]
    # with its own search's mode: thorough's is the sentence index (the header's "meaning")
    text.append(f"Palinode would ({plan.resolution.mode}): ", style="dim")
    text.append(f"{len(theirs)} target{'' if len(theirs) == 1 else 's'}" + (f" ({_count(theirs)})" if theirs else ""))
    mine = {c.path for c in plan.candidates if c.route in TARGET_ROUTES}
    adds = len(mine - {c.path for c in theirs})
    drops = len({c.path for c in theirs} - mine)
    text.append("; thorough adds ", style="dim")
    text.append(str(adds), style="bold cyan" if adds else "")
    if drops:
        text.append(", drops ", style="dim")
        text.append(str(drops), style="bold yellow")
    return text
