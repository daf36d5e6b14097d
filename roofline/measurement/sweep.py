"""`roofline sweep` on a backend: the launch overheads, each size through the harness, the model fitted to them,
and the results document with its 'sweep' block. With --calibrated FILE whose `model:` block holds the launch
floor, round trip and reduction, those are used and the probes are not run again.

It exists so the command only parses options and renders (roofline.cli.sweep); the model itself is pure
(roofline.sizes.fitted). CuPy is reached only through the backend object passed in.
"""

from __future__ import annotations

from typing import Any

from roofline.measurement.policy import MeasurePolicy
from roofline.measurement.progress import SILENT, Progress
from roofline.model.types import MachineSpec
from roofline.sizes.request import SweepRequest
from roofline.model.expr import compile_expr
from roofline.model.geometry import launch_shapes
from roofline.sizes.predict import FIRST_PRINCIPLES
from roofline.sizes.fitted import summary
from roofline.model.workload import evaluate
from roofline.sizes import predict, fitted as sweep
from roofline.errors import first_line, RooflineError
from roofline.model.analysis import analyze
from roofline.records.document import KernelResult
from roofline.sizes.whatif import compute_floor

MEASUREMENT_NOTE = (
    "Each size is measured as 'roofline measure' does: checked against the NumPy reference, then timed as "
    "back-to-back launches (CUDA-graph replay below 1 ms, CUDA events above), median per launch. While a size's "
    "inputs and outputs are under 4 × L2, the harness rotates among buffer sets (column 'sets') so a launch does "
    "not find the previous launch's data in L2; the sets together span about 4 × L2 (at most 4096 sets), so the "
    "smallest sizes may still read part of their data from L2."
)
HOST_NOTE = (
    "Each size is measured as 'roofline measure --backend numpy' does: the NumPy reference on the host CPU, checked, "
    "then timed by wall clock, median per call; small sizes rotate among buffer sets (column 'sets')."
)


def run_sweep(request: SweepRequest, engine: Any, machine: MachineSpec, policy: MeasurePolicy,
              progress: Progress = SILENT) -> dict[str, Any]:
    """Measure every size of the request and set the model's prediction beside each: roofline/results/v1 with a
    'sweep' block (the model's inputs and their sources, the overheads, the summary). A size that cannot run is a
    FAILED entry; the sweep goes on. The launch geometry of every size is evaluated before anything runs, so a
    descriptor whose `threads` cannot be evaluated is an input error, not a failure after minutes of measuring."""
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import results_document

    d, param = request.kernel, request.param
    source = request.calibrated if request.calibrated is not None else machine
    sm_count = source.sm_count or machine.sm_count
    overrides = [{**request.fixed, param: compile_expr(size)} for size in request.sizes]
    works = [evaluate(d, o) for o in overrides] if request.model == FIRST_PRINCIPLES else []
    shapes = [launch_shapes(d, w, sm_count) for w in works]
    compute = [compute_floor(w, source if source.roofs.get(w.roof) else machine) for w in works]
    cal = request.calibrated
    if (request.model == FIRST_PRINCIPLES and cal is not None and engine.name != "numpy"
            and None not in (cal.model.launch_floor, cal.model.round_trip, cal.model.reduction)):
        # the measured spec holds the probes' figures (calibrate measured them on this GPU): not measured again
        overheads: dict[str, Any] = {"from_spec": f"{cal.id}: model.launch_floor, model.round_trip and "
                                                  "model.reduction, as calibrate measured them; not measured again"}
    else:
        progress.start("launch overheads")
        overheads = launch_costs(engine, policy)
        progress.finish("launch overheads", "FAILED" if overheads["launch_floor_error"] else "OK")
    entries = []
    for i, (size, o) in enumerate(zip(request.sizes, overrides)):
        step = f"{d.name} {param}={size} ({i + 1}/{len(request.sizes)})"
        progress.start(step)
        entry = measure_size(d, o, engine, machine, policy)
        entries.append({**entry, "size": size})
        progress.finish(step, entry["status"])

    model = annotate_entries(entries, shapes, source, overheads, request, compute)
    doc = results_document(engine, machine, entries, policy)
    doc["sweep"] = {
        "kernel": d.name, "param": param, "sizes": list(request.sizes),
        "fixed": {k: v.source for k, v in request.fixed.items()},
        "model": model, "overheads": overheads, "summary": summary(entries),
        "measurement": HOST_NOTE if engine.name == "numpy" else MEASUREMENT_NOTE,
    }
    return doc


