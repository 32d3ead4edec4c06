"""LayerDAG (Li et al.): layer-size predictor + node-attribute diffusion + edge diffusion, §III.

Generation of layer l+1 from G(≤l) (§III-B): |V(l+1)| ~ p(·|G(≤l)); X(l+1) by discrete diffusion
given G(≤l) and the size; E(l+1) by discrete diffusion over candidates V(≤l) × V(l+1). The three
modules share nothing but the data; they are trained together, teacher-forced over all layers of
all graphs (`graphcost.layerdag.batch`). Conditioning: a sinusoidal embedding of the graph label (§V-A)
is added to every module's inputs; the label is standardised (after log if all labels are > 0).
Each module has its OWN label embedding, so the three parameter groups (`MODULES`) are disjoint:
the summed loss trains them exactly as three independent models (paper §III), and each can keep
the weights of its own best validation epoch (`graphcost.layerdag.train`).

Classifier-free guidance (Ho & Salimans, 2022; an addition, not in the LayerDAG paper): with
`label_dropout` p > 0, training replaces each graph's label embedding by the null (zero) embedding
with probability p, so one network learns both p(·|y) and p(·). Sampling with guidance weight w
then uses the logits ℓ_w = ℓ(y) + w (ℓ(y) − ℓ(∅)), i.e. p_w ∝ p(·|y)^(1+w) / p(·)^w, for the layer
sizes, the node attributes' x̂_0 and the edges' x̂_0 (`graphcost.layerdag.sample`), which sharpens how
strongly the generated DAG follows its label.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from graphcost.layerdag.denoisers import EdgeDenoiser, NodeDenoiser
from graphcost.layerdag.diffusion import MarginalDiffusion
from graphcost.layerdag.encoder import SinusoidalEmbedding
from graphcost.layerdag.layer_size import LayerSizePredictor

# the three independently trained modules: name -> attribute prefixes of their parameters
MODULES = {
    "size": ("size_model.", "size_label_emb."),
    "node": ("node_model.", "node_label_emb."),
    "edge": ("edge_model.", "edge_label_emb."),
}
_LEGACY_LABEL_EMB = "label_emb."  # checkpoints before per-module embeddings: one shared label MLP


@dataclass
class LayerDAGConfig:
    num_categories: int
    max_layer_size: int  # S_max: largest layer in the training data
    max_layers: int  # L_max: most layers in the training data (schedule eq. 1, sampling cap)
    max_nodes: int  # most nodes in the training data (sampling cap)
    node_marginal: list[float] = field(default_factory=list)  # m for node attributes
    edge_density: float = 0.1  # ρ: prior probability of a candidate edge
    conditional: bool = False
    label_log: bool = False
    label_mean: float = 0.0
    label_std: float = 1.0
    dim: int = 96
    size_mpnn_layers: int = 2
    node_mpnn_layers: int = 2
    edge_mpnn_layers: int = 3
    transformer_layers: int = 1
    heads: int = 4
    T_node: int = 32
    T_edge: int = 32
    # the node denoiser gets set statistics (|V(l+1)|, noisy and layer-l attribute histograms; see
    # denoisers.NodeDenoiser); False only for checkpoints from before they existed
    node_set_features: bool = False
    # the edge denoiser gets each candidate's view of its target's noisy predecessor set (see
    # denoisers.EdgeDenoiser); False only for checkpoints from before they existed
    edge_set_features: bool = False
    # the layer-size head gets the attribute histogram of the deepest layer (see layer_size); False
    # only for checkpoints from before it existed
    size_set_features: bool = False
    # classifier-free guidance: chance that training drops a graph's label (null embedding); 0 = never
    label_dropout: float = 0.0

    @classmethod
    def sized(cls, size: str, **stats) -> "LayerDAGConfig":
        """'small': a CPU default that trains in minutes; 'paper': widths/depths/steps of the
        LayerDAG tpu_tile configuration (one shared width, the largest of its modules' widths 512
        is cut to 256 to fit one dim)."""
        stats = {"node_set_features": True, "edge_set_features": True, "size_set_features": True, **stats}
        if size == "small":
            return cls(**stats)
        if size == "paper":
            # numbers (not code) from the public LayerDAG repo's configs/LayerDAG/tpu_tile.yaml (Graph-COM/LayerDAG)
            return cls(**stats, dim=256, size_mpnn_layers=3, node_mpnn_layers=2, edge_mpnn_layers=4,
                       transformer_layers=1, heads=4, T_node=64, T_edge=16)  # fmt: skip
        raise ValueError(f"unknown model size '{size}' (choose small or paper)")


class LayerDAG(nn.Module):
    def __init__(self, config: LayerDAGConfig):
        super().__init__()
        c = self.config = config
        if len(c.node_marginal) != c.num_categories:
            raise ValueError(f"node_marginal has {len(c.node_marginal)} entries for {c.num_categories} categories")
        d = c.dim
        self.size_label_emb = SinusoidalEmbedding(d, scale=5.0)
        self.node_label_emb = SinusoidalEmbedding(d, scale=5.0)
        self.edge_label_emb = SinusoidalEmbedding(d, scale=5.0)
        self.size_model = LayerSizePredictor(c.num_categories, c.max_layer_size, d, c.size_mpnn_layers, c.size_set_features)
        self.node_model = NodeDenoiser(c.num_categories, d, c.node_mpnn_layers, c.transformer_layers, c.heads, c.node_set_features)
        self.edge_model = EdgeDenoiser(c.num_categories, d, c.edge_mpnn_layers, c.edge_set_features)
        self.node_diffusion = MarginalDiffusion(torch.tensor(c.node_marginal), c.T_node)
        self.edge_diffusion = MarginalDiffusion(torch.tensor([1 - c.edge_density, c.edge_density]), c.T_edge)

    # ---------------- conditioning ----------------
    def normalise_label(self, labels: torch.Tensor) -> torch.Tensor:
        c = self.config
        x = labels.to(torch.float32)
        if c.label_log:
            x = torch.log(x.clamp_min(1e-12))
        return (x - c.label_mean) / c.label_std

    def cond(self, labels: torch.Tensor | None, n: int, module: str, keep: torch.Tensor | None = None) -> torch.Tensor:
        """(n, d) label embeddings of `module` ('size', 'node' or 'edge'); zeros (the null label) for
        an unconditional model or no labels, and for the rows where `keep` (n, 1) is 0."""
        if module not in MODULES:
            raise ValueError(f"unknown LayerDAG module '{module}' (choose {', '.join(MODULES)})")
        if not self.config.conditional or labels is None:
            return torch.zeros(n, self.config.dim, device=self.device)
        if torch.isnan(labels).any():
            raise ValueError("a conditional LayerDAG needs a label for every graph")
        emb = getattr(self, f"{module}_label_emb")(self.normalise_label(labels.to(self.device)))
        return emb if keep is None else emb * keep

    @property
    def device(self) -> torch.device:
        """Where the networks' parameters live (every input is moved here; noise is drawn on CPU)."""
        return next(self.parameters()).device

    # ---------------- per-module weights ----------------
    @staticmethod
    def module_of(key: str) -> str:
        """The module ('size' / 'node' / 'edge') a state_dict key belongs to."""
        for name, prefixes in MODULES.items():
            if key.startswith(prefixes):
                return name
        raise KeyError(f"state_dict key '{key}' belongs to no LayerDAG module")

    def module_state(self, module: str) -> dict[str, torch.Tensor]:
        """Detached CPU copies of one module's parameters and buffers."""
        return {k: v.detach().to("cpu", copy=True) for k, v in self.state_dict().items() if self.module_of(k) == module}

    def load_state_dict(self, state, strict: bool = True, assign: bool = False):
        """Also accepts checkpoints from before per-module label embeddings: their shared
        `label_emb.*` weights are copied into all three modules' embeddings (same function)."""
        state = dict(state)
        legacy = [k for k in state if k.startswith(_LEGACY_LABEL_EMB)]
        for k in legacy:
            v = state.pop(k)
            for module in MODULES:
                state[f"{module}_{k}"] = v
        return super().load_state_dict(state, strict=strict, assign=assign)

    # ---------------- training ----------------
    def loss(self, b: dict[str, torch.Tensor], labels: torch.Tensor, generator: torch.Generator) -> dict[str, torch.Tensor]:
        """Teacher-forced losses for one `build_batch` batch (CPU tensors); labels (B,) raw graph labels (NaN if none).

        The diffusion noise (timesteps t and x_t ~ q(x_t | x_0)) is drawn on CPU with the CPU
        `generator`, then the batch moves to the model's device: the random stream, and so a
        resumed run, is the same whichever device trains."""
        c = self.config
        B = labels.shape[0]
        n_ex = b["p_graph"].shape[0]
        # ---- noise, on CPU ----
        sets, set_idx = torch.unique(b["n_ex"], return_inverse=True)  # sets = prefix examples with l < L
        S, M = sets.shape[0], int(b["n_pos"].max()) + 1
        t_set = torch.randint(1, c.T_node + 1, (S,), generator=generator)
        x_t = self.node_diffusion.q_sample(b["n_attr"], t_set[set_idx], generator)
        E = b["e_graph"].shape[0]
        if E:
            t_e = torch.randint(1, c.T_edge + 1, (E,), generator=generator)
            e_t = self.edge_diffusion.q_sample(b["c_label"], t_e[b["c_ex"]], generator).bool()
        dev = self.device
        if dev.type != "cpu":
            b = {k: v.to(dev, non_blocking=True) for k, v in b.items()}
            sets, set_idx, t_set, x_t = sets.to(dev), set_idx.to(dev), t_set.to(dev), x_t.to(dev)
            if E:
                t_e, e_t = t_e.to(dev), e_t.to(dev)
        keep = None  # (B, 1) 0 where classifier-free guidance training drops the label
        if self.training and c.label_dropout > 0:
            keep = (torch.rand(B, generator=generator) >= c.label_dropout).to(torch.float32).unsqueeze(-1).to(dev)
        cond_s = self.cond(labels, B, "size", keep)[b["p_graph"]]  # (P, d) per prefix example
        cond_n = self.cond(labels, B, "node", keep)[b["p_graph"]]  # (P, d)
        cond_e = self.cond(labels, B, "edge", keep)  # (B, d)

        # layer size: CE over sizes 0..S_max (LayerDAG §III-B)
        logits = self.size_model(b["p_attr"], b["p_depth"], b["p_edge_index"], b["p_batch"], n_ex, b["p_layer"], cond_s)
        size_loss = F.cross_entropy(logits, b["size_target"].clamp_max(c.max_layer_size))

        # node attributes: from x_t ~ q(x_t|x_0) per set, predict x_0 (D3PM x0-parameterisation)
        g = self.node_model.graph_context(b["p_attr"], b["p_depth"], b["p_edge_index"], b["p_batch"], n_ex, cond_n)
        x_pad = torch.zeros(S, M, dtype=torch.long, device=dev)
        x_pad[set_idx, b["n_pos"]] = x_t
        pad = torch.ones(S, M, dtype=torch.bool, device=dev)
        pad[set_idx, b["n_pos"]] = False
        node_logits = self.node_model(g[sets], x_pad, pad, t_set, b["p_layer"][sets], cond_n[sets])  # (S, M, C)
        node_loss = F.cross_entropy(node_logits[set_idx, b["n_pos"]], b["n_attr"])

        # edges: from noisy candidate states e_t ~ q(e_t|e_0), predict e_0 (binary D3PM)
        if E:
            ei = torch.cat([b["a_edge_index"], torch.stack([b["c_src"][e_t], b["c_dst"][e_t]])], 1)
            edge_logits = self.edge_model(
                b["a_attr"], b["a_depth"], b["a_flag"], ei, b["a_batch"], E, t_e, cond_e[b["e_graph"]],
                b["c_src"], b["c_dst"], b["c_ex"], e_t.long(),
            )  # fmt: skip
            edge_loss = F.binary_cross_entropy_with_logits(edge_logits, b["c_label"].float())
        else:
            edge_loss = torch.zeros((), device=dev)
        total = size_loss + node_loss + edge_loss
        return {"loss": total, "size": size_loss, "node": node_loss, "edge": edge_loss}

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def config_dict(self) -> dict:
        return asdict(self.config)


def label_normalisation(labels: list[float | None]) -> dict:
    """conditional / label_log / label_mean / label_std from the training labels."""
    ys = [y for y in labels if y is not None and math.isfinite(y)]
    if not ys or len(ys) < len(labels):
        return {"conditional": False}
    t = torch.tensor(ys, dtype=torch.float64)
    use_log = bool((t > 0).all())
    if use_log:
        t = t.log()
    std = float(t.std()) if t.numel() > 1 else 1.0
    return {"conditional": True, "label_log": use_log, "label_mean": float(t.mean()), "label_std": std or 1.0}
