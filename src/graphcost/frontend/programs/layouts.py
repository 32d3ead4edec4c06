"""Real per-node layout configurations for JAX programs (the TpuGraphs *layout* search space, on CPU).

What a configuration IS. A JAX program is traced to a jaxpr; every ``dot_general``,
``conv_general_dilated`` and ``reshape`` equation whose tensors have rank >= 2 is a
*configurable node* (TpuGraphs: convolution, dot and reshape nodes). A configuration assigns to
each configurable node three physical layouts, written as XLA ``minor_to_major`` permutations:
the layout of its output, of operand 0 and of operand 1 (``None`` = not applicable). The program
is re-evaluated from its jaxpr with ``jax.experimental.layout.with_layout_constraint`` placed on
the node's output and on its operands with those layouts. This lowers to a
``custom-call "LayoutConstraint"`` in the HLO; XLA's layout assignment honours it on the CPU
backend by materialising the value in the requested layout (a ``copy`` with that layout in the
optimized module, fused with neighbours where possible), and consumers that need another layout
get another copy. The runtime differences between configurations are therefore real: they come
from the copies / transposes and from the memory-access order of the fused kernels that read
the re-laid-out values. Measured on jax/jaxlib 0.10.2 CPU (the test suite re-checks it).

The *default* layout of the XLA CPU compiler is row-major (``minor_to_major = (r-1, ..., 0)``);
the default configuration (all nodes row-major) compiles to the same program as no constraint.

Search modes (TpuGraphs ``random`` / ``default``): ``random`` draws random layouts for a random
share of the configurable tensors (see `sample_configs`); ``default`` starts from the compiler's
default and mutates the layouts of a few (1 to 3) nodes. Configuration 0 of ``default`` is the
default itself.

Per-node config features (TpuGraphs README, layout config table, 18 columns):
``[0:6]`` output minor_to_major, ``[6:12]`` operand-0 minor_to_major, ``[12:18]`` operand-1
minor_to_major, each padded with -1 beyond the tensor's rank (and all -1 for an absent operand).

The graph of a layout collection is the UNOPTIMIZED HLO module of the program without
constraints (before layout assignment, as in TpuGraphs). Each configurable node is located in it
through a JAX named scope ``gcnode<k>`` carried in the instruction's ``metadata.op_name``.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

CONFIGURABLE = {"dot_general": "dot", "conv_general_dilated": "convolution", "reshape": "reshape"}
# Call-like primitives whose body is inlined by the interpreter (so nodes inside are configurable).
_INLINE = {"jit", "pjit", "closed_call", "core_call", "custom_jvp_call", "custom_vjp_call",
           "custom_vjp_call_jaxpr", "remat", "checkpoint"}
_SCOPE = "gcnode"
MAX_RANK = 6

Perm = tuple[int, ...]  # minor_to_major


def _bind(eqn, invals: list):
    """Apply `eqn`'s primitive to `invals` as `jax.core.eval_jaxpr` does. `get_bind_params` returns
    (subfuns, params) before jax 0.10 and params from 0.10 on."""
    params = eqn.primitive.get_bind_params(eqn.params)
    subfuns, params = params if isinstance(params, tuple) else ([], params)
    return eqn.primitive.bind(*subfuns, *invals, **params)


@dataclass(frozen=True)
class Site:
    """One configurable node: its jaxpr primitive and the ranks of output / operand 0 / operand 1."""

    index: int
    primitive: str
    ranks: tuple[int, int, int]  # 0 = absent or scalar-like (not configurable)


def default_perm(rank: int) -> Perm:
    """XLA's default (row-major) minor_to_major for a rank-`rank` array."""
    return tuple(range(rank - 1, -1, -1))


def _rank_ok(rank: int) -> bool:
    return 2 <= rank <= MAX_RANK


