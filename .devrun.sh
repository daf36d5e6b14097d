#!/usr/bin/env bash
# this session's closing GPU call (not committed)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
TREE=$1
mkdir -p "$OUT/rec" /tmp/w
t0=$(date +%s)
echo "== NCCL one rank, --timeout 120"
timeout 120 python3 -m roofline fleet links --backend cupy --timeout 120 --max-bytes 1GiB -o /tmp/w/one-gpu-links.json --format json > /tmp/w/links.stdout 2> /tmp/w/links.stderr; echo "links rc=$?"; tail -2 /tmp/w/links.stderr
python3 -c "
import json; d=json.load(open('/tmp/w/one-gpu-links.json')); pts=[p for s in d['scopes'] for p in s['points']]
print('transport', d.get('transport'), 'points', len(pts), 'ok', sum(p['status']=='OK' for p in pts), 'cut_short' in d and d['cut_short'])"
echo "== NCCL one rank, a hang injected at the 1 MiB all-reduce, --timeout 10"
s=$(date +%s.%N)
ROOFLINE_FLEET_TEST_LINK_HANG=0:all_reduce:1048576 timeout 90 python3 -m roofline fleet links --backend cupy --timeout 10 --max-bytes 4MiB -o /tmp/w/cut.json > /tmp/w/cut.stdout 2> /tmp/w/cut.stderr; echo "hang rc=$? wall_s=$(python3 -c "import time;print(f'{time.time()-$s:.1f}')")"; grep -v "^fleet links: intra" /tmp/w/cut.stderr | tail -6
python3 -c "
import json; d=json.load(open('/tmp/w/cut.json')); print('cut_short', d.get('cut_short')); print([(p.get('collective'), p['bytes'], p['status']) for s in d['scopes'] for p in s['points'] if p.get('collective')=='all_reduce'])" 2>&1 | tail -3
echo "== mpirun -n 1 measure"; timeout 60 mpirun --allow-run-as-root -n 1 python3 -m roofline measure vector_add -o /tmp/w/mpi1.json > /tmp/w/mpi1.txt 2>&1; echo "rc=$?"
echo "== GPU tests"; timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/ > /tmp/w/gpu-tests.txt 2>&1; echo "gpu tests rc=$?"; tail -2 /tmp/w/gpu-tests.txt
echo "== acceptance ($(( $(date +%s) - t0 )) s so far)"
timeout 300 python3 benchmarks/gpu_acceptance.py --out /tmp/acc --record "$OUT/rec/h200-acceptance.md" --tree "$TREE" 2>&1 | tail -14
tar -C /tmp/w -czf "$OUT/w.tgz" . ; echo "total $(( $(date +%s) - t0 )) s"
