#!/usr/bin/env bash
# Issue 10's remaining H200 figures in one bounded call (each step has its own timeout):
#   step calib: the L1 probe's and calibrate's GPU tests, then `roofline calibrate --quick -o` (JSON with every figure)
#   step ncu:   benchmarks/h200_model_check.py, the DRAM-vs-model table (ONLY=k1,k2 limits it; DEADLINE in s)
#   step sweep: benchmarks/h200_sweep_predict.py, the first-principles sweep of the ten target kernels
#   step rows:  the row kernels at 2 and 512 rows of 4 floats (the same launch, block and reductions, no row to
#               stream): how much of their small-size time does not depend on the row at all
# STEPS picks them (default "calib ncu"). Everything lands in $OUT/run.tgz plus the short tables beside it.
set -u
OUT=${OUT:-/tmp/out}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
STEPS=${STEPS:-calib ncu}
R="$OUT/run"
mkdir -p "$R"
. benchmarks/device_env.sh; device_env "$R/env.txt"
cat "$R/env.txt"
for step in $STEPS; do
  case $step in
    calib)
      timeout 80 python3 -m pytest -q -p no:cacheprovider -m gpu ${CALIB_TESTS:-tests/test_calibrate_l1.py tests/test_calibrate.py} \
          > "$R/calib_tests.txt" 2>&1; echo "exit $?" >> "$R/calib_tests.txt"; tail -3 "$R/calib_tests.txt"
      timeout 70 python3 -m roofline calibrate --quick -o "$R/measured-quick.yaml" --format json \
          > "$R/calibrate.json" 2> "$R/calibrate.err"; echo "calibrate exit $?" >> "$R/calibrate.err"
      tail -12 "$R/calibrate.err"; cp "$R/calibrate.err" "$OUT/calibrate.err" ;;
    ncu)
      timeout $(( ${DEADLINE:-110} + 45 )) python3 benchmarks/h200_model_check.py --out "$R/mc" --deadline "${DEADLINE:-110}" \
          --kernel-timeout 40 ${ONLY:+--only "$ONLY"} > "$R/mc.txt" 2>&1; echo "model check exit $?" >> "$R/mc.txt"
      cat "$R/mc.txt"; cp "$R/mc.txt" "$OUT/mc.txt" ;;
    sweep)
      timeout $(( ${SWEEP_BUDGET:-105} + 20 )) python3 benchmarks/h200_sweep_predict.py --out "$R/sweep" \
          --budget "${SWEEP_BUDGET:-105}" ${SWEEP_ONLY:+--only "$SWEEP_ONLY"} > "$R/sweep.txt" 2>&1
      echo "sweep exit $?" >> "$R/sweep.txt"; tail -40 "$R/sweep.txt"; cp "$R/sweep.txt" "$OUT/sweep.txt" ;;
    rows)
      for k in softmax_fused layernorm_fused; do
        timeout 40 python3 -m roofline sweep $k --over rows --set cols=4 --sizes 2,512 --min-time 0.05 \
            --calibrated docs/measurements/h200-2026-11-30-measured.yaml -o "$R/$k-cols4.json" > "$R/$k-cols4.txt" 2>&1
        echo "exit $?" >> "$R/$k-cols4.txt"; tail -8 "$R/$k-cols4.txt"; cat "$R/$k-cols4.txt" >> "$OUT/rows.txt"
      done ;;
  esac
done
tar czf "$OUT/run.tgz" -C "$OUT" run && rm -rf "$R"
