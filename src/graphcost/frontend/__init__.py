"""The JAX/XLA frontend: real programs, their configuration spaces and their TpuGraphs-schema graphs.

Two sub-packages, one job each, in import order (each imports only the ones before it, plus
`graphcost.data` and the floor-0 modules):

1. `hlo/`: HLO modules and protobufs. Decoding (`protos/`, `protowire`, `proto_decode`,
   `hlo_proto`, `tuning_proto`), the TpuGraphs opcodes and node features (`opcodes`,
   `featurizer`) and the conversion of TpuGraphs autotuner records to npz files (`convert`).
2. `programs/`: JAX programs and their configuration spaces. Lowering and featurizing a program
   (`jax_program`), compiling its configurations and JAX's persistent cache (`compile`), the
   model zoo (`zoo/`), per-node layouts (`layouts`) and XLA CPU compiler options (`flags`,
   `xla_options`).

Timing these programs is `graphcost.measure`; collecting datasets from them is `graphcost.collect`.
Nothing is imported here: import the modules themselves.
"""
