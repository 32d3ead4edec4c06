"""What `graphcost tune` and `graphcost.tune` do with no options, in one place: `TuneConfig`'s field
defaults and the command's option defaults both read these. Plain constants: importing this module costs
nothing, so the command line's ``--help`` stays fast."""

SPACE = "flags"
BUDGET = 32  # configurations measured per strategy
ROUND_SIZE = 4  # configurations measured together per round
RACE = 3  # the best configurations so far timed again with every round
PROCESSES = 3  # fresh processes of the final check
CONFIRM_PROCESSES = 9  # the confirmation's fresh processes at most, added while they disagree (tuning.ablation)
FINALISTS = 3  # candidates re-measured per batch of the final check
MIN_GAIN = 0.01  # the kept configuration beats the default by this share in every process
RTOL, ATOL = 1e-3, 1e-5  # the output check against the default
LEARNER = "auto"  # model+online's per-program model
SEED = 0
ROUNDS, CALLS, WARMUP = 5, 10, 2  # the in-search timing protocol (graphcost.measure.interleaved.TimingProtocol)
