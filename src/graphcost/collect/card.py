"""The data card of a collection written by `graphcost collect` (+ ``--action repeat``), from its manifest.

``graphcost data card DIR [--title T] [--command CMD] [--notes NOTES.md]`` (`write_card`) writes
``DIR/CARD.md``: what the data is, how it was measured, the REPEATABILITY table (Spearman between
the label and an independent second collection of the same configurations, by family, against the
target median >= 0.9 and >= 0.8 on 90% of graphs), a per-graph table, the environment, wall time and
package size. Everything is computed from ``manifest.json`` and the npz files, never typed in.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TARGET_MEDIAN, TARGET_FLOOR, TARGET_SHARE = 0.9, 0.8, 0.9


def repeatability(graphs: dict) -> tuple[list[dict], dict]:
    """Per-family and overall rows: label-vs-repeat Spearman statistics and flag counts."""
    def row(name: str, entries: list[dict]) -> dict:
        rho = np.array([e["repeat"]["spearman_vs_label"] for e in entries if "repeat" in e], float)
        proc = np.array([e["process_spearman_mean"] for e in entries], float)
        return {"family": name, "graphs": len(entries), "repeated": int(len(rho)),
                "median": float(np.median(rho)) if len(rho) else float("nan"),
                "min": float(rho.min()) if len(rho) else float("nan"),
                "share_ge_floor": float((rho >= TARGET_FLOOR).mean()) if len(rho) else float("nan"),
                "process_median": float(np.nanmedian(proc)) if len(proc) else float("nan"),
                "flagged": sum(bool(e.get("flagged")) for e in entries),
                "met": bool(len(rho) and np.median(rho) >= TARGET_MEDIAN and (rho >= TARGET_FLOOR).mean() >= TARGET_SHARE)}

    families = sorted({e["family"] for e in graphs.values()})
    rows = [row(f, [e for e in graphs.values() if e["family"] == f]) for f in families]
    return rows, row("all", list(graphs.values()))


def sibling_repeat_labels(root: Path, graphs: dict) -> dict[str, tuple[np.ndarray, np.ndarray, str]]:
    """A kernel collection's independent repeat lives beside it (``ROOT_repeat``: `graphcost collect --kernels`
    measures new graphs only, so its repeat is a second collection of some of the programs with the same
    parameters). Per program in both, measured at the same configurations and without an ``--action repeat`` entry of
    its own: (its label, the repeat's label, the repeat's date)."""
    rep = root.parent / f"{root.name}_repeat"
    if not (rep / "manifest.json").is_file():
        return {}
    other = json.loads((rep / "manifest.json").read_text(encoding="utf-8")).get("graphs", {})
    out = {}
    for name, entry in graphs.items():
        second = other.get(name)
        if "repeat" in entry or not isinstance(second, dict) or "file" not in second:
            continue
        a, b = root / str(entry.get("file", "")), rep / str(second["file"])
        if not (a.is_file() and b.is_file()):
            continue
        with np.load(a, allow_pickle=False) as za, np.load(b, allow_pickle=False) as zb:
            keys = [k for k in ("config_feat", "node_config_feat") if k in za.files]
            if not keys or any(k not in zb.files or not np.array_equal(za[k], zb[k]) for k in keys):
                continue  # not the same configurations
            out[name] = (za["config_runtime"].astype(float), zb["config_runtime"].astype(float),
                         str(second.get("date_utc", "")))
    return out


def sibling_repeat(root: Path, graphs: dict) -> dict[str, dict]:
    """`sibling_repeat_labels` as ``--action repeat`` entries: the Spearman correlation of the two labels
    (``spearman_vs_label``), the repeat's date and collection."""
    from graphcost.measure.interleaved import spearman

    rep = f"{root.name}_repeat"
    return {name: {"spearman_vs_label": float(spearman(a, b)), "date_utc": date, "collection": rep}
            for name, (a, b, date) in sibling_repeat_labels(root, graphs).items()}


