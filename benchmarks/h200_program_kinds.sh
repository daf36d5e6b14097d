#!/usr/bin/env bash
# Capture benchmarks/program_kinds.py (issue 38) on the GPU machine, in the layout benchmarks/trace_check.py reads:
#   $W/NAME/NAME.trace.json.gz  a plain torch.profiler trace (record_shapes on, no annotation) of one step
#   $W/NAME/NAME.ncu.csv        ncu's raw CSV (base units, roofline's metrics) of one step of the same program
#   $W/NAME/kernels/*.py        Inductor's generated sources of that program
# and NAME-warmup.trace.json.gz (the trace from the first warm-up step: compilation, CUDA-graph capture, replays).
# Run from the repository root:  bash benchmarks/h200_program_kinds.sh PART...   (PART: trace:KIND, warm:KIND,
# eager:KIND, ncu:KIND, torch:KIND; KIND one of program_kinds.py's). Parts start only while less than BUDGET_S
# (default 500) seconds have passed. Writes $OUT/kinds-TAG.tar.gz and $OUT/summary.txt.
set -uo pipefail
OUT=${OUT:-$(pwd)/kinds-out}
W=${W:-/tmp/kinds}
BUDGET_S=${BUDGET_S:-500}
TAG=${TAG:-capture}
mkdir -p "$OUT" "$W"
export PYTHONUNBUFFERED=1 PYTHONPATH=$(pwd)${PYTHONPATH:+:$PYTHONPATH}
T0=$(date +%s)
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit --format=csv,noheader
  ncu --version | tail -1
  python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)'
} > "$W/env.txt" 2>&1
cat "$W/env.txt"
METRICS=$(python3 -m roofline import ncu --list-metrics)
PROG=benchmarks/program_kinds.py
log() { echo "$*" | tee -a "$W/summary.txt"; }
part() {  # what kind
  local what=$1 kind=$2 name=$2 d rc t=$(date +%s)
  [ "$what" = eager ] && name=$kind-eager
  d=$W/$name; mkdir -p "$d"
  export TORCHINDUCTOR_CACHE_DIR=$W/inductor-$kind
  case $what in
    trace) timeout 240 python3 $PROG --kind "$kind" --trace "$d/$name.trace.json" > "$d/trace.log" 2>&1; rc=$?
           gzip -f "$d/$name.trace.json" 2>/dev/null ;;
    warm)  timeout 240 python3 $PROG --kind "$kind" --trace-warmup --trace "$d/$name-warmup.trace.json" \
             > "$d/warm.log" 2>&1; rc=$?
           gzip -f "$d/$name-warmup.trace.json" 2>/dev/null ;;
    eager) timeout 120 python3 $PROG --kind "$kind" --compile none --trace "$d/$name.trace.json" \
             > "$d/trace.log" 2>&1; rc=$?
           gzip -f "$d/$name.trace.json" 2>/dev/null ;;
    ncu)   local graph=(); [ "$kind" = cudagraph ] && graph=(--graph-profiling node)
           timeout 200 ncu --clock-control none --csv --page raw --print-units base --profile-from-start off \
             "${graph[@]}" --metrics "$METRICS" python3 $PROG --kind "$kind" > "$d/$name.ncu.csv" 2> "$d/ncu.log"
           rc=$? ;;
    torch) timeout 240 python3 -m roofline profile --with torch --range start-stop \
             --save-trace "$d/$name.profile.json.gz" -o "$d/$name.profile.results.json" -- python3 $PROG \
             --kind "$kind" > "$d/$name.profile.txt" 2> "$d/profile.log"; rc=$? ;;
  esac
  log "$what:$kind exit $rc in $(( $(date +%s) - t )) s"
  [ $rc -ne 0 ] && tail -5 "$d"/*.log | tee -a "$W/summary.txt"
  mkdir -p "$d/kernels"
  find "$W/inductor-$kind" -name '*.py' -size -400k 2>/dev/null | while read -r f; do cp "$f" "$d/kernels/"; done
}
for p in "$@"; do
  if [ $(( $(date +%s) - T0 )) -ge "$BUDGET_S" ]; then log "skipped $p (budget)"; continue; fi
  part "${p%%:*}" "${p#*:}"
done
cp "$W/env.txt" "$W/summary.txt" "$OUT/"
tar -C "$W" --exclude='inductor-*' -czf "$OUT/kinds-$TAG.tar.gz" .
ls -la "$OUT"
