"""The docs stay navigable and written for users.

- Every relative link in README.md, BENCHMARKS.md, docs/ and benchmarks/history/ names a file that exists,
  and every page of mkdocs.yml's nav is in docs/ (`mkdocs build --strict` in .ci/run checks the rendered
  site; this runs without mkdocs installed).
- Every page is short (at most 200 lines); the pages written by hand name no issue numbers, dates, VMs
  or `../shared` paths (measurements with their machine and date belong in BENCHMARKS.md).
- The command-line reference (docs/cli.md, docs/cli/) is what docs/gen_cli.py writes from the commands.
- Facts stated in several places agree: the set-up times with one table (`STATED_TIMES`), the extras
  of `make install` with the Makefile, the final check and the blend's prior with the code.
"""

import importlib.util
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


def test_the_architecture_tree_names_every_module():
    """docs/architecture.md draws src/graphcost: every package of the tree and every module in it is named
    there (a zoo family module is named by its package, zoo/; generated protobuf code is not)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("src/graphcost/")
    tree = text[start:text.index("```", start)]
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
    assert not missing, f"docs/architecture.md's tree does not name: {missing}"


# --- pages for users -------------------------------------------------------------------------------------

MAX_LINES = 200
GENERATED = ROOT / "docs" / "cli"  # with docs/cli.md: written by docs/gen_cli.py from the commands' help
ISSUE = re.compile(r"\b[Ii]ssues? #?\d+")
DATE = re.compile(r"(?<![\w/.-])20\d\d-[01]\d-[0-3]\d(?![\w.-]*\.md)")  # a date, not part of a file name
VM = re.compile(r"\bVMs?\b")


def _pages() -> list[Path]:
    return sorted((ROOT / "docs").rglob("*.md"))


def _by_hand() -> list[Path]:
    """README.md and the docs pages written by hand (not the generated command-line reference)."""
    return [ROOT / "README.md"] + [p for p in _pages() if p != ROOT / "docs" / "cli.md" and GENERATED not in p.parents]


def test_every_page_is_short():
    long = {p.relative_to(ROOT).as_posix(): n for p in _pages()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert not long, f"pages over {MAX_LINES} lines (split them, or move findings to BENCHMARKS.md): {long}"


def test_pages_name_no_issue_date_vm_or_shared_path():
    found = []
    for page in _by_hand():
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for what, pattern in (("issue number", ISSUE), ("date", DATE), ("VM", VM)):
                found += [f"{page.relative_to(ROOT)}:{n}: {what} {m.group(0)!r}" for m in pattern.finditer(line)]
            if "../shared" in line:
                found.append(f"{page.relative_to(ROOT)}:{n}: a ../shared path, which a user does not have")
    assert not found, "\n".join(found)


def _gen_cli():
    spec = importlib.util.spec_from_file_location("gen_cli", ROOT / "docs" / "gen_cli.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_cli_reference_is_generated_from_the_commands():
    gen = _gen_cli()
    pages = gen.render()
    assert ROOT / "docs" / "cli.md" in pages and len(pages) > 1
    assert all("graphcost" in text for text in pages.values())
    stale = [p.relative_to(ROOT).as_posix() for p in gen.stale(pages)]
    assert not stale, f"out of date (run python docs/gen_cli.py): {stale}"


def test_the_cli_reference_names_every_command():
    from graphcost.cli import click_command as root

    text = "".join(_gen_cli().render().values())
    ctx = root.context_class(root, info_name="graphcost")
    for name in root.list_commands(ctx):
        assert f"## graphcost {name}\n" in text, name


# --- one fact, one figure ---------------------------------------------------------------------------------

# Every time the README and the docs state for setting up and for the main job, in one place. A page that
# states another figure for one of these fails here: change the figure here and on every page together.
STATED_TIMES = {
    "make install": (r"\bmake install\b", "~2 min"),
    "make test": (r"\bmake test\b(?!-)", "6-11 min"),
    "the main job's train": (r"`train` has taken|\bgraphcost train\b", "1.5-3 min"),
}
TIME = re.compile(r"(?:~\s*|about\s+)?\d+(?:\.\d+)?(?:\s*[-–]\s*\d+(?:\.\d+)?)?\s*"
                  r"(?:minutes?|mins?|seconds?|s|hours?|h)\b")


def _normal(figure: str) -> str:
    figure = re.sub(r"\s+", " ", figure.replace("–", "-")).replace("about ", "~").replace("~ ", "~")
    return re.sub(r"\bminutes?\b|\bmins\b", "min", re.sub(r"\s*-\s*", "-", figure))


def test_stated_times_match_one_source():
    wrong, seen = [], {key: 0 for key in STATED_TIMES}
    for page in _by_hand():
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
            for key, (context, figure) in STATED_TIMES.items():
                if not re.search(context, line):
                    continue
                for m in TIME.finditer(line):
                    seen[key] += 1
                    if _normal(m.group(0)) != figure:
                        wrong.append(f"{page.relative_to(ROOT)}:{n}: {key} {m.group(0)!r}, not {figure!r}")
    assert not wrong, "\n".join(wrong)
    assert all(seen.values()), f"a figure of STATED_TIMES is stated nowhere any more: {seen}"


def test_make_install_extras_as_the_makefile_installs_them():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    extras = set(re.search(r"^install:.*?pip install -e \"\.\[([^\]]+)\]\"", makefile, re.S | re.M).group(1).split(","))
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    stated = re.search(r"`make install` installs the (.+?) extras", index).group(1)
    assert set(re.findall(r"`([\w-]+)`", stated)) == extras
    names = {"dev": "test", "jax": "JAX", "tune": "tune", "ray": "Ray"}  # as the set-up comment names them
    for page in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        line = next(ln for ln in page.read_text(encoding="utf-8").splitlines() if ln.startswith("make install"))
        assert all(re.search(rf"\b{names.get(e, e)}\b", line) for e in extras), (page.name, line)
        assert not (set(names) - extras) or not any(re.search(rf"\b{names[e]}\b", line) for e in set(names) - extras)


def test_the_final_check_is_described_as_the_code_does_it():
    from graphcost.tuning import defaults

    pages = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("tune*.md")}
    text = " ".join(" ".join(pages.values()).split())
    assert f"up to {defaults.FINALISTS} of the configurations that beat the default in the search" in text
    assert not re.search(r"best (three|3) (of the configurations )?.{0,40}are re-measured", text)
    assert "re-measuring 1 candidate(s)" in text  # what the console prints when one beat the default
    code = (ROOT / "src" / "graphcost" / "tuning" / "final_check.py").read_text(encoding="utf-8")
    assert "re-measuring {len(configs) - 1} candidate(s)" in code


def test_the_blends_prior_is_named_as_train_prints_it():
    code = (ROOT / "src" / "graphcost" / "inference" / "blend.py").read_text(encoding="utf-8")
    printed = re.search(r'what = "([^"]+)" if blend\.prior_kind == "copies" else "([^"]+)"', code).groups()
    doc = " ".join((ROOT / "docs" / "cost-models.md").read_text(encoding="utf-8").split())
    assert all(name in doc for name in printed), printed
