#!/usr/bin/env bash
# The session's closing H200 call (2026-12-01): the GPU acceptance run (its record into $OUT/rec, copied into
# docs/measurements by hand), every GPU test, and the stencil sweeps re-measured with their new descriptors.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p "$OUT/rec"
timeout 330 python3 benchmarks/gpu_acceptance.py --out "$OUT/acc" --record "$OUT/rec/h200-acceptance.md" 2>&1 | tail -16
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu tests/ > "$OUT/gpu-tests.txt" 2>&1
echo "gpu tests exit $?" >> "$OUT/gpu-tests.txt"; tail -6 "$OUT/gpu-tests.txt"
timeout 100 python3 benchmarks/h200_sweep_predict.py --matrix --only stencil5_naive,stencil5_reuse,conv3x3_naive,conv3x3_reuse \
    --calibrated "$OUT/rec/h200-measured.yaml" --out "$OUT/stencils" --budget 85 --timeout 30 > "$OUT/stencils.txt" 2>&1
grep -E "worst|verdict" "$OUT/stencils.txt" | tail -6
cd "$OUT" && tar czf acc.tgz acc && rm -rf acc
