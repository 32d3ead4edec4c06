"""A program's cost from its kernels: per-kernel models, the roofline, and the sum rule.

Kaufman et al. (MLSys'21, §3) cost a program as the sum of its fused kernels' predicted times, each
kernel a small graph; kernels recur across programs (a dot of a shape and layout, an elementwise
loop, a transposing copy), so a kernel model trained on some programs transfers to others better
than a whole-program model does. Here, for one compiled configuration c of a program,

    T̂(c) = a · Σ_{leaf kernels k of c} n_k · t̂(k, flags(c)) + b · Σ_{all thunks k of c} n_k + d     (sum rule)

with n_k the executions per call (loop trip counts, `graphcost.frontend.hlo.kernels`), t̂ a kernel
model's time per execution, and (a, b, d) ≥ 0 what the sum misses: a scale, a cost per executed
thunk (the executor's dispatch, a loop's iteration) and a per-call constant, fitted by
non-negative least squares on relative errors over the TRAINING programs' configurations
(`SumRule.fit`). Within one program d does not change the order; b does (a configuration that
fuses less runs more thunks).

Kernel models (`t̂`):

* `KernelTrees`: LightGBM on a fixed-width row per (kernel, flags) (`kernel_row`): the kernel's
  opcode histogram (its fused computation's instructions, TpuGraphs opcode ids), the root
  instruction's 140 TpuGraphs node features (output shape, layout, ...), log flops / transcendentals
  / bytes / node count, and the 24-column flag vector. Target: log time per execution.
* `Roofline`: ``max(flops / F, bytes / B)`` with F, B this machine's measured peaks
  (`graphcost.measure.peaks`); nothing learned but the sum rule's (a, b, d).

What the kernels do not see (a flag that changes the executor or the thread pool, not a kernel's
code) is left to program-level trees on the flag vector alone (`FlagTrees`: LightGBM, target the log
runtime standardised within each program). The ranking of a program's K configurations blends them,
each standardised over the K (z(·): zero mean, unit variance),

    s(c) = w · z(log T̂(c)) + (1 − w) · z(flag trees(c))                                     (blend)

with w chosen on validation families (`benchmarks/models/bench_kernels.py`, ``kernels+flags``). In a
layout-only space every configuration has the default's flags, z(flag trees) = 0 and the blend is
the kernel sum's order.

References:
    [Kaufman] S. J. Kaufman et al. A Learned Performance Model for Tensor Processing Units. MLSys 2021.
        https://arxiv.org/abs/2008.01040
    [Roofline] S. Williams, A. Waterman, D. Patterson. Roofline: an insightful visual performance model for
        multicore architectures. CACM 52(4), 2009. https://doi.org/10.1145/1498765.1498785
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

NUM_OPCODE_IDS = 121  # TpuGraphs opcode ids 0..120 (graphcost.frontend.hlo.opcodes; 0 = unknown)
NODE_FEAT_DIM = 140
FLAG_DIM = 24
ROW_DIM = NUM_OPCODE_IDS + NODE_FEAT_DIM + 4 + FLAG_DIM


def kernel_graph_features(node_feat: np.ndarray, node_opcode: np.ndarray, flops: float, transcendentals: float,
                          nbytes: float) -> np.ndarray:
    """(ROW_DIM - FLAG_DIM,) float32 of one kernel: opcode histogram, root node features, log costs, size."""
    hist = np.bincount(np.clip(np.asarray(node_opcode, np.int64), 0, NUM_OPCODE_IDS - 1), minlength=NUM_OPCODE_IDS)
    root = np.asarray(node_feat[-1], np.float32) if len(node_feat) else np.zeros(NODE_FEAT_DIM, np.float32)
    costs = np.log1p([max(flops, 0.0), max(transcendentals, 0.0), max(nbytes, 0.0), float(len(node_feat))])
    return np.concatenate([hist.astype(np.float32), root, costs.astype(np.float32)])


def kernel_rows(graph_features: np.ndarray, kernel: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """(R, ROW_DIM) rows: each occurrence's kernel features (``graph_features[kernel]``) and its flags."""
    return np.concatenate([graph_features[kernel], np.asarray(flags, np.float32)], axis=1)


