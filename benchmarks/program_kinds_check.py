"""Issue 38's figures per program, from what benchmarks/h200_program_kinds.sh captured on the GPU machine; no GPU.

    python3 benchmarks/program_kinds_check.py DIR [NAME ...] [--spec h200-sxm] [--markdown FILE]

For each NAME (a folder DIR/NAME holding NAME.trace.json.gz, a plain torch.profiler trace of one step, and
NAME.ncu.csv, Nsight Compute's counters of one step of the same program; optionally NAME-warmup.trace.json.gz and
NAME.profile.results.json, `roofline profile --with torch`'s results), the current code imports the trace again and
benchmarks/trace_check.py aligns its kernel launches with ncu's, one to one. Printed per program:

  unmodelled (plain)    share of the plain trace's GPU time with no model (target ≤ 2 %; a CUDA-graph program whose
                        kernels run only inside graph replays is excepted where no launch outside the graph exists)
  unmodelled (warm-up)  the same for the trace that starts before the warm-up (graph capture and replays in it)
  unmodelled (profile)  the same through `roofline profile --with torch` (target ≤ 1 %)
  bytes in band         of the matched kernel time, the share whose op call's model bytes are within 0.5-2x of the
                        DRAM bytes ncu counted (target ≥ 90 %); L2 beside it: calls over 2x whose working set fits
                        in the L2 (their inputs were still there)
  Triton FLOPs in band  of the matched Triton kernel time, the share whose model FLOPs are within 0.5-2x of ncu's
                        counted FLOPs (CUDA-core add + mul + 2 fma, tensor cores), launch by launch (target ≥ 85 %);
                        with the generated kernels in DIR/NAME/kernels where the capture copied them (read as
                        `import torch --triton-source` reads them: the trace's paths are the GPU machine's), and
                        beside it without them (the kernels' names alone)
  judged on             the one-step trace matched against ncu: `profile --with torch`'s (NAME.profile.json.gz)
                        where it kept one, since it models CUDA-graph replays through their captures; else the
                        plain trace
  MFU model / ncu       the trace document's MFU (with the captured kernel sources where there are any; Triton
                        templates on a tensor roof count as matrix work) against ncu's tensor-core FLOPs (every launch it counted) over the
                        same window and the same peak (target: within 3 points for the CUDA-graph programs)
Exit status 0 when every judged target is met, 1 otherwise, 2 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import trace_check  # noqa: E402
from roofline.errors import InputError  # noqa: E402

BAND = trace_check.BAND


@dataclass(frozen=True)
class Figures:
    name: str
    basis: str  # the trace matched against ncu: "plain" or "profile" (`profile --with torch`'s kept trace)
    events: int
    unmodelled_plain: float
    unmodelled_warm: float | None
    unmodelled_profile: float | None
    bytes_in_band: float | None
    bytes_l2: float | None
    triton_in_band: float | None  # with the captured kernel sources where there are any
    triton_in_band_names: float | None  # from the kernels' names alone (no sources)
    triton_time: float
    mfu_model: float | None
    mfu_ncu: float | None
    matched: int
    ncu_launches: int


def _document(path: Path, machine: Any, gpu: str, sources: Any = ()) -> dict[str, Any]:
    from roofline.kineto.document import build_document
    from roofline.kineto.reader import read_trace
    from roofline.kineto.sources import KernelSources

    doc, _ = build_document([read_trace(path)], machine, gpu, group_by="op", sources=KernelSources(sources))
    return doc


def _ncu_tensor_flops(csv: Path) -> float:
    from roofline.ncu.importer import import_csv

    doc, _ = import_csv(csv)
    return sum((k.get("counters") or {}).get("flops_tensor") or 0.0 for k in doc["kernels"])


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def _flops_ok(m: trace_check.Matched) -> bool:
    if m.model_flops is None or m.ncu_flops is None:
        return False
    if m.ncu_flops == 0:
        return m.model_flops == 0
    return BAND[0] <= m.model_flops / m.ncu_flops <= BAND[1]


def _triton_share(check: trace_check.Check) -> tuple[float | None, float]:
    """(share of the matched Triton kernel time whose FLOPs are in band, that time)."""
    triton = [m for m in check.launches if m.kernel.startswith("triton")]
    time = sum(m.time for m in triton)
    return _share(sum(m.time for m in triton if _flops_ok(m)), time), time


def figures(directory: Path, name: str, machine: Any, gpu: str) -> Figures:
    """The program's figures; with its captured kernels/ folder where there is one (as `import torch
    --triton-source` reads them), the Triton share also without it (the kernels' names alone)."""
    folder = directory / name
    sources = trace_check.captured_sources(folder)
    plain = folder / f"{name}.trace.json.gz"
    # the one-step trace judged against ncu: `profile --with torch`'s where it kept one (it models CUDA-graph
    # replays through their captures; a plain trace of replays alone cannot), else the plain trace
    kept = folder / f"{name}.profile.json.gz"
    basis = kept if kept.is_file() else plain
    check = trace_check.check_program(folder, name, machine, gpu, sources, basis)
    names_only = trace_check.check_program(folder, name, machine, gpu, (), basis) if sources else check
    unmodelled_plain = (check if basis == plain else trace_check.check_program(folder, name, machine, gpu, sources)
                        ).unmodelled_share
    doc = _document(basis, machine, gpu, sources)  # MFU with the sources too (a flex template's block mask)
    step = doc.get("timeline", {}).get("step", {})
    warm_path = folder / f"{name}-warmup.trace.json.gz"
    warm = _document(warm_path, machine, gpu)["program"]["unmodelled_share"] if warm_path.is_file() else None
    profile_path = folder / f"{name}.profile.results.json"
    profiled = None
    if profile_path.is_file():
        from roofline.records.files import load_results

        profiled = load_results(profile_path).doc["program"]["unmodelled_share"]
    total = sum(m.time for m in check.launches)
    in_band = sum(m.time for m in check.launches if check.calls.get(m.call) == "in band")
    l2 = sum(m.time for m in check.launches if check.calls.get(m.call) == "L2")
    triton_in_band, triton_time = _triton_share(check)
    triton_names = _triton_share(names_only)[0] if sources else None
    mfu_ncu = None
    peak, wall = (step.get("peak") or {}).get("flops"), step.get("wall_time")
    if peak and wall:
        mfu_ncu = _ncu_tensor_flops(folder / f"{name}.ncu.csv") / (peak * wall)
    return Figures(name, "profile" if basis == kept else "plain", check.trace_kernels, unmodelled_plain, warm, profiled, _share(in_band, total),
                   _share(l2, total), triton_in_band, triton_names, triton_time,
                   step.get("mfu"), mfu_ncu, len(check.launches), check.ncu_launches)


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:.1f} %"


def table(rows: list[Figures]) -> str:
    head = ("| program | judged on | kernels (matched / ncu) | unmodelled plain | warm-up trace | profile | bytes in band (L2) "
            "| Triton FLOPs in band (Triton time) | without sources | MFU model | MFU ncu |")
    lines = [head, "|" + " --- |" * 11]
    for f in rows:
        lines.append(f"| {f.name} | {f.basis} trace | {f.events} ({f.matched} / {f.ncu_launches}) | {_pct(f.unmodelled_plain)} | "
                     f"{_pct(f.unmodelled_warm)} | {_pct(f.unmodelled_profile)} | {_pct(f.bytes_in_band)} "
                     f"({_pct(f.bytes_l2)}) | {_pct(f.triton_in_band)} ({f.triton_time * 1e3:.3f} ms) | "
                     f"{_pct(f.triton_in_band_names)} | "
                     f"{_pct(f.mfu_model)} | {_pct(f.mfu_ncu)} |")
    return "\n".join(lines)


def verdicts(f: Figures) -> list[str]:
    """The targets this program misses, each as a line."""
    out = []
    graph = "cudagraph" in f.name
    if f.unmodelled_plain > 0.02 and not graph:
        out.append(f"{f.name}: {_pct(f.unmodelled_plain)} of the plain trace unmodelled (target ≤ 2 %)")
    if f.unmodelled_profile is not None and f.unmodelled_profile > 0.01:
        out.append(f"{f.name}: {_pct(f.unmodelled_profile)} unmodelled through profile (target ≤ 1 %)")
    if f.bytes_in_band is not None and f.bytes_in_band < 0.90:
        out.append(f"{f.name}: bytes in band for {_pct(f.bytes_in_band)} of kernel time (target ≥ 90 %)")
    if f.triton_in_band is not None and f.triton_in_band < 0.85:
        out.append(f"{f.name}: Triton FLOPs in band for {_pct(f.triton_in_band)} of Triton time (target ≥ 85 %)")
    if graph and f.mfu_model is not None and f.mfu_ncu is not None and abs(f.mfu_model - f.mfu_ncu) > 0.03:
        out.append(f"{f.name}: MFU {_pct(f.mfu_model)} against ncu's {_pct(f.mfu_ncu)} (target within 3 points)")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path)
    parser.add_argument("names", nargs="*")
    parser.add_argument("--spec", default="h200-sxm")
    parser.add_argument("--markdown", type=Path)
    a = parser.parse_args(argv)
    from roofline.load.specs import SpecCatalog

    try:
        machine = SpecCatalog.bundled().resolve(a.spec)
        names = a.names or sorted(p.name for p in a.directory.iterdir()
                                  if (p / f"{p.name}.trace.json.gz").is_file() and (p / f"{p.name}.ncu.csv").is_file())
        rows = [figures(a.directory, n, machine, machine.name) for n in names]
    except InputError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = table(rows)
    missed = [line for f in rows for line in verdicts(f)]
    text += "\n\n" + ("\n".join(f"- MISSED {m}" for m in missed) if missed else "every judged target met")
    print(text)
    if a.markdown:
        a.markdown.write_text(text + "\n")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
