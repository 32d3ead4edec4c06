"""What the compiler did to each configuration, as scale-free columns that mean the same in every
program: the input the tree ranker's table (`graphcost.models.config_table`) and TGraph's
``compiled_stats`` term (`graphcost.models.tgraph`) read.

From a graph's (K, 7) ``config_compiled_stats`` (`graphcost.frontend.hlo.compiled_stats`, columns
copy_bytes, strided_copy_bytes, copies, transpose_bytes, transposes, fusions, instructions), with
B = 4 Σ_n node_feat[n, 28] (the bytes of the graph's node outputs) and N its nodes:

    copy_bytes / B, strided_copy_bytes / B, transpose_bytes / B,
    copies / N, transposes / N, fusions / N, instructions / N

Each configuration's columns depend on that configuration alone, never on which others are
scored beside it.
"""

from __future__ import annotations

import numpy as np

COMPILED_COLUMNS = 7


def compiled_columns(compiled: np.ndarray | None, node_feat: np.ndarray, k: int) -> np.ndarray:
    """(k, 7) float32 scale-free columns (module docstring) of a graph's (k, 7) ``config_compiled_stats``
    rows; all NaN when `compiled` is None (the graph has no statistics)."""
    if compiled is None:
        return np.full((k, COMPILED_COLUMNS), np.nan, dtype=np.float32)
    c = np.asarray(compiled, dtype=np.float64)  # (k, 7)
    program_bytes = 4.0 * max(1.0, float(np.asarray(node_feat, dtype=np.float64)[:, 28].sum()))
    nodes = float(max(1, len(node_feat)))
    return np.hstack([c[:, [0, 1, 3]] / program_bytes, c[:, [2, 4, 5, 6]] / nodes]).astype(np.float32)
