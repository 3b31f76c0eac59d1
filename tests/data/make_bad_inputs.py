"""Regenerate tests/data/bad-inputs/: hostile and malformed memory files, each
with its expected report in expected.yaml. Files that git cannot hold sensibly
(a 50 MB file, symlinks, a FIFO) are made at test time by the test itself."""
from __future__ import annotations

from pathlib import Path

import yaml

OUT = Path(__file__).parent / "bad-inputs"
FM = "---\nid: {id}\ncategory: bad\n---\n\n"
CASES: dict[str, tuple[bytes, dict]] = {}


def case(name: str, data: bytes | str, **expect) -> None:
    CASES[name] = (data.encode("utf-8") if isinstance(data, str) else data, expect)


# malformed YAML and frontmatter shapes
case("invalid-yaml-unclosed-list.md", "---\nid: x\ntags: [a, b\n---\nbody\n", error="invalid YAML frontmatter")
case("invalid-yaml-tab-indent.md", "---\nid: x\n\tkey: y\n---\nbody\n", error="invalid YAML frontmatter")
case("yaml-undefined-alias.md", "---\nid: *nope\n---\nbody\n", error="anchors/aliases")
case("invalid-yaml-python-tag.md", "---\nid: !!python/object/apply:os.system ['echo pwned']\n---\nbody\n",
     error="invalid YAML frontmatter")
case("invalid-yaml-bad-indent.md", "---\nid: x\n  - a\n b: c\n---\nbody\n", error="invalid YAML frontmatter")
case("invalid-yaml-unclosed-quote.md", "---\ntitle: \"never closed\n---\nbody\n", error="invalid YAML frontmatter")
case("yaml-alias-bomb.md", "---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n---\nbody\n",
     error="anchors/aliases")
case("frontmatter-is-a-list.md", "---\n- a\n- b\n---\nbody\n", error="frontmatter is a list")
case("frontmatter-is-a-string.md", "---\njust a sentence\n---\nbody\n", error="frontmatter is a str")
case("frontmatter-is-a-number.md", "---\n42\n---\nbody\n", error="frontmatter is a int")
case("frontmatter-key-not-string.md", "---\n1: one\n---\nbody\n", error="key that is not a string")
case("frontmatter-unterminated.md", "---\nid: x\nno closing line, ever\n", error="never closed")
case("frontmatter-unterminated-empty.md", "---\n", error="never closed")
case("deeply-nested-lists.md", "---\nid: deep\nx: " + "[" * 3000 + "]" * 3000 + "\n---\nbody\n",
     error="maximum nesting depth")
# bytes that are not UTF-8 text
case("binary-png.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01", error="NUL bytes")
case("binary-jpeg.md", b"\xff\xd8\xff\xe0JFIF-ish header, not text", error="not valid UTF-8")
case("nul-in-body.md", FM.format(id="nul") + "before\x00after\n", error="NUL bytes")
case("nul-in-frontmatter.md", "---\nid: a\x00b\n---\nbody\n", error="NUL bytes")
case("latin1-text.md", (FM.format(id="latin1") + "caf\xe9 au lait\n").encode("latin-1"), error="not valid UTF-8")
case("truncated-utf8.md", FM.format(id="trunc").encode() + b"euro sign cut: \xe2\x82", error="not valid UTF-8")
case("overlong-utf8.md", FM.format(id="over").encode() + b"overlong slash \xc0\xaf", error="not valid UTF-8")
case("surrogate-utf8.md", FM.format(id="sur").encode() + b"lone surrogate \xed\xa0\x80", error="not valid UTF-8")
case("utf16.md", (FM.format(id="utf16") + "wide text\n").encode("utf-16"), error="NUL bytes")
case("utf8-bom.md", b"\xef\xbb\xbf" + (FM.format(id="bom") + "body\n").encode(), error="byte-order mark")
# loads fine, but must be shown and handled safely
case("crlf-line-endings.md", "---\r\nid: crlf\r\ncategory: bad\r\n---\r\n\r\nAnn Lee wrote this.\r\nSecond line.\r\n",
     ok=True)
case("very-long-line.md", FM.format(id="long") + ("word " * 200_000) + "\n", ok=True)
case("empty-file.md", "", ok=True)
case("only-frontmatter.md", "---\nid: only\n---\n", ok=True)
case("empty-frontmatter.md", "---\n---\nbody after an empty block\n", ok=True)
case("no-frontmatter.md", "Just a note with no frontmatter at all.\n", ok=True)
case("dashes-in-body.md", FM.format(id="dashes") + "above\n---\nbelow\n---\n", ok=True)
case("markup-bold.md", FM.format(id="bold") + "[bold red]LOUD[/bold red] and [i]quiet[/i]\n", ok=True,
     literal="[bold red]LOUD[/bold red]")
