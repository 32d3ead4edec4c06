"""Kernel-level cost models at PROGRAM level, leave-family-out, on a kernel collection (issue 63).

    python benchmarks/models/bench_kernels.py --data collections/cpu_zoo_kernels_flags_xeon \\
        --peaks collections/cpu_zoo_kernels_flags_xeon/peaks.json --folds 5 --seeds 3 \\
        --out benchmarks/results/kernels/lofo_flags.json [--into benchmarks/results/bench_real.json]

The families of the collection are held out in `--folds` groups (bench_real's `family_folds`: about
equal program counts, every family held out once). In each fold, on the TRAINING families only:

* ``kernels``: `KernelTrees` (LightGBM on kernel rows: opcode histogram, root node features, log
  analytical cost, flags) fitted on the leaf kernels of the training programs, early-stopped on the
  kernels of a held-back sixth of the training families; the program's cost is the sum rule
  (`SumRule`, fitted on the training programs' configurations) over the configuration's compiled
  kernels, with executions read off the module (loop trip counts; the profiled count where the
  module does not say);
* ``kernels+flags``: w · z(log kernel cost) + (1 − w) · z(flag trees), standardised within each program, the
  weight w of `BLEND_WEIGHTS` chosen per fold on the held-back validation families (both models fitted
  without them);
* ``kernels+copies`` (collections whose graphs carry ``config_compiled_stats``, i.e. the layout space):
  w · z(log kernel cost) + (1 − w) · z(bytes the compiler copies), w chosen the same way; ``copies``: the
  copied bytes alone (copy + transpose bytes of the optimized module, nothing learned);
* ``roofline``: the same sum over ``max(flops / F, bytes / B)`` with this machine's peaks (nothing
  learned but the sum rule);
* ``kernels_measured``: the sum rule over the MEASURED kernel times (not a model: what a perfect
  kernel model could reach through the sum; its gap to the label is what the sum misses);
* ``lightgbm``: program-level LightGBM on the 24 flag columns, target the log label standardised
  within each program (the trees of `graphcost train` in spirit);
* ``count``: the number of flags changed from the default (fewer = faster);
* ``ceiling``: not a model, and only where the collection has an independent repeat beside it (``DATA_repeat``):
  per repeated program, Kendall's τ between the two collections' labels (the noise ceiling), with the models'
  figures on the same programs beside it;
* ``process split``: not a model: per program, Kendall's τ between ONE measuring process's runtimes
  and the level-median of the others (mean over the choice of the one); the labels' own noise, a
  LOWER bound of the noise ceiling of a label that combines all of them (an independent repeat of
  the collection gives the ceiling itself).

Rows: the mean over the held-out programs of Kendall's τ between a model's costs and the labels of
the program's configurations, then the mean ± std over seeds. At kernel level, over the held-out
families' leaf kernels: MAPE of the time per execution and Kendall's τ across kernels (a sample of
at most 20,000). JSON in the shape of bench_real.json's rows (``kendall_tau``, ``kendall_tau_std``,
``seeds``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path[:0] = [str(ROOT / "benchmarks" / group) for group in ("models", "tune")]  # bench_real, bench_tune, tune_suite

from bench_real import family_groups  # noqa: E402

from graphcost.frontend.programs.flags import default_flag_vector  # noqa: E402
from graphcost.kernels.fit import executions, fit_rule, per_program  # noqa: E402
from graphcost.kernels.table import KernelTable  # noqa: E402
from graphcost.kernels.trees import (FlagTrees, KernelTrees, Roofline, SumRule, blend_scores,  # noqa: E402
                                     kernel_graph_features, kernel_rows)
from graphcost.metrics import kendall_tau  # noqa: E402


def taus(sums: dict, rule: SumRule, table: KernelTable) -> dict[str, float]:
    return {p: kendall_tau(rule.predict(*s), table.programs[p]["label"]) for p, s in sums.items()}


def flag_trees(table: KernelTable, train: list[str], test: list[str], seed: int) -> dict[str, np.ndarray]:
    """`FlagTrees` (program-level LightGBM on the flag columns) fitted on `train`: its scores of each `test` program's configurations."""
    trees = FlagTrees.fit([table.programs[p]["config_feat"] for p in train], [table.programs[p]["label"] for p in train],
                          seed=seed)
    return {p: trees.predict(table.programs[p]["config_feat"]) for p in test}


