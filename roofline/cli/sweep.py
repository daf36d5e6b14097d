"""`roofline sweep`: one kernel measured over a range of sizes, each beside the model's prediction."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roofline.cli.common import emit_results, note

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


@click.command()
@click.argument("kernel")
@click.option("--param", "param", default="n", show_default=True, metavar="NAME",
              help="The parameter to sweep (the kernel's size).")
@click.option("--sizes", "sizes_text", default="2**12..2**28", show_default=True, metavar="SIZES",
              help="A range A..B in powers of two (A, 2A, 4A, … ≤ B; A..B:4 steps by ×4), or a list "
                   "'4096,65536,2**20'; items may mix.")
@click.option("--set", "fixed", multiple=True, metavar="NAME=VALUE",
              help="Fix another parameter of the kernel (repeatable); VALUE may be a formula.")
@click.option("--kernels", "kernel_paths", multiple=True, type=click.Path(path_type=Path), metavar="PATH",
              help="Add your kernel descriptors (a YAML file or a folder of them). Repeatable.")
@click.option("--spec", "spec_name", default="auto", show_default=True, metavar="SPEC",
              help="Ceilings for the results file and the model: 'auto' matches the GPU to a bundled spec; or a "
                   "bundled id, alias, prefix, or YAML path. Needed with --backend numpy.")
@click.option("--calibrated", "calibrated_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              metavar="FILE", help="A measured spec from 'roofline calibrate -o FILE': its bandwidth and latency "
                                   "feed the model instead of the datasheet's.")
@click.option("--model", type=click.Choice(["additive", "max"]), default="additive", show_default=True,
              help="additive: t = L + λ + B / (η·BW). max: the first-order max(L, λ + B / (η·BW)).")
@click.option("--efficiency", default="auto", show_default=True, metavar="auto|X",
              help="η, the fraction of the bandwidth the kernel streams at: 'auto' takes it from the largest size "
                   "measured (that size is then exact by construction; every other size is a prediction), or a "
                   "number (1: the bandwidth as given).")
@click.option("--latency", "latency_setting", type=click.Choice(["auto", "measured"]), default="auto",
              show_default=True,
              help="λ: 'auto' reads this kernel's fixed cost off the smallest size measured (that size is then exact "
                   "by construction, like the largest with --efficiency auto); 'measured' uses the one-element "
                   "kernel's round trip (first principles).")
@click.option("--backend", type=click.Choice(["auto", "cupy", "numpy"]), default="auto", show_default=True,
              help="cupy: the GPU. numpy: the NumPy references on the host CPU (the pipeline without a GPU).")
@click.option("--device", "device_id", type=int, default=0, show_default=True, help="CUDA device ordinal.")
@click.option("--min-time", type=float, default=0.5, show_default=True, help="Seconds of timed runs per size.")
@click.option("--min-repeats", type=int, default=10, show_default=True, help="Timed runs per size, at least.")
@click.option("--seed", type=int, default=20261130, show_default=True, help="Seed of the random inputs.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the results JSON (roofline/results/v1 with a 'sweep' block) here, atomically; "
                   "'roofline plot --sweep FILE' draws it.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="What to print on standard output.")
def sweep(kernel: str, param: str, sizes_text: str, fixed: tuple[str, ...], kernel_paths: tuple[Path, ...],
          spec_name: str, calibrated_path: Path | None, model: str, efficiency: str, latency_setting: str,
          backend: str, device_id: int,
          min_time: float, min_repeats: int, seed: int, output: Path | None, fmt: str) -> None:
    """Measure KERNEL at every size and set the model's prediction beside each measurement.

    The model is Little's Law with the launch in series:

    \b
        t(B) = L + λ + B / (η · BW)
    \b
    L    launch floor: an empty kernel timed the same way (graph replay), measured here
    λ    one memory round trip as a kernel sees it: a one-element kernel (one load from a
         line not in L2, one store) minus L, measured here; the spec's latency without a GPU
    BW   the spec's bandwidth (or --calibrated); η from the largest size (--efficiency)

    Below BW × λ bytes (Little's Law) a launch cannot keep enough bytes in flight and is latency-bound; when L
    exceeds the rest it is launch-bound; above, bandwidth-bound. Each entry gets predicted_time and
    prediction_error (predicted / measured − 1); the issue's first-order max(L, λ + B/BW) with the spec's figures is
    recorded beside it ("simple" model) for comparison.

    \b
    Examples:
      roofline sweep vector_add_float4 --sizes 2**12..2**28 -o sweep.json
      roofline sweep copy --sizes 2**16..2**28:4 --calibrated h200-measured.yaml
      roofline plot --sweep sweep.json -o sweep.png
      roofline sweep vector_add --backend numpy --spec h200 --sizes 2**10..2**14   # no GPU: the host CPU
    """
    from roofline.errors import InputError
    from roofline.expr import compile_expr
    from roofline.kernels import KernelCatalog, parse_overrides
    from roofline.measure.policy import MeasurePolicy
    from roofline.measure.session import choose_machine, open_backend, results_document, runnable
    from roofline.specs import SpecCatalog, load_spec
    from roofline.sweep import ModelInputs, anchor_latency, annotate, choose_efficiency, parse_sizes, summary

    if min_time < 0 or min_repeats < 1:
        raise InputError("--min-time must be ≥ 0 and --min-repeats ≥ 1")
    if efficiency != "auto":
        try:
            eta = float(efficiency)
        except ValueError:
            raise InputError(f"--efficiency: expected 'auto' or a number, got {efficiency!r}") from None
        if not 0 < eta < 10:
            raise InputError(f"--efficiency: expected a number between 0 and 10, got {efficiency}")
    sizes = parse_sizes(sizes_text)
    d = KernelCatalog.load(kernel_paths).select([kernel])[0]
    if param not in d.params:
        raise InputError(f"--param {param}: kernel '{d.name}' has no parameter '{param}'; it has: "
                         f"{', '.join(d.params) or 'none'}")
    overrides = dict(parse_overrides(fixed, [d]))
    if param in overrides:
        raise InputError(f"--set {param}=…: {param} is the swept parameter; its values come from --sizes")
    calibrated = load_spec(calibrated_path) if calibrated_path is not None else None

    engine = open_backend(backend, device_id)
    if backend == "auto" and engine.name == "numpy":
        note("note: no usable CUDA device or CuPy, so measuring the NumPy references on the HOST CPU "
             "(use --backend cupy to insist on a GPU)")
    machine = choose_machine(spec_name, engine, SpecCatalog.bundled())
    if machine is None:
        raise InputError("--backend numpy has no GPU spec to model with: name one with --spec (its bandwidth and "
                         "latency feed the prediction)")
    runnable([d], True, machine)
    policy = MeasurePolicy(min_time=min_time, min_repeats=min_repeats, seed=seed)

    from rich.console import Console

    with Console(stderr=True).status("sweep: launch overheads", spinner="dots") as status:
        overheads = _overheads(engine, policy)
        entries = []
        for i, size in enumerate(sizes):
            status.update(f"sweep: {d.name} {param}={size} ({i + 1}/{len(sizes)})")
            entries.append(_measure_size(d, {**overrides, param: compile_expr(str(size))}, engine, machine, policy))
            entries[-1]["size"] = size

    source = calibrated if calibrated is not None else machine
    kind = "measured spec" if source.measured else ("derived spec" if source.derived else "datasheet spec")
    memory_latency_source = f"{kind} {source.id} (memory.latency)"
    inputs = ModelInputs(
        model=model,
        bandwidth=source.bandwidth,
        bandwidth_source=f"{kind} {source.id} (memory.bandwidth)",
        latency=overheads["kernel_latency"] if overheads.get("kernel_latency") is not None else source.latency,
        latency_source=overheads.get("kernel_latency_source") or memory_latency_source,
        launch_floor=overheads["launch_floor"],
        launch_floor_source=overheads["launch_floor_source"],
        memory_latency=source.latency,
        memory_latency_source=memory_latency_source,
    )
    anchor_latency(entries, inputs, latency_setting)
    choose_efficiency(entries, inputs, efficiency if efficiency == "auto" else float(efficiency))
    annotate(entries, inputs)
    doc = results_document(engine, machine, entries, policy)
    doc["sweep"] = {
        "kernel": d.name, "param": param, "sizes": sizes, "fixed": {k: v.source for k, v in overrides.items()},
        "model": inputs.to_dict(), "overheads": overheads, "summary": summary(entries),
        "measurement": HOST_NOTE if engine.name == "numpy" else MEASUREMENT_NOTE,
    }

    emit_results(doc, output, fmt, sweep_table, explanation(doc))


def _overheads(engine: Any, policy: Any) -> dict[str, Any]:
    """Launch floor and one-element latency on the GPU; the host call floor on the NumPy backend."""
    from roofline.measure.launch_overhead import host_call_floor, launch_overheads
    from roofline.measure.policy import MeasurePolicy

    small = MeasurePolicy(min_time=min(policy.min_time, 0.3), min_repeats=policy.min_repeats, seed=policy.seed)
    if engine.name == "numpy":
        return {"launch_floor": host_call_floor(engine, small),
                "launch_floor_source": "measured: an empty run function through the NumPy backend's timing loop "
                                       "(host CPU)",
                "kernel_latency": None, "kernel_latency_source": None}
    try:
        found = launch_overheads(engine, small)
    except Exception as exc:  # noqa: BLE001 - the sweep still runs; the model says what it lacks
        note(f"warning: measuring the launch floor failed ({type(exc).__name__}: {exc}); the model uses 0 for it "
             "and the spec's latency")
        return {"launch_floor": 0.0, "launch_floor_source": f"not measured ({type(exc).__name__}); 0 assumed",
                "kernel_latency": None, "kernel_latency_source": None}
    found["launch_floor_source"] = (f"measured: empty kernel, 1 block, per launch in CUDA {found['launch_floor_timing']}"
                                    " replay")
    found["kernel_latency_source"] = (
        f"measured: one_element kernel ({found['one_element_sets']} rotating cold lines over "
        f"{found['one_element_footprint'] / 2**20:.0f} MiB, {found['one_element_timing']}) minus the empty kernel")
    return found


def _measure_size(d: Any, overrides: dict[str, Any], engine: Any, machine: Any, policy: Any) -> dict[str, Any]:
    """One size through the harness; a size that cannot run (too large for the device, say) becomes a FAILED entry
    rather than ending the sweep."""
    from roofline.analysis import analyze
    from roofline.errors import RooflineError
    from roofline.measure.session import measure_all
    from roofline.workload import evaluate

    try:
        return measure_all([d], overrides, engine, machine, policy)[0]
    except RooflineError as exc:
        work = evaluate(d, {k: v for k, v in overrides.items() if k in d.params})
        entry = analyze(machine, work).to_dict()
        entry.update(time_median=None, time_min=None, time_max=None, repeats=0, achieved_bandwidth=None,
                     achieved_flops=None, fraction_of_ceiling=None, verified=False, status="FAILED",
                     error=exc.message, warnings=[], timing=None, buffer_sets=1)
        return entry


def sweep_table(doc: dict[str, Any]) -> Any:
    from rich.table import Table

    from roofline.results import params_text
    from roofline.units import format_bytes, format_rate, format_time

    s, device = doc["sweep"], doc["device"]
    where = (f"the HOST CPU with NumPy ({device['name']})" if doc["backend"] == "numpy"
             else f"{device['name']} (CuPy {device.get('cupy_version')}, CUDA {device.get('cuda_runtime')})")
    m = s["model"]
    title = (f"Sweep of {s['kernel']} over {s['param']} on {where}; model: {m['model']}, "
             f"L {format_time(m['launch_floor'])}, λ {format_time(m['latency'])}, "
             f"BW {format_rate(m['bandwidth'])} × η {m['efficiency']:.2f}")
    table = Table(title=title, title_justify="left")
    for col in ("size", "bytes", "measured", "predicted", "error", "achieved BW", "regime", "sets"):
        table.add_column(col, justify="left" if col in ("size", "regime") else "right")
    for e in doc["kernels"]:
        err = e.get("prediction_error")
        if e["status"] != "OK":
            err_text, measured = "–", f"[bold red]{e['status']}[/bold red]"
        else:
            style = "green" if abs(err) <= s["summary"]["target"] else "bold red"
            err_text, measured = f"[{style}]{err:+.1%}[/{style}]", format_time(e["time_median"])
        table.add_row(params_text({s["param"]: e.get("size", e["params"].get(s["param"]))}),
                      format_bytes(e["bytes"]), measured, format_time(e["predicted_time"]), err_text,
                      format_rate(e.get("achieved_bandwidth")), e["prediction"]["regime"],
                      str(e.get("buffer_sets", 1)))
    return table


def explanation(doc: dict[str, Any]) -> list[str]:
    """Lines for standard error under the table: the model's inputs and sources, the verdict, what was measured."""
    from roofline.units import format_bytes, format_rate, format_time

    s = doc["sweep"]
    m, summ = s["model"], s["summary"]
    lines = [
        f"model: t = {'L + λ + B/(η·BW)' if m['model'] == 'additive' else 'max(L, λ + B/(η·BW))'}",
        f"  L  = {format_time(m['launch_floor'])}: {m['launch_floor_source']}",
        f"  λ  = {format_time(m['latency'])}: {m['latency_source']}",
        f"  BW = {format_rate(m['bandwidth'])}: {m['bandwidth_source']}",
        f"  η  = {m['efficiency']:.3f}: {m['efficiency_source']}",
        f"  Little's Law: {format_rate(m['bandwidth'])} × {format_time(m['memory_latency'])} "
        f"({m['memory_latency_source']}) = {format_bytes(m['bytes_in_flight'])} in flight",
    ]
    if summ["worst_error"] is not None:
        lines.append(f"prediction within {summ['target']:.0%} at {summ['within_target']} of {summ['sizes']} sizes; "
                     f"worst {summ['worst_error']:+.1%} at {format_bytes(summ['worst_bytes'])}")
    if summ.get("simple_worst_error") is not None:
        lines.append(f"simple model max(L, λ_spec + B/BW) worst error: {summ['simple_worst_error']:+.1%}")
    for e in doc["kernels"]:
        if e["status"] != "OK":
            lines.append(f"FAILED {s['param']}={e.get('size')}: {e.get('error')}")
        for w in e.get("warnings") or []:
            lines.append(f"warning {s['param']}={e.get('size')}: {w}")
    lines.append(s["measurement"])
    if doc["backend"] == "numpy":
        lines.append("note: these times are the HOST CPU running NumPy; the GPU model's terms do not describe it")
    return lines


COMMANDS = [sweep]
