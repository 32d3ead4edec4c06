"""A tiny flag collection on disk, for the tests of laying several collections out as one (`graphcost.collect.merge`)
and of the benchmarks that read them that way."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def tiny_flag_collection(root: Path, graphs: dict[str, tuple[str, str]], columns: list[str]) -> Path:
    """A tiny flag collection: name -> (family, split); one empty-ish npz per graph."""
    entries = {}
    for name, (family, split) in graphs.items():
        (root / split).mkdir(parents=True, exist_ok=True)
        np.savez(root / split / f"{name}.npz", config_runtime=np.arange(3))
        entries[name] = {"family": family, "split": split, "file": f"{split}/{name}.npz"}
    (root / "manifest.json").write_text(json.dumps({"collection": {"space": "flags", "flag_columns": columns},
                                                    "graphs": entries}))
    return root
