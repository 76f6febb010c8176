"""Every markdown link in README.md and docs/*.md resolves, so the guide and its pages cannot
point at a page, a section or a picture that is no longer there.

- a relative link names a file or folder of the repository (`/x` from the repository root);
- a `#anchor` (on the same page, or on a linked .md page) matches one of that page's headings
  as GitHub slugs them (lowercase; punctuation other than `-` and `_` dropped; each space a
  `-`; a repeated heading's slug gets `-1`, `-2`, ...) or an `<a id=...>` / `<a name=...>`;
  a non-markdown file takes only a line anchor (`#L12`, `#L12-L20`);
- an image (`![alt](src)`, `<img src=...>`) is a file that exists;
- an http(s) link is not fetched (no network), only required to be well formed.

Links inside fenced code blocks and inline code are text, not links. The README also stays
what it is for: a short user's guide whose setup is the two make commands.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A code span never crosses a blank line (an unpaired backtick then hides nothing past it).
CODE_SPAN = re.compile(r"(`+)((?:(?!\n[ \t]*\n)[\s\S])+?)(?<!`)\1(?!`)")
# [text](target "title"), ![alt](src): the text may hold one level of brackets, the target
# balanced parentheses or <angle brackets>.
INLINE_LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>(?:[^\[\]\\]|\\.|\[[^\[\]]*\])*)\]"
    r"\(\s*(?P<target><[^<>\n]*>|(?:[^\s()\\]|\\.|\([^\s()]*\))*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*\)")
REF_USE = re.compile(r"(?P<bang>!?)\[(?P<text>(?:[^\[\]\\]|\\.)*)\]\[(?P<ref>[^\[\]]*)\]")
REF_DEF = re.compile(r"^ {0,3}\[(?P<ref>[^\[\]]+)\]:[ \t]*(?P<target><[^<>\n]*>|\S+)", re.M)
HTML_LINK = re.compile(r"<(?P<tag>img|a|source)\b[^>]*?\b(?P<attr>src|href)\s*=\s*[\"'](?P<target>[^\"']*)[\"']",
                       re.I)
AUTOLINK = re.compile(r"(?<!\()<(?P<target>[A-Za-z][A-Za-z0-9+.-]*:[^<>\s]*)>")
HTML_ANCHOR = re.compile(r"<a\b[^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", re.I)
ATX = re.compile(r"^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
LINE_ANCHOR = re.compile(r"^L\d+(C\d+)?(-L\d+(C\d+)?)?$")
HOSTNAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$")


@dataclass(frozen=True)
class Link:
    line: int
    target: str
    image: bool


def without_code(text: str, spans: bool = True) -> str:
    """The page with fenced blocks (and, with `spans`, code spans) blanked, same length and
    line breaks, so offsets still give line numbers and nothing in code reads as a link or a
    heading."""
    lines, fence = text.split("\n"), None
    for i, line in enumerate(lines):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence, lines[i] = opened.group(1), ""
        elif fence is not None:
            closing = opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence)
            if closing and not line.strip().strip(fence[0]):
                fence = None
            lines[i] = ""
    text = "\n".join(lines)
    if not spans:
        return text
    return CODE_SPAN.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text (github-slugger): the rendered text lowercased,
    every character but letters, marks, digits, `-`, `_` and spaces dropped, spaces -> `-`."""
    text = re.sub(r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"(\*+|(?<!\w)_+|_+(?!\w))", "", text)  # emphasis markers; snake_case stays
    kept = (ch for ch in text.strip().lower()
            if ch in "-_ " or unicodedata.category(ch)[0] in "LMN")
    return "".join(kept).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor a page has: its headings' slugs (repeats numbered) and its HTML ids."""
    plain = without_code(text, spans=False)  # a heading's code spans are part of its slug
    seen: dict[str, int] = {}
    found = set(HTML_ANCHOR.findall(plain))
    lines = plain.split("\n")
    for i, line in enumerate(lines):
        heading = ATX.match(line)
        title = heading.group(1) if heading else None
        if title is None and i + 1 < len(lines) and SETEXT.match(lines[i + 1]) and line.strip() \
                and not ATX.match(line) and not line.lstrip().startswith(("|", "-", "*", ">")):
            title = line
        if title is None:
            continue
        base = slug(title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(text: str) -> list[Link]:
    """Every link and image of a page, outside code, with its line number."""
    plain = without_code(text)

    def line_of(offset: int) -> int:
        return plain.count("\n", 0, offset) + 1

    refs = {m.group("ref").strip().lower(): m.group("target") for m in REF_DEF.finditer(plain)}
    found = [Link(line_of(m.start()), m.group("target"), m.group("bang") == "!")
             for m in INLINE_LINK.finditer(plain)]
    for m in REF_USE.finditer(plain):
        ref = (m.group("ref") or m.group("text")).strip().lower()
        # An undefined reference renders as text on GitHub: a link that went nowhere.
        found.append(Link(line_of(m.start()), refs.get(ref, f"[undefined reference: {ref}]"),
                          m.group("bang") == "!"))
    found += [Link(line_of(m.start()), m.group("target"), False) for m in REF_DEF.finditer(plain)]
    found += [Link(line_of(m.start()), m.group("target"), m.group("tag").lower() == "img")
              for m in HTML_LINK.finditer(plain)]
    found += [Link(line_of(m.start()), m.group("target"), False) for m in AUTOLINK.finditer(plain)]
    return sorted(found, key=lambda link: link.line)


def url_problem(target: str) -> str | None:
    """Why an absolute URL is malformed, or None. Only http(s) and mailto are links here."""
    if re.search(r"\s", target):
        return "a URL holds whitespace"
    if target.lower().startswith("mailto:"):
        return None if re.fullmatch(r"mailto:[^@]+@[^@]+\.[^@]+", target, re.I) else "malformed mailto address"
    parts = urlsplit(target)
    if parts.scheme.lower() not in ("http", "https"):
        return f"unsupported link scheme {parts.scheme!r}"
    try:
        parts.port  # noqa: B018  (raises on a port that is not a number)
    except ValueError:
        return "malformed port"
    host = parts.hostname  # lowercased, an IPv6 address without its brackets
    if not target.lower().startswith(f"{parts.scheme.lower()}://") or not host:
        return "malformed URL (no host)"
    if not (HOSTNAME.match(host) or ":" in host):
        return f"malformed host {host!r}"
    return None


def problem(page: Path, link: Link, root: Path, cache: dict[Path, set[str]]) -> str | None:
    """Why one link of `page` does not resolve, or None."""
    target = link.target.strip()
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1].strip()
    if target.startswith("[undefined reference"):
        return target[1:-1]
    if not target:
        return "empty link target"
    if SCHEME.match(target):
        return url_problem(target)
    path_part, _, fragment = target.partition("#")
    path_part = unquote(path_part.split("?", 1)[0])
    if not path_part:
        resolved = page
    elif path_part.startswith("/"):
        resolved = (root / path_part.lstrip("/")).resolve()
    else:
        resolved = (page.parent / path_part).resolve()
    if not resolved.is_relative_to(root.resolve()):
        return f"{path_part} lies outside the repository"
    if not resolved.exists():
        return f"{path_part} does not exist"
    if link.image and not resolved.is_file():
        return f"image {path_part} is not a file"
    if not fragment:
        return None
    fragment = unquote(fragment)
    if resolved.suffix.lower() != ".md":
        return None if resolved.is_file() and LINE_ANCHOR.match(fragment) else \
            f"#{fragment}: only a markdown page has section anchors ({path_part or page.name})"
    if resolved not in cache:
        cache[resolved] = anchors(resolved.read_text(encoding="utf-8"))
    if fragment not in cache[resolved]:
        return f"#{fragment} is no heading of {resolved.relative_to(root.resolve())}"
    return None


