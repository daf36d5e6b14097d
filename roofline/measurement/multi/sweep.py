"""`sweep` on several GPUs: the same sizes measured on each device in its own process, one document with every
device's entries (each naming its device) and every device's own model block (`sweeps`: overheads are per GPU).

Why the options travel raw: a SweepRequest holds compiled formulas, which do not pickle, so each worker rebuilds it
from the same options (sweep_args_request) after the parent has built it once to refuse bad input before any
process starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from roofline.measurement.policy import MeasurePolicy
from roofline.sizes.request import SweepRequest, check_calibrated, sweep_request
from roofline.load.kernels import KernelCatalog
from roofline.load.specs import load_spec, SpecCatalog
from roofline.errors import InputError
from roofline.measurement.sweep import run_sweep
from roofline.measurement.multi.pool import Relay, run_workers
from roofline.measurement.multi.measure import HostRun, identity, merged_or_raise


@dataclass(frozen=True)
class SweepArgs:
    """`roofline sweep`'s options as plain values."""

    kernel: str
    kernel_paths: tuple[Path, ...]
    param: str
    sizes_text: str
    fixed: tuple[str, ...]
    model: str
    latency: str
    efficiency: str
    calibrated_path: Path | None
    param_option: str
    spec_name: str
    policy: MeasurePolicy


def sweep_args_request(args: SweepArgs) -> SweepRequest:
    """The request the options describe (loads the kernel and the --calibrated spec); InputError on bad input."""
    return sweep_request(
        KernelCatalog.load(args.kernel_paths).select([args.kernel])[0], args.param, args.sizes_text, args.fixed,
        model=args.model, latency=args.latency, efficiency=args.efficiency,
        calibrated=load_spec(args.calibrated_path) if args.calibrated_path is not None else None,
        param_option=args.param_option)


def sweep_on(request: SweepRequest, engine: Any, spec_name: str, policy: MeasurePolicy,
             progress: Any) -> dict[str, Any]:
    """One device's sweep on an open backend: choose the spec the model needs, measure every size."""
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import choose_machine, runnable
    machine = choose_machine(spec_name, engine, SpecCatalog.bundled())
    if request.calibrated is not None:
        check_calibrated(request.calibrated, machine)
    if machine is None:
        raise InputError("--backend numpy has no GPU spec to model with: name one with --spec (its bandwidth and "
                         "latency feed the prediction)")
    runnable([request.kernel], True, machine)
    return run_sweep(request, engine, machine, policy, progress)


def sweep_worker(device: int, args: SweepArgs, send: Callable[[str, Any], None]) -> dict[str, Any]:
    """One device's sweep in its own process; its identity goes to the parent first, so a failure names it."""
    from roofline.measurement.session import open_backend  # lazy: roofline.measurement.session imports numpy (start-up)

    request = sweep_args_request(args)
    engine = open_backend("cupy", device)
    ident = identity(engine)
    send("identity", ident)
    doc = sweep_on(request, engine, args.spec_name, args.policy, Relay(send))
    doc["device"].update({k: v for k, v in ident.items() if k != "index"})
    return doc


def sweep_devices(devices: Sequence[int], args: SweepArgs,
                  on_message: Callable[[int, str, Any], None] = lambda d, k, v: None) -> HostRun:
    """Every device's sweep at once, merged: one document with every device's entries and `sweeps`, each device's
    own model block."""
    outcomes = run_workers(devices, sweep_worker, args, on_message)
    doc, lines = merged_or_raise(outcomes)
    doc["sweeps"] = [{"device": o.result["device"]["device_id"], **o.result["sweep"]}
                     for _, o in sorted(outcomes.items()) if o.ok]
    return HostRun(doc, lines, outcomes, len(devices))
