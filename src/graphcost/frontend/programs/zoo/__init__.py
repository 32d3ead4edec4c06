"""Model zoo: real JAX/Flax programs (forward passes and training steps) enumerated by name.

Families (one module each, except ``tfenc`` / ``tfdec`` in ``transformer`` and ``lstm`` / ``gru`` in
``rnn``; the selectors ``transformer`` and ``rnn`` name both families of their module):

* dense and convolutional: ``mlp``, ``cnn`` (ResNet-style, GroupNorm), ``mobilenet`` (inverted
  residuals, BatchNorm), ``vit``, ``unet`` (a diffusion denoising step), ``vae``, ``flow`` (RealNVP),
  ``deconv`` (transposed-convolution generator), ``pointnet`` (point clouds, set attention);
* sequence: ``tfenc``, ``tfdec``, ``bert`` (padding masks, masked LM), ``gpt`` (KV-cache decoding and
  causal training), ``encdec`` (cross-attention), ``moe`` (top-k routing), ``lstm``, ``gru``,
  ``ssm`` (diagonal state-space scans), ``tcn`` (dilated causal convolutions);
* graph, sparse and scientific: ``gnn`` (message passing over edge lists), ``dlrm`` (embedding bags),
  ``topk`` (retrieval and beam steps: sort / top-k / gather), ``fno`` (FFT operators), ``pde``
  (stencil solvers), ``odenet`` (RK4-integrated neural ODEs).

Each variant name encodes its hyper-parameters, e.g. ``mlp-d3-w256-b32-train``; about half of
every family are training steps (forward, backward, optimizer update). Building a program needs
JAX + Flax + optax. None of them is a program of the held-out suite on which `graphcost tune` is
benchmarked (a test of the repository compares the shipped data's HLO fingerprints with the suite's).

Example:
    ```python
    from graphcost.frontend.programs.zoo import get_program

    fn, args = get_program("mlp-d2-w64-b8-fwd").build()
    ```
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo import (
    bert,
    cnn,
    deconv,
    dlrm,
    encdec,
    flow,
    fno,
    gnn,
    gpt,
    mlp,
    mobilenet,
    moe,
    odenet,
    pde,
    pointnet,
    rnn,
    ssm,
    tcn,
    topk,
    transformer,
    unet,
    vae,
    vit,
)
from graphcost.frontend.programs.zoo.common import ProgramSpec

_MODULES = (mlp, cnn, transformer, rnn, mobilenet, vit, unet, vae, flow, deconv, pointnet, bert, gpt, encdec,
            moe, ssm, tcn, gnn, dlrm, topk, fno, pde, odenet)
FAMILIES = ("mlp", "cnn", "tfenc", "tfdec", "lstm", "gru", "mobilenet", "vit", "unet", "vae", "flow", "deconv",
            "pointnet", "bert", "gpt", "encdec", "moe", "ssm", "tcn", "gnn", "dlrm", "topk", "fno", "pde", "odenet")
GROUPS = {"transformer": ("tfenc", "tfdec"), "rnn": ("lstm", "gru")}


def list_programs(selectors: str | list[str] | None = None) -> list[ProgramSpec]:
    """All registered variants, optionally filtered.

    selectors: comma-separated string or list; each item is a family name (``mlp``), a group
    (``transformer``, ``rnn``), a name prefix (``tfdec``, ``lstm``, ``mlp-d3``) or an exact variant name. Order: registry order,
    no duplicates. Raises ValueError naming any selector that matches nothing.
    """
    specs = [spec for module in _MODULES for spec in module.variants()]
    if selectors is None:
        return specs
    items = [s.strip() for s in (selectors.split(",") if isinstance(selectors, str) else selectors) if s.strip()]
    if not items:
        raise ValueError(f"--programs: {selectors!r} names no program (give families, groups, prefixes or names, "
                         "comma-separated)")
    chosen, seen = [], set()
    for item in items:
        fams = GROUPS.get(item, (item,))
        hits = [s for s in specs if s.family in fams or s.name == item or s.name.startswith(item + "-")]
        if not hits:
            raise ValueError(f"--programs: {item!r} matches no zoo program (families: {', '.join(FAMILIES)}; groups: transformer, rnn)")
        for s in hits:
            if s.name not in seen:
                seen.add(s.name)
                chosen.append(s)
    return chosen


def get_program(name: str) -> ProgramSpec:
    """The variant called `name` (exact match); ValueError if unknown."""
    for spec in list_programs():
        if spec.name == name:
            return spec
    raise ValueError(f"unknown zoo program {name!r}; see graphcost.frontend.programs.zoo.list_programs()")


def resolve_program(name: str, module: str | None = None) -> ProgramSpec:
    """The program of a collection called `name`: the zoo variant, or, with `module` (its hparams' ``module``
    reference), the XLA module program (`graphcost.frontend.programs.hlo_program.module_spec`)."""
    if module is None:
        return get_program(name)
    from graphcost.frontend.programs.hlo_program import module_spec

    spec = module_spec(module)
    if spec.name != name:
        raise ValueError(f"program {name!r}: its module {module} has changed since it was collected (now {spec.name})")
    return spec


__all__ = ["FAMILIES", "ProgramSpec", "get_program", "list_programs", "resolve_program"]