def mode_agreement(root: Path, graphs: dict, statistic: str) -> dict[str, tuple[float, int]]:
    """Layout collections: per search mode, the median over repeated graphs of the Spearman
    correlation between the label and the repeat's label on that mode's configurations only, and
    the number of graphs (`config_search_mode`; modes with fewer than 4 configurations skipped)."""
    from graphcost.measure.cross_process import combine
    from graphcost.measure.interleaved import spearman

    rho: dict[str, list[float]] = {}
    for entry in graphs.values():
        path = root / str(entry.get("file", ""))
        if "repeat" not in entry or not path.is_file():
            continue
        with np.load(path, allow_pickle=False) as z:
            if "config_search_mode" not in z.files or "config_runtime_repeat_samples" not in z.files:
                continue
            modes, label = z["config_search_mode"].astype(str), z["config_runtime"]
            executables = z["config_executable_ids"] if "config_executable_ids" in z.files else None
            repeat = combine(z["config_runtime_repeat_samples"], statistic, executables)
        for mode in sorted(set(modes)):
            sel = modes == mode
            if sel.sum() >= 4:
                rho.setdefault(mode, []).append(spearman(label[sel], repeat[sel]))
    return {m: (float(np.nanmedian(v)), len(v)) for m, v in rho.items()}


def _f(x: float, nd: int = 3) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.{nd}f}"


