#!/usr/bin/env bash
# The end-of-session check on one H200, in priority order, each step bounded so one slow step cannot starve the
# rest: the GPU kernel tests (every bundled kernel at awkward sizes), the model check (issue 10: every kernel
# <= 102 % of its ceiling, ncu DRAM bytes vs the model) and the API check (issue 12). Outputs packed into one
# archive plus the three summaries, since a device call returns at most 8 files.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p "$OUT/model" "$OUT/api"
. benchmarks/device_env.sh; device_env "$OUT/env.txt"
timeout 170 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_kernels.py tests/test_attention.py \
    > "$OUT/gpu_tests.txt" 2>&1; echo "exit $?" >> "$OUT/gpu_tests.txt"
tail -3 "$OUT/gpu_tests.txt"
timeout 250 python3 benchmarks/h200_model_check.py --out "$OUT/model" > "$OUT/model/stdout.txt" 2>&1
echo "model check exit $?" >> "$OUT/model/stdout.txt"; tail -45 "$OUT/model/stdout.txt"
timeout 130 python3 benchmarks/api_check.py --out "$OUT/api" > "$OUT/api/stdout.txt" 2>&1
echo "api check exit $?" >> "$OUT/api/stdout.txt"; tail -15 "$OUT/api/stdout.txt"
cp "$OUT/model/table.txt" "$OUT/check.txt" 2>/dev/null
cp "$OUT/api/api_check.txt" "$OUT/api_check.txt" 2>/dev/null
tar czf "$OUT/all.tgz" -C "$OUT" model api env.txt gpu_tests.txt && rm -rf "$OUT/model" "$OUT/api"
ls -la "$OUT"