class LayoutProgram:
    """A JAX program whose configurable nodes can be given explicit layouts.

    fn, args: the program and its example arguments (``fn(*args)``).
    """

    def __init__(self, fn: Callable, args: tuple):
        import jax

        self.fn, self.args = fn, tuple(args)
        self._flat_args, self._in_tree = jax.tree_util.tree_flatten(self.args)
        flat_fn = lambda *flat: fn(*jax.tree_util.tree_unflatten(self._in_tree, list(flat)))  # noqa: E731
        self.closed = jax.make_jaxpr(flat_fn)(*self._flat_args)
        self.sites: list[Site] = []
        # Abstract evaluation (no computation) records the configurable sites in order.
        jax.eval_shape(lambda *flat: self._evaluate(self.closed.jaxpr, self.closed.consts, list(flat), None, record=True),
                       *self._flat_args)

    # -- evaluation ---------------------------------------------------------------------------
    def _evaluate(self, jaxpr, consts, args, config, record=False, counter=None):
        """Evaluate `jaxpr` (tracing under jit), constraining configurable nodes per `config`.

        config: None (no constraints) or a list indexed by site: ``(out, in0, in1)`` permutations.
        """
        import jax
        from jax.experimental.layout import Layout, with_layout_constraint
        from jax.extend.core import Literal

        counter = counter if counter is not None else [0]
        env = {}

        def read(v):
            return v.val if isinstance(v, Literal) else env[v]

        for var, val in zip(jaxpr.constvars, consts):
            env[var] = val
        for var, val in zip(jaxpr.invars, args):
            env[var] = val

        def constrain(x, perm):
            if perm is None or tuple(perm) == default_perm(len(perm)):
                return x
            return with_layout_constraint(x, Layout(major_to_minor=tuple(reversed(perm))))

        for eqn in jaxpr.eqns:
            invals = [read(v) for v in eqn.invars]
            name = eqn.primitive.name
            if name in _INLINE:
                inner = next((eqn.params[k] for k in ("jaxpr", "call_jaxpr", "fun_jaxpr") if k in eqn.params), None)
                if inner is not None:
                    inner_jaxpr, inner_consts = (inner.jaxpr, inner.consts) if hasattr(inner, "consts") else (inner, ())
                    outs = self._evaluate(inner_jaxpr, inner_consts, invals, config, record, counter)
                    for var, val in zip(eqn.outvars, outs):
                        env[var] = val
                    continue
            in_ranks = [len(eqn.invars[j].aval.shape) if j < len(eqn.invars) else 0 for j in range(2)]
            ranks = (len(eqn.outvars[0].aval.shape), *in_ranks) if eqn.outvars else (0, 0, 0)
            configurable = name in CONFIGURABLE and _rank_ok(ranks[0])
            if configurable:
                k = counter[0]
                counter[0] += 1
                if name == "reshape":
                    ranks = (ranks[0], ranks[1], 0)
                ranks = tuple(r if _rank_ok(r) else 0 for r in ranks)
                if record:
                    self.sites.append(Site(k, name, ranks))
                choice = config[k] if config is not None else (None, None, None)
                n_cfg_inputs = 1 if name == "reshape" else 2
                invals = [constrain(x, choice[1 + i]) if i < n_cfg_inputs and ranks[1 + i] else x
                          for i, x in enumerate(invals)]
                with jax.named_scope(f"{_SCOPE}{k}"), eqn.ctx.manager:
                    out = _bind(eqn, invals)
                out = constrain(out, choice[0])
                outs = [out]
            else:
                with eqn.ctx.manager:
                    out = _bind(eqn, invals)
                outs = out if eqn.primitive.multiple_results else [out]
            for var, val in zip(eqn.outvars, outs):
                env[var] = val
        return [read(v) for v in jaxpr.outvars]

    def program(self, config: list[tuple[Perm | None, Perm | None, Perm | None]] | None) -> Callable:
        """A function of the flat arguments that evaluates the program under `config`."""
        if config is not None and len(config) != len(self.sites):
            raise ValueError(f"config has {len(config)} entries, program has {len(self.sites)} configurable nodes")

        def run(*flat_args):
            return self._evaluate(self.closed.jaxpr, self.closed.consts, list(flat_args), config)

        return run

    def full_config(self, active: list[Site], config: list[tuple]) -> list[tuple]:
        """Expand a configuration over the `active` sites to all sites (others unconstrained)."""
        full: list[tuple] = [(None, None, None)] * len(self.sites)
        for site, choice in zip(active, config, strict=True):
            full[site.index] = choice
        return full

    @property
    def flat_args(self) -> list:
        return list(self._flat_args)

    # -- graph ------------------------------------------------------------------------------
    def lowered(self, config=None):
        import jax

        return jax.jit(self.program(config)).lower(*self._flat_args)

    def site_instruction_ids(self, hlo_bytes: bytes) -> list[int | None]:
        """HLO instruction id of each site in the (unoptimized, unconstrained) module, via named scopes."""
        from graphcost.frontend.programs.jax_program import instruction_op_names

        pattern = re.compile(rf"(?:^|/){_SCOPE}(\d+)(?:/|$)")
        found: dict[int, int] = {}
        for iid in sorted(names := instruction_op_names(hlo_bytes)):
            opcode, op_name = names[iid]
            m = pattern.search(op_name)
            if not m:
                continue
            k = int(m.group(1))
            if k < len(self.sites) and opcode == CONFIGURABLE[self.sites[k].primitive] and k not in found:
                found[k] = iid
        return [found.get(s.index) for s in self.sites]


