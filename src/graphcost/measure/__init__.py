"""Timing compiled programs on a noisy machine.

`interleaved`: the protocol inside one process (rounds of interleaved calls, minimum per visit,
median over rounds); `cross_process`: the protocol over P fresh processes, its driver side
(`measure_processes`) and the label with its noise statistics; `worker`: one measuring process
(``python -m`` with five positional arguments); `program_check`: a user's program prepared and
run once in a child process, each step under a deadline, before it is tuned or measured; `child_call`: a graphcost
function run on such a program in a fresh process under a deadline (rank's costing, profile's describing);
`memory_maps`: how many executables one process can hold. Imports `programs/` and below, never `collect/`.
"""
