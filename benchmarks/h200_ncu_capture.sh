#!/usr/bin/env bash
# Real Nsight Compute captures on an H200, for tests/data/ncu/h200_*.csv and docs/measurements/h200.md.
#
# Run ON the GPU machine, from the repository root:   bash benchmarks/h200_ncu_capture.sh
# Writes into $OUT (default ./ncu-capture):
#   h200_metrics.csv   ncu --csv --page raw --print-units base --clock-control none --metrics <roofline's list>
#                      of five bundled kernels at small sizes, launched once each by python -m roofline.ncu.target
#   h200_full.csv      the same program under --set full (automatic units: Mbyte, usecond...), 2 launches
#   profiled.json      roofline measure --profile ncu of those kernels (three runs merged: their sizes differ)
#   profiled.txt       the measure tables, with the notes (flags) ncu's counters raised
#   *.stderr, log.txt  what ncu and the program said, for diagnosis
# Small sizes and a tight metric list keep it well under 3 minutes (ncu replays each kernel once per pass).
set -uo pipefail

OUT=${OUT:-$(pwd)/ncu-capture}
PY=${PYTHON:-python3}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
LIMIT=${LIMIT:-150}   # seconds per ncu run at most
mkdir -p "$OUT"
LOG="$OUT/log.txt"
: > "$LOG"
START=$(date +%s)
say() { echo "[$(( $(date +%s) - START ))s] $*" | tee -a "$LOG" >&2; }

say "ncu: $NCU ($("$NCU" --version 2>/dev/null | tail -1))"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader >> "$LOG" 2>&1 || true

# Five kernels at sizes that keep ncu's replays short: 64-192 MiB streams, a 2048² matmul and stencil.
PLAN="$OUT/plan.json"
cat > "$PLAN" <<'JSON'
{"kernels": [
  {"name": "vector_add_float4", "params": {"n": 16777216}},
  {"name": "sum", "params": {"n": 16777216}},
  {"name": "matmul_tiled", "params": {"n": 2048}},
  {"name": "softmax_fused", "params": {"rows": 4096, "cols": 1024}},
  {"name": "stencil5_naive", "params": {"n": 2048}}
]}
JSON

METRICS_IMPORT=$("$PY" -m roofline import ncu --list-metrics)               # roofline's list + the GPU's name
METRICS_PROFILE=$("$PY" -c 'from roofline.ncu.metrics import METRICS, metrics_argument as a; print(a(METRICS))')
METRICS_CORE=$("$PY" -c 'from roofline.ncu.metrics import CORE_METRICS, metrics_argument as a; print(a(CORE_METRICS))')

capture() {  # capture NAME METRICS -- ncu options...: stdout (the CSV) to NAME.csv, stderr to NAME.stderr
  local name=$1 metrics=$2; shift 2
  timeout "$LIMIT" "$NCU" --clock-control none --csv --page raw --profile-from-start off \
      ${metrics:+--metrics "$metrics"} "$@" \
      "$PY" -m roofline.ncu.target "$PLAN" "$OUT/$name.done.json" \
      > "$OUT/$name.csv" 2> "$OUT/$name.stderr"
  local rc=$?
  say "$name: ncu exit $rc, $(grep -c '^"[0-9]' "$OUT/$name.csv") launch row(s)"
  grep -h '==ERROR==\|==WARNING==' "$OUT/$name.csv" "$OUT/$name.stderr" | head -5 | tee -a "$LOG" >&2
  return $rc
}

# (1) the metric list, base units; fall back to shorter lists if this ncu rejects a metric name
if ! capture h200_metrics "$METRICS_IMPORT" --print-units base || ! grep -q '^"ID"' "$OUT/h200_metrics.csv"; then
  say "retrying (1) without device__attribute_display_name"
  if ! capture h200_metrics "$METRICS_PROFILE" --print-units base || ! grep -q '^"ID"' "$OUT/h200_metrics.csv"; then
    say "retrying (1) with the core metrics only"
    capture h200_metrics "$METRICS_CORE" --print-units base
  fi
fi

# (2) --set full, automatic units, the first two kernel launches that are not roofline's markers
capture h200_full "" --set full --launch-count 2 --kernel-name regex:'^(add_f32|sum_partial)$' \
  || capture h200_full "" --set full --launch-count 2

# (3) roofline measure --profile ncu, three runs (their parameters differ), merged
MEASURE_OPTS=(--backend cupy --spec h200 --min-time 0.1 --min-repeats 5)
PROFILE=(--profile ncu --ncu "$NCU")
i=0
set -f   # -p n=2**24 must reach roofline as written, never as a glob
for run in "vector_add_float4 sum -p n=2**24" "matmul_tiled stencil5_naive -p n=2048" \
           "softmax_fused -p rows=4096 -p cols=1024"; do
  i=$((i + 1))
  # shellcheck disable=SC2086
  timeout "$LIMIT" "$PY" -m roofline measure $run "${MEASURE_OPTS[@]}" "${PROFILE[@]}" -o "$OUT/profiled_$i.json" \
      > "$OUT/profiled_$i.txt" 2> "$OUT/profiled_$i.stderr"
  say "measure run $i ($run): exit $?"
  cat "$OUT/profiled_$i.stderr" >> "$OUT/profiled_$i.txt"
done
set +f
"$PY" - "$OUT" <<'PY'
import json, sys
from pathlib import Path
from roofline.load.jsonio import write_json_atomic
from roofline.model.units import format_bytes, format_time
out = Path(sys.argv[1])
docs = [json.loads(p.read_text()) for p in sorted(out.glob("profiled_[0-9].json"))]
if docs:
    merged = dict(docs[0], kernels=[k for d in docs for k in d["kernels"]])
    write_json_atomic(out / "profiled.json", merged)
    lines = ["kernel | params | time | model bytes | DRAM read | DRAM written | measured/model bytes | "
             "measured/model FLOPs | L2 bytes | L1 bytes | flag"]
    for k in merged["kernels"]:
        c = k.get("counters") or {}
        ratio = lambda x: "–" if x is None else f"{x:.2f}"
        lines.append(" | ".join([k["name"], json.dumps(k["params"]), format_time(k.get("time_median")),
                                 format_bytes(k["bytes"]), format_bytes(c.get("dram_read")),
                                 format_bytes(c.get("dram_write")), ratio(k.get("measured_bytes_ratio")),
                                 ratio(k.get("measured_flops_ratio")), format_bytes(c.get("l2_bytes")),
                                 format_bytes(c.get("l1_bytes")), k.get("counter_flag") or ""]))
    text = "\n".join(lines) + "\n"
    for p in sorted(out.glob("profiled_[0-9].txt")):
        text += "\n" + p.read_text()
    (out / "profiled.txt").write_text(text)
    print(text)
PY
say "done in $(( $(date +%s) - START )) s; files in $OUT"
ls -la "$OUT" >> "$LOG"
