#!/usr/bin/env bash
# Session 2026-12-01, third call: the L2 variants beside the shipped slice probe, and issue 21 §4's sweep matrix
# (every kernel with a size model over each of its axes, first-principles model, as much as --budget allows).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 90 python3 benchmarks/l2_variants.py 2>&1 | tee "$OUT/l2-variants.txt" | tail -8
timeout 470 python3 benchmarks/h200_sweep_predict.py --matrix --out "$OUT/matrix" --budget 420 --timeout 45 \
    > "$OUT/matrix.txt" 2>&1; echo "matrix exit $?"
grep -E "^[a-z0-9_-]+: |verdict|worst" "$OUT/matrix.txt" | tail -45
