"""The docs stay navigable (issue 20 part 8): every relative link in README.md, BENCHMARKS.md, docs/ and
benchmarks/history/ names a file that exists, and every page of mkdocs.yml's nav is in docs/.
(`mkdocs build --strict` in .ci/run checks the rendered site; this runs without mkdocs installed.)"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")  # [text](target)
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _relative_targets(md: Path) -> list[str]:
    text = FENCE.sub("", md.read_text())
    targets = [t.split("#")[0] for t in LINK.findall(text)]
    return [t for t in targets if t and not re.match(r"[a-z]+:", t)]  # skip http:, mailto:, pure anchors


def test_relative_links_name_existing_files():
    pages = [ROOT / "README.md", ROOT / "BENCHMARKS.md", *(ROOT / "docs").rglob("*.md"),
             *(ROOT / "benchmarks" / "history").glob("*.md")]
    broken = [f"{md.relative_to(ROOT)} -> {t}" for md in pages for t in _relative_targets(md)
              if not (md.parent / t).exists()]
    assert not broken, broken


def test_readme_links_every_guide_and_the_nav_lists_them():
    guides = sorted(p.name for p in (ROOT / "docs").glob("*.md"))
    assert {"index.md", "data.md", "cost-models.md", "collect.md", "tune.md", "layerdag.md", "python-api.md"} <= set(guides)
    readme = _relative_targets(ROOT / "README.md")
    assert all(f"docs/{g}" in readme for g in guides), "README.md must link every user guide"
    nav = re.findall(r":\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    assert set(guides) <= set(nav), "mkdocs.yml nav must list every user guide"
    assert all((ROOT / "docs" / page).is_file() for page in nav), nav
