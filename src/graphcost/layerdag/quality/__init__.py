"""graphcost.layerdag.quality: how good a LayerDAG generator is (LayerDAG §V).

  statistics   distribution statistics of generated vs real graphs (MMD)
  novelty      uniqueness and novelty of generated graphs
  surrogate    the surrogate-regressor Pearson protocol for conditional generation

LP validity lives with the LP dataset (`graphcost.layerdag.datasets.lp`).

References:
    [LayerDAG] M. Li et al. LayerDAG: A Layerwise Autoregressive Diffusion Model for Directed Acyclic Graph
        Generation. ICLR 2025. https://arxiv.org/abs/2411.02322
"""
