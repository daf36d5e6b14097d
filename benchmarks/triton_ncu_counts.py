"""Triton FLOPs and bytes as ncu counted them, next to roofline's model of the same launches (issue 38 §3).

Reads the results of `roofline profile --with ncu` of a compiled program (benchmarks/h200_compiled_capture.sh ncu:
traces/llama-train-compiled-ncu.results.json in compiled-ncu.tar.gz) and the Kineto trace of the same program
captured with `--with torch` (tests/data/kineto/compiled/llama-train-compiled.json.gz) with its kernel sources,
pairs the Triton launches by name and order, and prints the share of Triton time whose modelled FLOPs and bytes lie
within 0.5-2x of the counted ones, with the generated sources and without. With --write, writes the counted values
in the format of tests/data/kineto/compiled/llama-train-compiled-ncu-triton.json (version 2: flops added), which
tests/test_triton_kernels.py reads.

    PYTHONPATH=. python benchmarks/triton_ncu_counts.py NCU_RESULTS.json TRACE.json.gz KERNELS_DIR [--write OUT.json]

Runs anywhere (no GPU): it only reads files.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.append(str(ROOT))  # PYTHONPATH first: another checkout (main, for a before/after) can be measured

from roofline.kineto.document import import_traces  # noqa: E402


def counted_triton(results: dict) -> list[dict]:
    """The Triton launches of an ncu results document, in launch order: name, bytes, time, flops."""
    out = []
    for k in results.get("kernels", []):
        name = str(k.get("name", ""))
        if name.startswith("triton_"):
            out.append({"kernel_name": name, "bytes": k.get("bytes"), "time": k.get("time_median"),
                        "flops": k.get("flops")})
    return out


def share_within(doc: dict, counted: list[dict], field: str) -> tuple[float | None,
                                                                      list[tuple[str, float, float, float]]]:
    """Share of the modelled Triton time whose `field` lies within 0.5-2x of the counted one; and the launches
    outside (name, time, model, counted)."""
    by_name: dict[str, list[dict]] = {}
    for c in counted:
        by_name.setdefault(c["kernel_name"], []).append(c)
    seen: dict[str, int] = {}
    ok = total = 0.0
    outside = []
    for k in doc["kernels"]:
        if k["model"].get("op_class") != "triton":
            continue
        i = seen.get(k["kernel_name"], 0)
        seen[k["kernel_name"]] = i + 1
        runs = by_name.get(k["kernel_name"], [])
        if i >= len(runs) or runs[i].get(field) is None:
            continue
        model, got = k.get(field) or 0.0, runs[i][field]
        total += k["time_median"]
        if (model == got == 0) or (got and model and 0.5 <= model / got <= 2.0):
            ok += k["time_median"]
        else:
            outside.append((k["kernel_name"], k["time_median"], model, got))
    return (ok / total if total else None), outside


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 5) or (len(argv) == 5 and argv[3] != "--write"):
        print(__doc__, file=sys.stderr)
        return 2
    results, trace, kernels = Path(argv[0]), Path(argv[1]), Path(argv[2])
    counted = counted_triton(json.loads(results.read_text()))
    if not counted:
        print(f"{results}: no Triton kernels in kernels[]", file=sys.stderr)
        return 2
    for with_source in (True, False):
        doc, _ = import_traces([trace], "h200", triton_source=[kernels] if with_source else [])
        for field in ("flops", "bytes"):
            share, outside = share_within(doc, counted, field)
            if share is None:
                print(f"{results}: no counted {field} for the Triton launches")
                continue
            print(f"{'with' if with_source else 'without'} the sources: {field} within 0.5-2x of ncu for "
                  f"{100 * share:.1f} % of Triton time")
            for name, t, model, got in sorted(outside, key=lambda o: -o[1])[:8]:
                print(f"    {name[:90]:90s} {t * 1e6:7.1f} us  model {model:.3g}  ncu {got:.3g}")
    if len(argv) == 5:
        Path(argv[4]).write_text(json.dumps({
            "version": 2, "about": f"Triton launches of {results.name} (roofline profile --with ncu): counted DRAM "
                                   "bytes, CUDA-core FLOPs (add + mul + 2 fma, f/h/d) and time",
            "kernels": counted}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
