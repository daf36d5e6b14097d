"""`roofline measure`: run the kernels' implementations, verify them, time them, compare with the ceiling."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import emit_results, kernel_options, note


@click.command()
@kernel_options
@click.option("--spec", "spec_name", default="auto", show_default=True, metavar="SPEC",
              help="Ceilings to compare with: 'auto' matches the GPU to a bundled spec (or derives one from its "
                   "properties); or a bundled id, alias, prefix, or YAML path.")
@click.option("--backend", type=click.Choice(["auto", "cupy", "numpy"]), default="auto", show_default=True,
              help="cupy: the GPU (auto means cupy; without a GPU it exits 3). numpy: the NumPy references on the "
                   "host CPU, timed by wall clock, so the pipeline runs without a GPU (say so explicitly).")
@click.option("--device", "device_id", type=int, default=0, show_default=True, help="CUDA device ordinal.")
@click.option("--min-time", type=float, default=0.5, show_default=True, help="Seconds of timed runs per kernel.")
@click.option("--min-repeats", type=int, default=10, show_default=True, help="Timed runs per kernel, at least.")
@click.option("--seed", type=int, default=20261130, show_default=True, help="Seed of the random inputs.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the results JSON (roofline/results/v1) here, atomically.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="What to print on standard output.")
@click.option("--profile", type=click.Choice(["ncu"]), default=None,
              help="Run the kernels once more under Nsight Compute and add its counters (DRAM/L2/L1 bytes, "
                   "executed FLOPs) and their ratio to the model.")
@click.option("--ncu", "ncu_path", default=None, metavar="PATH", help="The ncu executable (default: found on PATH).")
def measure(names: tuple[str, ...], kernel_paths: tuple[Path, ...], params: tuple[str, ...], spec_name: str,
            backend: str, device_id: int, min_time: float, min_repeats: int, seed: int, output: Path | None,
            fmt: str, profile: str | None, ncu_path: str | None) -> None:
    """Launch each kernel, check it against its NumPy reference, and time it with CUDA events.

    Inputs are fresh random data; outputs are poisoned (NaN) before the checked run; a kernel that
    fails the check is reported FAILED and never timed. Short kernels are timed as CUDA-graph replays;
    small working sets rotate among buffer sets so repeats are not cache hits.

    \b
    Examples:
      roofline measure                                  # every bundled kernel on this GPU
      roofline measure vector_add_float4 copy -o results.json
      roofline measure sum -p n=2**24 --min-time 1
      roofline measure --backend numpy -p n=2**16 vector_add   # no GPU: the host CPU
      roofline measure vector_add_float4 sum --profile ncu     # add Nsight Compute counters
    """
    from roofline.errors import GateFailed, InputError
    from roofline.measure.policy import MeasurePolicy
    from roofline.measure.session import (choose_machine, host_sizes, measure_all, open_backend, results_document,
                                          runnable)
    from roofline.selection import load_selection
    from roofline.specs import SpecCatalog

    if min_time < 0 or min_repeats < 1:
        raise InputError("--min-time must be ≥ 0 and --min-repeats ≥ 1")
    selected, overrides = load_selection(names, kernel_paths, params)
    engine = open_backend(backend, device_id)
    machine = choose_machine(spec_name, engine, SpecCatalog.bundled())
    chosen = runnable(selected, bool(names), machine)
    for name, why in chosen.skipped:
        note(f"note: {name} skipped: it {why}")
    if not chosen.runnable:
        raise InputError("no selected kernel can be measured")
    policy = MeasurePolicy(min_time=min_time, min_repeats=min_repeats, seed=seed)
    if engine.name == "numpy":
        note(f"note: --backend numpy runs the NumPy references on the HOST CPU, timed by wall clock, at "
             f"{host_sizes(chosen.runnable, overrides)}")

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from roofline.render.text import markup

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("measuring", total=len(chosen.runnable))

        def advance(name: str) -> None:
            if bar.tasks[task].description != "measuring":
                bar.advance(task)
            bar.update(task, description=f"measuring {markup(name)}")

        entries = measure_all(chosen.runnable, overrides, engine, machine, policy, advance)
        bar.advance(task)
    if profile == "ncu":
        from roofline.ncu.profile import add_profile

        entries, ncu_notes = add_profile(entries, chosen.runnable, overrides, ncu_path, device_id,
                                         roofs=machine.roofs if machine is not None else None)
        for line in ncu_notes:
            note(line)
    doc = results_document(engine, machine, entries, policy)

    from roofline.render.measure import problems, results_table

    emit_results(doc, output, fmt, results_table, problems(doc))
    failed = [e["name"] for e in doc["kernels"] if e["status"] == "FAILED"]
    if failed:
        raise GateFailed(f"{len(failed)} kernel(s) FAILED verification: {', '.join(failed[:5])}"
                         + (f" and {len(failed) - 5} more" if len(failed) > 5 else ""))

COMMANDS = [measure]
