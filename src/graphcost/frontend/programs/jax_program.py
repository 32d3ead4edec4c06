"""JAX programs -> HLO module protos -> TpuGraphs node features.

`featurize_jax(fn, *args)` lowers and compiles a function with `jax.jit`, takes the serialized
``xla.HloModuleProto`` of either the OPTIMIZED module (after XLA's CPU pipeline: fusion, layout
assignment, ...; ``stage="optimized"``, the default) or the module as lowered from JAX before any
XLA pass (``stage="unoptimized"``), and feeds it to the HLO featurizer
(`graphcost.frontend.hlo.featurizer.featurize_module`), giving the 140-column node features, opcodes
and edges of the TpuGraphs schema.

APIs used (jax/jaxlib 0.10): ``jax.jit(fn).lower(*args)`` -> ``Lowered``;
``Lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()`` (unoptimized);
``Lowered.compile(compiler_options=...)`` -> ``Compiled``;
``Compiled.runtime_executable().hlo_modules()[0].as_serialized_hlo_module_proto()`` (optimized).

JAX is an optional extra (``pip install graphcost[jax]``): it is imported inside functions only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Literal

if TYPE_CHECKING:
    from graphcost.frontend.hlo.featurizer import FeaturizedModule
    from graphcost.frontend.hlo.kernels import Kernel

Stage = Literal["optimized", "unoptimized"]


def require_jax():
    """Import and return `jax`, or raise an ImportError that says how to install it."""
    try:
        import jax  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "the JAX frontend needs JAX: install it with `pip install 'graphcost[jax]'` "
            "(jax, jaxlib, flax, optax)") from exc
    return jax


def jax_versions() -> dict[str, str]:
    """Versions of jax / jaxlib / flax / optax that are importable (for dataset metadata)."""
    import importlib

    out = {}
    for name in ("jax", "jaxlib", "flax", "optax"):
        try:
            out[name] = importlib.import_module(name).__version__
        except Exception:  # noqa: BLE001 - a missing optional package is just not recorded
            continue
    return out


def lower(fn: Callable, args: tuple, jit_kwargs: dict | None = None):
    """``jax.jit(fn, **jit_kwargs).lower(*args)`` (a `jax.stages.Lowered`)."""
    jax = require_jax()
    return jax.jit(fn, **(jit_kwargs or {})).lower(*args)


def compile_lowered(lowered, compiler_options: dict[str, Any] | None = None):
    """Compile a `Lowered` with optional per-compilation XLA options (e.g. ``{"xla_backend_optimization_level": 1}``)."""
    return lowered.compile(compiler_options=compiler_options) if compiler_options else lowered.compile()


def optimized_hlo_bytes(compiled) -> bytes:
    """Serialized HloModuleProto of a compiled executable's (first) optimized module."""
    modules = compiled.runtime_executable().hlo_modules()
    if not modules:
        raise RuntimeError("compiled executable exposes no HLO module")
    return modules[0].as_serialized_hlo_module_proto()


def executable_stats(compiled):
    """`graphcost.frontend.hlo.compiled_stats` of a compiled executable's optimized module: (7,) float64."""
    from graphcost.frontend.hlo.compiled_stats import compiled_stats
    from graphcost.frontend.hlo.hlo_proto import parse_hlo_module

    return compiled_stats(parse_hlo_module(optimized_hlo_bytes(compiled), "optimized HloModuleProto"))


def optimized_kernels(compiled) -> dict[str, Kernel]:
    """`graphcost.frontend.hlo.kernels.module_kernels` of a compiled executable's optimized module."""
    from graphcost.frontend.hlo.hlo_proto import parse_hlo_module
    from graphcost.frontend.hlo.kernels import module_kernels, trip_counts

    module = parse_hlo_module(optimized_hlo_bytes(compiled), "optimized HloModuleProto")
    return module_kernels(module, trip_counts(compiled.as_text()))


def unoptimized_hlo_bytes(lowered) -> bytes:
    """Serialized HloModuleProto of the module as lowered from JAX (before XLA passes)."""
    return lowered.compiler_ir("hlo").as_serialized_hlo_module_proto()


def hlo_module_bytes(fn: Callable, args: tuple, stage: Stage = "optimized",
                     compiler_options: dict[str, Any] | None = None) -> bytes:
    """HloModuleProto bytes of `jax.jit(fn)` at `args`.

    Args:
        fn: a JAX function.
        args: example arguments (a tuple).
        stage: "optimized" (after XLA's passes, what runs) or "unoptimized" (as lowered from JAX).
        compiler_options: per-compilation XLA options for the optimized stage.

    Returns:
        The serialized `HloModuleProto`.

    Raises:
        ValueError: an unknown `stage`.
    """
    lowered = lower(fn, args)
    if stage == "unoptimized":
        return unoptimized_hlo_bytes(lowered)
    if stage != "optimized":
        raise ValueError(f"stage must be 'optimized' or 'unoptimized', got {stage!r}")
    return optimized_hlo_bytes(compile_lowered(lowered, compiler_options))


def featurize_hlo_bytes(data: bytes) -> FeaturizedModule:
    """Parse HloModuleProto bytes and featurize them.

    Args:
        data: a serialized `HloModuleProto` (from `hlo_module_bytes`, or a file XLA dumped).

    Returns:
        TpuGraphs node features (N, 140), opcodes, edges and computation splits.
    """
    from graphcost.frontend.hlo.featurizer import featurize_module
    from graphcost.frontend.hlo.hlo_proto import parse_hlo_module

    return featurize_module(parse_hlo_module(data))


def featurize_jax(fn: Callable, *args: Any, stage: Stage = "optimized",
                  compiler_options: dict[str, Any] | None = None) -> FeaturizedModule:
    """Featurize a JAX function at example arguments.

    Args:
        fn: a JAX function.
        *args: its example arguments.
        stage: "optimized" (after XLA's passes) or "unoptimized" HLO.
        compiler_options: per-compilation XLA options for the optimized stage.

    Returns:
        The TpuGraphs features of the program's HLO module.

    Example:
        ```python
        import jax.numpy as jnp

        fm = featurize_jax(lambda x: jnp.tanh(x @ x.T), jnp.ones((4, 8)))
        fm.node_feat.shape  # (N, 140)
        ```
    """
    return featurize_hlo_bytes(hlo_module_bytes(fn, args, stage, compiler_options))


# --- instruction metadata -------------------------------------------------------------------
# The HLO dataclasses keep what the featurizer needs; the collector additionally needs each
# instruction's `metadata.op_name` (which carries JAX named scopes) to map JAX equations to HLO
# instructions, read here from the parsed message (HloInstructionProto.metadata = 7, OpMetadata.op_name = 2).

def instruction_op_names(data: bytes) -> dict[int, tuple[str, str]]:
    """Map instruction id -> (opcode, metadata.op_name) for every instruction of the module."""
    from graphcost.frontend.hlo.proto_decode import decode
    from graphcost.frontend.hlo.protos import hlo_tuning_pb2 as pb

    module = decode(pb.HloModuleProto, data, "HloModuleProto")
    return {inst.id: (inst.opcode, inst.metadata.op_name)
            for comp in module.computations for inst in comp.instructions}
