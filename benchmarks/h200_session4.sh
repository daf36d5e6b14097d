#!/usr/bin/env bash
# The fourth session's first H200 call, each step bounded: every GPU test (the harness stream guard, the folded L1/L2
# probes, the attention family and the chunked gelu_erf reference had not yet run on a GPU), issue 10's last two
# ncu DRAM rows (vector_add, vector_add_float4), and the first-principles sweep table again (the register-resident
# row kernels had not been swept over rows). Outputs packed into one archive plus the summaries.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R="$OUT/run"; mkdir -p "$R"
. benchmarks/device_env.sh; device_env "$R/env.txt"
timeout 230 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_kernels.py tests/test_attention.py \
    tests/test_calibrate_l1.py tests/test_calibrate.py tests/test_gpustate.py tests/test_readme.py tests/test_sweep.py \
    > "$R/gpu_tests.txt" 2>&1; echo "exit $?" >> "$R/gpu_tests.txt"; grep -E "passed|failed|FAILED|Error" "$R/gpu_tests.txt" | tail -15
timeout 90 python3 benchmarks/h200_model_check.py --out "$R/mc" --deadline 70 --kernel-timeout 40 \
    --only vector_add,vector_add_float4 > "$R/mc.txt" 2>&1; echo "model check exit $?" >> "$R/mc.txt"; tail -8 "$R/mc.txt"
timeout 170 python3 benchmarks/h200_sweep_predict.py --out "$R/sp" --budget 150 > "$R/sp.txt" 2>&1
echo "sweep predict exit $?" >> "$R/sp.txt"; tail -25 "$R/sp.txt"
cp "$R/gpu_tests.txt" "$R/mc.txt" "$OUT/" 2>/dev/null; cp "$R/sp/summary.txt" "$OUT/sweep_predict.txt" 2>/dev/null
tar czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$R"
