"""The README and every page under docs/: each relative link resolves to a
file of the checkout, and each #anchor to a heading of the page it names
(GitHub's anchors); the README stays a front page (about 12 KB)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import ROOT

pytestmark = pytest.mark.unit

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~)")


def prose(text: str) -> str:
    """The page without fenced code blocks and inline code."""
    out, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if not fenced:
            out.append(re.sub(r"`[^`]*`", "", line))
    return "\n".join(out)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for the page's headings: lower case, punctuation
    dropped, spaces to hyphens, -1, -2 for repeats."""
    seen: dict[str, int] = {}
    found = set()
    for line in prose(page.read_text()).splitlines():
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        text = re.sub(r"`([^`]*)`", r"\1", m.group(1))
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def links(page: Path) -> list[str]:
    text = page.read_text()
    # headings' inline code is kept for anchors, links in inline code are not links
    return [a or b for a, b in LINK.findall(prose(text))]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):       # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or not dest.is_relative_to(ROOT):
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading with that anchor")
    assert broken == [], f"{page.relative_to(ROOT)}: {broken}"


def test_the_anchor_rule_matches_githubs() -> None:
    page = ROOT / "docs" / "extending.md"
    assert {"a-server", "a-load-client", "keeping-an-extension-outside-the-checkout"} \
        <= anchors(page)


def test_the_readme_is_a_front_page() -> None:
    readme = ROOT / "README.md"
    assert len(readme.read_bytes()) < 12_000, len(readme.read_bytes())
    # every page of docs/ is linked from the README or from a page it links
    reached = {(p.parent / t.partition("#")[0]).resolve() for p in PAGES for t in links(p)
               if not re.match(r"[a-z][a-z0-9+.-]*:", t)}
    unlinked = [p.name for p in PAGES[1:] if p.resolve() not in reached]
    assert unlinked == []


def test_the_readme_maps_every_module_under_its_role() -> None:
    """One table per role package; each names every module and subpackage of
    that package, and nothing that is not there."""
    text = (ROOT / "README.md").read_text()
    text = text[text.index("## A map of `lab/`"):]
    text = text[:text.index("\n## ", 3)]
    tables = dict(re.findall(r"\*\*`([a-z]+)/`\*\*[^\n]*\n\n((?:\|[^\n]*\n)+)", text))
    lab = ROOT / "lab"
    roles = sorted(d.name for d in lab.iterdir() if (d / "__init__.py").exists())
    assert sorted(tables) == roles
    for role, table in tables.items():
        named = set(re.findall(r"`([a-z_]+(?:\.py|/))`", table))
        there = {f.name for f in (lab / role).glob("*.py") if f.name != "__init__.py"}
        there |= {f"{d.name}/" for d in (lab / role).iterdir() if (d / "__init__.py").exists()}
        assert named == there, f"lab/{role}: missing {sorted(there - named)}, gone {sorted(named - there)}"


def test_the_glossary_says_each_term_once_and_names_modules_that_exist() -> None:
    """docs/glossary.md: a term in one row only, and every lab module it
    names (`dir/file.py` or `dir/`, under lab/; servers/ and tests/ from the
    checkout's top) is there, so a module moved
    or renamed without its row is caught."""
    text = (ROOT / "docs" / "glossary.md").read_text()
    rows = [line.split("|")[1:-1] for line in text.splitlines()
            if line.startswith("| ") and not line.startswith("| term") and
            not line.startswith("| module")]
    terms = [t.strip() for cells in rows for t in re.sub(r"\(.*?\)", "", cells[0]).split(",")]
    assert len(terms) == len(set(terms)) and len(terms) > 30, terms
    named = {m for cells in rows for m in re.findall(r"`([a-z_]+/[a-z_/]*(?:\.py)?)`",
                                                      "|".join(cells))}
    assert len(named) > 20, named
    top = {"servers", "tests"}                    # results/: a run's, not the checkout's
    missing = sorted(m for m in named if m != "results/" and not (
        ROOT / ("" if m.split("/")[0] in top else "lab") / m).exists())
    assert not missing, f"docs/glossary.md names modules that are not under lab/: {missing}"