def locate_sites(lp: LayoutProgram):
    """Featurize `lp`'s unconstrained, unoptimized HLO and find its configurable sites in it.

    Returns ``(fm, active, node_ids)``: the `FeaturizedModule`, the sites found in the HLO
    (a JAX site XLA dropped or merged has no instruction and is not configurable), and (C,) int64
    node indices of the active sites (the layout schema's ``node_config_ids``).
    """
    from graphcost.frontend.programs.jax_program import featurize_hlo_bytes, unoptimized_hlo_bytes

    hlo = unoptimized_hlo_bytes(lp.lowered(None))
    fm = featurize_hlo_bytes(hlo)
    ids = lp.site_instruction_ids(hlo)
    active = [s for s, iid in zip(lp.sites, ids) if iid is not None]
    node_ids = np.array([fm.node_index[iid] for iid in ids if iid is not None], np.int64)
    return fm, active, node_ids


# --- configurations ------------------------------------------------------------------------

def _perms(rank: int) -> list[Perm]:
    return list(itertools.permutations(range(rank)))


def _other_perm(rank: int, current: Perm, rng: np.random.Generator) -> Perm:
    """A uniformly random permutation of `rank` dimensions other than `current`."""
    options = [p for p in _perms(rank) if p != current]
    return options[rng.integers(len(options))]


def _move(cfg: list[list], base: list[tuple], sites: list[Site], picked: list[tuple[int, int]], rng) -> None:
    """Give each picked (node, operand) slot of `cfg` a random layout other than its default, in order."""
    for i, j in picked:
        cfg[i][j] = _other_perm(sites[i].ranks[j], base[i][j], rng)


def _add_if_new(cfg: list[list], seen: set, out: list) -> bool:
    """Append `cfg` (as tuples) to `out` unless an equal configuration is in `seen`; True if appended."""
    key = tuple(tuple(c) for c in cfg)
    if key in seen:
        return False
    seen.add(key)
    out.append([tuple(c) for c in cfg])
    return True


def default_config(sites: list[Site]) -> list[tuple]:
    """Every configurable tensor in the compiler's default row-major layout."""
    return [tuple(default_perm(r) if r else None for r in s.ranks) for s in sites]


