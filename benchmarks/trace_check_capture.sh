#!/usr/bin/env bash
# Capture the same programs two ways on a GPU, for benchmarks/trace_check.py (issue 24): the PyTorch profiler
# trace (`profile --with torch`'s capture) and Nsight Compute's counters (`roofline profile`), plus each program's
# own wall time without any profiler. Run ON the GPU machine, from the repository root:
#     OUT=/tmp/capture bash benchmarks/trace_check_capture.sh [gpt2 resnet50 train]
# Writes into $OUT: env.txt, times.txt and per program NAME.tgz holding NAME.trace.json.gz, NAME.torch.json,
# NAME.torch.txt, NAME.ncu.csv, NAME.ncu.json, NAME.ncu.txt and the logs.
set -uo pipefail
OUT=${OUT:-$(pwd)/trace-capture}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$(pwd)${PYTHONPATH:+:$PYTHONPATH}
PROGRAMS=${*:-gpt2 resnet50 train}
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,power.limit --format=csv,noheader
  ncu --version | tail -1
  python3 -c 'import torch, transformers, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "torchvision", torchvision.__version__)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
timed() {  # label, command...: wall seconds into times.txt
  local label=$1; shift
  local t0; t0=$(date +%s.%N)
  "$@"; local rc=$?
  local s; s=$(python3 -c "import time; print(f'{time.time() - $t0:.2f}')")
  echo "$label rc=$rc wall_s=$s" | tee -a "$OUT/times.txt"
}
for name in $PROGRAMS; do
  d="$OUT/$name"; mkdir -p "$d"
  prog="benchmarks/profile_$name.py"
  timed "$name plain" timeout 120 python3 "$prog" > "$d/$name.plain.log" 2>&1
  timed "$name torch-capture" timeout 120 python3 -m roofline.kineto.capture --trace "$d/$name.trace.json.gz" \
      --range start-stop -- "$prog" > "$d/$name.capture.log" 2>&1
  tail -2 "$d/$name.capture.log"
  timed "$name torch-import" timeout 120 python3 -m roofline import torch "$d/$name.trace.json.gz" --group-by op \
      -o "$d/$name.torch.json" > "$d/$name.torch.txt" 2> "$d/$name.torch.log"
  tail -3 "$d/$name.torch.log"
  timed "$name ncu-profile" timeout 200 python3 -m roofline profile --range start-stop --group-by op \
      --save-csv "$d/$name.ncu.csv" -o "$d/$name.ncu.json" -- python3 "$prog" > "$d/$name.ncu.txt" 2> "$d/$name.ncu.log"
  tail -3 "$d/$name.ncu.log"
  tar -C "$OUT" -czf "$OUT/$name.tgz" "$name" && rm -rf "$d"
  ls -la "$OUT/$name.tgz"
done
cat "$OUT/times.txt"