@dataclass
class KernelTrees:
    """LightGBM regression of log time per execution (module docstring)."""

    booster: Any  # lightgbm.Booster
    rounds: int

    @classmethod
    def fit(cls, rows: np.ndarray, seconds: np.ndarray, seed: int = 0, rounds: int = 400,
            valid: tuple[np.ndarray, np.ndarray] | None = None, threads: int = 0) -> "KernelTrees":
        import lightgbm as lgb

        params = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 63, "min_data_in_leaf": 20,
                  "feature_fraction": 0.8, "bagging_fraction": 0.8, "bagging_freq": 1, "seed": seed,
                  "deterministic": True, "verbose": -1, "num_threads": threads}
        train = lgb.Dataset(rows, np.log(np.maximum(seconds, 1e-12)))
        sets: list = []
        callbacks: list[Any] = []
        if valid is not None:
            sets = [lgb.Dataset(valid[0], np.log(np.maximum(valid[1], 1e-12)), reference=train)]
            callbacks = [lgb.early_stopping(40, verbose=False)]
        booster = lgb.train(params, train, rounds, valid_sets=sets, callbacks=callbacks)
        return cls(booster, int(booster.best_iteration or rounds))

    def predict(self, rows: np.ndarray) -> np.ndarray:
        """(R,) seconds per execution."""
        return np.exp(self.booster.predict(rows, num_iteration=self.rounds))

    def save(self, path: Path) -> None:
        from graphcost.guards.atomic import atomic_write_text

        atomic_write_text(Path(path), self.booster.model_to_string(num_iteration=self.rounds))

    @classmethod
    def load(cls, path: Path) -> "KernelTrees":
        booster = _load_booster(Path(path), ROW_DIM)
        return cls(booster, int(booster.current_iteration()))


def standardised(v: np.ndarray) -> np.ndarray:
    """z(v): zero mean, unit variance (a constant -> zeros)."""
    v = np.asarray(v, np.float64)
    s = v.std()
    return (v - v.mean()) / (s if s > 0 else 1.0)


def blend_scores(seconds: np.ndarray, flag_scores: np.ndarray | None, weight: float) -> np.ndarray:
    """(K,) the blend of one program's K configurations (module docstring): w · z(log seconds) +
    (1 − w) · z(flag_scores); lower = predicted faster. Without flag scores, z(log seconds)."""
    kernel = standardised(np.log(np.maximum(np.asarray(seconds, np.float64), 1e-300)))
    if flag_scores is None or weight >= 1.0:
        return kernel
    return weight * kernel + (1.0 - weight) * standardised(flag_scores)


@dataclass
class FlagTrees:
    """Program-level LightGBM on the 24 flag columns; target log runtime standardised within each
    program (so programs of any speed weigh the same and only the order within one is learnt)."""

    booster: Any  # lightgbm.Booster

    @classmethod
    def fit(cls, flags: list[np.ndarray], runtimes: list[np.ndarray], seed: int = 0, rounds: int = 300,
            threads: int = 1) -> "FlagTrees":
        """flags: per program (K_p, 24); runtimes: per program (K_p,) positive."""
        import lightgbm as lgb

        x = np.concatenate([np.asarray(f, np.float32) for f in flags])
        y = np.concatenate([standardised(np.log(np.asarray(t, np.float64))) for t in runtimes])
        params = {"objective": "regression", "learning_rate": 0.05, "num_leaves": 15, "min_data_in_leaf": 20,
                  "seed": seed, "deterministic": True, "verbose": -1, "num_threads": threads,
                  "bagging_fraction": 0.8, "bagging_freq": 1, "feature_fraction": 0.9}
        return cls(lgb.train(params, lgb.Dataset(x, y), rounds))

    def predict(self, flags: np.ndarray) -> np.ndarray:
        """(K,) predicted standardised log runtime of configurations (K, 24); lower = faster."""
        return np.asarray(self.booster.predict(np.asarray(flags, np.float32)), np.float64)

    def save(self, path: Path) -> None:
        from graphcost.guards.atomic import atomic_write_text

        atomic_write_text(Path(path), self.booster.model_to_string())

    @classmethod
    def load(cls, path: Path) -> "FlagTrees":
        return cls(_load_booster(Path(path), FLAG_DIM))


