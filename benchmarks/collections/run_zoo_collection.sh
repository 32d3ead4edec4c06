#!/usr/bin/env bash
# The wide zoo collections (issue 33) on THIS machine: SPACE=layout (default; cpu_zoo_layout) or SPACE=flags
# (cpu_zoo_flags: the widened XLA CPU flag space, the same programs), in resumable chunks: re-run it to continue
# (finished graphs are kept; stop it with Ctrl-C at any time). STAGES=repeat REPEAT_SHARE=0.1 repeats a tenth
# of the finished graphs, spread over families; STAGES=relabel recomputes every label from the stored samples
# with the default --label (level-median; graphs measured before 2026-11-26 23:00 UTC carried plain medians);
# STAGES=annotate adds what the compiler did to each configuration (config_compiled_stats; nothing measured);
# STAGES=add PROCESSES=n raises a finished collection to n processes per graph (collect --action add-processes).
# REGIME=multi measures as `graphcost tune` does (XLA's CPU kernels multi-threaded, processes not pinned) into
# cpu_zoo_${SPACE}_mt: the same programs and configurations, labels of the regime the tuner measures in.
# SPACE=flags MODE=tuner samples the configurations as `graphcost tune` spreads its candidates (collect --mode tuner:
# half a random share of the options changed, half 1-3; fast-math at its default) into cpu_zoo_flags_tuner.
# PROGRAMS=FILE collects the programs of FILE in its order (zoo_flags_programs_by_cost.txt: the flag zoo's
# programs, cheapest first by their measuring time in cpu_zoo_flags, so a partial collection holds the most graphs).
# 25 families, programs in zoo_layout_programs.txt (interleaved across families, so a partial collection covers every family).
# Chunks are committed as they finish; once complete and repeated (its repeat meeting the target) it ships
# with a family split: python release/ship_collection.py OUT cpu_zoo_layout --title ... --command ...
set -euo pipefail
cd "$(dirname "$0")/../.."
GC=${GC:-graphcost}
SPACE=${SPACE:-layout}
case $SPACE in  # flags: 5 processes (with 3, two collections of the same graphs agreed to only 0.82)
  layout) SPACE_ARGS=(--space layout --mode both); PROCESSES=${PROCESSES:-3} ;;
  flags) SPACE_ARGS=(--space flags --mode "${MODE:-both}"); PROCESSES=${PROCESSES:-5} ;;
  *) echo "SPACE must be layout or flags" >&2; exit 2 ;;
esac
case ${REGIME:-single} in  # single: pinned, XLA single-threaded (the shipped collections); multi: as graphcost tune runs
  single) REGIME_ARGS=(--single-thread); SUFFIX= ;;
  multi) REGIME_ARGS=(--multi-thread --measure-core -1); SUFFIX=_mt ;;
  *) echo "REGIME must be single or multi" >&2; exit 2 ;;
esac
[ "${MODE:-both}" = both ] || SUFFIX=_${MODE}$SUFFIX
OUT=${OUT:-collections/cpu_zoo_$SPACE$SUFFIX}
COMMON=("${SPACE_ARGS[@]}" "${REGIME_ARGS[@]}" --limit 0 --configs 32 --rounds 5 --calls 5 --warmup 2 --seed 0 --processes "$PROCESSES"
        --compile-workers 2 --max-load "${MAX_LOAD:-2.0}" --max-wait "${MAX_WAIT:-60}"
        --programs "$(paste -sd, "${PROGRAMS:-benchmarks/collections/zoo_layout_programs.txt}")"
        --cache-dir "${CACHE:-/tmp/graphcost-cache}/zoo-$SPACE$SUFFIX" --out "$OUT")
case ${STAGES:-collect} in
  collect) $GC collect "${COMMON[@]}" ;;
  repeat) $GC collect "${COMMON[@]}" --action repeat --repeat-share "${REPEAT_SHARE:-1.0}" ;;
  relabel) $GC collect "${COMMON[@]}" --action relabel ;;  # labels of graphs measured by an older graphcost (plain median)
  annotate) $GC collect "${COMMON[@]}" --action annotate ;;  # config_compiled_stats for graphs collected before they existed
  add) $GC collect "${COMMON[@]}" --action add-processes ;;  # PROCESSES=7: measure the missing processes of every graph
  *) echo "STAGES must be collect, repeat, relabel, annotate or add" >&2; exit 2 ;;
esac
