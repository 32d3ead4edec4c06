"""Ship the kernel dataset of a kernel collection inside the package, packed into one file.

    python release/ship_kernel_dataset.py collections/cpu_zoo_kernels_flags_xeon \\
        cpu_zoo_kernels_flags [--overwrite]

SRC is a collection written by `graphcost collect --kernels`; NAME one of `graphcost.datasets.PACKED`. The
kernel dataset (`graphcost.kernels.table.write_kernel_dataset`: one TILE-schema graph per distinct leaf
kernel) is written to a temporary directory, packed (`graphcost.data.io.packed.pack_dataset`) into
``src/graphcost/datasets/NAME/<PACKED[NAME]>`` with a CARD.md (the dataset's counts, then the collection's
own card), and the old copy replaced only with ``--overwrite``, once the new one is complete.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from ship_collection import ROOT, install, staging_for  # the same staging and swap as the other shipped datasets


def card(name: str, src: Path, manifest: dict, packed: Path) -> str:
    """The shipped dataset's CARD.md: what the packed file holds, how to use it, then the collection's card."""
    graphs = manifest["graphs"].values()
    sides = {s: sum(g["split"] == s for g in graphs) for s in ("train", "valid", "test")}
    kinds: dict[str, int] = {}
    for g in graphs:
        kinds[g["kind"]] = kinds.get(g["kind"], 0) + 1
    configs = sum(g["num_configs"] for g in graphs)
    collection_card = (src / "CARD.md").read_text(encoding="utf-8") if (src / "CARD.md").is_file() else ""
    top = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])[:8])
    layout = json.loads((src / "manifest.json").read_text(encoding="utf-8")).get("collection", {}).get("space") == "layout"
    under = "layout configurations (every kernel compiled for them, run under the default flags)" if layout else \
        "flag configurations"
    rows = ("* **Configurations**: every kernel ran under the default flags, so ``config_feat`` (1, 24) is the default "
            "flag vector and ``config_runtime`` (1,) its ns per EXECUTION, the median over the programs that ran it; "
            "what a layout configuration changes is in the kernels themselves (a configuration compiles to its own "
            f"kernels: {len(manifest['graphs']):,} distinct ones). A model learns time per kernel across kernels here."
            if layout else
            f"* **Configurations**: {configs:,} (kernel, flag vector) rows: ``config_feat`` (C, 24) the flag columns of "
            "`graphcost.frontend.programs.flags`, ``config_runtime`` (C,) ns per EXECUTION, the median over the programs "
            "that ran the kernel under those flags (``config_programs``: how many).")
    return "\n".join([
        f"# {name} — every distinct leaf kernel of {manifest['programs']} zoo programs under their {under}, one "
        "TILE-schema graph per kernel (packed)", "",
        "**REAL data: every runtime was measured** (per-kernel times from XLA:CPU's profiler); nothing is simulated.",
        "", "## What it is", "",
        f"* **Graphs**: {len(manifest['graphs']):,} distinct leaf kernels (by the fingerprint of their compiled HLO; "
        f"identical kernels of several programs merged), {sum(g['num_nodes'] for g in graphs):,} nodes in all. "
        f"Kinds: {top}.",
        rows,
        f"* **Split**: train {sides['train']:,}, valid {sides['valid']:,}, test {sides['test']:,}: the split of "
        "the first program that ran the kernel (the collection's family-stratified split by program).",
        f"* **Size**: {packed.stat().st_size / 2**20:.1f} MiB packed (`graphcost.data.io.packed`); unpacked on "
        "first use into ``$GRAPHCOST_CACHE`` (default ``~/.cache/graphcost``).", "",
        "## Use", "", "```",
        f"graphcost train --data-dir {name}      # a tile model on the kernels", "```", "",
        "```python",
        "from graphcost.data.io.packed import shipped_data_dir",
        f"root = shipped_data_dir({name!r})   # unpacked once: train/ valid/ test/ npz files + manifest.json",
        "```", "",
        "Made by `python release/ship_kernel_dataset.py "
        f"{src.resolve().relative_to(ROOT) if src.resolve().is_relative_to(ROOT) else src} {name}`.", "",
        "## The collection it was made from", "",
        "\n".join(("#" + line) if line.startswith("#") else line for line in collection_card.splitlines()), ""])


def main() -> None:
    from graphcost.data.io.packed import pack_dataset
    from graphcost.kernels.table import KernelTable, write_kernel_dataset
    from graphcost.datasets import PACKED
    from graphcost.frontend.programs.flags import default_flag_vector

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("src", type=Path)
    p.add_argument("name")
    p.add_argument("--overwrite", action="store_true")
    args = p.parse_args()
    dest, staging = staging_for(args.name, tuple(PACKED), args.overwrite)
    staging.mkdir(parents=True)
    try:
        table = KernelTable.read(args.src, default_flag_vector())
        with tempfile.TemporaryDirectory() as tmp:
            manifest = write_kernel_dataset(table, Path(tmp) / "ds", default_flags=default_flag_vector())
            packed = pack_dataset(Path(tmp) / "ds", staging / PACKED[args.name])
    except (ValueError, OSError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        sys.exit(str(exc))
    (staging / "CARD.md").write_text(card(args.name, args.src, manifest, packed), encoding="utf-8")
    size_mib = packed.stat().st_size / 2**20
    install(staging, dest)
    print(f"{dest}: {len(manifest['graphs'])} kernels of {manifest['programs']} programs, "
          f"{size_mib:.1f} MiB packed; card {dest / 'CARD.md'}")
    print(json.dumps({s: sum(g["split"] == s for g in manifest["graphs"].values()) for s in ("train", "valid", "test")}))


if __name__ == "__main__":
    main()
