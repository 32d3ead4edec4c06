"""One collection's parameters and jobs: which programs, and each graph's configurations ready to measure.

`CollectOptions` holds the parameters of a collection (recorded in the manifest); `select_programs`
picks the zoo programs and XLA modules given as files; `prepare_job` builds, featurizes and configures one
program in the layout space (`prepare_layout`) or the flag space (`prepare_flags`) and returns a `GraphJob`: the npz
arrays without labels and the JSON job of the measuring processes (`measure/worker.py`). The local
loop (`collect/local.py`) and the Ray backend (`collect/ray_backend.py`) both measure these jobs.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

import numpy as np

from graphcost.frontend.programs.flags import varied_flag_columns
from graphcost.frontend.programs.zoo import ProgramSpec, list_programs
from graphcost.measure.cross_process import CrossProcess
from graphcost.measure.interleaved import TimingProtocol

T = TypeVar("T")


@dataclass
class CollectOptions:
    """Parameters of one collection (recorded in the manifest; a resume must use the same)."""

    space: str = "layout"  # layout | flags
    mode: str = "both"  # layout: random | default | both (half each, see layouts.sample_mixed_configs); flags: both | tuner
    configs: int = 8
    seed: int = 0
    protocol: TimingProtocol = field(default_factory=TimingProtocol)
    cross: CrossProcess = field(default_factory=CrossProcess)
    split_fractions: tuple[float, float, float] = (0.7, 0.15, 0.15)
    label: str = "level-median"  # how processes combine into a label (cross_process.LABEL_STATISTICS)
    kernels: bool = False  # a profiled pass per process and a kernel record per program (graphcost/kernels/records.py)
    # not part of the collection key: they do not change what is measured
    compile_workers: int = 2
    cache_dir: Path | None = None  # None: OUT/.work/jax-cache

    def key(self) -> dict[str, Any]:
        flag_mode = None if self.mode == "both" else self.mode  # None: the flag collections made before --mode tuner
        return {"space": self.space, "mode": self.mode if self.space == "layout" else flag_mode, "configs": self.configs,
                "seed": self.seed, "rounds": self.protocol.rounds, "calls": self.protocol.calls,
                "warmup": self.protocol.warmup, **self.cross.key(), "xla_flags": os.environ.get("XLA_FLAGS", ""),
                **({"flag_columns": list(varied_flag_columns(self.mode))} if self.space == "flags" else {}),
                **({"label": self.label} if self.label != "median" else {}),  # no key: the median (older manifests)
                **({"kernels": True} if self.kernels else {})}


# --- program selection ------------------------------------------------------------------------

def select_programs(selectors: str, limit: int = 0, seed: int = 0) -> list[ProgramSpec]:
    """Programs matching `selectors` (comma-separated zoo selectors and XLA module references:
    ``MODULE.pb``, ``MODULE.hlo``, a dump directory, `hlo_program.module_spec`); with `limit` > 0 a
    seeded sample spread over families."""
    from graphcost.frontend.programs.hlo_program import module_spec

    items = [s.strip() for s in selectors.split(",") if s.strip()]
    modules = [module_spec(s) for s in items if _names_a_module(s)]
    zoo = [s for s in items if not _names_a_module(s)]
    specs = list(dict.fromkeys([*(list_programs(",".join(zoo)) if zoo or not modules else []), *modules]))
    if limit <= 0 or len(specs) <= limit:
        return specs
    rng = np.random.default_rng(seed)
    by_family: dict[str, list[ProgramSpec]] = {}
    for s in specs:
        by_family.setdefault(s.family, []).append(s)
    # sample from the cheaper half of each family (size proxy: product of integer hparams, x3 for training)
    queues = []
    for group in by_family.values():
        group = sorted(group, key=program_cost)[: max(1, (len(group) + 1) // 2)]
        queues.append([group[i] for i in rng.permutation(len(group))])
    names = {s.name for s in round_robin(queues, limit)}
    return [s for s in specs if s.name in names]


def check_modules(specs: list[ProgramSpec]) -> None:
    """Each XLA module among `specs` loaded, compiled and called once in a child process under deadlines
    (`graphcost.measure.program_check.check_program`) before anything is measured: a module whose ``while`` never
    ends, that waits on an infeed or that crashes the compiler is a ProgramError naming it (one line), not a
    measuring process that hangs until its deadline. Zoo programs are graphcost's own and are not checked."""
    from graphcost.frontend.programs.hlo_program import MODULE_FAMILY
    from graphcost.measure.program_check import check_program

    for spec in specs:
        if spec.family == MODULE_FAMILY:
            check_program(spec.hparams["module"], run=True)


def _names_a_module(item: str) -> bool:
    """A `--programs` item is an XLA module when it has a module's suffix, or is a directory that no zoo
    selector names."""
    from graphcost.frontend.programs.hlo_program import is_hlo_reference
    from graphcost.frontend.programs.zoo import FAMILIES, GROUPS

    return is_hlo_reference(item) and not (item in FAMILIES or item in GROUPS or item.split("-")[0] in FAMILIES)


def round_robin(queues: Iterable[list[T]], n: int) -> list[T]:
    """Up to `n` items taken from the queues' heads in turn (one from each queue a round), so a
    sample spreads over the queues (families); fewer when the queues run out first."""
    queues = [list(q) for q in queues]
    chosen: list[T] = []
    while len(chosen) < n and any(queues):
        for q in queues:
            if q and len(chosen) < n:
                chosen.append(q.pop(0))
    return chosen


