"""Issue 38 §3, per Triton kernel: roofline's FLOPs against the thread instructions ncu counted, for finding where
the counting convention is physically wrong. No GPU: it reads what benchmarks/h200_program_kinds.sh captured.

    python3 benchmarks/triton_flops_per_kernel.py DIR NAME [--spec h100-sxm] [--no-sources]

DIR/NAME holds NAME.trace.json.gz, NAME.ncu.csv (ncu's raw CSV with sm__sass_thread_inst_executed_op_*_pred_on)
and, where the capture copied them, kernels/ (Inductor's generated sources, read as `import torch --triton-source`
reads them; --no-sources models from the kernels' names alone). Launches are matched as benchmarks/trace_check.py
matches them. Printed per Triton kernel (its launches summed), by time: launches, time, the model's FLOPs, ncu's
FLOPs (add + mul + 2 fma), model / ncu, and ncu's thread-instruction counts per op type (fp32 fadd fmul ffma, fp16
hadd hmul hfma: an fp16 -> fp32 conversion is an HADD2.F32, counted as hadd), with a mark where the ratio is
outside 0.5-2x. Exit 0, or 2 on bad input.
"""

from __future__ import annotations

import argparse
import csv
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import trace_check  # noqa: E402
from roofline.errors import InputError  # noqa: E402

OPS = ("fadd", "fmul", "ffma", "hadd", "hmul", "hfma", "dadd", "dmul", "dfma")
METRIC = "sm__sass_thread_inst_executed_op_{}_pred_on.sum"


@dataclass
class Kernel:
    name: str
    launches: int = 0
    time: float = 0.0
    model: float = 0.0
    ncu: float = 0.0
    unmodelled: int = 0
    counts: dict[str, float] = field(default_factory=lambda: dict.fromkeys(OPS, 0.0))

    @property
    def ratio(self) -> float | None:
        return self.model / self.ncu if self.ncu else None


def instruction_rows(csv_path: Path) -> list[dict[str, float]]:
    """ncu's launches in CSV order, each with its thread-instruction counts per op type (0 where not captured)."""
    try:
        text = csv_path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError as e:
        raise InputError(f"{csv_path}: {e.strerror}") from e
    start = next((i for i, line in enumerate(text) if line.startswith('"ID"')), None)
    if start is None:
        raise InputError(f"{csv_path}: no ncu header row (\"ID\", ...)")
    rows = list(csv.reader(text[start:]))
    header = rows[0]
    index = {h: i for i, h in enumerate(header)}
    out = []
    for row in rows[2:]:  # the second row holds the units
        if len(row) != len(header):
            continue
        counts = {}
        for op in OPS:
            i = index.get(METRIC.format(op))
            try:
                counts[op] = float(row[i].replace(",", "")) if i is not None and row[i] else 0.0
            except ValueError:
                counts[op] = 0.0
        out.append(counts)
    return out


def per_kernel(check: trace_check.Check, rows: list[dict[str, float]]) -> list[Kernel]:
    kernels: dict[str, Kernel] = {}
    for m in check.launches:
        if not m.kernel.startswith("triton"):
            continue
        k = kernels.setdefault(m.kernel, Kernel(m.kernel))
        k.launches += 1
        k.time += m.time
        k.ncu += m.ncu_flops or 0.0
        if m.model_flops is None:
            k.unmodelled += 1
        k.model += m.model_flops or 0.0
        if 0 <= m.ncu_index < len(rows):
            for op, n in rows[m.ncu_index].items():
                k.counts[op] += n
    return sorted(kernels.values(), key=lambda k: -k.time)


def _g(v: float) -> str:
    return f"{v:.3g}"


def table(kernels: list[Kernel]) -> str:
    total = sum(k.time for k in kernels) or 1.0
    lines = ["| kernel | launches | time (share) | model | ncu | model / ncu | "
             + " | ".join(OPS[:6]) + " |", "|" + " --- |" * 12]
    for k in kernels:
        r = k.ratio
        mark = "" if (r is not None and 0.5 <= r <= 2.0) or (k.ncu == 0 and k.model == 0) else " **out**"
        lines.append(f"| {k.name} | {k.launches} | {k.time * 1e6:.1f} us ({100 * k.time / total:.1f} %) | "
                     f"{_g(k.model)}{' (no model)' if k.unmodelled else ''} | {_g(k.ncu)} | "
                     f"{'—' if r is None else f'{r:.2f}'}{mark} | "
                     + " | ".join(_g(k.counts[op]) for op in OPS[:6]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("name")
    parser.add_argument("--spec", default="h100-sxm")
    parser.add_argument("--no-sources", action="store_true")
    a = parser.parse_args(argv)
    from roofline.load.specs import SpecCatalog

    folder = a.directory / a.name
    try:
        machine = SpecCatalog.bundled().resolve(a.spec)
        sources = [] if a.no_sources else trace_check.captured_sources(folder)
        check = trace_check.check_program(folder, a.name, machine, machine.name, sources)
        rows = instruction_rows(folder / f"{a.name}.ncu.csv")
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{a.name}: Triton kernels {'with the captured sources' if sources else 'from their names alone'}")
    print(table(per_kernel(check, rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