def sample_configs(sites: list[Site], num: int, mode: str, seed: int = 0, max_tries: int = 50) -> list[list[tuple]]:
    """`num` distinct configurations (fewer only if the space is smaller), deterministic in `seed`.

    mode ``random``: a density rho ~ U(0, 1) is drawn per configuration; each configurable
    tensor independently takes, with probability rho, a uniformly random non-default
    permutation of its rank (otherwise the default). Varying rho spreads the configurations
    from near-default to fully re-laid-out (uniform layouts for all tensors would give
    configurations of nearly equal cost, since runtime sums over many tensors).
    mode ``default``: configuration 0 is the default; the others mutate 1-3 random tensors of
    random nodes away from the default layout.
    """
    if mode not in ("random", "default"):
        raise ValueError(f"mode must be 'random' or 'default', got {mode!r}")
    rng = np.random.default_rng(seed)
    slots = [(i, j) for i, s in enumerate(sites) for j, r in enumerate(s.ranks) if r]
    if not slots:
        return [default_config(sites)]
    base = default_config(sites)
    out, seen = [], set()
    if mode == "default":
        out.append(base)
        seen.add(tuple(base))
    tries = 0
    while len(out) < num and tries < max_tries * num:
        tries += 1
        cfg = [list(c) for c in base]
        if mode == "random":
            density = rng.uniform(0.0, 1.0)  # share of tensors moved off the default layout
            for i, j in slots:
                if rng.uniform() < density:
                    cfg[i][j] = _other_perm(sites[i].ranks[j], base[i][j], rng)
        else:
            n_mut = int(rng.integers(1, min(3, len(slots)) + 1))
            _move(cfg, base, sites, [slots[p] for p in rng.choice(len(slots), size=n_mut, replace=False)], rng)
        _add_if_new(cfg, seen, out)
    return out


def sample_mixed_configs(sites: list[Site], num: int, seed: int = 0, levels: int = 8) -> tuple[list[list[tuple]], list[str]]:
    """`num` distinct configurations from both search modes, and the mode of each.

    The first half (rounded down) comes from mode ``default`` (configuration 0 is the default,
    the others move 1-3 tensors off it). The second half comes from mode ``random`` with
    *stratified* counts: the number of tensors moved off the default cycles through up to
    `levels` values spread evenly over [1, number of configurable tensors], so that several
    configurations move the SAME number of tensors and only which tensors move, and how, can
    tell them apart (the count of moved tensors alone cannot rank them).
    """
    rng = np.random.default_rng(seed + 104729)
    configs = sample_configs(sites, num // 2, "default", seed=seed)
    modes = ["default"] * len(configs)
    slots = [(i, j) for i, s in enumerate(sites) for j, r in enumerate(s.ranks) if r]
    if not slots:
        return configs, modes
    counts = np.unique(np.round(np.linspace(1, len(slots), min(levels, len(slots)))).astype(int))
    seen = {tuple(tuple(c) for c in cfg) for cfg in configs}
    base, tries = default_config(sites), 0
    while len(configs) < num and tries < 50 * num:
        m = int(counts[tries % len(counts)])  # a level with no new configuration left is skipped
        tries += 1
        cfg = [list(c) for c in base]
        _move(cfg, base, sites, [slots[p] for p in rng.choice(len(slots), size=m, replace=False)], rng)
        if _add_if_new(cfg, seen, configs):
            modes.append("random")
    return configs, modes


def moved_tensors(node_config_feat: np.ndarray) -> np.ndarray:
    """(K,) number of configurable tensors off the default row-major layout, from (K, C, 18) features.

    A tensor slot (6 columns) with rank r holds ``minor_to_major`` in its first r columns (-1
    beyond); the default is ``(r-1, ..., 0)``. This is the trivial "count" baseline of the
    cost-model benchmarks.
    """
    feat = np.asarray(node_config_feat).reshape(*node_config_feat.shape[:2], 3, 6)  # (K, C, 3, 6)
    rank = (feat >= 0).sum(-1, keepdims=True)  # (K, C, 3, 1)
    default = rank - 1 - np.arange(6)  # (K, C, 3, 6): r-1, r-2, ..., 0, then negatives
    moved = ((feat != default) & (feat >= 0)).any(-1) & (rank[..., 0] > 0)
    return moved.sum(axis=(1, 2))


def config_features(configs: list[list[tuple]]) -> np.ndarray:
    """(K, C, 18) float32: per node output / operand-0 / operand-1 minor_to_major, -1 padded."""
    k, c = len(configs), len(configs[0]) if configs else 0
    feat = np.full((k, c, 18), -1.0, np.float32)
    for a, cfg in enumerate(configs):
        for b, triple in enumerate(cfg):
            for j, perm in enumerate(triple):
                if perm is not None:
                    feat[a, b, 6 * j: 6 * j + len(perm)] = perm
    return feat