def program_cost(spec: ProgramSpec) -> float:
    """A rough size proxy of a program: product of its integer hyper-parameters, x3 for a training step."""
    ints = [v for v in spec.hparams.values() if isinstance(v, int) and not isinstance(v, bool)]
    return float(np.prod(ints)) * (3.0 if spec.hparams.get("mode") == "train" else 1.0)


# --- one graph: its configurations ------------------------------------------------------------

@dataclass
class GraphJob:
    """One program's configurations, ready to measure: npz arrays without labels, the worker job."""

    spec: ProgramSpec
    kind: str  # layout | tile
    arrays: dict  # static npz arrays (graph + configuration features [+ config_search_mode])
    job: dict  # JSON job of `graphcost.measure.worker`
    lower: Callable[[], list]  # -> one jax `Lowered` per configuration (for the driver compile)
    compiler_options: list  # one dict or None per configuration
    info: dict  # manifest fields known before measuring


def prepare_layout(spec: ProgramSpec, options: CollectOptions) -> GraphJob:
    """Build, featurize and configure one program in the layout space."""
    from graphcost.frontend.programs.layouts import (
        LayoutProgram,
        config_features,
        locate_sites,
        sample_configs,
        sample_mixed_configs,
    )

    if "module" in spec.hparams:  # an XLA module: no JAX trace, so no dot / convolution sites to constrain
        raise ValueError(f"{spec.name}: an XLA module has no layout sites graphcost can move (the layout space "
                         "constrains a JAX program's dots and convolutions); collect it with --space flags")
    fn, args = spec.build()
    lp = LayoutProgram(fn, args)
    fm, active, node_ids = locate_sites(lp)
    if not active:
        raise ValueError(f"{spec.name}: no configurable dot/convolution/reshape node found")
    if options.mode == "both":
        configs, modes = sample_mixed_configs(active, options.configs, seed=options.seed)
    else:
        configs = sample_configs(active, options.configs, options.mode, seed=options.seed)
        modes = [options.mode] * len(configs)
    full = [lp.full_config(active, cfg) for cfg in configs]
    arrays = {"node_feat": fm.node_feat.astype(np.float32), "node_opcode": fm.node_opcode,
              "edge_index": fm.edge_index.astype(np.int64), "node_config_ids": node_ids,
              "node_config_feat": config_features(configs), "node_splits": fm.node_splits.astype(np.int64),
              "config_search_mode": np.asarray(modes)}
    job = {"space": "layout", "program": spec.name, "configs": [[list(map(_perm_json, t)) for t in c] for c in full]}
    info = {"num_configurable": int(len(node_ids)), "num_jax_sites": len(lp.sites),
            "configs_by_mode": {m: modes.count(m) for m in sorted(set(modes))}}
    return GraphJob(spec, "layout", arrays, job, lambda: [lp.lowered(c) for c in full], [None] * len(full), info)


def _perm_json(perm):
    return None if perm is None else list(perm)


def prepare_flags(spec: ProgramSpec, options: CollectOptions) -> GraphJob:
    """Build and featurize one program; its configurations in the XLA CPU flag space."""
    from graphcost.frontend.programs.flags import flag_configs, flag_features, tuner_flag_configs
    from graphcost.frontend.programs.jax_program import featurize_hlo_bytes, lower, unoptimized_hlo_bytes

    import jax

    if jax.default_backend() != "cpu":  # the flag space (graphcost.frontend.programs.flags) is XLA:CPU's
        raise ValueError(f"--space flags measures XLA CPU compiler options, but JAX's default backend here is "
                         f"'{jax.default_backend()}'; run with JAX_PLATFORMS=cpu")  # fmt: skip
    fn, args = spec.build()
    lowered = lower(fn, args)
    fm = featurize_hlo_bytes(unoptimized_hlo_bytes(lowered))
    arrays = {"node_feat": fm.node_feat.astype(np.float32), "node_opcode": fm.node_opcode,
              "edge_index": fm.edge_index.astype(np.int64)}
    if options.mode == "tuner":
        configs, origin = tuner_flag_configs(options.configs, options.seed)
        arrays["config_search_mode"] = np.asarray(origin)
    else:
        configs = flag_configs(options.configs, seed=options.seed)
    arrays["config_feat"] = flag_features(configs)  # row 0 is the default
    job = {"space": "flags", "program": spec.name, "configs": [list(c.values) for c in configs]}
    return GraphJob(spec, "tile", arrays, job, lambda: [lowered] * len(configs),
                    [c.compiler_options() for c in configs], {})


def prepare_job(spec: ProgramSpec, options: CollectOptions) -> GraphJob:
    """The `GraphJob` of one program in the space of `options`, its job carrying the protocol and the cache."""
    gj = (prepare_layout if options.space == "layout" else prepare_flags)(spec, options)
    gj.job.update(protocol=asdict(options.protocol), cache_dir=str(options.cache_dir))
    if "module" in spec.hparams:  # an XLA module program: the measuring processes rebuild it from its reference
        gj.job["module"] = spec.hparams["module"]
    if options.kernels:
        gj.job["kernels"] = True
    return gj
