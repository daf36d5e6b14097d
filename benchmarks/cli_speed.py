"""Start-up and analysis speed on the development machine (issue 2 targets; a benchmark, not a timed test).

    python3 benchmarks/cli_speed.py

Targets: `roofline --help` under 0.2 s and `roofline analyze` over all bundled kernels under 0.4 s wall, with
neither matplotlib nor cupy imported; evaluating a descriptor's formulas in microseconds.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def wall(args: list[str], repeats: int = 7) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "roofline", *args], cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> int:
    from roofline.kernels import KernelCatalog
    from roofline.workload import evaluate

    probe = subprocess.run(
        [sys.executable, "-c", "import sys; from roofline.cli import main\n"
         "try:\n    main(['analyze', '--format', 'json'])\nexcept SystemExit:\n    pass\n"
         "print('matplotlib' in sys.modules, 'cupy' in sys.modules, file=sys.stderr)"],
        cwd=ROOT, capture_output=True, text=True)
    heavy = probe.stderr.strip().splitlines()[-1]
    catalog = KernelCatalog.load()
    start = time.perf_counter()
    rounds = 200
    for _ in range(rounds):
        for d in catalog.descriptors:
            evaluate(d)
    per_descriptor = (time.perf_counter() - start) / (rounds * len(catalog.descriptors))
    rows = [
        ("roofline --help", wall(["--help"]), 0.2),
        ("roofline analyze (all kernels, table)", wall(["analyze"]), 0.4),
        ("roofline analyze --format json", wall(["analyze", "--format", "json"]), 0.4),
    ]
    ok = True
    for label, seconds, target in rows:
        passed = seconds < target
        ok &= passed
        print(f"{label:40} {seconds * 1e3:7.0f} ms   target < {target * 1e3:.0f} ms   {'PASS' if passed else 'FAIL'}")
    print(f"{'evaluate one descriptor (all formulas)':40} {per_descriptor * 1e6:7.1f} µs")
    print(f"matplotlib imported, cupy imported by analyze: {heavy}")
    return 0 if ok and heavy == "False False" else 1


if __name__ == "__main__":
    sys.exit(main())
