"""mypy over src/graphcost ([tool.mypy] in pyproject.toml), held to a per-file baseline.

The code base predates the type checker, so some files have errors today. `.ci/mypy-baseline.txt`
holds `path:count` per file. This check fails when a file has MORE errors than its baseline, or when
a file missing from the baseline has any, and prints those files' errors; a file with fewer says
"baseline can shrink". It also fails when the total is above TOTAL_MAX (however the files share it).
`python .ci/mypy_check.py --write-baseline` records today's counts.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "mypy-baseline.txt"
TOTAL_MAX = 60  # the most errors the whole tree may have (issue 35); only ever lowered
ERROR = re.compile(r"^(?P<path>[^:\s]+\.pyi?):\d+(?::\d+)?: error: ")


def run_mypy() -> list[str]:
    """mypy's output lines (exit on a crash or a configuration error, which report no file errors)."""
    proc = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary", "--no-pretty"], cwd=ROOT,
                          capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"mypy failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return proc.stdout.splitlines()


def count(lines: list[str]) -> Counter[str]:
    """Errors per file."""
    return Counter(m["path"] for m in map(ERROR.match, lines) if m)


def read_baseline(path: Path = BASELINE) -> dict[str, int]:
    """`path:count` lines ('#' starts a comment)."""
    baseline = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, n = line.rsplit(":", 1)
            baseline[name] = int(n)
    return baseline


def write_baseline(counts: Counter[str], path: Path = BASELINE) -> None:
    header = "# mypy errors per file, written by `python .ci/mypy_check.py --write-baseline`; may only shrink\n"
    path.write_text(header + "".join(f"{name}:{n}\n" for name, n in sorted(counts.items())))


def compare(counts: Counter[str], baseline: dict[str, int]) -> tuple[list[str], list[str]]:
    """(files over their baseline, files under it), each as 'path: now N, baseline M'."""
    over = [f"{p}: {n} errors, baseline {baseline.get(p, 0)}" for p, n in sorted(counts.items())
            if n > baseline.get(p, 0)]
    under = [f"{p}: {counts.get(p, 0)} errors, baseline {m}" for p, m in sorted(baseline.items())
             if counts.get(p, 0) < m]
    return over, under


def main(argv: list[str]) -> int:
    lines = run_mypy()
    counts = count(lines)
    if "--write-baseline" in argv:
        write_baseline(counts)
        print(f"wrote {BASELINE.relative_to(ROOT)}: {sum(counts.values())} errors in {len(counts)} files")
        return 0
    over, under = compare(counts, read_baseline())
    for line in under:
        print(f"baseline can shrink: {line}")
    if over:
        worse = {line.split(":", 1)[0] for line in over}
        print("\n".join(line for line in lines if (m := ERROR.match(line)) and m["path"] in worse))
        print("mypy: more errors than .ci/mypy-baseline.txt allows:\n  " + "\n  ".join(over))
        return 1
    total = sum(counts.values())
    if total > TOTAL_MAX:
        print(f"mypy: {total} errors in all, above the cap of {TOTAL_MAX} (TOTAL_MAX in .ci/mypy_check.py)")
        return 1
    print(f"mypy: {total} errors in {len(counts)} files, none above the baseline, at most {TOTAL_MAX} in all")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
