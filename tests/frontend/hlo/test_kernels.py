"""The kernels of an optimized module: fingerprints, graphs, analytical cost, and their match with a profile."""

import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from graphcost.frontend.programs.jax_program import optimized_kernels  # noqa: E402
from graphcost.frontend.hlo.featurizer import NODE_FEAT_DIM, featurize_module  # noqa: E402


def _kernels(fn, *args, options=None):
    return optimized_kernels(jax.jit(fn).lower(*args).compile(compiler_options=options))


def _one(kernels, opcode):
    found = [k for k in kernels.values() if k.opcode == opcode]
    assert found, f"no {opcode} kernel in {[k.kind for k in kernels.values()]}"
    return found[0]


def _matmul(kernels, flops):
    """The kernel that does the matmul (a dot thunk, or a library fusion holding the dot)."""
    found = [k for k in kernels.values() if k.flops == flops]
    assert len(found) == 1, [(k.kind, k.flops) for k in kernels.values()]
    return found[0]


def test_the_same_kernel_in_two_programs_has_one_fingerprint():
    a, b, flops = jnp.ones((32, 48)), jnp.ones((48, 16)), 2 * 32 * 48 * 16
    one = _matmul(_kernels(lambda x, y: x @ y, a, b), flops)
    two = _matmul(_kernels(lambda x, y, z: jnp.tanh(x @ y) + z, a, b, jnp.ones((32, 16))), flops)
    assert one.fingerprint == two.fingerprint  # names differ between the modules, the computation does not
    other = _matmul(_kernels(lambda x, y: x @ y, jnp.ones((32, 40)), jnp.ones((40, 16))), 2 * 32 * 40 * 16)
    assert other.fingerprint != one.fingerprint  # another shape, another kernel


def test_matmul_cost_and_graph():
    k = _matmul(_kernels(lambda x, y: x @ y, jnp.ones((32, 48)), jnp.ones((48, 16))), 2 * 32 * 48 * 16)
    assert k.bytes == 4 * (32 * 48 + 48 * 16 + 32 * 16)
    fm = featurize_module(k.graph)
    assert fm.node_feat.shape[1] == NODE_FEAT_DIM and "dot" in fm.opcode_names
    assert fm.opcode_names[-1] == k.opcode and fm.opcode_names.count("parameter") >= 2


def test_a_loop_fusion_is_its_fused_computation_and_a_loop_has_no_graph():
    def f(x):
        return jax.lax.fori_loop(0, 3, lambda i, c: jnp.exp(c) * 2.0 + 1.0, x)

    kernels = _kernels(f, jnp.ones((64, 64)))
    loop = _one(kernels, "while")
    assert loop.control_flow and loop.graph is None
    fusions = [k for k in kernels.values() if k.opcode == "fusion"]
    assert fusions
    body = max(fusions, key=lambda k: k.transcendentals)
    assert body.transcendentals == 64 * 64 and body.flops >= 2 * 64 * 64
    fm = featurize_module(body.graph)
    assert "exponential" in fm.opcode_names and "fusion" in fm.opcode_names


def test_every_profiled_kernel_is_a_kernel_of_the_module():
    from graphcost.measure.kernel_profile import profile_calls

    def f(x, w):
        return jax.lax.fori_loop(0, 2, lambda i, c: jnp.tanh(c @ w) + 1.0, x).T @ x

    x = jnp.ones((48, 48))
    exe = jax.jit(f).lower(x, x).compile()
    kernels = optimized_kernels(exe)
    profile = profile_calls([lambda: exe(x, x)], [2])[0]
    assert set(profile.kernels) <= set(kernels)