case("markup-link.md", FM.format(id="link") + "[link=file:///etc/passwd]click me[/link]\n", ok=True,
     literal="[link=file:///etc/passwd]click me[/link]")
case("markup-click.md", FM.format(id="click") + "[@click=app.quit]quit[/] [@click=app.bell]bell[/]\n", ok=True,
     literal="[@click=app.quit]quit[/]")
case("markup-in-title.md", "---\nid: t\ntitle: '[reverse]title[/reverse] [@click=app.quit]x[/]'\n---\nbody\n",
     ok=True, literal="[reverse]title[/reverse]")
case("ansi-clear-screen.md", FM.format(id="ansi") + "before \x1b[2J\x1b[H\x1b[31mred\x1b[0m after\n", ok=True,
     escaped="\\x1b[2J")
case("ansi-osc52-clipboard.md", FM.format(id="osc52") + "copy \x1b]52;c;cm0gLXJmIH4=\x07 done\n", ok=True,
     escaped="\\x1b]52;c;")
case("ansi-osc-title.md", FM.format(id="title") + "\x1b]0;you have been pwned\x07 title change\n", ok=True,
     escaped="\\x1b]0;")
case("ansi-osc8-hyperlink.md", FM.format(id="osc8") + "\x1b]8;;http://evil.invalid\x1b\\link\x1b]8;;\x1b\\\n",
     ok=True, escaped="\\x1b]8;;")
case("c1-csi.md", FM.format(id="c1") + "eight-bit CSI \x9b31m red \x9b0m\n", ok=True, escaped="\\x9b31m")
case("ansi-in-frontmatter.md", "---\nid: \"esc\\e[31m\"\ntitle: \"\\e]0;pwned\\a\"\n---\nbody\n", ok=True,
     escaped="\\x1b]0;pwned")
case("bidi-override.md", FM.format(id="bidi") + "invoice \u202egnp.exe\u202c looks harmless\n", ok=True,
     escaped="\\u202e")
case("bidi-isolates.md", FM.format(id="iso") + "a \u2066hidden\u2069 b \u2067x\u2069 c\n", ok=True, escaped="\\u2066")
case("zero-width.md", FM.format(id="zw") + "pass\u200bword and z\u200dwj and \ufeffbom\n", ok=True, escaped="\\u200b")
case("request-bidi-pref.md", FM.format(id="rb") + "Please forget that I collect \u202esneakers\u202c.\n", ok=True,
     request="I collect \u202esneakers\u202c", escaped="\\u202e")
case("request-zero-width-pref.md", FM.format(id="rz") + "Please forget that I know Zed\u200b Quill.\n", ok=True,
     request="I know Zed\u200b Quill", escaped="\\u200b")
case("superseded-by-etc-passwd.md", "---\nid: sp\nstatus: archived\nsuperseded_by: ../../etc/passwd\n---\nbody\n",
     ok=True, dangling=True)
case("superseded-by-absolute.md", "---\nid: sa\nstatus: archived\nsuperseded_by: /etc/shadow\n---\nbody\n",
     ok=True, dangling=True)
case("status-is-a-list.md", "---\nid: sl\nstatus: [archived]\n---\nbody\n", ok=True)
case("retracted-prefs-scalar.md", "---\nid: rp\nretracted_prefs: i know zed\n---\nbody\n", ok=True)
case("bare-date-created.md", "---\nid: bd\ncreated_at: 2025-01-01\n---\nbody\n", ok=True)
case("unsorted-keys-comments.md", "---\n# a comment\nzeta: 1\nalpha: [a, b]  # flow\nid: u\n---\nbody\n", ok=True)
case("many-keys.md", "---\n" + "".join(f"k{i}: v{i}\n" for i in range(5000)) + "---\nbody\n", ok=True)
case("control-chars-mixed.md", FM.format(id="ctl") + "bell\x07 backspace\x08 del\x7f vt\x0b ff\x0c\n", ok=True,
     escaped="\\x07")


def main() -> None:
    OUT.mkdir(exist_ok=True)
    for old in OUT.glob("*.md"):
        old.unlink()
    expected = {}
    for name, (data, expect) in CASES.items():
        (OUT / name).write_bytes(data)
        expected[name] = expect
    (OUT / "expected.yaml").write_text(yaml.safe_dump(expected, allow_unicode=False, sort_keys=True), encoding="utf-8")
    print(f"{len(CASES)} files")


if __name__ == "__main__":
    main()
