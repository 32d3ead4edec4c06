"""Standard scaling of node_feat[:134] (TGraph §2.2.5), fitted on training graphs only.

Semantics follow scikit-learn's StandardScaler (population variance, ddof=0):
    z = (x - mean) / scale,   scale = sqrt(var), and scale = 1 where a column is constant.
Columns 134..139 (layout minor-to-major, -1 padded) are categorical and pass through unchanged.

Fitting streams over many graphs: each graph's per-column (count, mean, M2) is merged with the
running totals by Chan et al.'s parallel update, in float64, so no graph set is ever stacked:
    n = n_a + n_b;  d = mean_b - mean_a;  mean = mean_a + d n_b / n;  M2 = M2_a + M2_b + d^2 n_a n_b / n
The fitted state is plain lists (`state_dict`), saved with a model checkpoint.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

NUM_SCALED = 134  # node_feat[:134] numerical + one-hot columns
STATE_VERSION = 1


def _node_feat_of(item: Any) -> np.ndarray:
    """Accept an array or anything with a `.node_feat` (PreparedGraph, LayoutGraph, TileGraph)."""
    feat = getattr(item, "node_feat", item)
    if hasattr(feat, "detach"):  # torch tensor
        feat = feat.detach().cpu().numpy()
    return np.asarray(feat)


class FeatureScaler:
    """StandardScaler for node_feat[:134]; `fit` on TRAINING graphs only, `transform` anywhere."""

    def __init__(self, num_features: int = NUM_SCALED):
        self.num_features = int(num_features)
        self.reset()

    def reset(self) -> None:
        """Forget all statistics."""
        self.n_samples = 0
        self.mean_ = np.zeros(self.num_features, dtype=np.float64)
        self._m2 = np.zeros(self.num_features, dtype=np.float64)

    # ---- fitting -------------------------------------------------------------------------
    def partial_fit(self, node_feat) -> "FeatureScaler":
        """Merge one graph's node features (N, >=134) into the running statistics."""
        x = _node_feat_of(node_feat)
        if x.ndim != 2 or x.shape[1] < self.num_features:
            raise ValueError(f"node_feat: expected shape (N, >={self.num_features}), got {x.shape}")
        x = x[:, : self.num_features].astype(np.float64)  # (N, 134)
        n_b = x.shape[0]
        if n_b == 0:
            return self
        if not np.isfinite(x).all():
            raise ValueError("node_feat: non-finite values cannot be scaled")
        mean_b = x.mean(axis=0)
        m2_b = ((x - mean_b) ** 2).sum(axis=0)
        n_a = self.n_samples
        n = n_a + n_b
        delta = mean_b - self.mean_
        self.mean_ = self.mean_ + delta * (n_b / n)  # Chan et al. merge
        self._m2 = self._m2 + m2_b + delta**2 * (n_a * n_b / n)
        self.n_samples = n
        return self

    def fit(self, graphs: Iterable) -> "FeatureScaler":
        """Fit from scratch on an iterable of training graphs (or (N, 140) arrays)."""
        self.reset()
        for g in graphs:
            self.partial_fit(g)
        if self.n_samples == 0:
            raise ValueError("FeatureScaler.fit: no nodes in the training graphs")
        return self

    # ---- fitted statistics ---------------------------------------------------------------
    @property
    def fitted(self) -> bool:
        return self.n_samples > 0

    @property
    def var_(self) -> np.ndarray:
        """(134,) population variance (ddof=0, like scikit-learn)."""
        return self._m2 / max(self.n_samples, 1)

    @property
    def scale_(self) -> np.ndarray:
        """(134,) std, with 1 for (numerically) constant columns so they map to 0, not NaN."""
        scale = np.sqrt(self.var_)
        tiny = scale <= 1e-10 * np.maximum(1.0, np.abs(self.mean_))
        return np.where(tiny, 1.0, scale)

    # ---- transform -----------------------------------------------------------------------
    def transform(self, node_feat):
        """(N, 140) -> (N, 140) float32 copy with [:134] standardised; numpy or torch in/out."""
        if not self.fitted:
            raise RuntimeError("FeatureScaler.transform called before fit / from_state_dict")
        if hasattr(node_feat, "detach"):  # torch tensor: stay in torch, same device
            import torch

            mean = torch.as_tensor(self.mean_, dtype=torch.float32, device=node_feat.device)
            scale = torch.as_tensor(self.scale_, dtype=torch.float32, device=node_feat.device)
            out = node_feat.to(torch.float32).clone()
            out[:, : self.num_features] = (out[:, : self.num_features] - mean) / scale
            return out
        x = np.asarray(node_feat)
        if x.ndim != 2 or x.shape[1] < self.num_features:
            raise ValueError(f"node_feat: expected shape (N, >={self.num_features}), got {x.shape}")
        out = x.astype(np.float32, copy=True)
        scaled = (x[:, : self.num_features].astype(np.float64) - self.mean_) / self.scale_
        out[:, : self.num_features] = scaled.astype(np.float32)
        return out

    # ---- persistence ---------------------------------------------------------------------
    def state_dict(self) -> dict:
        """Plain-Python state (lists of floats), JSON- and torch.save(weights_only)-friendly."""
        return {
            "version": STATE_VERSION,
            "num_features": self.num_features,
            "n_samples": int(self.n_samples),
            "mean": [float(v) for v in self.mean_],
            "m2": [float(v) for v in self._m2],
        }

    @classmethod
    def from_state_dict(cls, state: dict) -> "FeatureScaler":
        """Rebuild a fitted scaler; lists or arrays accepted; clear error on a malformed state."""
        try:
            version = int(state["version"])
            num = int(state["num_features"])
            mean = np.asarray(state["mean"], dtype=np.float64)
            m2 = np.asarray(state["m2"], dtype=np.float64)
            n = int(state["n_samples"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"FeatureScaler state: missing or malformed field ({err})") from err
        if version != STATE_VERSION:
            raise ValueError(f"FeatureScaler state: version {version} not supported (expected {STATE_VERSION})")
        if mean.shape != (num,) or m2.shape != (num,) or n < 0:
            raise ValueError(f"FeatureScaler state: expected mean/m2 of length {num}, got {mean.shape}/{m2.shape}")
        scaler = cls(num)
        scaler.mean_, scaler._m2, scaler.n_samples = mean, m2, n
        return scaler
