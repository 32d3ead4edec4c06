"""graphcost.runs: what every training run keeps, for the cost models (`graphcost train`) and
LayerDAG (`graphcost dag train`) alike.

Modules, lowest first (a module imports only those above it, never below):

  run_json      run.json: its name, RunInfoError, the field checks each kind of run builds its own
                schema from, and finding it from a run directory, checkpoint or fold
  lr_schedule   AdamW parameter groups and training memory, warm-up + cosine learning rate, gradient clipping
  checkpoint    atomic, pickle-free checkpoints (torch.load(weights_only=True))
  distributed   data-parallel training under torchrun (DistContext), device checks
  metrics_log   metrics.csv (+ TensorBoard) of a run
  run_dir       where a run is written (--out, runs/latest, a fresh runs/<model>-<time>-<random>) and
                whether it can be resumed
"""
