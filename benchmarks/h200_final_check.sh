#!/usr/bin/env bash
# The third session's last H200 call, each step bounded: the L1 probe's and calibrate's GPU tests and a real
# `calibrate --quick` (the probe rebuilt after its first H200 run was refused), issue 10's DRAM-vs-model table for
# the kernels its first call did not reach, and the row kernels swept over rows at 8192 columns (their new
# register-resident kernels, predicted from first principles; ROWS= skips them; ONLY=a,b picks the ncu kernels,
# e.g. ONLY=vector_add,vector_add_float4 for the two not yet profiled). Outputs packed into one archive.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R="$OUT/run"; mkdir -p "$R"
. benchmarks/device_env.sh; device_env "$R/env.txt"
timeout 70 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_calibrate_l1.py tests/test_calibrate.py \
    > "$R/calib_tests.txt" 2>&1; echo "exit $?" >> "$R/calib_tests.txt"; tail -3 "$R/calib_tests.txt"
timeout 45 python3 -m roofline calibrate --quick -o "$R/measured-quick.yaml" > "$R/calibrate.txt" 2>&1
echo "calibrate exit $?" >> "$R/calibrate.txt"; cat "$R/calibrate.txt"
ONLY=${ONLY:-gemv_batch1,gemv_batch16,layernorm_2pass,layernorm_3pass,layernorm_fused,matmul_library,matmul_library_fp16,matmul_naive,relu,scale,softmax_5pass,softmax_fused,stencil5_naive,stencil5_reuse,sum,triad,vector_add,vector_add_float4}
timeout 125 python3 benchmarks/h200_model_check.py --out "$R/mc" --deadline ${DEADLINE:-100} --kernel-timeout 40 --only "$ONLY" \
    > "$R/mc.txt" 2>&1; echo "model check exit $?" >> "$R/mc.txt"; tail -30 "$R/mc.txt"
for k in ${ROWS-softmax_fused layernorm_fused}; do
  timeout 45 python3 -m roofline sweep $k --over rows --set cols=8192 --sizes 2..8192:4 --min-time 0.05 \
      --calibrated docs/measurements/h200-2026-11-30-measured.yaml -o "$R/$k-rows.json" > "$R/$k-rows.txt" 2>&1
  echo "exit $?" >> "$R/$k-rows.txt"; cat "$R/$k-rows.txt"
done
cp "$R/mc.txt" "$R/calibrate.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$R"
