#!/usr/bin/env bash
# `report --baseline` on grouped profiles of 10 steps, on a GPU with PyTorch (issue 40): two runs of the same program
# gate clean (A/A), and one extra residual add per step (aten::add 5 % slower) is caught and named.
#   OUT=/tmp/step bash benchmarks/step_gate.sh
set -u
OUT=${OUT:-/tmp/step-gate}
mkdir -p "$OUT"
P="roofline profile --with torch --range step --steps 10 --format json"
$P -o "$OUT/a.json" -- python3 benchmarks/step_gate.py > /dev/null
$P -o "$OUT/a2.json" -- python3 benchmarks/step_gate.py > /dev/null
$P -o "$OUT/b.json" -- python3 benchmarks/step_gate.py --extra-adds 1 > /dev/null
roofline report "$OUT/a2.json" --baseline "$OUT/a.json" --max-regression 3% --format markdown > "$OUT/aa.md" 2> "$OUT/aa.err"
aa=$?
roofline report "$OUT/b.json" --baseline "$OUT/a.json" --max-regression 3% --format markdown > "$OUT/ab.md" 2> "$OUT/ab.err"
ab=$?
roofline diff "$OUT/a.json" "$OUT/b.json" --format markdown --limit 8 > "$OUT/diff.md"
printf '%-22s %-6s %s\n' "comparison" "exit" "expected"
printf '%-22s %-6s %s\n' "A/A (same program)" "$aa" "0"
printf '%-22s %-6s %s\n' "A/B (+1 add per step)" "$ab" "1, naming aten::add"
cat "$OUT/ab.err"
grep -A12 "vs baseline" "$OUT/ab.md" | head -14
