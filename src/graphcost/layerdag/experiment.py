"""End-to-end LayerDAG experiments (LayerDAG §V): generate from a trained model and score it with the
evaluation functions of `graphcost.layerdag.quality` / `graphcost.layerdag.datasets`.

- unconditional (LP): sample n DAGs; validity (LP rules), MMD of degree/layer statistics against the
  real test set, uniqueness, novelty;
- conditional (TPU Tile, NAS-Bench-201): one synthetic DAG per real train/valid label (the labels
  are the conditions, §V-A); the surrogate regressor is fitted on real vs synthetic train/valid
  and both are scored by Pearson on the real test set; plus MMD, uniqueness, novelty.
`quality_vs_time` repeats generation under the layer-index (eq. 1) and constant schedules with fewer
denoising steps (§V-C).

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

import time

import numpy as np

from graphcost.layerdag.dag_record import DAG

NUM_CATEGORIES = {"lp": 2, "tpu-tile": 47, "nasbench201": 14}


def num_categories(dataset: str, splits: dict[str, list[DAG]] | None = None) -> int:
    if dataset in NUM_CATEGORIES:
        return NUM_CATEGORIES[dataset]
    if splits is None:
        raise ValueError(f"unknown dataset '{dataset}'")
    return int(max(int(d.node_attr.max()) for part in splits.values() for d in part if d.num_nodes)) + 1


def timed_sample(model, num, labels=None, schedule=None, seed=0, batch_size=64, progress=True, final_step="sample",
                 guidance=0.0):
    """(dags, seconds) for `sample_dags`."""
    from graphcost.layerdag.sample import sample_dags

    t0 = time.perf_counter()
    dags = sample_dags(model, num, labels=labels, schedule=schedule, seed=seed, batch_size=batch_size, progress=progress,
                       final_step=final_step, guidance=guidance)  # fmt: skip
    return dags, time.perf_counter() - t0


def describe_samples(generated: list[DAG], splits: dict[str, list[DAG]], dataset: str) -> dict:
    """Validity (LP), MMD table vs the real test set, uniqueness and novelty vs the real train set."""
    from graphcost.layerdag.quality.novelty import novelty, uniqueness
    from graphcost.layerdag.quality.statistics import mmd_report

    out: dict = {
        "num_generated": len(generated),
        "mean_nodes": float(np.mean([d.num_nodes for d in generated])),
        "mean_edges": float(np.mean([d.num_edges for d in generated])),
        "real_mean_nodes": float(np.mean([d.num_nodes for d in splits["test"]])),
        "real_mean_edges": float(np.mean([d.num_edges for d in splits["test"]])),
        **mmd_report(generated, splits["test"]),  # "mmd", "mmd_kernel", "mmd_graphs"
        "uniqueness": uniqueness(generated),
        "novelty": novelty(generated, splits["train"]),
    }
    if dataset == "lp":
        from graphcost.layerdag.datasets.lp import lp_validity

        out["validity"] = lp_validity(generated)
    return out


def evaluate_model(model, splits: dict[str, list[DAG]], dataset: str, schedule=None, seed: int = 0,
                   num_samples: int | None = None, surrogate: bool = True, surrogate_cfg=None,
                   progress: bool = True, final_step: str = "sample", guidance: float = 0.0,
                   real_fits=None) -> tuple[dict, list[DAG]]:  # fmt: skip
    """Generate and score (see module docstring); returns (results, generated DAGs). `guidance`:
    classifier-free guidance weight for a conditional model (`sample_dags`). `real_fits`: the
    real-trained regressors from `fit_real_surrogates(splits, C, surrogate_cfg)`, to reuse them
    across evaluations (otherwise fitted here)."""
    if model.config.conditional:
        labels = [d.label for d in splits["train"]] + [d.label for d in splits["valid"]]
        generated, secs = timed_sample(model, len(labels), labels=labels, schedule=schedule, seed=seed, progress=progress,
                                       final_step=final_step, guidance=guidance)  # fmt: skip
        res = describe_samples(generated, splits, dataset)
        if surrogate:
            from graphcost.layerdag.quality.surrogate import SurrogateConfig, surrogate_pearson

            n_train = len(splits["train"])
            t0 = time.perf_counter()
            res["surrogate"] = surrogate_pearson(splits, generated[:n_train], generated[n_train:], num_categories(dataset, splits),
                                                 surrogate_cfg or SurrogateConfig(), real_fits)  # fmt: skip
            res["surrogate_seconds"] = time.perf_counter() - t0
    else:
        n = num_samples or max(100, len(splits["test"]))
        generated, secs = timed_sample(model, n, schedule=schedule, seed=seed, progress=progress, final_step=final_step,
                                       guidance=guidance)  # fmt: skip
        res = describe_samples(generated, splits, dataset)
    res["sample_seconds"] = secs
    res["sample_seconds_per_graph"] = secs / max(1, len(generated))
    return res, generated


def quality_vs_time(model, splits, dataset: str, t_values: list[int], seed: int = 0, num_samples: int = 100,
                    surrogate_cfg=None, progress: bool = False, final_step: str = "sample",
                    guidance: float = 0.0) -> list[dict]:  # fmt: skip
    """Quality and sampling time for the eq.-1 linear schedule (t_min=1, t_max=T) and the constant
    schedule (T) for each T in `t_values` (≤ the trained T_node) — LayerDAG §V-C, Fig. 4.
    Quality: LP validity; conditional datasets: surrogate Pearson ratio."""
    from graphcost.layerdag.quality.surrogate import SurrogateConfig, fit_real_surrogates
    from graphcost.layerdag.denoising_schedule import ConstantSchedule, LinearSchedule

    c = model.config
    surrogate_cfg = surrogate_cfg or SurrogateConfig()
    real_fits = fit_real_surrogates(splits, num_categories(dataset, splits), surrogate_cfg) if c.conditional else None
    rows = []
    for T in t_values:
        for kind, sched in (("linear", LinearSchedule(1, T, c.max_layers)), ("constant", ConstantSchedule(T))):
            if model.config.conditional:
                res, _ = evaluate_model(model, splits, dataset, sched, seed, surrogate_cfg=surrogate_cfg, progress=progress,
                                        final_step=final_step, guidance=guidance, real_fits=real_fits)  # fmt: skip
                quality = res["surrogate"]["ratio"]
            else:
                res, _ = evaluate_model(model, splits, dataset, sched, seed, num_samples=num_samples, progress=progress,
                                        final_step=final_step)  # fmt: skip
                quality = res["validity"] if dataset == "lp" else float("nan")
            rows.append({"schedule": kind, "T": T, "quality": quality, "sample_seconds": res["sample_seconds"],
                         "sample_seconds_per_graph": res["sample_seconds_per_graph"]})  # fmt: skip
    return rows
