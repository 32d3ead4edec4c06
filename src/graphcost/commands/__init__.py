"""The commands of the `graphcost` CLI (`graphcost.cli` builds the typer app from them).

One module per command or group, each with `register(app)`; thin: they parse and check the
options, call the library, and print. Library (torch, jax) imports happen inside the commands, so
`graphcost --help` stays fast.

  train, evaluate, rank, predict   cost models (`graphcost.train`)
  data                             the `data` group: download, card, synth, stats, split-configs, from-proto
  collect                          runtime collection of JAX programs (`graphcost.collect`)
  tune                             tuning a program's compiler configuration (`graphcost.tuning`)
  dag                              the `dag` group: LayerDAG train, sample, evaluate (`graphcost.layerdag`)

Shared: `common` (the one-line error `fail`, the option checks over `graphcost.guards.atomic`, --device,
--threads, the run helpers of the cost-model commands), `choices` (the choice options as enums),
`tables` (table / JSON / CSV output), `console` (the library's log lines on the terminal).
"""
