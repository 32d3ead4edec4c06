"""No program of the held-out tune suite (benchmarks/tune/tune_suite.py) is in the shipped training data:
each suite program's unoptimized HLO, featurized like the collector featurizes it, is fingerprinted
(opcodes, edges and node features) and compared with every graph of every shipped dataset."""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

import numpy as np
import pytest

from graphcost.data.io.packed import shipped_data_dir
from graphcost.datasets import SHIPPED

pytest.importorskip("jax")  # the JAX extra: jax, flax, optax (what tests/frontend/programs needs too)
pytest.importorskip("flax")
pytest.importorskip("optax")

SUITE = Path(__file__).resolve().parents[1] / "tune" / "tune_suite.py"


def fingerprint(node_opcode: np.ndarray, edge_index: np.ndarray, node_feat: np.ndarray) -> str:
    """SHA-256 of a graph's opcodes, edges and node features (float32, as stored)."""
    h = hashlib.sha256()
    for arr in (np.asarray(node_opcode, np.int64), np.asarray(edge_index, np.int64),
                np.asarray(node_feat, np.float32)):
        h.update(str(arr.shape).encode())
        h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def _shipped_fingerprints() -> dict[str, str]:
    out = {}
    for name in SHIPPED:
        if "kernels" in name:  # a kernel dataset: one fused kernel per graph, never a whole program
            continue
        for path in sorted(shipped_data_dir(name).rglob("*.npz")):
            with np.load(path, allow_pickle=False) as z:
                out[fingerprint(z["node_opcode"], z["edge_index"], z["node_feat"])] = f"{name}/{path.name}"
    return out


def test_fingerprint_tells_graphs_apart():
    ops, edges, feat = np.array([1, 2]), np.array([[1, 0]]), np.zeros((2, 140), np.float32)
    assert fingerprint(ops, edges, feat) == fingerprint(ops.copy(), edges.copy(), feat.copy())
    assert fingerprint(ops, edges, feat) != fingerprint(ops, edges, feat + 1e-3)
    assert fingerprint(ops, edges, feat) != fingerprint(ops[::-1], edges, feat)


def test_no_tune_suite_program_is_in_the_shipped_data():
    pytest.importorskip("jax")
    from graphcost.frontend.programs.jax_program import featurize_hlo_bytes, lower, unoptimized_hlo_bytes

    spec = importlib.util.spec_from_file_location("tune_suite", SUITE)
    suite = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(suite)
    shipped = _shipped_fingerprints()
    assert len(shipped) > 50
    makers = [name for name in dir(suite) if name.startswith("make_")]
    assert len(makers) >= 14
    for name in makers:
        fn, args = getattr(suite, name)()
        fm = featurize_hlo_bytes(unoptimized_hlo_bytes(lower(fn, args)))
        fp = fingerprint(fm.node_opcode, fm.edge_index, fm.node_feat)
        assert fp not in shipped, f"tune-suite program {name} is in the shipped data as {shipped[fp]}"
