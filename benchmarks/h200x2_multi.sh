#!/usr/bin/env bash
# Issue 14 on the 2-GPU H200 machine, in one call: measure --device all vs one GPU (wall time), the --outlier gate
# with GPU 1 kept busy by a second process and without, and the interconnect (peer copies, pinned host copies,
# NCCL all-reduce busbw). NVLink multicast stays off. Logs and JSON go to $OUT.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
O=$(mktemp -d)  # packed into one archive in $OUT at the end: the transfer returns only a few files
R="python3 -m roofline"
K="vector_add_float4 triad sum softmax_fused matmul_library_fp16"
M="--min-time 0.2"
log() { echo "== $*" | tee -a "$O/log.txt"; }
t0=$(date +%s.%N)
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.2f}')" "$1" "$(date +%s.%N)"; }
{
  date -u; nvidia-smi -L; nvidia-smi topo -m; nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.current,pcie.link.width.current,power.limit --format=csv
  python3 -c "import cupy, cupy.cuda.nccl as n, click, rich, yaml, numpy; print('cupy', cupy.__version__, 'nccl', n.get_version(), 'available', getattr(n, 'available', '?'))"
} > "$O/env.txt" 2>&1
run() {  # name, timeout, command...
  local name=$1 limit=$2; shift 2
  local s=$(date +%s.%N)
  timeout "$limit" "$@" > "$O/$name.out" 2> "$O/$name.err"; local rc=$?
  log "$name: rc=$rc wall=$(since "$s") s"
}
run single_cold 35 $R measure --device 0 $K $M -o "$O/single_cold.json"
run all 35 $R measure --device all $K $M -o "$O/all.json"
run single_warm 35 $R measure --device 0 $K $M -o "$O/single.json"
run report_all 10 $R report "$O/all.json" --outlier 5% --format markdown
# GPU 1 kept busy by a second process (FP32 GEMMs back to back) while both GPUs are measured.
python3 - > "$O/busy.txt" 2>&1 <<'PY' &
import time, cupy as cp
cp.cuda.Device(1).use()
a = cp.random.rand(8192, 8192, dtype=cp.float32)
end, n = time.time() + 45, 0
while time.time() < end:
    a @ a; n += 1
    if n % 8 == 0: cp.cuda.Device().synchronize()
print("busy gemms", n)
PY
BUSY=$!
sleep 4
run slowed 40 $R measure --device all $K $M -o "$O/slowed.json"
kill "$BUSY" 2>/dev/null; wait "$BUSY" 2>/dev/null
run report_slowed 10 $R report "$O/slowed.json" --outlier 5% --format markdown
run interconnect 50 $R interconnect -o "$O/interconnect.json"
run plot_ic 20 $R plot --interconnect "$O/interconnect.json" -o "$O/interconnect.png"
log "total $(since "$t0") s"
cp "$O/log.txt" "${OUT:-/tmp}/log.txt"; tar czf "${OUT:-/tmp}/h200x2-multi.tgz" -C "$O" .
