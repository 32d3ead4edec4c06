"""graphcost.inference: using a trained cost model (`graphcost evaluate`, `rank`, `predict`, and the
tuner's scorers). Nothing here trains; `graphcost.tuning` imports this package, never `graphcost.train`.

Modules, lowest first (a module imports only those above it, never below):

  cost_model    the CostModel contract (kind, trained_on, score(prepared)) every scorer here keeps
  run_info      run.json of a cost-model run: the fields `graphcost train` records and their check on load
  ranking       scoring every configuration of a graph (with TTA), ranking metrics, EvalReport
  blend         the blend of a graph model with the tree ranker and a prior: its scores, its weights chosen
                on the validation graphs, its fitting (by `graphcost train`) and its files
  ensemble      loading checkpoints, fold ensembles and the blend beside a model: EnsemblePredictor
  predict       rankings of a graph's configurations and the TpuGraphs Kaggle submission CSV

The models come from `graphcost.models.registry`; checkpoints are read by `graphcost.runs.checkpoint`.
"""
