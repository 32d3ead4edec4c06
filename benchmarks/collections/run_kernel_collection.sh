#!/usr/bin/env bash
# The kernel collection (issue 63) on THIS machine: the zoo's programs in the flag space, every compiled kernel of
# every configuration timed (graphcost collect --kernels), in resumable chunks: re-run it to continue (finished graphs
# are kept; stop it with Ctrl-C at any time). Programs in zoo_layout_programs.txt's order (interleaved across the 25
# families, so a partial collection covers every family). OUT names the CPU: another CPU collects into another OUT.
# An independent repeat of a tenth of the programs: PROGRAMS=FILE OUT=..._repeat with the same parameters.
# SPACE=layout: the same in the layout space (each configuration's kernels run under the default flags; their
# layouts are in the kernels' graphs).
set -euo pipefail
cd "$(dirname "$0")/../.."
GC=${GC:-graphcost}
SPACE=${SPACE:-flags}
case $SPACE in flags|layout) ;; *) echo "SPACE must be flags or layout" >&2; exit 2 ;; esac
OUT=${OUT:-collections/cpu_zoo_kernels_${SPACE}_xeon}
$GC collect --kernels --space "$SPACE" --mode both --single-thread --limit 0 --configs 16 --rounds 5 --calls 5 --warmup 2 \
  --seed 0 --processes 3 --compile-workers 2 --max-load "${MAX_LOAD:-2.0}" --max-wait "${MAX_WAIT:-60}" \
  --programs "$(paste -sd, "${PROGRAMS:-benchmarks/collections/zoo_layout_programs.txt}")" \
  --cache-dir "${CACHE:-/tmp/graphcost-cache}/zoo-kernels-$SPACE" --out "$OUT"
