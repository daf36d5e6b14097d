"""The program ncu runs for `roofline measure --profile ncu`: each planned kernel launched once between markers.

    python -m roofline.ncu.target PLAN.json [DONE.json [DEVICE]]

PLAN.json is {"kernels": [{"name": "sum", "params": {"n": 16777216}, "descriptor": "/path/sum.yaml"}, ...]}
("descriptor" only for kernels outside the bundled catalogue); DONE.json receives which kernels ran. It prints
nothing on standard output, where ncu writes its CSV. Internal: `roofline measure --profile ncu` writes the plan;
by hand, write one and run it under ncu (docs/ncu.md).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from roofline.load import handoff
from roofline.load.bundled import bundled_dir
from roofline.model.expr import compile_expr
from roofline.load.kernels import KernelCatalog
from roofline.measurement.policy import MeasurePolicy
from roofline.model.workload import evaluate

MARKER = "roofline_ncu_marker"
_MARKER_SOURCE = 'extern "C" __global__ void roofline_ncu_marker(int tag) { }\n'
USAGE = "usage: python -m roofline.ncu.target PLAN.json [DONE.json [DEVICE]]"


def _profiler(cp: Any) -> tuple[Any, Any]:
    rt = cp.cuda.runtime
    if hasattr(rt, "profilerStart") and hasattr(rt, "profilerStop"):
        return rt.profilerStart, rt.profilerStop
    from cupy.cuda import profiler  # older CuPy

    return profiler.start, profiler.stop


def _is_bundled(folder: Path) -> bool:
    try:
        return folder.resolve() == bundled_dir("kernels").resolve()
    except OSError:
        return False


def run_target(plan: Sequence[Mapping[str, Any]], device_id: int = 0) -> dict[str, Any]:
    """Launch each planned kernel once between markers, under cudaProfilerStart/Stop."""
    import numpy as np  # lazy: numpy is a start-up cost only this path pays

    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import CupyBackend
    from roofline.measurement.harness import prepare_host  # lazy: roofline.measurement.harness imports numpy (start-up)
    # lazy: roofline.measurement.implementation imports numpy (start-up)
    from roofline.measurement.implementation import load_implementation
    backend = CupyBackend(device_id)
    cp = backend.cp
    start, stop = _profiler(cp)
    marker = cp.RawKernel(_MARKER_SOURCE, MARKER)
    extra = sorted({str(Path(p["descriptor"]).parent) for p in plan if p.get("descriptor")})
    catalog = KernelCatalog.load([Path(e) for e in extra if not _is_bundled(Path(e))])
    by_name = {d.name: d for d in catalog.descriptors}
    policy = MeasurePolicy()
    report: dict[str, Any] = {"kernels": []}
    for i, item in enumerate(plan):
        status: dict[str, Any] = {"index": i, "name": item["name"], "ok": False, "error": None}
        report["kernels"].append(status)
        try:
            d = by_name[item["name"]]
            overrides = {k: compile_expr(v) for k, v in item["params"].items() if k in d.params}
            work = evaluate(d, overrides)
            impl = load_implementation(d)
            host = prepare_host(d, work, impl, policy)
            run = backend.build(impl, host.params, backend.context(d), tuple(host.out_specs))
            buffers = {k: backend.upload(np.asarray(v)) for k, v in host.inputs.items()}
            buffers.update({k: backend.poisoned(s, t) for k, (s, t) in host.out_specs.items()})
            run(**buffers)  # compile, load, allocate: outside the profiled range
            backend.synchronize()
            start()
            try:
                marker((2 * i + 1,), (1,), (np.int32(i),))
                run(**buffers)
                marker((2 * i + 2,), (1,), (np.int32(i),))
                backend.synchronize()
            finally:
                stop()
            status["ok"] = True
        except Exception as exc:  # noqa: BLE001 - one kernel's failure must not lose the others' counters
            text = str(exc).strip()
            status["error"] = f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
        finally:
            try:
                backend.release()
            except Exception:  # noqa: BLE001
                pass
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 3 or args[0].startswith("-") or (len(args) == 3 and not args[2].isdigit()):
        print(USAGE, file=sys.stderr)
        return 2
    plan_path, done_path = Path(args[0]), Path(args[1]) if len(args) > 1 else None
    try:
        plan = handoff.read(plan_path)["kernels"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"{plan_path}: not a plan ({type(exc).__name__}: {exc}); {USAGE}", file=sys.stderr)
        return 2
    try:
        report = run_target(plan, int(args[2]) if len(args) == 3 else 0)
    except Exception as exc:  # noqa: BLE001 - CuPy missing, no device: say so in the report
        report = {"kernels": [], "error": f"the profiled program failed: {type(exc).__name__}: {exc}"}
    report["plan"] = plan
    if done_path is not None:
        done_path.write_text(json.dumps(report), encoding="utf-8")
    for k in report["kernels"]:
        print(f"roofline.ncu.target: {k['index']} {k['name']}: {'ok' if k['ok'] else k['error']}", file=sys.stderr)
    if report.get("error"):
        print(f"roofline.ncu.target: {report['error']}", file=sys.stderr)
    return 0 if not report.get("error") else 3


if __name__ == "__main__":
    sys.exit(main())