def render(root: Path, title: str, command: str, notes: str = "", name: str | None = None) -> str:
    manifest = json.loads((root / "manifest.json").read_text(encoding="utf-8"))
    graphs, col, env = manifest["graphs"], manifest["collection"], manifest.get("environment", {})
    layout = col["space"] == "layout"
    fams = sorted({e["family"] for e in graphs.values()})
    train_steps = sum(e["hparams"].get("mode") == "train" for e in graphs.values())
    size = sum(p.stat().st_size for p in root.rglob("*.npz"))
    nodes = [e["num_nodes"] for e in graphs.values()]
    splits = {s: sum(e["split"] == s for e in graphs.values()) for s in ("train", "valid", "test")}
    graphs = {**graphs, **{n: {**graphs[n], "repeat": r} for n, r in sibling_repeat(root, graphs).items()}}
    rows, overall = repeatability(graphs)
    proc = [p for e in graphs.values() for p in e.get("processes", [])]
    loads = [p["load_start"][0] for p in proc if p.get("load_start")]
    waited = [p.get("waited_s", 0.0) for p in proc]
    per_proc_load = [p["compile_or_load_s"] for p in proc]
    compile_s = [e.get("compile_s", 0.0) for e in graphs.values()]
    cp = env.get("cross_process", {})
    dates = sorted(e["date_utc"] for e in graphs.values() if "date_utc" in e)
    rdates = sorted(e["repeat"]["date_utc"] for e in graphs.values() if "repeat" in e)
    with_exe = [e for e in graphs.values() if "num_executables" in e]
    n_exe, n_with = len(with_exe), len(graphs)
    lines = [
        f"# {name or root.name} — {title}", "",
        "**REAL data: every runtime was measured** on the machine described below; nothing is simulated.", "",
        "## What it is", "",
        f"* **Graphs**: {len(graphs)} JAX/Flax programs of the graphcost zoo (`graphcost.frontend.programs.zoo`), "
        f"{len(fams)} families ({', '.join(fams)}), {train_steps} of them training steps (forward + backward + "
        f"optimizer update), the others forward passes; {min(nodes)}–{max(nodes)} nodes. Each graph is the "
        "program's unoptimized HLO module featurized with the TpuGraphs 140 node features.",
        (f"* **Configurations**: {col['configs']} per graph in the layout space (`graphcost.frontend.programs.layouts`), "
         "search mode `both`: half from mode `default` (configuration 0 is the compiler default; the others move "
         "1–3 tensors off it) and half from mode `random` with stratified counts (the number of tensors moved "
         "cycles through up to 8 levels, so several configurations move the same number of tensors). "
         "`config_search_mode` says which mode each came from."
         if layout else
         f"* **Configurations**: {col['configs']} per graph in the XLA CPU compiler-flag space "
         "(`graphcost.frontend.programs.flags`, tile schema; configuration 0 is the default flags)"
         + (f", varying {len(col['flag_columns'])} options ({', '.join(col['flag_columns'])}): "
            + ("alternately a random share rho ~ U(0, 1) of them changed and 1-3 of them changed, as `graphcost "
               "tune` spreads its candidates (search mode `tuner`; `config_search_mode`: random | default)."
               if col.get("mode") == "tuner" else
               "alternately a uniformly random setting of all of them and the default with 1-3 options changed.")
            if col.get("flag_columns") else ", varying the first 7 options.")),
        "* **Keys**: the official TpuGraphs keys (the loaders read only those), plus `config_runtime_samples` "
        "(K, P) int64 ns — each measuring process's runtime — and `config_runtime_repeat_samples` (K, P): the "
        "independent second collection" + (", and `config_search_mode`." if layout or col.get("mode") == "tuner" else ".")
        + (" `config_compiled_stats` (K, 7): what the compiler did to each configuration (data movement of its "
           "optimized module)." if manifest.get("compiled_stats") else ""),
        *([f"* **Executables**: `config_executable_ids` (K,): the first configuration whose compiled code is the "
           f"same (`graphcost.frontend.programs.executable_fingerprint`); {n_exe} of {n_with} graphs have it, with "
           f"a median {np.median([e['num_executables'] for e in with_exe]):.0f} distinct executables of "
           f"{col['configs']} configurations (min {min(e['num_executables'] for e in with_exe)}). Configurations "
           "of one executable share one label from their samples together, and every statistic below counts "
           "each executable once (`cross_process.pool_executables`)."] if with_exe else []),
        (f"* **Label** `config_runtime` (int64 ns): the level-normalised median over the {col['processes']} "
         "processes of the first collection: each process's runtimes divided by its own median runtime, the "
         "median over processes, times the median of the processes' medians (`cross_process.combine`, "
         "`level-median`; one process that ran slower throughout does not reorder close configurations)."
         if col.get("label") == "level-median" else
         f"* **Label** `config_runtime` (int64 ns): the median over the {col['processes']} processes of the first "
         "collection."),
        (f"* **Split** by family (whole families per side: valid and test hold families the training side never "
         f"saw): graphs train {splits['train']}, valid {splits['valid']}, test {splits['test']}; families "
         + ", ".join(f"{s} {sum(1 for f in fams if all(e['split'] == s for e in graphs.values() if e['family'] == f))}"
                     for s in ("train", "valid", "test")) + "."
         if manifest.get("split", {}).get("by") == "family" else
         f"* **Split** by graph, stratified by family: train {splits['train']}, valid {splits['valid']}, "
         f"test {splits['test']}."),
        f"* **Size**: {size / 2**20:.1f} MiB of compressed npz.", "",
        "## How it was measured", "",
        f"The cross-process protocol (`graphcost.measure.cross_process`): the driver compiles a graph's "
        f"{col['configs']} configurations into JAX's persistent compilation cache; then {col['processes']} fresh "
        f"processes, one after another, each pinned to core {cp.get('measure_core', '?')} with XLA single-threaded "
        f"(`XLA_FLAGS={col.get('xla_flags') or '(none)'}`), load the executables and time all configurations "
        f"interleaved: {col['rounds']} rounds in a fresh random order, {col['calls']} calls per visit (minimum "
        f"kept), {col['warmup']} warm-up calls, median over rounds. Before each process the collector waited "
        f"(at most {cp.get('max_wait_s', '?')} s) for a 1-minute load average <= {cp.get('max_load', '?')}. "
        "The second collection (`--action repeat`; for a kernel collection, the collection beside it named `_repeat`, "
        "with the same parameters) measured the same configurations in new processes, later.", "",
        "```", command, "```", "",
        "## Repeatability: two independent collections", "",
        f"Spearman rank correlation, per graph, between the label and the repeat collection's label (the same statistic). Target: "
        f"median >= {TARGET_MEDIAN} and >= {TARGET_FLOOR} on at least {TARGET_SHARE:.0%} of graphs. "
        "`within` = mean pairwise Spearman between the processes of the first collection; `flagged` = graphs "
        "whose between-process noise is comparable to their runtime spread (noise ratio > 0.5, see "
        "`graphcost.measure.cross_process`).", "",
        "| family | graphs | median ρ | min ρ | share ρ >= 0.8 | within | flagged | target |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in [*rows, overall]:
        name = f"**{r['family']}**" if r["family"] == "all" else r["family"]
        lines.append(f"| {name} | {r['graphs']} | {_f(r['median'])} | {_f(r['min'])} | {_f(r['share_ge_floor'], 2)} | "
                     f"{_f(r['process_median'])} | {r['flagged']} | {'met' if r['met'] else '**not met**'} |")
    missed = [r["family"] for r in rows if not r["met"]]
    by_mode = mode_agreement(root, graphs, col.get("label", "median")) if layout else {}
    if by_mode:
        lines += ["", "By search mode, on the repeated graphs (Spearman within each mode's configurations): " +
                  "; ".join(f"`{m}` median ρ {_f(r)} ({n} graphs)" for m, (r, n) in sorted(by_mode.items())) +
                  ". Mode `default` moves 1-3 tensors off the compiler's layouts; where its ρ is far below "
                  "`random`'s, those configurations differ by less than this machine's process-to-process noise."]
    lines += ["", ("Every family meets the target." if not missed else
                   f"**Not met** for: {', '.join(missed)}; their graphs are marked in the table below (ρ column).")
              if overall["repeated"] == len(graphs) else
              f"Only {overall['repeated']} of {len(graphs)} graphs have a repeat collection so far.", ""]
    lines += ["## Per graph", "",
              "| graph | split | nodes | " + ("configurable | " if layout else "") +
              "runtime min–max (µs) | spread | noise ratio | within ρ | repeat ρ | flagged | wall s |",
              "| --- | --- | ---: | " + ("---: | " if layout else "") + "---: | ---: | ---: | ---: | ---: | --- | ---: |"]
    for name in sorted(graphs):
        e = graphs[name]
        rep = e.get("repeat", {}).get("spearman_vs_label", float("nan"))
        mark = "" if not np.isfinite(rep) or rep >= TARGET_FLOOR else " ⚠"
        lines.append(f"| {name} | {e['split']} | {e['num_nodes']} | " +
                     (f"{e['num_configurable']} | " if layout else "") +
                     f"{e['runtime_ns_min'] / 1e3:.0f}–{e['runtime_ns_max'] / 1e3:.0f} | {e['spread']:.2f} | "
                     f"{_f(e['noise_ratio'])} | {_f(e['process_spearman_mean'])} | {_f(rep)}{mark} | "
                     f"{'yes' if e.get('flagged') else ''} | {e.get('total_s', 0):.0f} |")
    if col.get("kernels"):
        from graphcost.kernels.card import kernel_card_lines

        repeat = root.parent / f"{root.name}_repeat"
        lines += ["", *kernel_card_lines(root, repeat if repeat.is_dir() else None)]
    versions = env.get("versions", {})
    host = env.get("host", {})
    lines += ["", "## Environment and cost", "",
              f"* CPU `{host.get('cpu_model', '?')}`, {host.get('cpu_count', '?')} cores, {host.get('system', '?')}; "
              + ", ".join(f"{k} {v}" for k, v in versions.items()),
              f"* first collection {dates[0] if dates else '?'} – {dates[-1] if dates else '?'}; repeat "
              f"{rdates[0] if rdates else '—'} – {rdates[-1] if rdates else '—'} (UTC)",
              f"* 1-minute load average when a measuring process started: median {_f(float(np.median(loads)), 2)}, "
              f"max {_f(float(max(loads)), 2)}; waits for a quiet machine: {sum(w > 0 for w in waited)} of "
              f"{len(proc)} processes, {sum(waited):.0f} s in all" if loads else "* load: not recorded",
              f"* wall time of the first collection: {sum(e.get('total_s', 0) for e in graphs.values()) / 60:.0f} min "
              f"({np.median([e.get('total_s', 0) for e in graphs.values()]):.0f} s median per graph); the driver's "
              f"compile (2 threads) took a median {np.median(compile_s):.1f} s per graph, and each measuring process "
              f"then built and loaded all executables from the cache in a median {np.median(per_proc_load):.1f} s",
              ""]
    if notes:
        lines += [notes.rstrip(), ""]
    return "\n".join(lines)


def write_card(root: str | Path, title: str = "a REAL dataset measured on this CPU", command: str = "(not recorded)",
               notes: str | Path | None = None, name: str | None = None) -> Path:
    """Write ``root/CARD.md`` (atomically) from the collection's manifest and npz files; its path.

    Args:
        root: a collection written by `graphcost collect`.
        title: the card's title.
        command: the command that collected it, quoted in the card.
        notes: a markdown file appended as the card's last section.
        name: the dataset's name in the heading (default: `root`'s directory name).

    Raises:
        ValueError: the collection cannot make a card (no or a damaged manifest, a missing key),
            naming `root` and the problem.
    """
    from graphcost.guards.atomic import atomic_write_text

    root = Path(root)
    try:
        text = Path(notes).read_text(encoding="utf-8") if notes else ""
        card = render(root, title, command, text, name)
    except (OSError, ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
        detail = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
        raise ValueError(f"{root}: cannot write a card from this collection: {detail}") from None
    atomic_write_text(root / "CARD.md", card)
    return root / "CARD.md"
