#!/usr/bin/env bash
# Session 2026-12-01, second call: L2 read variants beside the shipped probe, then the GPU acceptance run.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 120 python3 benchmarks/l2_variants.py 2>&1 | tee "$OUT/l2-variants.txt" | tail -12
timeout 420 python3 benchmarks/gpu_acceptance.py --out "$OUT/acc" 2>&1 | tail -40
cd "$OUT" && tar czf acc.tgz acc && rm -rf acc