def broken_links(page: Path, root: Path = ROOT) -> list[str]:
    """`page:line: target: why` for every link of `page` that does not resolve."""
    cache: dict[Path, set[str]] = {}
    name = page.relative_to(root) if page.is_relative_to(root) else page
    return [f"{name}:{link.line}: {link.target}: {why}"
            for link in links(page.read_text(encoding="utf-8"))
            if (why := problem(page.resolve(), link, root, cache)) is not None]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page):
    assert broken_links(page) == []


def test_the_pages_link_to_each_other():
    # Not a vacuous pass: the pages do hold relative links, anchors and images.
    every = [link for page in PAGES for link in links(page.read_text(encoding="utf-8"))]
    assert any("#" in link.target and not SCHEME.match(link.target) for link in every)
    assert any(link.image for link in every)
    linked = {(page.parent / link.target.split("#")[0]).resolve()
              for page in PAGES for link in links(page.read_text(encoding="utf-8"))
              if link.target and not SCHEME.match(link.target) and not link.target.startswith("#")}
    orphans = [p.name for p in PAGES[1:] if p.resolve() not in linked]
    assert orphans == [], f"docs pages no page links to: {orphans}"


def test_a_broken_link_is_reported(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "pic.png").write_bytes(b"\x89PNG")
    (tmp_path / "docs" / "other.md").write_text(
        "# Other page\n\n## Setup: two commands\n\n## Setup: two commands\n\nText\n---\n", encoding="utf-8")
    page = tmp_path / "README.md"
    page.write_text(
        "# Guide\n\n"
        "## A section (`x.yaml`)\n\n"
        "[fine](docs/other.md) [fine](docs/other.md#setup-two-commands) "
        "[fine](docs/other.md#setup-two-commands-1) [fine](docs/other.md#text)\n"
        "[fine](#a-section-xyaml) ![fine](pic.png) [fine](https://example.org/a?b=1#c) "
        "[fine][ref] <img src=\"pic.png\"> <https://example.org>\n"
        "`[in code](nowhere.md)`\n"
        "```\n[in a fence](nowhere.md)\n```\n"
        "[missing file](docs/gone.md)\n"
        "[bad anchor](docs/other.md#setup)\n"
        "[bad local anchor](#no-such-section)\n"
        "![missing image](shots/none.png)\n"
        "<img src=\"docs/none.png\" width=\"10\">\n"
        "[no host](https:///path) [bad scheme](ftp://example.org/x) [spaced](<https://exa mple.org>)\n"
        "[undefined][nope] [empty]()\n"
        "[outside](../elsewhere.md)\n"
        "\n[ref]: docs/other.md\n", encoding="utf-8")
    reported = broken_links(page, root=tmp_path)
    assert [line.split(": ", 1)[0] for line in reported] == [
        "README.md:11", "README.md:12", "README.md:13", "README.md:14", "README.md:15",
        "README.md:16", "README.md:16", "README.md:16", "README.md:17", "README.md:17", "README.md:18"]
    assert [line.split(": ")[1] for line in reported] == [
        "docs/gone.md", "docs/other.md#setup", "#no-such-section", "shots/none.png", "docs/none.png",
        "https:///path", "ftp://example.org/x", "<https://exa mple.org>", "", "[undefined reference",
        "../elsewhere.md"]
    assert "is no heading of docs/other.md" in reported[1] and "does not exist" in reported[0]


@pytest.mark.parametrize("heading, expected", [
    ("DecoEvo: auditing the rubric-generator skill", "decoevo-auditing-the-rubric-generator-skill"),
    ("DecoEvo (`examples/decoevo_full.yaml`)", "decoevo-examplesdecoevo_fullyaml"),
    ("Auditing a judge: `coevo audit judge`", "auditing-a-judge-coevo-audit-judge"),
    ("What's **new** in [v2](https://example.org)?", "whats-new-in-v2"),
    ("A — B", "a--b"),
    ("Δ and the 95 % interval", "δ-and-the-95--interval"),
    ("snake_case _emphasis_", "snake_case-emphasis"),
])
def test_headings_are_slugged_as_github_does(heading, expected):
    assert slug(heading) == expected


def test_the_readme_is_a_short_guide_with_the_two_setup_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200, "README.md is the user's guide: reference material goes in docs/"
    fenced = re.findall(r"```bash\n(.*?)```", text, re.S)
    assert fenced and fenced[0].split()[:2] == ["make", "quickstart"] and "make test" in fenced[0]
