"""Issue 43 on the GPU: the power roof against fresh cuBLAS GEMMs and a copy. Run from the repository root on the GPU
machine (CuPy with ml_dtypes for BF16, nvidia-ml-py for the energy counter):

    PYTHONPATH=. python3 benchmarks/power_roof_gpu.py --out $OUT          # about 1 minute on an H200

calibrate --energy's own probes (roofline.measurement.calibrate.energy: idle, copy, triad, FMA, cuBLAS FP16, BF16
and TF32 GEMMs through cupy.matmul on random normal data, each a 2.5 s loop between two readings of NVML's energy
counter, with its mean SM clock and the share of the window the power policy held the clocks down) at N = 8192 and
N = 4096, each GEMM set beside the power roof of the bundled spec (--spec, default the GPU's: h200) at the GPU's
enforced power limit: (P − π0) ÷ (ε_flop + ε_mem ÷ I), I = 2N ÷ (3 × itemsize). The copy is set beside the bandwidth
roof, which the power roof must leave alone (the model must not call it power-bound).

Prints one table; writes it and every run (JSON) to --out. Exit status 0 when every GEMM is within 10 % of its power
roof and the copy is not power-bound in the model, 1 otherwise. Written without a GPU to test it on (2026-12-06):
the probes are calibrate's, tested on the H200 on 2026-12-04; this driver around them is not.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TOLERANCE = 0.10
ITEMSIZE = {"compute.fp16_tensor": 2, "compute.bf16_tensor": 2, "compute.tf32_tensor": 4}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--spec", default="h200", help="the bundled spec whose energy block predicts (default h200)")
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)

    from roofline.load.selection import resolve_specs
    from roofline.measurement.backend_cupy import CupyBackend
    from roofline.measurement.calibrate.energy import FULL_ENERGY, OK, calibrate_energy
    from roofline.model.analysis import analyze
    from roofline.model.power import power_figures, power_limited_rate

    spec = resolve_specs((args.spec,))[0]
    backend = CupyBackend(0)
    rows, runs_out, ok = [], {}, True
    limit = None
    for n in (8192, 4096):
        runs = calibrate_energy(backend, replace(FULL_ENERGY, gemm_n=n), fp32_rate=None)
        runs_out[str(n)] = [r.to_dict() for r in runs]
        for r in runs:
            limit = limit or r.power_limit
            if r.status != OK:
                rows.append(f"| {r.name} {n}³ | {r.status}: {r.note} | | | | | |")
                ok = ok and r.field not in ITEMSIZE
                continue
            if r.field in ITEMSIZE:
                roof = r.field.removeprefix("compute.")
                f = power_figures(replace(spec, power_limit=r.power_limit or spec.power_limit), roof)
                predicted = power_limited_rate(2 * n / (3 * ITEMSIZE[r.field]), f)
                ratio = r.rate / predicted
                ok = ok and abs(ratio - 1) <= TOLERANCE
                rows.append(f"| {r.name} {n}³ | {r.rate / 1e12:.1f} TFLOP/s | {predicted / 1e12:.1f} TFLOP/s | "
                            f"{ratio:.3f} | {r.power:.0f} W | {(r.sm_clock_mean or 0) / 1e6:.0f} MHz | "
                            f"{(r.power_capped or 0):.0%} |")
            elif r.name == "copy" and n == 8192:
                from roofline.load.bundled import bundled_dir
                from roofline.load.kernels import load_descriptor
                from roofline.model.workload import evaluate

                bound = analyze(spec, evaluate(load_descriptor(bundled_dir("kernels") / "copy.yaml"))).bound
                ok = ok and bound != "power"
                rows.append(f"| copy | {r.rate / 1e12:.2f} TB/s | {spec.bandwidth / 1e12:.1f} TB/s (model: {bound}) | "
                            f"{r.rate / spec.bandwidth:.3f} | {r.power:.0f} W | {(r.sm_clock_mean or 0) / 1e6:.0f} MHz | "
                            f"{(r.power_capped or 0):.0%} |")
    head = [f"Power roof of {spec.id} at the enforced limit {limit or spec.power_limit:.0f} W against fresh "
            "2.5 s loops on random data (calibrate --energy's probes):", "",
            "| probe | measured | power roof | measured ÷ predicted | power | SM clock | power-capped |",
            "|---|---|---|---|---|---|---|"]
    text = "\n".join(head + rows) + f"\n\n{'PASS' if ok else 'FAIL'}: GEMMs within 10 % of the power roof, copy not power-bound"
    print(text)
    (args.out / "power_roof_gpu.md").write_text(text + "\n", encoding="utf-8")
    (args.out / "power_roof_gpu.json").write_text(json.dumps(runs_out, indent=1) + "\n", encoding="utf-8")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
