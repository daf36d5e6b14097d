#!/usr/bin/env bash
# Capture compiled and eager programs on the H200 (issue 34): Kineto traces through `roofline profile --with torch`,
# the Inductor-generated kernel sources, and the counters of one compiled step through `--with ncu`.
# Run ON the GPU machine from the repository root: bash benchmarks/h200_compiled_capture.sh [torch|ncu|all]
# Writes $OUT/compiled-PART.tar.gz (traces, results, tables, logs, inductor sources) and $OUT/summary.txt.
set -uo pipefail
OUT=${OUT:-$(pwd)/compiled-out}
W=$(mktemp -d)
mkdir -p "$OUT" "$W/traces"
export PYTHONUNBUFFERED=1 PYTHONPATH=$(pwd)${PYTHONPATH:+:$PYTHONPATH}
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.limit --format=csv,noheader
  ncu --version | tail -1
  python3 -c 'import torch, transformers, triton; print("torch", torch.__version__, "transformers", transformers.__version__, "triton", triton.__version__)'
} > "$W/env.txt" 2>&1
cat "$W/env.txt"
capture() {  # name, with, program args...
  local name=$1 with=$2; shift 2
  local t0=$(date +%s.%N)
  export TORCHINDUCTOR_CACHE_DIR=$W/inductor-$name
  if [ "$with" = torch ]; then
    timeout 300 python3 -m roofline profile --with torch --range start-stop --save-trace "$W/traces/$name.json.gz" \
      -o "$W/traces/$name.results.json" -- python3 benchmarks/profile_compiled.py "$@" \
      > "$W/traces/$name.txt" 2> "$W/traces/$name.log"
  else
    timeout 400 python3 -m roofline profile --with ncu --range start-stop --save-csv "$W/traces/$name.csv" \
      -o "$W/traces/$name.results.json" -- python3 benchmarks/profile_compiled.py "$@" \
      > "$W/traces/$name.txt" 2> "$W/traces/$name.log"
  fi
  local rc=$?
  echo "$name ($with $*): exit $rc, wall $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s" \
    | tee -a "$W/summary.txt"
  tail -3 "$W/traces/$name.log" | tee -a "$W/summary.txt"
  grep -i -m3 "program\|unmodelled\|GPU time" "$W/traces/$name.txt" | tee -a "$W/summary.txt"
  mkdir -p "$W/kernels/$name"
  find "$W/inductor-$name" -name '*.py' -size -400k 2>/dev/null | while read -r f; do cp "$f" "$W/kernels/$name/"; done
}
PART=${1:-all}  # torch | ncu | all
if [ "$PART" != ncu ]; then
capture llama-train-compiled torch --model llama --mode train --compile default
capture llama-train-eager torch --model llama --mode train --compile none
capture gpt2-train-fp16-scaler-compiled torch --model gpt2 --layers 4 --mode train --compile default --scaler
capture llama-infer-cudagraph torch --model llama --mode infer --compile reduce-overhead
fi
if [ "$PART" != torch ]; then
capture llama-train-compiled-ncu ncu --model llama --mode train --compile default
capture gpt2-train-fp16-scaler-compiled-ncu ncu --model gpt2 --layers 4 --mode train --compile default --scaler
fi
cp "$W/env.txt" "$W/summary.txt" "$OUT/"
tar -C "$W" -czf "$OUT/compiled-$PART.tar.gz" env.txt summary.txt traces kernels
ls -la "$OUT"
