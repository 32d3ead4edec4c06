"""graphcost.train: training and using the configuration-ranking cost models (`graphcost train`,
`evaluate`, `rank`, `predict`).

Modules, lowest first (a module imports only those above it, never below):

  recipe        the default hyper-parameters of `graphcost train`, without heavy imports (for --help)
  losses        ranking losses over one graph's sampled configurations (pairwise hinge, ...)
  schedule      AdamW parameter groups, warm-up + cosine learning rate, gradient clipping
  checkpoint    atomic, pickle-free checkpoints (also LayerDAG's, `graphcost.dag.train`)
  distributed   data-parallel training under torchrun (DistContext), device checks
  metrics_log   metrics.csv (+ TensorBoard) of a run, shared with `graphcost dag train`
  ranking       scoring every configuration of a graph (with TTA), ranking metrics, EvalReport
  inference     loading checkpoints, fold ensembles and trees beside a model: EnsemblePredictor
  trainer       the training loop (TrainConfig, Trainer): checkpoints, validation, early stopping
  crossval      K-fold cross-validation by graph and its ensemble.json
  blend         the tree ranker beside a graph model and their blend weight
  predict       rankings and the TpuGraphs Kaggle submission CSV
  plots         learning curves and validation-rank plots of a run
  run_info      run.json of a run: what it records, its checks on load, and the settings a resumed
                run reads back (RunSettings)
  run_dir       where a run is written (--out, runs/latest, a fresh runs/<model>-<time>-<random>) and
                whether it can be resumed

The data a run trains on is found by `graphcost.data.io.locate` and loaded by
`graphcost.data.transforms.pool`; the models come from `graphcost.models.registry`.
"""
