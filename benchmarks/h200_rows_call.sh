set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r; mkdir -p $R
. benchmarks/device_env.sh; device_env "$R/env.txt"
timeout 200 python3 benchmarks/kernel_variants.py --only rows > $R/variants.txt 2>&1; echo "exit $?" >> $R/variants.txt
grep -v "^$" $R/variants.txt | tail -45
for k in layernorm_fused softmax_fused; do
timeout 50 python3 -m roofline sweep $k --over rows --set cols=1024 --sizes 2..2**15:4 --min-time 0.05 --model first-principles \
  --calibrated docs/measurements/h200-2026-11-30-measured.yaml -o $R/$k-rows1024.json > $R/$k-rows1024.txt 2>&1; echo "exit $?" >> $R/$k-rows1024.txt; tail -14 $R/$k-rows1024.txt
done
tar czf $OUT/rows.tgz -C $OUT r
