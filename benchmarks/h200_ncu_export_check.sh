#!/usr/bin/env bash
# Does `ncu --export` + `ncu --import --csv --page raw` give the same table, NVTX column included, as `ncu --csv`
# on standard output, and does --export print one ==PROF== Profiling line per launch (roofline profile's progress)?
set -uo pipefail
OUT=${OUT:-$(pwd)/export-check}; mkdir -p "$OUT"
M=$(PYTHONPATH=. python3 -c 'from roofline.ncu.metrics import IMPORT_METRICS, metrics_argument; print(metrics_argument(IMPORT_METRICS))')
cat > /tmp/tiny.py <<'PY'
import torch
a = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16)
with torch.autograd.profiler.emit_nvtx(record_shapes=True):
    b = (a @ a).relu() + 1
torch.cuda.synchronize()
print("ok", float(b.float().sum()) > 0)
PY
ncu --metrics "$M" --nvtx --clock-control none --export /tmp/rep --force-overwrite python3 /tmp/tiny.py > "$OUT/export.out" 2> "$OUT/export.err"
echo "export rc $?; Profiling lines: out $(grep -c 'Profiling' "$OUT/export.out") err $(grep -c 'Profiling' "$OUT/export.err")"
head -5 "$OUT/export.out" "$OUT/export.err"
ncu --import /tmp/rep.ncu-rep --csv --page raw --print-units base > "$OUT/import.csv" 2> "$OUT/import.err"; echo "import rc $?"
ncu --import /tmp/rep.ncu-rep --nvtx --csv --page raw --print-units base > "$OUT/import_nvtx.csv" 2> "$OUT/import_nvtx.err"; echo "import --nvtx rc $?"
for f in import.csv import_nvtx.csv; do echo "$f: lines $(wc -l < "$OUT/$f") nvtx-header $(grep -c 'Push/Pop_Range' "$OUT/$f") aten $(grep -c 'aten::' "$OUT/$f")"; done
head -c 300 "$OUT/import.err" "$OUT/import_nvtx.err"
