#!/usr/bin/env bash
# `roofline profile` of two real models on the H200 (issue 11), for docs/measurements/ and tests/data/ncu/.
# Run ON the GPU machine, from the repository root:   bash benchmarks/h200_profile_models.sh
# Writes into $OUT: env.txt (GPU, driver, ncu, torch, transformers, torchvision), gpt2.{csv,json,txt,log},
# resnet50.{csv,json,txt,log}; each model's wall time (program start to results written) is in its .log.
# ResNet-50 runs only when BUDGET seconds (default 200) leave room after GPT-2.
set -uo pipefail
OUT=${OUT:-$(pwd)/profile-out}
BUDGET=${BUDGET:-200}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONPATH=$(pwd)${PYTHONPATH:+:$PYTHONPATH}
START=$(date +%s)
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
  ncu --version | tail -1
  python3 -c 'import torch, transformers, torchvision; print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__, "torchvision", torchvision.__version__)'
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
profile_model() {  # name, limit in seconds
  local name=$1 limit=$2 t0
  t0=$(date +%s.%N)
  timeout "$limit" python3 -m roofline profile --range start-stop --group-by op --save-csv "$OUT/$name.csv" \
      -o "$OUT/$name.json" -- python3 "benchmarks/profile_$name.py" > "$OUT/$name.txt" 2> "$OUT/$name.log"
  local rc=$?
  echo "$name: exit $rc, wall $(python3 -c "import time; print(f'{time.time() - $t0:.1f}')") s" | tee -a "$OUT/$name.log"
  tail -5 "$OUT/$name.log"; head -c 3000 "$OUT/$name.txt"
}
profile_model gpt2 $((BUDGET - 20))
LEFT=$((BUDGET - ($(date +%s) - START)))
if [ "$LEFT" -gt 75 ]; then profile_model resnet50 $((LEFT - 5)); else echo "resnet50: skipped, ${LEFT} s left"; fi