def _load_booster(path: Path, columns: int) -> Any:
    """A LightGBM text model of `columns` features, checked before LightGBM parses it (a damaged
    file is a ValueError naming it, never a segfault)."""
    import lightgbm as lgb

    from graphcost.models.lightgbm_text import check_model_text

    try:
        _check_size(path, TREES_BYTES_MAX)
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the trees ({exc})") from None
    check_model_text(text, path)
    booster = lgb.Booster(model_str=text)
    if booster.num_feature() != columns:
        raise ValueError(f"{path}: the trees read {booster.num_feature()} columns, this graphcost's rows have {columns}")
    return booster


@dataclass(frozen=True)
class Roofline:
    """``max(flops / peak_flops, bytes / peak_bytes_per_s)`` seconds per execution."""

    peak_flops: float
    peak_bytes_per_s: float

    def predict(self, flops: np.ndarray, nbytes: np.ndarray) -> np.ndarray:
        return np.maximum(np.asarray(flops) / self.peak_flops, np.asarray(nbytes) / self.peak_bytes_per_s)


@dataclass(frozen=True)
class SumRule:
    """T̂ = a · Σ n_k t̂_k + b · N + d (module docstring); a, b, d ≥ 0, seconds."""

    a: float = 1.0
    b: float = 0.0
    d: float = 0.0

    def predict(self, kernel_sum: np.ndarray, thunks: np.ndarray) -> np.ndarray:
        return self.a * np.asarray(kernel_sum) + self.b * np.asarray(thunks) + self.d

    @classmethod
    def fit(cls, kernel_sum: np.ndarray, thunks: np.ndarray, runtime: np.ndarray) -> "SumRule":
        """Non-negative least squares of the relative error |T̂ / T - 1| over training configurations."""
        from scipy.optimize import nnls

        t = np.asarray(runtime, np.float64)
        ok = t > 0
        design = np.stack([kernel_sum[ok] / t[ok], thunks[ok] / t[ok], 1.0 / t[ok]], axis=1)
        coef, _ = nnls(design, np.ones(int(ok.sum())))
        if not coef[0] > 0:  # the kernels must carry the order; a degenerate fit falls back to the plain sum
            return cls()
        return cls(float(coef[0]), float(coef[1]), float(coef[2]))

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b, "d": self.d}


def program_sums(config: np.ndarray, per_execution: np.ndarray, executions: np.ndarray, leaf: np.ndarray,
                 configs: int) -> tuple[np.ndarray, np.ndarray]:
    """For ONE program's rows: (K,) Σ_leaf n · t̂ and (K,) Σ_all n (thunk executions) per configuration."""
    kernel_sum = np.zeros(configs)
    thunks = np.zeros(configs)
    np.add.at(kernel_sum, config[leaf], (executions * per_execution)[leaf])
    np.add.at(thunks, config, executions)
    return kernel_sum, thunks


FLAG_TREES_FILE = "flag_trees.txt"


@dataclass
class KernelModelFiles:
    """What a kernel model directory holds (`save_kernel_model`)."""

    trees: KernelTrees
    rule: SumRule
    meta: dict
    flag_trees: FlagTrees | None = None  # None: the ranking is the kernel sum's alone
    flag_weight: float = 1.0  # w of the blend (module docstring); 1 without flag trees


def save_kernel_model(out: Path, trees: KernelTrees, rule: SumRule, meta: dict, flag_trees: FlagTrees | None = None,
                      flag_weight: float = 1.0) -> None:
    """A kernel model directory: ``kernel_trees.txt`` (LightGBM text, no pickle), optionally
    ``flag_trees.txt`` with the blend's weight w, and ``kernel_model.json``."""
    from graphcost.guards.atomic import atomic_write_json

    out.mkdir(parents=True, exist_ok=True)
    trees.save(out / "kernel_trees.txt")
    blend = {}
    if flag_trees is not None:
        flag_trees.save(out / FLAG_TREES_FILE)
        blend = {"flag_blend": {"weight": float(flag_weight), "trees": FLAG_TREES_FILE}}
    atomic_write_json({**meta, "sum_rule": rule.to_json(), "row_dim": ROW_DIM, **blend}, out / "kernel_model.json",
                      indent=1)