BLEND_WEIGHTS = (0.0, 0.25, 0.5, 0.75, 1.0)  # the kernel cost's share in ``kernels+flags``


def blend(kernel_cost: dict[str, np.ndarray], flag_score: dict[str, np.ndarray], w: float) -> dict[str, np.ndarray]:
    """`blend_scores` of each program: w · z(log kernel cost) + (1 − w) · z(flag-tree score)."""
    return {p: blend_scores(kernel_cost[p], flag_score[p], w) for p in kernel_cost}


def copied_bytes(table: KernelTable, names: list[str]) -> dict[str, np.ndarray]:
    """Per program with compiled statistics: (K,) bytes of the copies and transposes of each configuration's
    optimized module (`graphcost.frontend.hlo.compiled_stats` copy_bytes + transpose_bytes)."""
    return {p: table.programs[p]["compiled"][:, 0] + table.programs[p]["compiled"][:, 3] for p in names
            if table.programs[p].get("compiled") is not None}


def chosen_weight(kern: dict[str, np.ndarray], partner: dict[str, np.ndarray], table: KernelTable
                  ) -> tuple[float, dict[float, float]]:
    """The `BLEND_WEIGHTS` weight of the best mean τ of `blend(kern, partner, w)` over the programs of `partner`
    (validation programs), and the τ of every weight."""
    taus_by_w = {w: float(np.nanmean(list(label_taus(blend({p: kern[p] for p in partner}, partner, w),
                                                     table).values()))) for w in BLEND_WEIGHTS}
    return max(BLEND_WEIGHTS, key=lambda w: np.nan_to_num(taus_by_w[w], nan=-np.inf)), taus_by_w


def label_taus(scores: dict[str, np.ndarray], table: KernelTable) -> dict[str, float]:
    return {p: kendall_tau(v, table.programs[p]["label"]) for p, v in scores.items()}


def changed_count(table: KernelTable, test: list[str]) -> dict[str, float]:
    out = {}
    for p in test:
        feat = table.programs[p]["config_feat"]
        out[p] = kendall_tau((feat != feat[0]).sum(axis=1).astype(float), table.programs[p]["label"])
    return out


def process_split(table: KernelTable, names: list[str]) -> dict[str, float]:
    out = {}
    for p in names:
        s = table.programs[p]["samples"]
        if s is None or s.shape[1] < 2:
            continue
        levels = np.median(s, axis=0)
        norm = s / levels
        out[p] = float(np.nanmean([kendall_tau(norm[:, i], np.median(np.delete(norm, i, axis=1), axis=1))
                                   for i in range(s.shape[1])]))
    return out


def repeat_ceiling(root: Path) -> dict[str, float]:
    """The noise ceiling, where the collection has an independent repeat beside it (``ROOT_repeat``): per repeated
    program, Kendall's τ between the two collections' labels (`graphcost.collect.card.sibling_repeat_labels`)."""
    from graphcost.collect.card import sibling_repeat_labels

    graphs = json.loads((root / "manifest.json").read_text(encoding="utf-8"))["graphs"]
    return {p: kendall_tau(a, b) for p, (a, b, _) in sibling_repeat_labels(root, graphs).items()}


