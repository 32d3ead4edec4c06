"""The JAX/XLA frontend: from real programs to measured TpuGraphs-schema graphs.

Four sub-packages, one job each, in import order (each imports only the ones before it, plus
`graphcost.data` and the floor-0 modules):

1. `hlo/`: HLO modules and protobufs. Decoding (`protos/`, `protowire`, `proto_decode`,
   `hlo_proto`, `tuning_proto`), the TpuGraphs opcodes and node features (`opcodes`,
   `featurizer`) and the conversion of TpuGraphs autotuner records to npz files (`convert`).
2. `programs/`: JAX programs and their configuration spaces. Lowering and featurizing a program
   (`jax_program`), compiling its configurations and JAX's persistent cache (`compile`), the
   model zoo (`zoo/`), per-node layouts (`layouts`) and XLA CPU compiler options (`flags`,
   `xla_options`).
3. `measure/`: timing. The interleaved protocol inside one process (`interleaved`), the
   cross-process protocol and its driver side (`cross_process`), one measuring process
   (`worker`, run as ``python -m``) and how many executables a process can hold (`memory_maps`).
4. `collect/`: `graphcost collect`. A collection's parameters and per-graph jobs (`jobs`), the
   local loop and its manifest (`local`), the same on a Ray cluster (`ray_backend`) and the
   data card (`card`).

Nothing is imported here: import the modules themselves.
"""
