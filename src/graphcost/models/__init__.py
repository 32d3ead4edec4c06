"""graphcost.models: learned cost models that score B configurations of one graph.

* `registry`            build_model(name, kind, **config), MODEL_NAMES, model_spec / model_from_spec
* `tgraph`              TGraph (Khizbullin et al. 2024) with its ablation switches
* `tpugraphs_baselines` TpuGraphs baselines: layout GraphSAGE (+ Graph Segment Training), tile
                        MLP / Early|Late SAGE|GCN
* `kaufman`             Kaufman et al. (MLSys'21): GraphSAGE | GAT | none x per-node | column-wise |
                        LSTM | Transformer reductions, directed or undirected
* `layers`              shared layers (embeddings, L2 SAGE, channel SE, cross-config attention, norm)
* `shared_nodes`        computing configuration-independent nodes once for all B configurations
* `precision`           --precision auto | fp32 | bf16: native-bf16 detection, the CPU to record
* `losses`              ranking losses over one graph's sampled configurations (pairwise hinge, ListMLE, ...)

Every model: ``model(batch: GraphBatch) -> Tensor (B,)``; LOWER score = predicted FASTER.

References:
    [TpuGraphs] P. M. Phothilimthana et al. TpuGraphs: A Performance Prediction Dataset on Large Tensor
        Computational Graphs. NeurIPS 2023 (Datasets and Benchmarks). https://arxiv.org/abs/2308.13490
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
    [Kaufman et al.] S. J. Kaufman et al. A Learned Performance Model for Tensor Processing Units. MLSys 2021.
        https://arxiv.org/abs/2008.01040
"""
