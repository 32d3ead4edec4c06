"""Every dependency floor in pyproject.toml is the version `make test-min` installs (constraints-min.txt),
and the license is a PEP 639 SPDX string (issue 20 part 1)."""

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~ ;\[]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _floor(requirement: str) -> str:
    match = re.search(r">=\s*([\w.]+)", requirement)
    assert match, f"pyproject.toml: {requirement!r} has no floor (>=)"
    return match.group(1)


def _same(a: str, b: str) -> bool:  # "2.4" == "2.4.0"
    pad = lambda v: [int(x) for x in v.split(".")] + [0] * (4 - len(v.split(".")))  # noqa: E731
    return pad(a) == pad(b)


def test_floors_are_the_pinned_minimum_versions():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    requirements = list(project["project"]["dependencies"]) + list(project["build-system"]["requires"])
    for extra in ("jax", "tensorboard", "tune", "ray", "dev"):
        requirements += project["project"]["optional-dependencies"][extra]
    pins = {}
    for line in (ROOT / "constraints-min.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[_name(name)] = version.strip()
    floors = {_name(r): _floor(r) for r in requirements}
    assert set(floors) == set(pins), "constraints-min.txt must pin exactly the packages pyproject.toml floors"
    for name, floor in floors.items():
        assert _same(floor, pins[name]), f"{name}: floor {floor} in pyproject.toml, {pins[name]} in constraints-min.txt"
    assert project["project"]["license"] == "Apache-2.0"  # PEP 639 (setuptools >= 77)


def test_shipped_data_and_models_fit_the_data_budget():
    """Issue 63: the package ships its datasets and pretrained models inside about 20 MB (the zoo datasets
    packed with LZMA, graphcost.data.io.packed)."""
    root = Path(__file__).resolve().parents[1] / "src" / "graphcost"
    size = sum(p.stat().st_size for d in ("datasets", "pretrained") for p in (root / d).rglob("*") if p.is_file())
    assert size <= 20 * 2**20, f"shipped data and models take {size / 2**20:.1f} MiB, over the 20 MiB budget"
