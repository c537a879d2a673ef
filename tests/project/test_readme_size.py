"""The README stays a guide: at most 300 lines, and every relative link in it (to docs/ or any
other file of the repository) points at a file that exists. Detail lives in docs/."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MAX_LINES = 300

#: Inline Markdown links and images: ``[text](target)`` and ``![alt](target "title")``.
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
#: Reference-style link definitions: ``[name]: target``.
DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.MULTILINE)
#: Fenced code blocks, whose contents are not links.
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)


def relative_targets(text: str) -> list[str]:
    """The file paths of the relative links in Markdown ``text`` (anchors and queries cut)."""
    prose = FENCE.sub("", text)
    targets = LINK.findall(prose) + DEFINITION.findall(prose)
    paths = []
    for target in targets:
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
            continue  # a URL (http:, mailto:), an anchor in the README, or an absolute path
        path = unquote(target.split("#", 1)[0].split("?", 1)[0])
        if path:
            paths.append(path)
    return paths


def test_the_readme_has_at_most_300_lines() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {MAX_LINES}): move detail into docs/"
    )


def test_every_relative_link_in_the_readme_points_at_a_file() -> None:
    targets = relative_targets(README.read_text(encoding="utf-8"))
    assert targets, "no relative links found in README.md: the link check is reading nothing"
    missing = sorted({t for t in targets if not (ROOT / t).exists()})
    assert missing == [], f"README.md links to missing files: {missing}"


def test_the_link_check_finds_broken_links() -> None:
    """The checker itself, on planted text: links, images and definitions are read; URLs,
    anchors and fenced code are not."""
    text = (
        'See [a](docs/a.md#part), ![b](docs/b.png "title") and [c][ref].\n'
        "[ref]: docs/c.md\n"
        "[web](https://example.com/x.md), [here](#section), [mail](mailto:x@y.z)\n"
        "```\n[not a link](docs/code.md)\n```\n"
    )
    assert relative_targets(text) == ["docs/a.md", "docs/b.png", "docs/c.md"]