def run(args) -> dict:
    table = KernelTable.read(args.data, default_flag_vector())
    peaks = json.loads(Path(args.peaks).read_text()) if args.peaks else None
    exec_read = table.executions_read
    n = executions(table, exec_read)
    graph_feat = np.stack([kernel_graph_features(f, o, table.flops[u], table.transcendentals[u], table.bytes[u])
                           for u, (f, o, _) in enumerate(table.graphs)])
    rows_all = kernel_rows(graph_feat, table.kernel, table.flags)
    if args.kind_features:  # a candidate design: the kernel's kind (fusion:kLoop, fusion:kCustom, dot, ...) one-hot
        kinds = sorted(set(table.kind.tolist()))
        onehot = (table.kind[:, None] == np.asarray(kinds)[None, :]).astype(np.float32)  # (U, kinds)
        rows_all = np.concatenate([rows_all, onehot[table.kernel]], axis=1)
    measured_exec = table.per_execution_ns * 1e-9  # seconds per execution, measured
    programs = sorted(table.programs)
    fam_of = {p: table.programs[p]["family"] for p in programs}
    counts: dict[str, int] = {}
    for p in programs:
        counts[fam_of[p]] = counts.get(fam_of[p], 0) + 1
    groups = family_groups(counts, args.folds)
    print(f"{len(programs)} programs, {len(counts)} families, {len(table.fingerprint)} distinct kernels, "
          f"{int(table.leaf.sum())} leaf occurrences; {len(groups)} folds", flush=True)
    results: dict[str, list[dict[str, float]]] = {m: [] for m in ("kernels", "kernels+flags", "kernels+copies",
                                                                  "copies", "roofline", "kernels_measured",
                                                                  "lightgbm", "count", "process split")}
    blend_weights: list[float] = []
    validation: list[dict[float, float]] = []  # per seed and fold: mean τ on the validation families per blend weight
    copies_weights: list[float] = []
    validation_copies: list[dict[float, float]] = []  # the same for kernels+copies
    kernel_level: list[dict] = []
    for seed in range(args.seeds):
        per_model: dict[str, dict[str, float]] = {m: {} for m in results}
        rng = np.random.default_rng(seed)
        level = {"abs_pct_errors": [], "tau": []}
        for g, held in enumerate(groups):
            t0 = time.perf_counter()
            test = [p for p in programs if fam_of[p] in held]
            train_fams = sorted({fam_of[p] for p in programs} - set(held))
            valid_fams = set(rng.choice(train_fams, max(1, len(train_fams) // 6), replace=False).tolist())
            train = [p for p in programs if fam_of[p] in train_fams]
            fit_rows = table.rows_of([p for p in train if fam_of[p] not in valid_fams]) & table.leaf & (table.count > 0)
            val_rows = table.rows_of([p for p in train if fam_of[p] in valid_fams]) & table.leaf & (table.count > 0)
            fit_idx = np.flatnonzero(fit_rows)
            if len(fit_idx) > args.max_rows:
                fit_idx = np.sort(rng.choice(fit_idx, args.max_rows, replace=False))
            trees = KernelTrees.fit(rows_all[fit_idx], measured_exec[fit_idx], seed=seed, rounds=args.rounds,
                                    valid=(rows_all[val_rows], measured_exec[val_rows]), threads=args.threads)
            pred_exec = trees.predict(rows_all)
            for name, per_exec in (("kernels", pred_exec), ("kernels_measured", measured_exec)):
                rule = fit_rule(per_program(table, train, per_exec, n), table)
                per_model[name].update(taus(per_program(table, test, per_exec, n), rule, table))
                if name == "kernels":
                    kernel_rule = rule
            if peaks:
                roof = Roofline(peaks["peak_flops"], peaks["peak_bytes_per_s"]).predict(table.flops[table.kernel],
                                                                                       table.bytes[table.kernel])
                rule = fit_rule(per_program(table, train, roof, n), table)
                per_model["roofline"].update(taus(per_program(table, test, roof, n), rule, table))
            flag_test = flag_trees(table, train, test, seed)
            per_model["lightgbm"].update(label_taus(flag_test, table))
            # kernels+flags: the blend weight chosen on the validation families (kernel trees and flag trees
            # fitted without them), then applied to the held-out families with the flag trees of all training ones
            valid = [p for p in train if fam_of[p] in valid_fams]
            fit_progs = [p for p in train if fam_of[p] not in valid_fams]
            rule_fit = fit_rule(per_program(table, fit_progs, pred_exec, n), table)
            kern_valid = {p: rule_fit.predict(*s) for p, s in per_program(table, valid, pred_exec, n).items()}
            flag_valid = flag_trees(table, fit_progs, valid, seed)
            valid_taus = {w: float(np.nanmean(list(label_taus(blend(kern_valid, flag_valid, w), table).values())))
                          for w in BLEND_WEIGHTS}
            w = max(BLEND_WEIGHTS, key=lambda w: np.nan_to_num(valid_taus[w], nan=-np.inf))  # NaN: no ranking
            validation.append(valid_taus)
            kern_test = {p: kernel_rule.predict(*s) for p, s in per_program(table, test, pred_exec, n).items()}
            per_model["kernels+flags"].update(label_taus(blend(kern_test, flag_test, w), table))
            blend_weights.append(w)
            copies_valid, copies_test = copied_bytes(table, valid), copied_bytes(table, test)
            if copies_valid and copies_test:  # kernels+copies: the weight chosen on the validation families too
                wc, by_w = chosen_weight(kern_valid, copies_valid, table)
                validation_copies.append(by_w)
                copies_weights.append(wc)
                per_model["kernels+copies"].update(label_taus(blend({p: kern_test[p] for p in copies_test},
                                                                    copies_test, wc), table))
                per_model["copies"].update(label_taus(copies_test, table))
            per_model["count"].update(changed_count(table, test))
            per_model["process split"].update(process_split(table, test))
            held_rows = np.flatnonzero(table.rows_of(test) & table.leaf & (table.count > 0))
            err = np.abs(pred_exec[held_rows] / measured_exec[held_rows] - 1.0)
            level["abs_pct_errors"].append(err)
            sample = rng.choice(held_rows, min(len(held_rows), 20000), replace=False)
            level["tau"].append(kendall_tau(pred_exec[sample], measured_exec[sample]))
            print(f"  seed {seed} fold {g + 1}/{len(groups)} ({', '.join(held)}): {len(test)} programs, "
                  f"{trees.rounds} rounds, kernels {np.nanmean([per_model['kernels'][p] for p in test]):.3f} "
                  f"lightgbm {np.nanmean([per_model['lightgbm'][p] for p in test]):.3f} "
                  f"({time.perf_counter() - t0:.0f} s)", flush=True)
        for m in results:
            results[m].append(per_model[m])
        kernel_level.append({"mape": float(np.median(np.concatenate(level["abs_pct_errors"]))),
                             "mean_ape": float(np.mean(np.concatenate(level["abs_pct_errors"]))),
                             "kendall_tau": float(np.nanmean(level["tau"]))})
    out: dict = {"programs": len(programs), "families": len(counts), "folds": [list(g) for g in groups],
                 "distinct_kernels": int(len(table.fingerprint)), "data": str(args.data)}
    per_program_tau: dict[str, dict[str, float]] = {}  # model -> program -> τ (mean over seeds)
    for m, seeds in results.items():
        if not seeds or not seeds[0]:
            continue
        means = [float(np.nanmean(list(s.values()))) for s in seeds]
        fams: dict[str, list[float]] = {}
        for p in seeds[0]:
            per_program_tau.setdefault(m, {})[p] = float(np.mean([s[p] for s in seeds]))
            fams.setdefault(fam_of[p], []).append(per_program_tau[m][p])
        out[m] = {"kendall_tau": float(np.mean(means)), "kendall_tau_std": float(np.std(means)), "seeds": len(seeds),
                  "programs": len(seeds[0]),
                  "by_family": {f: round(float(np.nanmean(v)), 4) if np.isfinite(v).any() else None
                                for f, v in sorted(fams.items())}}
    if blend_weights:
        out["kernels+flags"]["blend_weights"] = blend_weights  # per seed and fold, chosen on validation families
        # design choices are compared here, never on the held-out families: weight 1 = the kernel sum alone
        out["validation"] = {f"w={w:g}": float(np.mean([v[w] for v in validation])) for w in BLEND_WEIGHTS}
    if copies_weights:
        out["kernels+copies"]["blend_weights"] = copies_weights
        out["validation_copies"] = {f"w={w:g}": float(np.mean([v[w] for v in validation_copies]))
                                    for w in BLEND_WEIGHTS}
    out["kind_features"] = bool(args.kind_features)
    out["kernel_level"] = {"median_ape": float(np.mean([k["mape"] for k in kernel_level])),
                           "mean_ape": float(np.mean([k["mean_ape"] for k in kernel_level])),
                           "kendall_tau": float(np.mean([k["kendall_tau"] for k in kernel_level])),
                           "seeds": len(kernel_level)}
    ceiling = repeat_ceiling(Path(args.data))
    if ceiling:  # not a model: the labels' agreement with an independent repeat, on the repeated programs
        values = [v for v in ceiling.values() if np.isfinite(v)]
        out["ceiling"] = {"kendall_tau": float(np.mean(values)), "kendall_tau_std": 0.0, "seeds": 1,
                          "programs": len(values), "repeat": f"{Path(args.data).name}_repeat"}
        # the same programs' figures of the models, for a like-for-like reading of the gap
        out["ceiling"]["models_on_these_programs"] = {
            m: round(float(np.nanmean([per_program_tau[m][p] for p in ceiling if p in per_program_tau[m]])), 4)
            for m in ("kernels", "kernels+copies", "copies", "roofline") if m in per_program_tau}
    return out


# bench_real row -> (this run's row, the model's name). The kernels row is the blend whose weight is chosen on
# validation families (weight 1: the kernel sum alone); the kernel sum alone is among the same-data rows.
ROWS_INTO = {"kernels": ("kernels+flags", "kernel trees (LightGBM on kernel rows) + sum rule, blended with flag trees "
                         "by a weight chosen on validation families"),
             "roofline": ("roofline", "roofline + sum rule")}
COPIES_ROW = ("kernels+copies", "kernel trees (LightGBM on kernel rows) + sum rule, blended with the bytes the "
                                "compiler copies by a weight chosen on validation families")


def kernels_row(out: dict) -> tuple[str, str]:
    """The kernel-based row that goes into bench_real.json: the blend whose best weight scored higher on the
    VALIDATION families (``kernels+copies`` where the collection has compiled statistics, else ``kernels+flags``)."""
    flags = max((v for v in out.get("validation", {}).values() if np.isfinite(v)), default=-np.inf)  # w=0 may be NaN
    copies = max((v for v in out.get("validation_copies", {}).values() if np.isfinite(v)), default=-np.inf)
    return COPIES_ROW if "kernels+copies" in out and copies > flags else ROWS_INTO["kernels"]


def put_into(out: dict, results_path: Path, protocol: str, source: Path) -> None:
    """Put this run's ``kernels`` and ``roofline`` rows into bench_real.json's `protocol` (``lofo`` or
    ``lofo_flags``), in its row shape, each naming the model, the kernel collection it was measured on and the
    same-data baselines (the protocol's other rows are whole-program models on another collection: not
    comparable digit for digit). bench_real keeps rows with a ``source`` when it re-runs the protocol."""
    from graphcost.guards.atomic import atomic_write_json

    report = json.loads(results_path.read_text(encoding="utf-8"))
    target = report.setdefault("results", {}).setdefault(protocol, {})
    shown = str(source.resolve().relative_to(ROOT)) if source.resolve().is_relative_to(ROOT) else str(source)
    same = {m: round(out[m]["kendall_tau"], 4) for m in ("kernels", "kernels+flags", "copies", "lightgbm", "count",
                                                         "kernels_measured", "process split", "ceiling")
            if m in out and np.isfinite(out[m]["kendall_tau"])}
    for row, (mine, model) in {**ROWS_INTO, "kernels": kernels_row(out)}.items():
        if mine in out:
            target[row] = {k: out[mine][k] for k in ("kendall_tau", "kendall_tau_std", "seeds")} | {
                "model": model, "data": f"{Path(out['data']).name}: {out['programs']} programs of {out['families']} "
                "families (kernel collection)", "same_data_rows": same, "source": shown}
    atomic_write_json(report, results_path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--peaks", type=Path, default=None, help="peaks.json (graphcost.measure.peaks)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=600)
    ap.add_argument("--max-rows", type=int, default=200_000)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--kind-features", action="store_true", help="a candidate design: the kernel's kind one-hot "
                    "in the kernel rows (compare the 'validation' figures, not the held-out ones)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--into", type=Path, default=None, help="bench_real.json: put the kernels and roofline rows "
                    "into --protocol (with --out)")
    ap.add_argument("--protocol", choices=("lofo", "lofo_flags"), default="lofo_flags")
    args = ap.parse_args(argv)
    if args.into and not args.out:
        ap.error("--into needs --out (the rows name the file that holds their details)")
    t0 = time.perf_counter()
    out = run(args)
    out["wall_s"] = round(time.perf_counter() - t0, 1)
    for m in ("kernels", "kernels+flags", "kernels+copies", "copies", "roofline", "kernels_measured", "lightgbm",
              "count", "process split", "ceiling"):
        if m in out:
            print(f"{m:18s} {out[m]['kendall_tau']:.3f} ± {out[m]['kendall_tau_std']:.3f}")
    if "ceiling" in out:
        print(f"ceiling on {out['ceiling']['programs']} repeated programs; the models there: "
              f"{out['ceiling']['models_on_these_programs']}")
    print(f"kernel level: median APE {out['kernel_level']['median_ape']:.3f}, τ {out['kernel_level']['kendall_tau']:.3f}")
    print("validation families, by blend weight: " + ", ".join(f"{k} {v:.3f}" for k, v in out.get("validation", {}).items()))
    if "validation_copies" in out:
        print("validation families, kernels+copies by weight: "
              + ", ".join(f"{k} {v:.3f}" for k, v in out["validation_copies"].items()))
    if args.out:
        from graphcost.guards.atomic import atomic_write_json

        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(out, args.out, indent=1)
        if args.into:
            put_into(out, args.into, args.protocol, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
