"""The kernel cost model: a compiled configuration's cost as the sum of its kernels (`graphcost.kernels.trees`).

    model = KernelCostModel.load()                 # the shipped kernel model (graphcost/pretrained/kernels)
    seconds, shares = model.cost(kernels, flags)   # kernels: graphcost.frontend.hlo.kernels.module_kernels

Each leaf kernel is featurized once per fingerprint (`kernel_graph_features` of its graph, cached),
joined with the configuration's 24 flag columns, timed by the kernel trees, and

    T̂ = a · Σ_leaf n_k · t̂(k, flags) + b · Σ n_k + d

with (a, b, d) the sum rule stored with the model. A program's configurations are ranked by the
blend of that cost with the flag trees (`rank_scores`; `graphcost.kernels.trees`, "blend").
`graphcost.workload.rank` compiles a program's configurations and costs them with it. Only what
can be compiled is costed this way: a TpuGraphs npz holds no program to compile and keeps the graph
models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from graphcost.errors import GraphcostError
from graphcost.kernels.trees import (FlagTrees, KernelTrees, SumRule, blend_scores, kernel_graph_features,
                                          load_kernel_model)

FEATURIZER_VERSION = 1  # kernel rows: kernels/trees.kernel_graph_features + the 24 flag columns


class KernelModelError(GraphcostError, ValueError):
    """A kernel model's files are missing, damaged or of another featurizer version (one line: the file and key)."""


@dataclass
class CostedConfig:
    """One configuration's predicted cost and its kernels' predicted shares."""

    index: int
    seconds: float
    kernels: list[tuple[str, str, float]] = field(default_factory=list)  # (name, kind, seconds per call), largest first
    compile_s: float = 0.0
    executable: object = field(default=None, repr=False)  # the compiled configuration; None from a ranking (dropped once costed)


class KernelCostModel:
    """Kernel trees + sum rule, and the flag trees the ranking blends with them (a kernel model
    directory, `graphcost.kernels.trees.save_kernel_model`)."""

    def __init__(self, trees: KernelTrees, rule: SumRule, meta: dict, source: str, flag_trees: FlagTrees | None = None,
                 flag_weight: float = 1.0):
        self.trees, self.rule, self.meta, self.trained_on = trees, rule, meta, source
        self.flag_trees, self.flag_weight = flag_trees, flag_weight
        self._features: dict[str, np.ndarray] = {}

    @classmethod
    def load(cls, path: str | Path | None = None) -> "KernelCostModel":
        """The kernel model in `path`, or the shipped one; KernelModelError (a ValueError) in one line when it is
        missing, damaged or of another featurizer version; ArgumentError when `path` is not a path."""
        from graphcost.guards.bounds import check_path
        from graphcost.pretrained import shipped_kernel_model_dir

        where = check_path("path", path) if path is not None else shipped_kernel_model_dir()
        try:
            files = load_kernel_model(where, FEATURIZER_VERSION)
        except GraphcostError:
            raise
        except (ValueError, OSError) as exc:  # the files' own checks, in one line naming the file and key
            raise KernelModelError(" ".join(str(exc).split())) from None
        return cls(files.trees, files.rule, files.meta, str(where), files.flag_trees, files.flag_weight)

    @property
    def blended(self) -> bool:
        """Whether `rank_scores` blends the flag trees in (weight < 1)."""
        return self.flag_trees is not None and self.flag_weight < 1.0

    def rank_scores(self, seconds: np.ndarray, flags: np.ndarray) -> np.ndarray:
        """(K,) scores of one program's K configurations, lower = predicted faster: the blend of the
        kernel sum `seconds` (K,) with the flag trees on `flags` (K, 24) (`graphcost.kernels.trees.blend_scores`);
        the kernel sum's order when the model has no flag trees. Non-finite seconds (a failed
        compile) score +inf."""
        seconds = np.asarray(seconds, np.float64)
        ok = np.isfinite(seconds) & (seconds > 0)
        out = np.full(len(seconds), np.inf)
        if ok.any():
            flag_scores = (self.flag_trees.predict(np.asarray(flags)[ok])
                           if self.flag_trees is not None and self.blended else None)
            out[ok] = blend_scores(seconds[ok], flag_scores, self.flag_weight)
        return out

    def kernel_features(self, kernel: Any) -> np.ndarray:
        """The kernel's features (without flags), cached by fingerprint."""
        if kernel.fingerprint not in self._features:
            from graphcost.frontend.hlo.featurizer import featurize_module

            fm = featurize_module(kernel.graph)
            self._features[kernel.fingerprint] = kernel_graph_features(
                fm.node_feat, fm.node_opcode, kernel.flops, kernel.transcendentals, kernel.bytes)
        return self._features[kernel.fingerprint]

    def cost(self, kernels: dict, flags: np.ndarray) -> tuple[float, list[tuple[str, str, float]]]:
        """Seconds per call of one compiled configuration (`hlo.kernels.module_kernels`) under `flags`
        (24,), and each leaf kernel's predicted seconds per call, largest first."""
        leaves = [k for k in kernels.values() if not k.control_flow and k.graph is not None]
        runs = np.asarray([1.0 if k.executions is None else k.executions for k in kernels.values()])
        if leaves:
            rows = np.stack([np.concatenate([self.kernel_features(k), np.asarray(flags, np.float32)]) for k in leaves])
            per_exec = self.trees.predict(rows)
            n = np.asarray([1.0 if k.executions is None else k.executions for k in leaves])
            per_call = per_exec * n
        else:
            per_call = np.zeros(0)
        total = float(self.rule.predict(per_call.sum(), runs.sum()))
        shares = sorted(((k.name, k.kind, float(t)) for k, t in zip(leaves, per_call)), key=lambda x: -x[2])
        return total, shares
