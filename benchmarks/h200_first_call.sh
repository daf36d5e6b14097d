#!/usr/bin/env bash
# Session 2026-12-01, first call: the stream cause of the 11 PB/s L2 figure, doctor, calibrate with the L2 curve,
# and the GPU tests of calibrate. Output under $OUT.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
. benchmarks/device_env.sh; device_env "$OUT/env.txt"
python3 benchmarks/stream_check.py 2>&1 | tail -2
/usr/bin/time -f "doctor wall %e s" python3 -m roofline doctor > "$OUT/doctor.txt" 2>&1; echo "doctor exit $?" >> "$OUT/doctor.txt"
cat "$OUT/doctor.txt"
python3 -m roofline doctor --format json --no-ncu > "$OUT/doctor.json" 2>"$OUT/doctor-json.err"; echo "doctor json exit $?"
/usr/bin/time -f "calibrate wall %e s" python3 -m roofline calibrate -o "$OUT/measured.yaml" --format json > "$OUT/calibrate.json" 2>"$OUT/calibrate.err"; echo "calibrate exit $?"; tail -3 "$OUT/calibrate.err"
python3 - "$OUT/calibrate.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for f in doc["figures"]:
    print(f"{f['field']:24} {f['status']:8} {f['value']!s:>14}  {(f.get('note') or '')[:150]}")
PY
timeout 300 python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_calibrate.py tests/test_calibrate_l1.py 2>&1 | tail -4
