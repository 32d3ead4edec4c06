"""graphcost.train: training the configuration-ranking cost models (`graphcost train`).

Modules, lowest first (a module imports only those above it, never below):

  recipe        the default hyper-parameters of `graphcost train`, without heavy imports (for --help)
  trainer       the training loop (TrainConfig, Trainer): checkpoints, validation, early stopping
  spec          what a run trains from (RunSpec: data, TrainConfig, folds, seeds, trees) and its run.json form
  crossval      K-fold cross-validation by graph and its ensemble.json
  seeds         a seed ensemble (train --seeds n): n graph models on the train split, averaged
  plots         learning curves and validation-rank plots of a run
  fit           graphcost.fit(RunSpec): `graphcost train` from Python, trees and blend included
  train_run     `graphcost train`'s one verb: its options checked once (a registered model too), then fit's run

What a run keeps (checkpoints, run directory, run.json checks, metrics log, schedule, DDP) is
`graphcost.runs`; scoring, the fold ensemble, the trees' blend and rankings are `graphcost.inference`.
The data a run trains on is found by `graphcost.data.io.locate` and loaded by
`graphcost.data.transforms.pool`; the models and losses come from `graphcost.models`.
"""
