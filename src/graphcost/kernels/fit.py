"""The shipped kernel model's training recipe (`release/train_kernel_model.py` calls `fit_kernel_model`).

On a kernel collection read as one table (`graphcost.kernels.table.KernelTable`):

1. the kernel trees (`graphcost.kernels.trees.KernelTrees`) fit every program's leaf kernels,
   early-stopped on the kernels of a held-back sixth of the families (seeded), then again on every
   leaf kernel for the rounds the early stop chose;
2. the sum rule (`SumRule`, `fit_rule`) on every program's configurations: the predicted kernel times
   summed per configuration (`per_program`) with executions read off the module (`executions`);
3. the flag trees (`FlagTrees`) on every program's flag configurations, blended at the kernel sum's
   weight `flag_weight` (1: no flag trees).

The helpers are also the leave-family-out benchmark's (`benchmarks/models/bench_kernels.py`), whose
figures measure this recipe (BENCHMARKS.md, "Kernel cost models").
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphcost.kernels.table import KernelTable
from graphcost.kernels.trees import FlagTrees, KernelTrees, SumRule, kernel_graph_features, kernel_rows, program_sums


def executions(table: KernelTable, executions_read: np.ndarray) -> np.ndarray:
    """Executions per call as the module says, the profiled count where it does not."""
    return np.where(np.isfinite(executions_read), executions_read, table.count)


def per_program(table: KernelTable, names: list[str], per_exec: np.ndarray, n: np.ndarray
                ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per program of `names`: `program_sums` of its rows ((K,) Σ_leaf n · t̂, (K,) Σ n) under the
    per-execution times `per_exec` and executions `n` of every row of `table`."""
    out = {}
    for name in names:
        rows = table.program == name
        k = len(table.programs[name]["label"])
        out[name] = program_sums(table.config[rows], per_exec[rows], n[rows], table.leaf[rows], k)
    return out


def fit_rule(sums: dict, table: KernelTable) -> SumRule:
    """The sum rule fitted on the programs of `sums` (`per_program`) against their labels (seconds)."""
    ks = np.concatenate([s[0] for s in sums.values()])
    th = np.concatenate([s[1] for s in sums.values()])
    t = np.concatenate([table.programs[p]["label"] for p in sums]) * 1e-9
    return SumRule.fit(ks, th, t)


@dataclass
class KernelModelFit:
    """What `fit_kernel_model` fitted, and the counts the model's kernel_model.json records."""

    trees: KernelTrees
    rule: SumRule
    flag_trees: FlagTrees | None  # None at flag_weight 1
    programs: int
    families: int
    leaf_occurrences: int


def fit_kernel_model(data: str | Path, seed: int = 0, rounds: int = 600, threads: int = 2,
                     flag_weight: float = 0.5) -> KernelModelFit:
    """The kernel model of the kernel collection `data` (module docstring). `rounds`: the kernel trees'
    most boosting rounds; `flag_weight`: the kernel sum's share of the blend (below 1 fits the flag trees)."""
    from graphcost.frontend.programs.flags import default_flag_vector

    table = KernelTable.read(data, default_flag_vector())
    feats = np.stack([kernel_graph_features(f, o, table.flops[u], table.transcendentals[u], table.bytes[u])
                      for u, (f, o, _) in enumerate(table.graphs)])
    rows = kernel_rows(feats, table.kernel, table.flags)
    seconds = table.per_execution_ns * 1e-9
    families = sorted(set(table.family.tolist()))
    rng = np.random.default_rng(seed)
    valid = set(rng.choice(families, max(1, len(families) // 6), replace=False).tolist())
    usable = table.leaf & (table.count > 0)
    fit = usable & ~np.isin(table.family, sorted(valid))
    val = usable & np.isin(table.family, sorted(valid))
    trees = KernelTrees.fit(rows[fit], seconds[fit], seed=seed, rounds=rounds, valid=(rows[val], seconds[val]),
                            threads=threads)
    trees = KernelTrees.fit(rows[usable], seconds[usable], seed=seed, rounds=trees.rounds, threads=threads)
    n = executions(table, table.executions_read)
    rule = fit_rule(per_program(table, sorted(table.programs), trees.predict(rows), n), table)
    flag_trees = None
    if flag_weight < 1.0:
        names = sorted(table.programs)
        flag_trees = FlagTrees.fit([table.programs[p]["config_feat"] for p in names],
                                   [table.programs[p]["label"] for p in names], seed=seed, threads=threads)
    return KernelModelFit(trees, rule, flag_trees, len(table.programs), len(families), int(usable.sum()))