META_BYTES_MAX = 1 << 20  # kernel_model.json: a few hundred bytes when written
TREES_BYTES_MAX = 512 << 20  # a trees file (the shipped one: a few MB)
# what a sum rule's terms may be (`SumRule`): the kernels' scale a, seconds per thunk b, seconds per call d; a fit
# outside these did not come from real timings
SUM_RULE_RANGES = {"a": (0.0, 100.0), "b": (0.0, 1e-2), "d": (0.0, 10.0)}


def _check_size(path: Path, limit: int) -> None:
    """ValueError naming `path` when it is not a regular file of at most `limit` bytes (read whole afterwards)."""
    import stat

    info = path.stat()
    if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
        raise ValueError(f"{path}: {'not a regular file' if not stat.S_ISREG(info.st_mode) else f'{info.st_size} bytes'}"
                         f", a kernel model's file is a regular file of at most {limit} bytes")


def load_kernel_model(path: Path, featurizer_version: int) -> KernelModelFiles:
    """Load a kernel model directory; ValueError in one line when a file is missing or damaged, or
    its featurizer version or row width is not this graphcost's."""
    meta_path = Path(path) / "kernel_model.json"
    trees_path = Path(path) / "kernel_trees.txt"
    for p in (meta_path, trees_path):
        if not p.is_file():
            raise ValueError(f"{p}: missing; a kernel model is kernel_model.json with kernel_trees.txt")
    _check_size(meta_path, META_BYTES_MAX)
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, RecursionError, UnicodeDecodeError) as exc:
        raise ValueError(f"{meta_path}: not JSON ({type(exc).__name__})") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{meta_path}: must hold a JSON object")
    if meta.get("featurizer_version") != featurizer_version:
        raise ValueError(f"{meta_path}: key 'featurizer_version' is {meta.get('featurizer_version')!r}, this graphcost "
                         f"featurizes kernels as version {featurizer_version}; retrain the kernel model")
    if meta.get("row_dim") != ROW_DIM:
        raise ValueError(f"{meta_path}: key 'row_dim' is {meta.get('row_dim')!r}, this graphcost's kernel rows have "
                         f"{ROW_DIM} columns")
    rule = meta.get("sum_rule", {})
    try:
        sum_rule = SumRule(float(rule["a"]), float(rule["b"]), float(rule["d"]))
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"{meta_path}: key 'sum_rule' must hold numbers a, b, d") from None
    for name, value in (("a", sum_rule.a), ("b", sum_rule.b), ("d", sum_rule.d)):
        lo, hi = SUM_RULE_RANGES[name]
        if not (np.isfinite(value) and lo <= value <= hi) or (name == "a" and value == 0):
            raise ValueError(f"{meta_path}: key 'sum_rule' field {name!r} is {value!r}, outside [{lo:g}, {hi:g}]"
                             + (" (and above 0)" if name == "a" else "") + "; the file is damaged")
    files = KernelModelFiles(KernelTrees.load(trees_path), sum_rule, meta)
    blend = meta.get("flag_blend")
    if blend is not None:
        w = blend.get("weight") if isinstance(blend, dict) else None
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0.0 <= w <= 1.0:
            raise ValueError(f"{meta_path}: key 'flag_blend' must hold a 'weight' in [0, 1], got {w!r}")
        if blend.get("trees") != FLAG_TREES_FILE:
            raise ValueError(f"{meta_path}: key 'flag_blend' must name its trees {FLAG_TREES_FILE!r}, got "
                             f"{blend.get('trees')!r}")
        flag_path = Path(path) / FLAG_TREES_FILE
        if not flag_path.is_file():
            raise ValueError(f"{flag_path}: missing; kernel_model.json's 'flag_blend' names it")
        files.flag_trees, files.flag_weight = FlagTrees.load(flag_path), float(w)
    return files
