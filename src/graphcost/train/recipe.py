"""The default training recipe of `graphcost train` (and of the `Trainer`'s `TrainConfig`), in one
place and without heavy imports, so the CLI can show it in `--help`.

Chosen on the VALIDATION split of the shipped real CPU layout data (an ablation of every choice),
and checked on a one-program dataset with ~1,000 configurations split by configuration; the
documentation's Cost models page says why.

The budget follows the data (`trainer.graph_steps`): a graph with K configurations gives
min(ceil(K / batch_configs), MAX_STEPS_PER_GRAPH) batches an epoch; an epoch shorter than
MIN_EPOCH_STEPS makes whole passes until it is that long. Training stops after PATIENCE epochs
without a better validation score, and the best validation epoch is the model that is kept.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

MODEL = "tgraph"
EPOCHS = 40  # at most; early stopping ends sooner when validation stops improving (ablation: 40 > 20 by +0.02 τ)
PATIENCE = 6  # epochs without a better validation score before stopping (0: never)
MAX_STEPS_PER_GRAPH = 8  # TpuGraphs-size graphs (up to ~100k configurations) give at most this many batches an epoch
MIN_EPOCH_STEPS = 32  # one or two graphs: whole passes until an epoch has this many steps
LR = 1e-3  # TGraph §2.4.2
# TGraphConfig's defaults (readout "sum": ablation +0.06 τ over the paper's mean), and the score term of
# what the compiler did, read where the data carries config_compiled_stats (leave-family-out on cpu_layout:
# graph model +0.01-0.035 τ on the validation graphs of every fold; the guide's "Cost models" page)
MODEL_CONFIG: dict = {"compiled_stats": True}
TREES = True  # trees on the configuration table, blended in with the weight chosen on validation (inference/blend.py)
