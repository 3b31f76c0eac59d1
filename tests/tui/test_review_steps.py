"""The README's review in motion (tools/scenes.py, issue 41): the frames of a
review become one SVG that shows each in turn with SMIL (no script), its caption
below, and the first frame alone where nothing animates."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from scenes import REVIEW_STEPS, animate

from helpers import ROOT

SVG = "{http://www.w3.org/2000/svg}"


def _frame(label: str) -> str:
    return ('<svg class="rich-terminal" viewBox="0 0 994 928.4" xmlns="http://www.w3.org/2000/svg">'
            f'<style>.t-{label} {{ fill: #fff }}</style><text class="t-{label}">{label}</text></svg>')


def test_frames_take_turns_and_the_first_shows_without_animation():
    captions = ("1 · the plan", "2 · <the diff> & more", "3 · done")
    root = ET.fromstring(animate([_frame(c) for c in "abc"], captions, seconds=2))
    groups = root.findall(f"{SVG}g")
    assert [g.get("opacity") for g in groups] == ["1", "0", "0"]
    for i, group in enumerate(groups):
        (anim,) = group.findall(f"{SVG}animate")
        assert anim.get("calcMode") == "discrete" and anim.get("dur") == "6s"
        assert anim.get("values").split(";") == ["1" if j == i else "0" for j in range(3)]
        assert group.find(f"{SVG}svg").get("viewBox") == "0 0 994 928.4"
        assert group.find(f"{SVG}text").text == captions[i]  # escaped on the way in, read back as text
    assert root.get("viewBox") == "0 0 994.0 972.4" and not list(root.iter(f"{SVG}script"))


def test_the_readme_shows_the_review_in_motion_with_a_caption_per_step():
    shown = ET.parse(ROOT / "screenshots/review-steps.svg").getroot()
    captions = [g.find(f"{SVG}text").text for g in shown.findall(f"{SVG}g")]
    assert captions == list(REVIEW_STEPS)
    assert "screenshots/review-steps.svg" in (ROOT / "README.md").read_text()
    for step in range(1, len(REVIEW_STEPS) + 1):
        assert (ROOT / f"screenshots/review-step-{step}.svg").is_file()
