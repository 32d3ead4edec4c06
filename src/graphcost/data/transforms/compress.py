"""Lossless base-7 compression of layout configuration features (TGraph §2.2.3).

Each configurable node's 18-d `node_config_feat` row is three 6-value layouts (output, input,
kernel; TpuGraphs README "Layout Config Features"). Every value is a dimension index in
{0..5} or the pad value -1, i.e. one of 7 symbols, so a 6-value layout is one base-7 number:

    code = sum_{i=0}^{5} (v_i + 1) * 7**i        in [0, 7**6 - 1] = [0, 117648]   # TGraph §2.2.3

and (K, C, 18) float32 becomes (K, C, 3) int32 — 6x fewer values, 6x fewer bytes.
Decompression is vectorised and works on numpy arrays and torch tensors alike, so the data
loader can decompress only the sampled configurations on the fly.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphcost.data.io.schema import SchemaError

LAYOUT_WIDTH = 6  # values per layout (tensor rank <= 6)
NUM_LAYOUTS = 3  # output, input, kernel
BASE = 7  # symbols -1..5
MIN_VALUE, MAX_VALUE = -1, 5
MAX_CODE = BASE**LAYOUT_WIDTH - 1  # 117648
POWERS = BASE ** np.arange(LAYOUT_WIDTH, dtype=np.int32)  # (6,) 1, 7, 49, ...


class CompressionError(SchemaError):
    """A value cannot be base-7 encoded (outside {-1..5} or not an integer), or a code is invalid.

    A `SchemaError` (hence a ValueError): the message names the file, the key and the problem.
    """

    def __init__(self, problem: str, source: str | Path | None = None, key: str = "node_config_feat"):
        super().__init__(source, key, problem)
        self.source = source

    def __reduce__(self):
        return (CompressionError, (self.problem, self.source, self.key))


def _raise_first(feat: np.ndarray, bad: np.ndarray, offset: int, why: str, source) -> None:
    """Raise a CompressionError for the first True of `bad`, index shifted by the chunk offset."""
    where = tuple(int(i) for i in np.argwhere(bad)[0])
    shown = (where[0] + offset,) + where[1:] if feat.ndim > 1 else where
    raise CompressionError(f"value {feat[where]!r} at index {shown} {why}", source)


def compress_layout_config(
    feat: np.ndarray, *, source: str | Path | None = None, offset: int = 0
) -> np.ndarray:
    """Encode layout configuration features, last axis 18 -> 3 base-7 codes.

    Args:
        feat: (..., 18) array, usually (k, C, 18) float32; values must be integers in {-1..5}.
        source: file name used in error messages.
        offset: index of `feat[0]` in the whole config axis (for error messages of chunks).
    Returns:
        (..., 3) int32 codes, code_j = sum_i (feat[..., 6j+i] + 1) * 7**i.   # TGraph §2.2.3
    Raises:
        CompressionError naming the first offending position and value.
    """
    feat = np.asarray(feat)
    if feat.shape[-1:] != (NUM_LAYOUTS * LAYOUT_WIDTH,):
        raise CompressionError(f"expected last axis of size 18, got shape {feat.shape}", source)
    if feat.dtype.kind == "f":
        bad = ~np.isfinite(feat) | (feat != np.round(feat))
        if bad.any():
            _raise_first(feat, bad, offset, "is not an integer (layout dimension indices are -1..5)", source)
    elif feat.dtype.kind not in "iu":
        raise CompressionError(f"unsupported dtype {feat.dtype}", source)
    bad = (feat < MIN_VALUE) | (feat > MAX_VALUE)  # checked before the cast, so 1e10 cannot wrap
    if bad.any():
        _raise_first(feat, bad, offset, "is outside the layout range -1..5", source)
    ints = feat.astype(np.int32)  # (..., 18)
    ints += 1  # symbols 0..6
    ints = ints.reshape(ints.shape[:-1] + (NUM_LAYOUTS, LAYOUT_WIDTH))  # (..., 3, 6)
    return (ints * POWERS).sum(axis=-1, dtype=np.int32)  # (..., 3)


def decompress_layout_config(codes):
    """Decode base-7 codes back to layout features, last axis 3 -> 18.

    Accepts a numpy array or a torch tensor of integer codes (..., 3); returns the same kind:
    numpy -> float32 ndarray, torch -> float32 tensor on the same device. Exact inverse of
    `compress_layout_config`: v_i = (code // 7**i) % 7 - 1.
    """
    if isinstance(codes, np.ndarray):
        if codes.dtype.kind not in "iu":
            raise CompressionError(f"codes must be integers, got dtype {codes.dtype}", key="config_codes")
        if codes.size and (codes.min() < 0 or codes.max() > MAX_CODE):
            raise CompressionError(f"codes must lie in [0, {MAX_CODE}]", key="config_codes")
        digits = (codes[..., None].astype(np.int32) // POWERS) % BASE  # (..., 3, 6)
        out = digits.astype(np.float32) - 1.0
        return out.reshape(codes.shape[:-1] + (NUM_LAYOUTS * LAYOUT_WIDTH,))
    import torch  # local: keep this module importable without torch for numpy users

    if not isinstance(codes, torch.Tensor):
        raise TypeError(f"codes must be a numpy array or torch tensor, got {type(codes).__name__}")
    if codes.dtype.is_floating_point or codes.dtype == torch.bool:
        raise CompressionError(f"codes must be integers, got dtype {codes.dtype}", key="config_codes")
    powers = torch.as_tensor(POWERS, device=codes.device, dtype=torch.int64)
    digits = torch.div(codes.to(torch.int64).unsqueeze(-1), powers, rounding_mode="floor") % BASE
    out = digits.to(torch.float32) - 1.0  # (..., 3, 6)
    return out.reshape(*codes.shape[:-1], NUM_LAYOUTS * LAYOUT_WIDTH)
