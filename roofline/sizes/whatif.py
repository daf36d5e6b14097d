"""`--predict`: the first-principles size model from a spec alone, no GPU and no CuPy, in the results format of a
measured sweep (every entry SKIPPED, never timed, with `predicted_time` and the terms behind it).

It exists so a kernel can be sized on a GPU one does not have (`--spec h100 --predict`) and so the model can be held
against a sweep measured elsewhere. The machine figures come from the spec (`--calibrated` gives measured ones); a
figure neither gives is a stated default, named in the model block's `assumed` and on every table. Pure: no device.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Mapping, Sequence

from roofline.model.types import KernelDescriptor, MachineSpec, Workload
from roofline.sizes.request import SweepRequest, check_calibrated
from roofline.errors import InputError
from roofline.load.specs import SpecCatalog
from roofline.model.analysis import analyze, machine_summary
from roofline.records.document import KernelResult, Status
from roofline.records.schema import RESULTS_SCHEMA
from roofline.version import __version__
from roofline.model.expr import compile_expr
from roofline.model.geometry import launch_shapes
from roofline.model.workload import evaluate
from roofline.sizes import predict
from roofline.sizes.fitted import summary
from roofline.model.capacity import too_large
from roofline.model.invariants import PLAUSIBLE
from roofline.model.units import format_bytes, format_param

PREDICTED_NOTE = (
    "Predicted from the spec alone (--predict): nothing was run or measured; every entry is SKIPPED with its "
    "predicted_time, regime and terms. The machine figures and where each came from are in sweep.model; the ones "
    "no measurement gave are listed under 'assumed'."
)
BACKEND = "model"  # the results file's backend: no device ran anything


def predict_spec(spec_name: str, calibrated: MachineSpec | None) -> MachineSpec:
    """The spec a prediction is made for: --spec by name or path; with 'auto' (no GPU to match) the --calibrated
    spec, else an InputError that says what to give."""
    if calibrated is not None:
        check_calibrated(calibrated, None)
    if spec_name and spec_name != "auto":
        machine = SpecCatalog.bundled().resolve(spec_name)
        if calibrated is not None:
            check_calibrated(calibrated, machine)
        return machine
    if calibrated is not None:
        return calibrated
    raise InputError("--predict: no GPU is looked at, so --spec auto has nothing to match; name the GPU to predict "
                     "for with --spec (a bundled id like h100, or a YAML path) or give --calibrated FILE")


def capacity_of(machine: MachineSpec) -> tuple[float, str, str]:
    """The memory a predicted kernel's data must fit, and how a message names it: the spec's memory.capacity, the same
    rule `measure` holds a device to (roofline.model.capacity); a spec without one is held to the most any GPU holds
    (the top of memory.capacity's plausible range), so no prediction is made for data no GPU has."""
    if machine.capacity:
        return machine.capacity, f"{machine.id}'s memory.capacity", ""
    return (PLAUSIBLE["memory_capacity"].high, "any GPU's memory",
            f"{machine.id} gives no memory.capacity, and no GPU holds more")


def refuse_unfit(work: Workload, machine: MachineSpec) -> None:
    """--predict for one size: data the GPU cannot hold is refused, as `measure` refuses it on a device."""
    if (why := too_large(work, *capacity_of(machine))) is not None:
        raise InputError(f"--predict: {why}; no such GPU holds that data, so there is nothing to predict; choose "
                         "smaller parameters with -p")


def predicted_entry(d: KernelDescriptor, work: Workload, machine: MachineSpec) -> dict[str, Any]:
    """One size as a results entry: the analysis at the spec, no measured figure, SKIPPED (never a time)."""
    measured = dict.fromkeys(("time_median", "time_min", "time_max", "achieved_bandwidth", "achieved_flops",
                              "fraction_of_ceiling"))
    result = KernelResult.from_fields({**analyze(machine, work).to_dict(), **measured, "repeats": 0,
                                       "status": Status.SKIPPED, "verified": None, "error": None, "warnings": ()},
                                      {"predicted": True})
    return result.to_json()


def compute_floor(work: Workload, machine: MachineSpec) -> float:
    """FLOPs ÷ the kernel's roof on this spec (0 where the spec has no such roof): the least time the arithmetic
    takes, which the memory model does not see."""
    peak = machine.roofs.get(work.roof)
    return work.flops / peak if peak else 0.0


def predicted_document(entries: list[dict[str, Any]], machine: MachineSpec) -> dict[str, Any]:
    """A results document (roofline/results/v1) of predicted entries: device = the spec, backend 'model'."""
    return {
        "schema": RESULTS_SCHEMA,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "tool_version": __version__,
        "backend": BACKEND,
        "device": {"name": f"{machine.name} (predicted, not measured)", "spec_id": machine.id,
                   "spec_derived": bool(machine.derived)},
        "machine": machine_summary(machine),
        "kernels": entries,
    }


def predict_sweep(request: SweepRequest, machine: MachineSpec) -> dict[str, Any]:
    """Every size of the request predicted from `machine` (or request.calibrated, whose figures then feed the model):
    the results document of a sweep, with its 'sweep' block, no device touched."""
    d, param = request.kernel, request.param
    source = request.calibrated if request.calibrated is not None else machine
    figures = predict.machine_figures(source, {})
    entries, shapes, compute, kept, dropped = [], [], [], [], []
    limit = capacity_of(machine)
    for size in request.sizes:
        work = evaluate(d, {**request.fixed, param: compile_expr(str(size))})
        if too_large(work, *limit) is not None:
            dropped.append(size)
            continue
        kept.append(size)
        entries.append({**predicted_entry(d, work, machine), "size": size})
        shapes.append(launch_shapes(d, work, figures.sm_count))
        compute.append(compute_floor(work, source if source.roofs.get(work.roof) else machine))
    if not entries:
        last = evaluate(d, {**request.fixed, param: compile_expr(str(request.sizes[0]))})
        raise InputError(f"--predict: {too_large(last, *limit)} already at the smallest size; no size of "
                         f"--sizes fits, so there is nothing to predict: choose smaller sizes or -p values")
    predict.annotate(entries, shapes, figures, compute)
    doc = predicted_document(entries, machine)
    doc["sweep"] = {
        "kernel": d.name, "param": param, "sizes": kept,
        "fixed": {k: v.source for k, v in request.fixed.items()},
        "model": figures.to_dict(), "overheads": {}, "summary": summary(entries),
        "measurement": PREDICTED_NOTE + dropped_note(param, dropped, machine), "predicted": True,
    }
    return doc


def dropped_note(param: str, dropped: Sequence[int], machine: MachineSpec) -> str:
    """What a predicted sweep left out, said where the results are read: sizes whose data no such GPU holds."""
    if not dropped:
        return ""
    shown = ", ".join(format_param(s) for s in dropped[:4]) + (f" … ({len(dropped)} sizes)" if len(dropped) > 4 else "")
    limit, where, note = capacity_of(machine)
    return (f" Left out: {param}={shown}, whose data is larger than {where} ({format_bytes(limit)}"
            f"{'; ' + note if note else ''}); measure refuses them on the device too.")


def predict_kernels(kernels: Sequence[KernelDescriptor], overrides: Mapping[str, Any], machine: MachineSpec,
                    calibrated: MachineSpec | None = None) -> dict[str, Any]:
    """`analyze --predict`: each kernel at the given parameters, predicted from `machine` (or `calibrated`): a results
    document whose 'prediction' block holds the machine figures and what was assumed."""
    if calibrated is not None:
        check_calibrated(calibrated, machine)
    source = calibrated if calibrated is not None else machine
    figures = predict.machine_figures(source, {})
    entries, shapes, compute = [], [], []
    for d in kernels:
        work = evaluate(d, {k: v for k, v in overrides.items() if k in d.params})
        refuse_unfit(work, machine)
        entries.append(predicted_entry(d, work, machine))
        shapes.append(launch_shapes(d, work, figures.sm_count))
        compute.append(compute_floor(work, source if source.roofs.get(work.roof) else machine))
    predict.annotate(entries, shapes, figures, compute)
    doc = predicted_document(entries, machine)
    doc["prediction"] = {"model": figures.to_dict(), "measurement": PREDICTED_NOTE}
    return doc
