"""JAX programs and their configuration spaces.

`jax_program` lowers a JAX function and featurizes its HLO; `compile` compiles a program's
configurations (with threads) and sends compiles through JAX's persistent cache; `zoo/` names
the real JAX/Flax programs; `layouts` is the per-node layout space and `flags` with
`xla_options` the XLA CPU compiler-option space; `hlo_program` makes an XLA HLO module (a dump's
``*.hlo.pb``) a jittable program; `user_program` loads a user's program by reference
(``prog.py:make``, an XLA module) and prepares it (`TuneProgram`). Imports `hlo/` and below, never `measure/` or `collect/`.
"""
