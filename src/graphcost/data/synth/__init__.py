"""graphcost.data.synth.collection: SYNTHETIC TpuGraphs-schema data for tests and benchmarks: random graphs, layout and tile
configurations, whole collections.
"""
