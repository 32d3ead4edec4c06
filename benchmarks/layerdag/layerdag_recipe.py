"""The LayerDAG benchmark recipe (issue 5), shared by the bench_layerdag*.py scripts.

The scripts are run as `python benchmarks/layerdag/bench_layerdag*.py`, which puts this folder on sys.path,
so they import these constants instead of repeating them. Each value's evidence is in BENCHMARKS.md
("LayerDAG (issue 5)") and benchmarks/history/layerdag-2026-11-23-default-cv.md.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from graphcost.layerdag import dag_recipe  # noqa: E402  (the library's defaults: `graphcost dag train` with no options)

# Both data sets: the small model, AdamW at this lr with cosine decay, per-module best.pt.
LR, LR_DECAY = dag_recipe.LR, dag_recipe.LR_DECAY

# LP: 20,000 graphs (16,000 train) gave validity 0.916 ± 0.017 over 5 sampling seeds (a second
# training seed 0.896 ± 0.033); 10,000 gave 0.884 ± 0.012 at the same 30 epochs.
LP_GRAPHS, LP_EPOCHS, LP_STEPS = 20000, 30, 128

# TPU Tile: classifier-free guidance (label dropout 0.1) on a 100-epoch model, ratio over 5 sampling
# seeds with 3 surrogate fits each: 0.870 ± 0.026 at w = 0.75, 0.832 ± 0.041 at w = 1; unguided
# 0.805 ± 0.090 with one fit. w was picked on these seeds and test split; over 10 seeds 0.858 ± 0.028
# at w = 0.75 vs 0.803 ± 0.064 at w = 1. 10-fold cross-validation of this recipe: pooled 0.739.
TPU_EPOCHS, TPU_LABEL_DROPOUT, TPU_GUIDANCE = 100, dag_recipe.LABEL_DROPOUT, dag_recipe.GUIDANCE
TPU_LABEL_BALANCE = 0.0  # --label-balance 0.5 / 0.75 gave 0.867 ± 0.035 / 0.848 ± 0.067 at w = 0.75: off

# Scoring: one seed's ratio varies by ±0.03-0.09, so the mean over sampling seeds is reported, and
# each Pearson is the mean of 3 surrogate-regressor fits (one fit varies by ±0.02-0.03).
SAMPLE_SEEDS = 5
SURROGATE_EPOCHS, SURROGATE_REPEATS = 100, 3
