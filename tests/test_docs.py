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


def test_the_index_tree_names_every_module():
    """docs/index.md draws src/graphcost: every package of the tree and every module in it is named there
    (a zoo family module is named by its package, zoo/; generated protobuf code is not)."""
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    tree = text[text.index("src/graphcost"):text.index("## Measured results")]
    src = ROOT / "src" / "graphcost"
    missing = []
    for package in sorted(p for p in src.rglob("*") if (p / "__init__.py").is_file()):
        rel = package.relative_to(src).as_posix()
        if rel and not re.search(rf"\b{re.escape(package.name)}/", tree):
            missing.append(rel + "/")
        if package.name == "zoo":
            continue
        missing += [f"{rel}/{m.name}" for m in sorted(package.glob("*.py"))
                    if m.stem != "__init__" and not m.stem.endswith("_pb2") and not re.search(rf"\b{m.stem}\b", tree)]
    assert not missing, f"docs/index.md's tree does not name: {missing}"
