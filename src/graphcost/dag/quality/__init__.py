"""LayerDAG evaluation (paper §V): distribution statistics (MMD), uniqueness/novelty, LP validity,
and the surrogate-regressor Pearson protocol for conditional generation."""
