"""The LayerDAG recipe that `graphcost dag train` and `dag sample` use with no options: the one BENCHMARKS.md
measures (BENCHMARKS.md, "LayerDAG"; `benchmarks/layerdag/layerdag_recipe.py` adds the benchmarks' data sizes and epochs).

* AdamW at `LR` with cosine decay to 0 over the epochs (`LR_DECAY`), on both data sets;
* on labelled data (TPU Tile), classifier-free guidance: training replaces a graph's label by the null
  label with probability `LABEL_DROPOUT` (Ho & Salimans, 2022), and sampling guides with weight
  `GUIDANCE`: on a 100-epoch TPU Tile model the ratio of Pearson correlations was 0.870 ± 0.026 at
  w = 0.75 over 5 sampling seeds, 0.832 ± 0.041 at w = 1, 0.805 ± 0.090 unguided.

Unlabelled data (LP) trains without label dropout, and a model trained without it samples unguided.
"""

LR = 3e-3
LR_DECAY = "cosine"
LABEL_DROPOUT = 0.1  # labelled training graphs only
GUIDANCE = 0.75  # sampling a model trained with label dropout


def label_dropout_for(labelled: bool) -> float:
    """The recipe's label dropout for training graphs that are (all) labelled, or not."""
    return LABEL_DROPOUT if labelled else 0.0


def guidance_for(config) -> float:
    """The recipe's guidance weight for a model with LayerDAG `config`: `GUIDANCE` when it was trained
    conditional with label dropout (it has a null-label model to guide against), else 0."""
    return GUIDANCE if config.conditional and config.label_dropout > 0 else 0.0
