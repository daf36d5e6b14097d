"""Issue 38: the multi-tensor kernels' (fused optimizers, GradScaler's unscale, _foreach_*) modelled bytes against the
DRAM bytes Nsight Compute counted for the same launches. No GPU: it reads a Kineto trace and ncu's CSV of the same
range (benchmarks/trace_check_capture.sh, or `roofline profile --with ncu --save-csv`).

    python3 benchmarks/multitensor_check.py TRACE NCU_CSV [--markdown FILE]

For every multi_tensor_apply_kernel launch, in launch order on both sides (matched one to one by order: both
record the same range), it prints what `roofline import torch` models (the shape model where the trace recorded
the lists' shapes, else the grid model), the grid model's bytes for the same launch (computed whatever the trace
recorded: blocks x 65,536 elements x the functor's streams), and the DRAM bytes ncu counted (read + write), each
as model / counted. The grid model's figure for a launch is that launch's blocks; the document splits an op's work
across its launches by time, so both are shown.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline.errors import InputError  # noqa: E402
from roofline.kineto.attribution import attribute  # noqa: E402
from roofline.kineto.document import build_document, choose_spec, op_inputs  # noqa: E402
from roofline.kineto.reader import read_trace  # noqa: E402
from roofline.load.specs import SpecCatalog  # noqa: E402
from roofline.model.ops.aten import OpInput, model_from_grid  # noqa: E402
from roofline.model.ops.multitensor import blocks_of, parse_kernel  # noqa: E402
from roofline.model.units import format_bytes  # noqa: E402


def trace_launches(path: Path, spec: str | None) -> list[dict[str, Any]]:
    """The trace's multi-tensor launches in GPU order: op, grid, the document's bytes and the grid model's."""
    trace = read_trace(path)
    machine, gpu = choose_spec([trace], spec, SpecCatalog.bundled())
    doc, _ = build_document([trace], machine, gpu, with_timeline=False)
    entries = {e["params"]["launch"]: e for e in doc["kernels"]}
    timed = [a for a in attribute(trace) if a.event.dur > 0]
    out = []
    for number, a in enumerate(timed, start=1):
        kernel = parse_kernel(a.event.name)
        if kernel is None or a.op is None:
            continue
        entry = entries.get(number)
        inputs = op_inputs(a.op, OpInput)
        # a list recorded as 0-dim tensors (the step counters of a fused optimizer): one element a block
        scalars = bool(inputs) and bool(inputs[0].dims) and all(d == () for d in inputs[0].dims or ())
        one = model_from_grid(a.op.name, inputs, [(a.event.name, a.event.grid)], step_counter=scalars)
        note = (entry or {}).get("model", {}).get("note", "")
        out.append({"op": a.op.name, "grid": blocks_of(a.event.grid), "dtype": kernel.dtype,
                    "model": entry["bytes"] if entry else None,
                    "which": "grid" if "grid model" in note else "step counter" if "step-counter" in note
                    else "shape" if entry else "none",
                    "grid_model": one.bytes if one is not None else None})
    return out


def ncu_launches(path: Path) -> list[dict[str, Any]]:
    from roofline.ncu.importer import import_csv

    doc, _ = import_csv(path)
    out = []
    for k in doc["kernels"]:
        name = k.get("kernel_name") or k["name"]
        if parse_kernel(name) is None:
            continue
        c = k.get("counters") or {}
        out.append({"read": c.get("dram_read"), "write": c.get("dram_write"), "bytes": c.get("dram_bytes")})
    return out


def ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.3f}" if a is not None and b else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("trace", type=Path)
    parser.add_argument("ncu_csv", type=Path)
    parser.add_argument("--spec", default=None)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    try:
        trace, ncu = trace_launches(args.trace, args.spec), ncu_launches(args.ncu_csv)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if len(trace) != len(ncu):
        print(f"note: {len(trace)} multi-tensor launches in the trace, {len(ncu)} in the CSV: matched the first "
              f"{min(len(trace), len(ncu))} in order", file=sys.stderr)
    rows = ["| op | blocks | dtype | model | which | model / counted | grid model / counted | counted read | "
            "counted write |", "|---|---:|---|---:|---|---:|---:|---:|---:|"]
    total = {"model": 0.0, "grid": 0.0, "counted": 0.0}
    for t, n in zip(trace, ncu):
        rows.append(f"| {t['op']} | {t['grid']} | {t['dtype']} | {format_bytes(t['model']) if t['model'] else '-'} "
                    f"| {t['which']} | {ratio(t['model'], n['bytes'])} | {ratio(t['grid_model'], n['bytes'])} | "
                    f"{format_bytes(n['read'] or 0)} | {format_bytes(n['write'] or 0)} |")
        if t["model"] and t["grid_model"] and n["bytes"]:
            total["model"] += t["model"]
            total["grid"] += t["grid_model"]
            total["counted"] += n["bytes"]
    rows.append(f"| all | | | {format_bytes(total['model'])} | | {ratio(total['model'], total['counted'])} | "
                f"{ratio(total['grid'], total['counted'])} | {format_bytes(total['counted'])} (read + write) | |")
    text = "\n".join(rows)
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
