#!/usr/bin/env bash
# Tensor-core FLOPs from counters, on an H200: which sm__ops_path_tensor_* metrics ncu knows on sm_90, a capture of
# GEMMs of known FLOPs (BF16, FP16, TF32, FP64, FP8, INT8) and CUDA-core work (FP32 elementwise, FP16/BF16 FMA
# loops), and `roofline measure --profile ncu` of the bundled cuBLAS FP16 kernel.
#
# Run ON the GPU machine, from the repository root:   OUT=/some/dir bash benchmarks/h200_ncu_tensor.sh
# Writes into $OUT (default ./ncu-tensor):
#   summary.txt                versions, the sm_90 metric names, and the tables below
#   h200_tensor_capture.csv    ncu --csv --page raw of benchmarks/h200_ncu_tensor.py
#   h200_tensor_profiled.csv   ncu of `python -m roofline.ncu.target` for matmul_library_fp16 at n=2048
#   cases.json, measure.json   what the program ran; roofline measure --profile ncu's results
#   log.txt, query.txt.gz      ncu's and the programs' stderr; ncu --query-metrics --chip gh100
set -uo pipefail
OUT=${OUT:-$(pwd)/ncu-tensor}
PY=${PYTHON:-python3}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
mkdir -p "$OUT"
S="$OUT/summary.txt"; LOG="$OUT/log.txt"; : > "$S"; : > "$LOG"
START=$(date +%s)
say() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$S" >&2; }

say "date $(date -u +%FT%TZ); ncu $("$NCU" --version | tail -1)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv,noheader >> "$S" 2>&1
"$PY" -c 'import torch, cupy; print("torch", torch.__version__, "cuda", torch.version.cuda, "cupy", cupy.__version__)' >> "$S" 2>&1

# (1) the metric names this ncu knows on sm_90 (GH100)
timeout 20 "$NCU" --query-metrics --chip gh100 > "$OUT/query.txt" 2>> "$LOG"
say "query-metrics --chip gh100: $(wc -l < "$OUT/query.txt") lines; tensor paths and FP16/BF16 names:"
grep -E '(sm__ops_path_tensor|sass_thread_inst_executed_op_h|_op_(fp16|bf16)|inst_executed_pipe_tensor)' \
  "$OUT/query.txt" | cut -c1-150 >> "$S"
known() { [ "$(wc -l < "$OUT/query.txt")" -lt 100 ] || grep -qw -- "${1%%.*}" "$OUT/query.txt"; }
METRICS=$("$PY" -m roofline import ncu --list-metrics)
PROFILE_METRICS=$("$PY" -c 'from roofline.ncu.metrics import METRICS, metrics_argument as a; print(a(METRICS))')
IFS=, read -ra ALL <<< "$METRICS"
for m in "${ALL[@]}"; do  # ncu leaves a metric it does not know out of the CSV: say which, for the record
  [[ $m == device__* ]] || known "$m" || echo "  not on gh100 (ncu will leave it out): $m" >> "$S"
done
echo "metrics: $METRICS" >> "$S"
NCU_OPTS=(--clock-control none --csv --page raw --print-units base --profile-from-start off)

# (2) the PyTorch/CuPy program: cases of known FLOPs, each between markers
timeout 80 "$NCU" "${NCU_OPTS[@]}" --metrics "$METRICS" "$PY" benchmarks/h200_ncu_tensor.py "$OUT/cases.json" \
  > "$OUT/h200_tensor_capture.csv" 2>> "$LOG"
say "capture: ncu exit $?, $(grep -c '^"[0-9]' "$OUT/h200_tensor_capture.csv") launch rows"

# (3) roofline measure --profile ncu on the bundled tensor kernel, and the same target by hand (the raw CSV)
set -f
timeout 60 "$PY" -m roofline measure matmul_library_fp16 -p n=2048 --backend cupy --spec h200 --min-time 0.2 \
  --profile ncu --ncu "$NCU" -o "$OUT/measure.json" >> "$S" 2>&1
say "measure --profile ncu: exit $?"
PLAN=$(mktemp -d)
echo '{"kernels": [{"name": "matmul_library_fp16", "params": {"n": 2048}}]}' > "$PLAN/plan.json"
timeout 45 "$NCU" "${NCU_OPTS[@]}" --metrics "$PROFILE_METRICS" "$PY" -m roofline.ncu.target "$PLAN/plan.json" \
  "$PLAN/done.json" > "$OUT/h200_tensor_profiled.csv" 2>> "$LOG"
say "profiled target: ncu exit $?, $(grep -c '^"[0-9]' "$OUT/h200_tensor_profiled.csv") launch rows"
set +f

# (4) what roofline makes of it
"$PY" - "$OUT" >> "$S" 2>&1 <<'PY'
import json, sys
from pathlib import Path
from roofline.ncu.counters import counters, sum_counters
from roofline.ncu.importer import import_csv
from roofline.ncu.placement import place
from roofline.ncu.profile import split_by_markers
from roofline.ncu.table import parse_csv
from roofline.load.specs import SpecCatalog
out = Path(sys.argv[1])
roofs = SpecCatalog.bundled().resolve("h200").roofs
cases = json.loads((out / "cases.json").read_text())["cases"]
table = parse_csv((out / "h200_tensor_capture.csv").read_text())
groups = split_by_markers(table.launches, len(cases))
print("\ncase | launches | expected FLOPs | counter FLOPs | ratio | roof | decided by | work (FLOPs per roof) | hfma inst")
for case, launches in zip(cases, groups):
    if not launches:
        print(f"{case['name']} | 0 | {case.get('flops')} | – | – | – | {case.get('error', 'no launch')[:80]}")
        continue
    c = sum_counters([counters(l.metrics) for l in launches])
    p = place(c["work"], c["work_counters"], roofs)
    r = (c["flops"] or 0) / case["flops"] if case.get("flops") else float("nan")
    hfma = sum(l.metrics.get("sm__sass_thread_inst_executed_op_hfma_pred_on.sum") or 0 for l in launches)
    work = ", ".join(f"{k}={v:.4g}" for k, v in c["work"].items())
    print(f"{case['name']} | {len(launches)} | {case['flops']:.6g} | {c['flops'] or 0:.6g} | {r:.4f} | {p.roof} | "
          f"{','.join(p.counters)} | {work} | {hfma:.6g} | {'; '.join(l.kernel[:60] for l in launches)}")
doc, notes = import_csv(out / "h200_tensor_capture.csv", "h200")
print(f"\nimport ncu: {len(doc['kernels'])} entries; notes: {len(notes)}")
m = json.loads((out / "measure.json").read_text()) if (out / "measure.json").exists() else {"kernels": []}
for k in m["kernels"]:
    c = k.get("counters") or {}
    print(f"measure {k['name']} {k['params']}: status {k['status']}, time {k.get('time_median')}, model FLOPs "
          f"{k['flops']:.6g}, counter FLOPs {c.get('flops')}, measured/model {k.get('measured_flops_ratio')}, "
          f"counters' roof {c.get('roof')} by {c.get('roof_counters')}, warnings {k.get('warnings')}")
PY
say "done in $(( $(date +%s) - START )) s"
gzip -9f "$OUT/query.txt"
