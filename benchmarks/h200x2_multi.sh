#!/usr/bin/env bash
# Issue 14 on the 2-GPU H200 machine, in one call (each step bounded by its own timeout):
#   1. `measure` over the whole catalogue on GPU 0, then on both GPUs (--device all), then GPU 0 again (warm compile
#      cache): the wall-time ratio all / single, and `report --outlier 5%` on the undisturbed run (must pass);
#   2. the same `measure --device all` (five kernels) while a second process keeps GPU 1 busy with FP32 GEMMs, and
#      `report --outlier 5%` on it (must fail, naming GPU 1 by index and PCI bus id);
#   3. `calibrate --device all --quick --outlier 5%` (every GPU's ceilings at once, then the links) -o node.yaml;
#   4. `sweep copy --device all` (both GPUs' sweeps side by side) and its chart.
# STEPS=wall runs step 1 alone (the wall-time ratio, e.g. to check a fix). NVLink multicast stays off. Everything is
# packed into one archive in $OUT (the transfer returns few files).
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
O=$(mktemp -d)
R="python3 -m roofline"
K="vector_add_float4 triad sum softmax_fused copy"
log() { echo "== $*" | tee -a "$O/log.txt"; }
t0=$(date +%s.%N)
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$(date +%s.%N)"; }
{
  date -u; git log --oneline -1 2>/dev/null; nvidia-smi -L; nvidia-smi topo -m
  nvidia-smi --query-gpu=index,pci.bus_id,driver_version,pcie.link.gen.current,pcie.link.width.current,power.limit,clocks.max.sm --format=csv
  python3 -c "import cupy, cupy.cuda.nccl as n; print('cupy', cupy.__version__, 'nccl', n.get_version())"
} > "$O/env.txt" 2>&1
run() {  # name, timeout, command...
  local name=$1 limit=$2; shift 2
  local s=$(date +%s.%N)
  timeout "$limit" "$@" > "$O/$name.out" 2> "$O/$name.err"; local rc=$?
  log "$name: rc=$rc wall=$(since "$s") s"
}
run single_cold 150 $R measure --device 0 -o "$O/single_cold.json"
run all 150 $R measure --device all -o "$O/all.json"
run single_warm 150 $R measure --device 0 -o "$O/single.json"
run report_all 20 $R report "$O/all.json" --outlier 5% --format markdown
python3 - "$O/single.json" "$O/all.json" >> "$O/log.txt" 2>&1 <<'PY'
import json, sys
s, a = (json.load(open(p)) for p in sys.argv[1:])
print(f"kernels: single {len(s['kernels'])}, all {len(a['kernels'])} over devices {a['device'].get('indices')}")
PY
grep -h "^measure GPU" "$O/all.err" | sort -t, -k2 -rn > "$O/all_steps.txt" 2>/dev/null
if [ "${STEPS:-all}" = wall ]; then
  log "total $(since "$t0") s"; cp "$O/log.txt" "${OUT:-/tmp}/log.txt"; tar czf "${OUT:-/tmp}/h200x2-wall.tgz" -C "$O" .
  exit 0
fi
# GPU 1 kept busy by a second process (FP32 8192^3 GEMMs back to back) while both GPUs are measured.
python3 - > "$O/busy.txt" 2>&1 <<'PY' &
import time, cupy as cp
cp.cuda.Device(1).use()
a = cp.random.rand(8192, 8192, dtype=cp.float32)
end, n = time.time() + 40, 0
while time.time() < end:
    a @ a; n += 1
    if n % 8 == 0: cp.cuda.Device().synchronize()
print("busy gemms on GPU 1:", n)
PY
BUSY=$!
sleep 4
run slowed 35 $R measure --device all $K --min-time 0.2 -o "$O/slowed.json"
kill "$BUSY" 2>/dev/null; wait "$BUSY" 2>/dev/null
run report_slowed 20 $R report "$O/slowed.json" --outlier 5% --format markdown
run calibrate_all 150 $R calibrate --device all --quick --outlier 5% -o "$O/node.yaml"
run sweep_all 60 $R sweep copy --device all --sizes 2**16..2**28:4 -o "$O/sweep_all.json"
run plot_sweep 30 $R plot --sweep "$O/sweep_all.json" -o "$O/sweep_all.png"
log "total $(since "$t0") s"
cp "$O/log.txt" "${OUT:-/tmp}/log.txt"; cp "$O/report_slowed.out" "${OUT:-/tmp}/report_slowed.md" 2>/dev/null
cp "$O/calibrate_all.out" "${OUT:-/tmp}/calibrate_all.txt" 2>/dev/null
tar czf "${OUT:-/tmp}/h200x2-multi.tgz" -C "$O" .
