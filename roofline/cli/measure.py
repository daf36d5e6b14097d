"""`roofline measure`: run the kernels' implementations, verify them, time them, compare with the ceiling."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import (emit_results, format_option, kernel_options, measure_options, measure_policy,
                                 measure_spec_option, ncu_path_option, note, output_option_for, wide_option)
from roofline.records.schema import RESULTS_SCHEMA
from roofline.cli.fleet import timeout_option, measure_fleet
from roofline.cli.progress import Steps
from roofline.load.selection import load_selection
from roofline.fleet.placement import HOST, place, under_ranks
from roofline.measurement.multi.measure import MeasureRequest
from roofline.measurement.single import single_run, verdict
from roofline.cli.multi import measure_many
from roofline.ncu.profile import add_profile
from roofline.render.tables.measure import problems, results_table
from roofline.cli.common import is_stdout, write_output
from roofline.load.jsonio import MEASUREMENT, document_writes, dumps
from roofline.model.counts import counted


@click.command()
@wide_option
@kernel_options
@measure_spec_option("Ceilings to compare with")
@measure_options(per="kernel", many_devices=True)
@output_option_for("the results JSON (roofline/results/v1)", f"{RESULTS_SCHEMA}@{MEASUREMENT}")
@format_option(["table", "json"], help="What to print on standard output.")
@click.option("--profile", type=click.Choice(["ncu"]), default=None,
              help="Run the kernels once more under Nsight Compute and add its counters (DRAM/L2/L1 bytes, "
                   "executed FLOPs) and their ratio to the model.")
@ncu_path_option()
@timeout_option
def measure(names: tuple[str, ...], kernel_paths: tuple[Path, ...], params: tuple[str, ...], spec_name: str,
            backend: str, device_text: str, min_time: float, min_repeats: int, seed: int, output: Path | None,
            fmt: str, profile: str | None, ncu_path: str | None, timeout: float | None) -> None:
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
      mpirun -n 16 roofline measure -o fleet.json         # every rank its node-local GPU, one file
    """
    policy = measure_policy(min_time, min_repeats, seed)

    request = MeasureRequest(names, kernel_paths, params, spec_name, policy)
    if under_ranks(device_text, timeout, "--profile" if profile else None):
        # the kernels are loaded on each rank, so a bad name comes back once, through rank 0
        return measure_fleet(request, backend, output, fmt, timeout)
    selected, overrides = load_selection(names, kernel_paths, params)
    where = place(device_text, "several devices are measured on the GPU backend, without --profile (name one "
                               "--device for those)" if backend == "numpy" or profile else None)
    if where.kind == HOST:
        return measure_many(list(where.devices), request, output, fmt)
    run = single_run(selected, overrides, bool(names), backend, where.device, spec_name, policy, note)
    entries = run.measure(lambda: Steps("measure"), lambda doc, measured: _keep_what_ran(doc, measured, output))
    if profile == "ncu":
        entries, ncu_notes = add_profile(entries, run.runnable, overrides, ncu_path, where.device,
                                         roofs=run.machine.roofs if run.machine is not None else None)
        for line in ncu_notes:
            note(line)
    doc = run.document(entries)

    emit_results(doc, output, fmt, results_table, problems(doc))
    verdict(doc)


def _keep_what_ran(doc: dict, measured: int, output: Path | None) -> None:
    """A kernel stopped the run: the kernels measured before it are written to the -o file, and the note says so."""
    if is_stdout(output):
        return
    write_output(output, dumps(doc), document_writes(doc))
    note(f"wrote {output}: the {counted(measured, 'kernel')} measured before the error")
