#!/usr/bin/env bash
# The fourth session's last H200 call, each step bounded: every GPU test (row kernels with gamma/beta prefetch, sum's
# one-pass remainder, the folded row functions, the ported matmul_tiled), the first-principles sweep table with the
# reduction term (issue 10, part 3), ncu DRAM bytes of the ported matmul_tiled, the catalogue against its peers (issue 13), and Nsight Compute's view of
# gemv_batch16 (its occupancy, DRAM throughput and warp stalls, for the diagnosis). One archive plus summaries in $OUT.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R="$OUT/run"; mkdir -p "$R"
. benchmarks/device_env.sh; device_env "$R/env.txt"
timeout 175 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_kernels.py tests/test_attention.py \
    tests/test_calibrate_l1.py tests/test_calibrate.py tests/test_gpustate.py tests/test_readme.py tests/test_sweep.py \
    > "$R/gpu_tests.txt" 2>&1; echo "exit $?" >> "$R/gpu_tests.txt"; grep -E "passed|failed|FAILED|Error" "$R/gpu_tests.txt" | tail -12
timeout 130 python3 benchmarks/h200_sweep_predict.py --out "$R/sp" --budget 115 > "$R/sp.txt" 2>&1
echo "sweep predict exit $?" >> "$R/sp.txt"; grep -E "worst|verdict|elapsed|exit" "$R/sp.txt"
timeout 190 python3 benchmarks/h200_catalogue_peers.py --out "$R/peers" > "$R/peers.txt" 2>&1
echo "catalogue peers exit $?" >> "$R/peers.txt"; tail -22 "$R/peers.txt"
timeout 45 python3 benchmarks/h200_model_check.py --out "$R/mc" --deadline 35 --kernel-timeout 30 --only matmul_tiled \
    > "$R/mc.txt" 2>&1; echo "model check exit $?" >> "$R/mc.txt"; tail -4 "$R/mc.txt"
timeout 60 ncu --launch-count 1 -k regex:gemv_b16 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section MemoryWorkloadAnalysis python3 -m roofline measure gemv_batch16 --min-time 0.01 \
    -o "$R/gemv16.json" > "$R/ncu_gemv16.txt" 2>&1; echo "ncu exit $?" >> "$R/ncu_gemv16.txt"
grep -E "Registers Per|Achieved Occupancy|Theoretical Occupancy|DRAM Throughput|Memory Throughput|Stall|Block Limit|ncu exit" "$R/ncu_gemv16.txt" | head -20
cp "$R/gpu_tests.txt" "$R/ncu_gemv16.txt" "$OUT/" 2>/dev/null; cp "$R/sp/summary.txt" "$OUT/sweep_predict.txt" 2>/dev/null
cp "$R/peers.txt" "$OUT/peers.txt" 2>/dev/null
tar czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$R"
