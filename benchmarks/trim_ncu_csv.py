"""Trim an `ncu --csv --page raw` capture to the columns roofline reads, for a committed test fixture.

ncu's raw page adds ~330 device__attribute_* and other columns roofline never reads; the fixed launch columns,
the NVTX stacks, the GPU's name and roofline's metrics are kept, rows and values as ncu wrote them.

    python3 benchmarks/trim_ncu_csv.py capture.csv > tests/data/ncu/h200_gpt2_profile.csv
"""

import csv
import io
import sys

from roofline.ncu.metrics import IMPORT_METRICS

text = open(sys.argv[1], encoding="utf-8").read()
lines = text.splitlines()
start = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
rows = list(csv.reader(io.StringIO("\n".join(lines[start:]))))
header = rows[0]
keep = [i for i, h in enumerate(header) if "__" not in h or h in IMPORT_METRICS]
out = io.StringIO()
writer = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
for row in rows:
    if len(row) == len(header):
        writer.writerow([row[i] for i in keep])
sys.stdout.write("\n".join(lines[:start]) + "\n" + out.getvalue())
