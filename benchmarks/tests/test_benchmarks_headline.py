"""BENCHMARKS.md's headline table is benchmarks/render_headline.py's rendering of the committed results JSON
(issue 66): it is current, it fits on a screen, and a changed figure in a results file makes --check fail."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from bench_modules import load_benchmark

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def headline():
    yield from load_benchmark("render_headline.py")


def _section_rows(text: str, mod) -> list[list[str]]:
    section = text[text.index(mod.START):text.index(mod.END)]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [line[2:-2].split(" | ") for line in rows[2:]]  # past the head and the --- line


def _results_copy(mod, tmp_path: Path) -> Path:
    results = tmp_path / "results"
    for name in mod.result_files():
        (results / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(mod.RESULTS / name, results / name)
    return results


def test_benchmarks_md_is_the_rendering(headline):
    assert headline.check() is None, headline.check()


def test_the_headline_fits_on_a_screen(headline):
    rows = _section_rows(headline.BENCHMARKS_MD.read_text(encoding="utf-8"), headline)
    assert 0 < len(rows) <= 12
    assert all(len(row) == len(headline.COLUMNS) for row in rows)
    long = [(row[0][:40], len(cell)) for row in rows for cell in row if len(cell) > 200]
    assert not long, long


def test_a_changed_figure_makes_check_fail(headline, tmp_path, capsys):
    results = _results_copy(headline, tmp_path)
    assert headline.check(results_root=results) is None  # the copy renders the same
    data = json.loads((results / "bench_real.json").read_text(encoding="utf-8"))
    data["results"]["lofo"]["default"]["kendall_tau"] = 0.5
    (results / "bench_real.json").write_text(json.dumps(data), encoding="utf-8")
    message = headline.check(results_root=results)
    assert message is not None and "\n" not in message
    assert "'Leave-family-out, layouts" in message
    assert headline.main(["--check", "--results", str(results)]) == 1
    assert "Leave-family-out, layouts" in capsys.readouterr().err

    # rewriting a copy of BENCHMARKS.md puts the new figure in, and only inside the markers
    md = tmp_path / "BENCHMARKS.md"
    shutil.copy(headline.BENCHMARKS_MD, md)
    assert headline.write(md, results) is True
    assert headline.check(md, results) is None
    before, after = headline.BENCHMARKS_MD.read_text(encoding="utf-8"), md.read_text(encoding="utf-8")
    assert "default 0.500" in after
    outside = re.compile(re.escape(headline.START) + ".*?" + re.escape(headline.END), re.S)
    assert outside.sub("", before) == outside.sub("", after)
    assert not list(tmp_path.glob(".BENCHMARKS.md.*"))  # no temporary file left behind


def test_a_missing_file_or_key_is_one_line_naming_it(headline, tmp_path, capsys):
    results = _results_copy(headline, tmp_path)
    data = json.loads((results / "kernels" / "lofo_flags.json").read_text(encoding="utf-8"))
    del data["kernels+flags"]["kendall_tau"]  # the headline's kernel row
    (results / "kernels" / "lofo_flags.json").write_text(json.dumps(data), encoding="utf-8")
    assert headline.main(["--check", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "lofo_flags.json" in err and "'kernels+flags/kendall_tau'" in err

    (results / "layerdag.json").unlink()
    (results / "kernels" / "lofo_flags.json").unlink()
    assert headline.main(["--check", "--results", str(results)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "kernels/lofo_flags.json: no such results file" in err  # the first row reading it


def test_the_readme_gives_the_main_jobs_tau_of_the_headline(headline):
    """README.md's main-job sentence gives the test τ as a range across the machines measured, and that range holds
    every machine's τ the headline row renders (to two decimals)."""
    rows = _section_rows(headline.BENCHMARKS_MD.read_text(encoding="utf-8"), headline)
    row = next(r for r in rows if r[0].startswith("The README's main job"))
    taus = dict(re.findall(r"(2-core \w+): \d+ s, test τ (\d\.\d{3})", " ".join(row[1:3])))
    assert set(taus) == {"2-core Xeon", "2-core EPYC"}, row
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    main_job = " ".join(readme[readme.index("## The main job"):].split("\n## ")[0].split())
    lo, hi = (float(x) for x in re.search(r"test Kendall τ it prints has been (\d\.\d\d)-(\d\.\d\d)", main_job).groups())
    assert all(lo <= round(float(t), 2) <= hi for t in taus.values()), (lo, hi, taus)
