#!/usr/bin/env bash
# Issue 38: the grid model of multi-tensor kernels (fused AdamW/SGD/Adagrad, foreach Adam, GradScaler's unscale,
# _foreach_zero_) against the DRAM bytes ncu counts for the same launches. Run ON the GPU machine from the
# repository root (torch, ncu with counter access): bash benchmarks/h200_multitensor_capture.sh
# For each optimizer, with and without GradScaler: a plain torch.profiler trace of one step
# (benchmarks/multitensor_programs.py --trace), ncu's counters of the same step's multi-tensor launches
# (`roofline profile --with ncu --kernel-name multi_tensor_apply_kernel`), and benchmarks/multitensor_check.py's
# table of the two. Writes $OUT/NAME.{json,ncu.csv,md,*.log} and $OUT/summary.md.
set -uo pipefail
OUT=${OUT:-$(pwd)/multitensor-out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$(pwd)${PYTHONPATH:+:$PYTHONPATH}
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ncu --version | tail -1
  python3 -c 'import torch; print("torch", torch.__version__)'; } > "$OUT/summary.md" 2>&1
for opt in adamw-fused adam-foreach sgd-fused adagrad-fused; do
  for scaler in "" --scaler; do
    name=$opt${scaler:+-scaler}
    if ! timeout 300 python3 benchmarks/multitensor_programs.py --optimizer "$opt" $scaler --trace "$OUT/$name.json" \
        > "$OUT/$name.trace.log" 2>&1; then
      echo "## $name: no trace ($(tail -1 "$OUT/$name.trace.log"))" | tee -a "$OUT/summary.md"; continue
    fi
    timeout 400 python3 -m roofline profile --with ncu --range start-stop --kernel-name multi_tensor_apply_kernel \
      --save-csv "$OUT/$name.ncu.csv" -o "$OUT/$name.ncu.json" -- \
      python3 benchmarks/multitensor_programs.py --optimizer "$opt" $scaler > "$OUT/$name.ncu.log" 2>&1
    { echo "## $name ($(tail -1 "$OUT/$name.trace.log"))"
      python3 benchmarks/multitensor_check.py "$OUT/$name.json" "$OUT/$name.ncu.csv" --markdown "$OUT/$name.md" 2>&1
      python3 -m roofline import torch "$OUT/$name.json" 2>&1 | grep -i "imported\|unmodelled" | head -3
    } | tee -a "$OUT/summary.md"
  done
done
ls -la "$OUT"
