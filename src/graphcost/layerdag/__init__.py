"""graphcost.layerdag: LayerDAG (Li et al., "LayerDAG: A Layerwise Autoregressive Diffusion Model of
Directed Acyclic Graphs for System"), a generator of directed acyclic graphs (`graphcost dag`).

Modules, in the order a DAG goes through them:

  dag_record, io  the DAG record and the flat npz format of DAG collections
  tokenise        the layerwise partition of a DAG into node layers (§III-A)
  batch           teacher-forced training batches over all layers of all graphs (§III-D)
  encoder         the DAG encoder: bidirectional MPNN, set pooling, sinusoidal embeddings (§III-D)
  diffusion       discrete denoising diffusion with a marginal prior (§II, §III-C)
  layer_size, denoisers
                  the layer-size predictor and the node-attribute and edge denoisers (§III-B, §III-C)
  model           LayerDAG: the three modules together (§III)
  train           training (LayerDAGTrainer, train_layerdag), checkpoints, best.pt selection
  denoising_schedule, sample
                  denoising schedules and layerwise autoregressive sampling (§III-B, §III-E)
  quality/        generator quality: MMD statistics, uniqueness and novelty, the surrogate protocol (§V)
  experiment      end-to-end experiments: generate from a model and score it
  draw            PNG drawings of a few DAGs
  datasets/       the LP (synthetic), TPU Tile and NAS-Bench-201 datasets and their split policy

A run directory's run.json is read by `graphcost.layerdag.dag_run_info`.

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""
