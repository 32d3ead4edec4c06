"""graphcost.workload: the verbs a user runs on their own program, above the search they use.

  rank      `graphcost rank PROGRAM`: the program's flag configurations costed through their kernels
  profile   `graphcost profile`: where the time goes, per kernel, in fresh processes, beside a tuned configuration
  verify    `graphcost verify`: a tuning run's kept speedup timed as a user would, in fresh processes

The program itself, by reference and prepared, is `graphcost.frontend.programs.user_program`; its first run in a
child process under deadlines `graphcost.measure.program_check`; `graphcost tune`'s search is `graphcost.tuning`.
"""