def annotate_entries(entries: list[dict[str, Any]], shapes: list[Any], source: MachineSpec,
                     overheads: dict[str, Any], request: SweepRequest,
                     compute: list[float] | None = None) -> dict[str, Any]:
    """Set each entry's prediction by the request's model; returns the model's inputs for the 'sweep' block.
    `compute` is each size's FLOPs ÷ roof (the first-principles model's compute floor)."""
    if request.model == predict.FIRST_PRINCIPLES:
        figures = predict.machine_figures(source, overheads)
        predict.annotate(entries, shapes, figures, compute)
        return figures.to_dict()
    form = "additive" if request.model == "fitted" else request.model
    inputs = sweep.fit_model(entries, source, overheads, form, request.latency, request.efficiency)
    sweep.annotate(entries, inputs)
    return inputs.to_dict()


def launch_costs(engine: Any, policy: MeasurePolicy) -> dict[str, Any]:
    """Launch floor, one-element latency, the stream probe and the reduction probe on the GPU; the host call floor on
    the NumPy backend. A GPU measurement that fails leaves the floor at 0 and says so in its source (the model then
    uses the spec's latency); a probe that fails leaves {'error': …} (the first-principles model then uses 2 × the
    DRAM latency for λk, or 0 for R, and says so)."""
    # lazy: roofline.measurement.launch_overhead imports numpy (start-up)
    from roofline.measurement.launch_overhead import (host_call_floor, launch_overheads, reduction_probe,
                                                  stream_probe)

    small = MeasurePolicy(min_time=min(policy.min_time, 0.3), min_repeats=policy.min_repeats, seed=policy.seed)
    if engine.name == "numpy":
        return {"launch_floor": host_call_floor(engine, small),
                "launch_floor_source": "measured: an empty run function through the NumPy backend's timing loop "
                                       "(host CPU)",
                "kernel_latency": None, "kernel_latency_source": None, "launch_floor_error": None}
    try:
        found = launch_overheads(engine, small)
    except Exception as exc:  # noqa: BLE001 - the sweep still runs; the model says what it lacks
        return {"launch_floor": 0.0, "launch_floor_source": f"not measured ({type(exc).__name__}); 0 assumed",
                "kernel_latency": None, "kernel_latency_source": None,
                "launch_floor_error": f"{type(exc).__name__}: {first_line(exc, 300)}"}
    found["launch_floor_error"] = None
    found["launch_floor_source"] = (f"measured: empty kernel, 1 block, per launch in CUDA {found['launch_floor_timing']}"
                                    " replay")
    found["kernel_latency_source"] = (
        f"measured: one_element kernel ({found['one_element_sets']} rotating lines over "
        f"{found['one_element_footprint'] / 2**20:.0f} MiB, {found['one_element_timing']}) minus the empty kernel")
    try:
        found["stream"] = stream_probe(engine, small)
    except Exception as exc:  # noqa: BLE001 - the model falls back to 2 × the DRAM latency and says so
        found["stream"] = {"error": f"{type(exc).__name__}: {first_line(exc, 300)}"}
    try:
        found["reduction"] = reduction_probe(engine, small)
    except Exception as exc:  # noqa: BLE001 - the model then counts reductions as free and says so
        found["reduction"] = {"error": f"{type(exc).__name__}: {first_line(exc, 300)}"}
    return found


def measure_size(d: Any, overrides: dict[str, Any], engine: Any, machine: MachineSpec,
                 policy: MeasurePolicy) -> dict[str, Any]:
    """One size through the harness; a size that cannot run (too large for the device, say) becomes a FAILED entry
    rather than ending the sweep."""
    from roofline.measurement.session import measure_all  # lazy: roofline.measurement.session imports numpy (start-up)

    try:
        return measure_all([d], overrides, engine, machine, policy)[0]
    except RooflineError as exc:
        work = evaluate(d, {k: v for k, v in overrides.items() if k in d.params})
        return KernelResult.failure(analyze(machine, work).to_dict(), exc.message, timing=None,
                                    buffer_sets=1).to_json()
