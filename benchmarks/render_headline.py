"""Render BENCHMARKS.md's headline table from the committed results JSON, so it cannot drift (issue 66).

The section between `<!-- --8<-- [start:headline] -->` and `<!-- --8<-- [end:headline] -->` (docs/benchmarks.md
includes it) is written by this script and nothing else. Its figures are read from the results files under
`benchmarks/results/` (and, for the shipped datasets' repeatability, from their manifests); `benchmarks/headline.json`
holds only what no results file holds: per row the area, which file and key each figure comes from, the machine,
the date, the command and the BENCHMARKS.md section to link, plus the two intro paragraphs. A figure with no results
JSON behind it is a `literal` there, with its `source`, and is marked † in the table.

    python benchmarks/render_headline.py           # rewrite the section (atomically)
    python benchmarks/render_headline.py --check   # exit 1, naming the first differing row, when it is stale

A reference (`ref`) in headline.json is one of
    {"file": "bench_real.json", "key": "results/official/default/kendall_tau"}   # under the results root
    {"repo_file": "src/graphcost/datasets/cpu_layout/manifest.json", "key": "graphs/*/repeat/spearman_vs_label",
     "reduce": "median"}                                                           # under the repository
    {"sum": [ref, ...]}        {"literal": 0.907, "source": "where the figure is written down"}
Key segments are `/`-separated: a dict key, a list index, `*` (every value: reduce them with "reduce": "median",
"mean" or "std", the sample standard deviation) or `[k=v,...]` (the one list item whose fields match). A cell is
    {"label": "default", "value": ref, "std": ref, "digits": 3, "unit": "x"}   # "default 1.182x ± 0.009"
    {"best_of": [cell, ...], "best": "max"}                                  # the cell with the highest value
    {"text": "2-core Xeon: {0:.0f} s, τ {1:.3f}", "values": [ref, ref]}      # or plain text, "source" marking †
Stdlib only: benchmarks/tests/test_benchmarks_headline.py loads this file alone.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SPEC = ROOT / "benchmarks" / "headline.json"
BENCHMARKS_MD = ROOT / "BENCHMARKS.md"
START = "<!-- --8<-- [start:headline] -->"
END = "<!-- --8<-- [end:headline] -->"
COLUMNS = ("area", "ours", "strongest baseline", "ceiling or anchor", "date", "section")
MAX_ROWS = 12
MAX_CELL = 200
LITERAL_MARK = " †"
WRAP = 110


class HeadlineError(Exception):
    """A results file, key or section the spec names is missing (the message is one line naming it)."""


def _display(path: Path) -> str:
    """A path as the messages name it: relative to the repository when inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


class _Sources:
    """Reads each JSON once; resolves the spec's references against the results root and the repository."""

    def __init__(self, results_root: Path, repo_root: Path):
        self.results_root, self.repo_root = Path(results_root), Path(repo_root)
        self._cache: dict[Path, Any] = {}

    def _load(self, path: Path, key: str) -> Any:
        if path not in self._cache:
            if not path.is_file():
                raise HeadlineError(f"{_display(path)}: no such results file (wanted for key {key!r})")
            try:
                self._cache[path] = json.loads(path.read_text(encoding="utf-8"))
            except ValueError as e:
                raise HeadlineError(f"{_display(path)}: not JSON ({e}; wanted for key {key!r})") from None
        return self._cache[path]

    def _walk(self, node: Any, parts: list[str], where: str, key: str) -> list[Any]:
        if not parts:
            return [node]
        part, rest = parts[0], parts[1:]
        miss = f"{where}: no key {key!r} (at {part!r})"
        if part == "*":
            items = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else None
            if not items:
                raise HeadlineError(miss)
            return [v for item in items for v in self._walk(item, rest, where, key)]
        if part.startswith("[") and part.endswith("]"):
            want = dict(kv.split("=", 1) for kv in part[1:-1].split(","))
            hits = [item for item in node if isinstance(item, dict)
                    and all(str(item.get(k)) == v for k, v in want.items())] if isinstance(node, list) else []
            if len(hits) != 1:
                raise HeadlineError(f"{miss}: {len(hits)} list items match, not 1")
            return self._walk(hits[0], rest, where, key)
        if isinstance(node, dict) and part in node:
            return self._walk(node[part], rest, where, key)
        if isinstance(node, list) and part.lstrip("-").isdigit() and -len(node) <= int(part) < len(node):
            return self._walk(node[int(part)], rest, where, key)
        raise HeadlineError(miss)

    def value(self, ref: dict) -> float:
        """The number `ref` names (HeadlineError, naming the file and key, when it is not there)."""
        if "literal" in ref:
            if "source" not in ref:
                raise HeadlineError(f"headline.json: literal {ref['literal']!r} without its source")
            return float(ref["literal"])
        if "sum" in ref:
            return math.fsum(self.value(r) for r in ref["sum"])
        if "file" in ref:
            path = self.results_root / ref["file"]
        elif "repo_file" in ref:
            path = self.repo_root / ref["repo_file"]
        else:
            raise HeadlineError(f"headline.json: a reference names no file: {ref!r}")
        key, where = ref["key"], _display(path)
        found = self._walk(self._load(path, key), key.split("/"), where, key)
        if "*" not in key.split("/") and len(found) == 1 and isinstance(found[0], list):
            found = found[0]  # a key naming a list, reduced below
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in found):
            raise HeadlineError(f"{where}: key {key!r} is not a number ({json.dumps(found)[:60]})")
        reduce = ref.get("reduce")
        if reduce is None:
            if len(found) != 1:
                raise HeadlineError(f"{where}: key {key!r} names {len(found)} numbers: give a reduce")
            return float(found[0])
        reducers = {"median": statistics.median, "mean": statistics.fmean, "std": statistics.stdev}
        if reduce not in reducers or (reduce == "std" and len(found) < 2):
            raise HeadlineError(f"{where}: key {key!r}: cannot reduce {len(found)} numbers by {reduce!r}")
        return float(reducers[reduce](found))


