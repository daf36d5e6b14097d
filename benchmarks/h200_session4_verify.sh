#!/usr/bin/env bash
# After the fourth session's last ports (gemv_batch16's x-in-shared-memory kernel, the SGEMM's cp_async.cuh header
# expanded by the backend): every GPU test, the catalogue against its peers again, and ncu DRAM bytes of the new
# gemv_batch16 against its model. One archive plus summaries in $OUT.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R="$OUT/run"; mkdir -p "$R"
. benchmarks/device_env.sh; device_env "$R/env.txt"
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_kernels.py tests/test_attention.py \
    tests/test_calibrate_l1.py tests/test_calibrate.py tests/test_gpustate.py tests/test_readme.py tests/test_sweep.py \
    > "$R/gpu_tests.txt" 2>&1; echo "exit $?" >> "$R/gpu_tests.txt"; grep -E "passed|failed|FAILED|Error" "$R/gpu_tests.txt" | tail -12
timeout 120 python3 benchmarks/h200_catalogue_peers.py --out "$R/peers" > "$R/peers.txt" 2>&1
echo "catalogue peers exit $?" >> "$R/peers.txt"; tail -20 "$R/peers.txt"
timeout 45 python3 benchmarks/h200_model_check.py --out "$R/mc" --deadline 35 --kernel-timeout 30 --only gemv_batch16 \
    > "$R/mc.txt" 2>&1; echo "model check exit $?" >> "$R/mc.txt"; tail -4 "$R/mc.txt"
cp "$R/gpu_tests.txt" "$R/peers.txt" "$R/mc.txt" "$OUT/" 2>/dev/null
tar czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$R"
