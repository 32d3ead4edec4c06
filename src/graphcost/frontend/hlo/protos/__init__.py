"""Generated protobuf classes for the HLO and TpuGraphs tuning messages graphcost reads (see README.md)."""
