#!/usr/bin/env bash
# this session's closing GPU call (not committed)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
TREE=$1
mkdir -p "$OUT/rec" /tmp/w
t0=$(date +%s)
echo "== NCCL one rank"
timeout 90 python3 -m roofline fleet links --backend cupy --max-bytes 1GiB -o /tmp/w/one-gpu-links.json --format json > /tmp/w/links.stdout 2> /tmp/w/links.stderr; echo "links rc=$?"; tail -4 /tmp/w/links.stderr
python3 - <<'PY'
import json
d = json.load(open("/tmp/w/one-gpu-links.json"))
print("top keys", list(d)[:14])
for sc in d.get("scopes", []):
    pts = sc.get("points", [])
    ok = [p for p in pts if p.get("status") == "OK"]
    print("scope", sc.get("scope"), sc.get("link"), "points", len(pts), "ok", len(ok), "hosts", sc.get("hosts"))
    for p in ok:
        if p.get("bytes") in (1024, 1 << 20, 1 << 30):
            print("  ", p.get("collective"), p.get("bytes"), "time", p.get("time"), "algbw", p.get("algbw"), "busbw", p.get("busbw"))
PY
echo "== mpirun"; command -v mpirun && (timeout 60 mpirun --allow-run-as-root -n 1 python3 -m roofline measure vector_add -p n=2**26 -o /tmp/w/mpi1.json > /tmp/w/mpi1.txt 2>&1; echo "mpirun measure rc=$?"; tail -3 /tmp/w/mpi1.txt)
echo "== profile --with torch"
for n in gpt2 resnet50 train; do
  s=$(date +%s.%N)
  timeout 100 python3 -m roofline profile --with torch --range start-stop --group-by op -o /tmp/w/$n.torch.json -- python3 benchmarks/profile_$n.py > /tmp/w/$n.torch.txt 2> /tmp/w/$n.torch.log
  echo "$n --with torch rc=$? wall_s=$(python3 -c "import time;print(f'{time.time()-$s:.2f}')")"; tail -2 /tmp/w/$n.torch.log
done
echo "== GPU tests"; timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/ > /tmp/w/gpu-tests.txt 2>&1; echo "gpu tests rc=$?"; tail -3 /tmp/w/gpu-tests.txt
echo "== acceptance ($(( $(date +%s) - t0 )) s so far)"
timeout 330 python3 benchmarks/gpu_acceptance.py --out /tmp/acc --record "$OUT/rec/h200-acceptance.md" --tree "$TREE" 2>&1 | tail -18
tar -C /tmp/w -czf "$OUT/w.tgz" . ; tar -C /tmp/acc -czf "$OUT/acc.tgz" . 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
