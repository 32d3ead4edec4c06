#!/usr/bin/env bash
# The shipped real datasets' collection (see src/graphcost/datasets/*/CARD.md): layout and flags,
# each measured twice in independent process sets (the second pass: --action repeat). Resumable: re-run it.
# STAGES picks and orders the stages (default: all four). The shipped copies were then moved to
# src/graphcost/datasets/ and their cards written with `graphcost data card DIR`.
set -euo pipefail
cd "$(dirname "$0")/../.."
GC=${GC:-graphcost}
OUT=${OUT:-collections}
COMMON=(--limit 0 --configs 64 --rounds 7 --calls 5 --warmup 2 --seed 0 --processes 3 --compile-workers 2
        --max-load "${MAX_LOAD:-1.5}" --max-wait "${MAX_WAIT:-300}")
LAYOUT=(--space layout --mode both --programs "$(paste -sd, benchmarks/collections/layout_programs.txt)")
FLAGS=(--space flags --programs "$(paste -sd, benchmarks/collections/flags_programs.txt)")
STAGES=${STAGES:-layout layout-repeat flags flags-repeat}
for stage in $STAGES; do
  case $stage in
    layout) $GC collect "${LAYOUT[@]}" "${COMMON[@]}" --cache-dir "${CACHE:-/tmp/graphcost-cache}/layout" --out "$OUT/cpu_layout" ;;
    layout-repeat) $GC collect "${LAYOUT[@]}" "${COMMON[@]}" --cache-dir "${CACHE:-/tmp/graphcost-cache}/layout" --out "$OUT/cpu_layout" --action repeat ;;
    flags) $GC collect "${FLAGS[@]}" "${COMMON[@]}" --cache-dir "${CACHE:-/tmp/graphcost-cache}/flags" --out "$OUT/cpu_flags" ;;
    flags-repeat) $GC collect "${FLAGS[@]}" "${COMMON[@]}" --cache-dir "${CACHE:-/tmp/graphcost-cache}/flags" --out "$OUT/cpu_flags" --action repeat ;;
    *) echo "unknown stage $stage" >&2; exit 2 ;;
  esac
done
