"""HLO modules and protobufs: decoding, TpuGraphs opcodes and node features, autotuner conversion.

"proto" means protobuf in this package only. `protos/` holds the schema and its generated
classes; `protowire` walks the wire format to say where a message is damaged; `proto_decode`
decodes with the generated classes; `hlo_proto` and `tuning_proto` turn XLA's `HloModuleProto`
and TpuGraphs' tuning records into small dataclasses; `opcodes` and `featurizer` make the
TpuGraphs graph arrays of an HLO module; `convert` writes TpuGraphs autotuner records as npz
files. The lowest floor of the frontend: it imports only `graphcost.data` and below.
"""