def _refs(cell: dict) -> list[dict]:
    refs = [r for r in (cell.get("value"), cell.get("std")) if r] + list(cell.get("values", []))
    refs += [r for c in cell.get("best_of", []) for r in _refs(c)]
    return [leaf for r in refs for leaf in ([r] if "sum" not in r else _refs({"values": r["sum"]}))]


def result_files(spec_path: Path = SPEC) -> list[str]:
    """The files under the results root the spec reads (sorted; for copying them elsewhere)."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    cells = [row[c] for row in spec["rows"] for c in ("ours", "baseline", "ceiling")]
    return sorted({r["file"] for cell in cells for r in _refs(cell) if "file" in r})


def _number(x: float, digits: int | None) -> str:
    return f"{x:g}" if digits is None else f"{x:.{digits}f}"


def _cell(cell: dict, src: _Sources) -> str:
    if "best_of" in cell:
        pick = max if cell.get("best", "max") == "max" else min
        return _cell(pick(cell["best_of"], key=lambda c: src.value(c["value"])), src)
    literal = "source" in cell or any("literal" in r for r in _refs(cell))
    if "value" in cell:
        digits = cell.get("digits", 3)
        text = f"{cell['label']} {_number(src.value(cell['value']), digits)}{cell.get('unit', '')}"
        if cell.get("std"):
            std = _number(src.value(cell["std"]), digits)
            if float(std) != 0:  # a spread that rounds to zero is left out
                text += f" ± {std}"
    else:
        text = cell["text"].format(*(src.value(r) for r in cell.get("values", [])))
    return text + (LITERAL_MARK if literal else "")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(markdown: str) -> list[tuple[str, str]]:
    """(heading, anchor) for every heading outside code fences, duplicates numbered as GitHub does."""
    seen: dict[str, int] = {}
    out = []
    for block in re.split(r"^```.*?^```", markdown, flags=re.S | re.M):
        for m in re.finditer(r"^#{1,6} +(.+?) *$", block, re.M):
            slug = _slug(m.group(1))
            n = seen.get(slug, 0)
            seen[slug] = n + 1
            out.append((m.group(1), slug if n == 0 else f"{slug}-{n}"))
    return out


def _section_link(name: str, anchors: list[tuple[str, str]]) -> str:
    hits = [a for h, a in anchors if h.startswith(name)]
    if len(hits) != 1:
        raise HeadlineError(f"BENCHMARKS.md: {len(hits)} sections start with {name!r}, not 1")
    return f"[{name}](#{hits[0]})"


def _short(area: str) -> str:
    return area if len(area) <= 50 else area[:49] + "…"


def _check_command(command: str, repo_root: Path, area: str) -> None:
    for script in re.findall(r"\bbenchmarks/[\w/.-]+\.(?:py|sh)\b", command):
        if not (repo_root / script).is_file():
            raise HeadlineError(f"headline.json: row {_short(area)!r}: its command names {script}, which does not exist")


def _wrap(paragraph: str) -> list[str]:
    words, lines, line = paragraph.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > WRAP:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    return lines + [line] if line else lines


def _row_cells(row: dict, src: _Sources, anchors: list[tuple[str, str]], repo_root: Path) -> list[str]:
    _check_command(row["command"], repo_root, row["area"])
    cells = [f"{row['area']}; {row['machine']}", _cell(row["ours"], src), _cell(row["baseline"], src),
             _cell(row["ceiling"], src), row["date"], _section_link(row["section"], anchors)]
    for name, text in zip(COLUMNS, cells):
        if "|" in text or "\n" in text:
            raise HeadlineError(f"headline.json: row {_short(row['area'])!r}: {name} cell holds '|' or a newline")
        if len(text) > MAX_CELL:
            raise HeadlineError(f"headline.json: row {_short(row['area'])!r}: {name} cell is {len(text)} > {MAX_CELL} characters")
    return cells


def render(results_root: Path = RESULTS, repo_root: Path = ROOT, spec_path: Path = SPEC,
           benchmarks_md: Path = BENCHMARKS_MD) -> str:
    """The headline section's lines between the two markers (exclusive), as one string ending in a newline."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    rows = spec["rows"]
    if len(rows) > MAX_ROWS:
        raise HeadlineError(f"headline.json: {len(rows)} rows > {MAX_ROWS}")
    src = _Sources(results_root, repo_root)
    anchors = _anchors(Path(benchmarks_md).read_text(encoding="utf-8"))
    lines = [""]
    for paragraph in spec["intro"]:
        lines += _wrap(paragraph) + [""]
    lines += ["| " + " | ".join(COLUMNS) + " |", "| " + " | ".join("---" for _ in COLUMNS) + " |"]
    lines += ["| " + " | ".join(_row_cells(row, src, anchors, Path(repo_root))) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _split(text: str, where: str) -> tuple[str, str, str]:
    """(before and including the start marker's line, the section, from the end marker's line on)."""
    start, end = text.find(START + "\n"), text.find("\n" + END)
    if start < 0 or end < 0 or end < start:
        raise HeadlineError(f"{where}: no '{START}' ... '{END}' section")
    head_end = start + len(START) + 1
    return text[:head_end], text[head_end:end + 1], text[end + 1:]


def check(benchmarks_md: Path = BENCHMARKS_MD, results_root: Path = RESULTS, repo_root: Path = ROOT,
          spec_path: Path = SPEC) -> str | None:
    """None when BENCHMARKS.md's headline is the rendering; else one line naming the first differing row."""
    _, current, _ = _split(Path(benchmarks_md).read_text(encoding="utf-8"), _display(Path(benchmarks_md)))
    wanted = render(results_root, repo_root, spec_path, benchmarks_md)
    if current == wanted:
        return None
    have, want = current.split("\n"), wanted.split("\n")
    i = next(i for i in range(max(len(have), len(want)))
             if i >= len(have) or i >= len(want) or have[i] != want[i])
    line = want[i] if i < len(want) and want[i].startswith("| ") else have[i] if i < len(have) else ""
    if line.startswith("| ") and not line.startswith(("| area |", "| --- |")):
        what = f"row {line[2:].split(' | ')[0]!r}"
    else:
        what = f"line {i + 1} of the section (intro or table head)"
    return (f"BENCHMARKS.md's headline differs from the rendering at {what}: "
            f"run python benchmarks/render_headline.py")


def write(benchmarks_md: Path = BENCHMARKS_MD, results_root: Path = RESULTS, repo_root: Path = ROOT,
          spec_path: Path = SPEC) -> bool:
    """Rewrite the section in place (a temporary file beside it, then os.replace); True when it changed."""
    path = Path(benchmarks_md)
    text = path.read_text(encoding="utf-8")
    head, current, tail = _split(text, _display(path))
    wanted = render(results_root, repo_root, spec_path, path)
    if current == wanted:
        return False
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(head + wanted + tail)
        os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check", action="store_true", help="exit 1 when BENCHMARKS.md's headline is not the rendering")
    p.add_argument("--results", type=Path, default=RESULTS, help="the results root (default benchmarks/results)")
    p.add_argument("--spec", type=Path, default=SPEC, help="the hand-kept rows (default benchmarks/headline.json)")
    p.add_argument("--benchmarks", type=Path, default=BENCHMARKS_MD, help="the file to check or rewrite")
    a = p.parse_args(argv)
    try:
        if a.check:
            message = check(a.benchmarks, a.results, ROOT, a.spec)
            if message:
                print(message, file=sys.stderr)
                return 1
            return 0
        print(f"{a.benchmarks}: headline {'rewritten' if write(a.benchmarks, a.results, ROOT, a.spec) else 'unchanged'}")
        return 0
    except HeadlineError as e:
        print(f"render_headline: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
