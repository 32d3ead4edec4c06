#!/usr/bin/env bash
# The kernel collection (issue 63) on THIS machine: the zoo's programs in the flag space, every compiled kernel of
# every configuration timed (graphcost collect --kernels), in resumable chunks: re-run it to continue (finished graphs
# are kept; stop it with Ctrl-C at any time). Programs in zoo_layout_programs.txt's order (interleaved across the 25
# families, so a partial collection covers every family). OUT names the CPU: another CPU collects into another OUT.
# An independent repeat of a tenth of the programs: PROGRAMS=FILE OUT=..._repeat with the same parameters.
set -euo pipefail
cd "$(dirname "$0")/../.."
GC=${GC:-graphcost}
OUT=${OUT:-benchmarks/collections/cpu_zoo_kernels_flags_xeon}
$GC collect --kernels --space flags --mode both --single-thread --limit 0 --configs 16 --rounds 5 --calls 5 --warmup 2 \
  --seed 0 --processes 3 --compile-workers 2 --max-load "${MAX_LOAD:-2.0}" --max-wait "${MAX_WAIT:-60}" \
  --programs "$(paste -sd, "${PROGRAMS:-benchmarks/collections/zoo_layout_programs.txt}")" \
  --cache-dir "${CACHE:-/tmp/graphcost-cache}/zoo-kernels-flags" --out "$OUT"
