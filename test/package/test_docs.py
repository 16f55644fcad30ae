"""The repository explains itself: every link in its Markdown resolves, and
nothing outside test/, .ci/ and scripts/ sends the reader to documents that
are not in it (a ``shared/`` folder beside the clone, DESIGN.md, MATH.md) or
to papers by a file number instead of authors, year and title."""
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SKIPPED_DIRS = {"build", "install", "log", "node_modules", "__pycache__"}
# Those may name the team's shared folder: CI and developer scripts install from it.
OUTSIDE_THE_RULE = ("test", ".ci", "scripts")

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def repository_files(*suffixes):
    found = []
    for path in REPO.rglob("*"):
        parts = path.relative_to(REPO).parts
        if any(part.startswith(".") and part != ".ci" or part in SKIPPED_DIRS for part in parts[:-1]):
            continue
        if path.is_file() and path.suffix in suffixes and not path.name.startswith("."):
            found.append(path)
    return sorted(found)


def anchors(markdown: str) -> set:
    """GitHub's anchors of the headings: lower case, punctuation dropped
    (underscores stay: inside a word, as in K_c, they are no emphasis),
    spaces to hyphens."""
    slugs = set()
    for line in prose_lines(markdown):
        heading = re.match(r"#+\s+(.*)", line)
        if heading:
            text = re.sub(r"[`*]", "", heading.group(1).strip().lower())
            slugs.add(re.sub(r"[^\w\- ]", "", text).replace(" ", "-"))
    return slugs


def prose_lines(markdown: str):
    """The lines outside fenced code blocks."""
    fenced = False
    for line in markdown.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            yield line


def links(markdown: str):
    for line in prose_lines(markdown):
        for match in LINK.finditer(line):
            yield match.group(1) or match.group(2)


MARKDOWN = repository_files(".md")


def test_the_repository_has_its_documents():
    names = {path.relative_to(REPO).as_posix() for path in MARKDOWN}
    assert {"README.md", "CONTRIBUTING.md", "docs/design.md", "docs/math.md",
            "docs/benchmarks.md"} <= names, names


@pytest.mark.parametrize("document", MARKDOWN, ids=[p.relative_to(REPO).as_posix() for p in MARKDOWN])
def test_every_link_resolves(document):
    text = document.read_text()
    broken = []
    for target in links(text):
        if re.match(r"[a-z]+:", target):  # http(s), mailto: not fetched here
            continue
        path, _, anchor = target.partition("#")
        resolved = (document.parent / path).resolve() if path else document
        if not resolved.exists():
            broken.append(f"{target}: no file {resolved}")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.read_text()):
            broken.append(f"{target}: no heading #{anchor} in {resolved.name}")
    assert not broken, "\n".join(broken)


def test_the_link_checker_finds_broken_links(tmp_path):
    """The checks above can fail: a missing file and a missing heading."""
    text = "# Title\n\n[ok](#title) [gone](nowhere.md) [bad](#no-such-heading)\n```\n[code](x.md)\n```\n"
    assert list(links(text)) == ["#title", "nowhere.md", "#no-such-heading"]
    assert anchors(text) == {"title"}
    assert anchors("## Floating base (generalized speeds)\n") == {"floating-base-generalized-speeds"}


# What a reader outside the team cannot follow.
UNREACHABLE = re.compile(r"shared/|\b(DESIGN|MATH)\.md\b|[Pp]apers? 00\d")


def test_no_reference_to_documents_outside_the_repository():
    found = []
    for path in repository_files(".py", ".md"):
        relative = path.relative_to(REPO)
        if relative.parts[0] in OUTSIDE_THE_RULE:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if UNREACHABLE.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, "\n".join(found)
