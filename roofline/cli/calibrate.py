"""`roofline calibrate`: measure this GPU's ceilings and write them as a spec (measured: true)."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import (Fraction, devices_option, format_option, is_stdout, measure_spec_option, note,
                                 output_option_for, print_tables, wide_option, write_output)
from roofline.cli.fleet import timeout_option
from roofline.errors import BackendUnavailable, InputError
import time
from roofline.cli.progress import Steps
from roofline.measurement.calibrate.one import calibrate_one, needs_gpu, open_gpu
from roofline.records.clockstate import CAPPED_FRACTION
from roofline.render.tables.calibrate import calibration_notes, comparison_table, energy_table
from roofline.fleet.placement import HOST, place, under_ranks
from roofline.cli.fleet_gpu import calibrate_fleet
from roofline.cli.calibrate_many import calibrate_many
from roofline.load.jsonio import dumps


@click.command()
@wide_option
@measure_spec_option("Datasheet spec to compare with")
@output_option_for("the measured spec (YAML, the bundled specs' schema, measured: true)", "measured-spec")
@click.option("--quick", is_flag=True,
              help="Smaller sizes and fewer runs (2^26 streams, 4096³ GEMMs, 5 chase passes): a smoke test, "
                   "a few percent below the full figures.")
@devices_option
@click.option("--outlier", type=Fraction(), default=None, metavar="FRACTION",
              help="With several devices: fail (exit 1) when a GPU's figure is more than this below the host's "
                   "median (5%), naming the GPU by index and PCI bus id: a node acceptance check.")
@click.option("--interconnect/--no-interconnect", "links", default=True, show_default=True,
              help="With several devices: measure the links between them afterwards (peer copies, pinned host "
                   "copies, NCCL all-reduce) and write them into the spec's interconnect block.")
@click.option("--energy", is_flag=True,
              help="Also measure the spec's energy block (docs/energy.md): idle power, then copy, triad, FMA and a "
                   "cuBLAS GEMM per precision on random data, each in a 2.5 s loop between NVML energy readings "
                   "(about 20-25 s more); one GPU only.")
@format_option(["table", "json"], help="What to print on standard output: the comparison table, or JSON with every "
                                       "figure, its method and raw numbers, and the spec.")
@timeout_option
def calibrate(spec_name: str, output: Path | None, quick: bool, device_text: str, outlier: float | None, links: bool,
              fmt: str, timeout: float | None = None, energy: bool = False) -> None:
    """Measure the ceilings of this GPU and compare them with its datasheet.

    \b
    DRAM bandwidth   copy and triad kernels at 2^28 float32 (bytes read plus written), the better of the two
    L2 bandwidth     working sets from 1.5 MiB to 2 × L2, each block reading a 512 KiB slice with 16-byte
                     L2-only loads; the figure is the best point at ≤ L2/2, the curve is in --format json
    L1 / shared      a 32 KiB working set per SM read repeatedly, through L1 (ld.global.ca) and from shared
                     memory (ld.shared), one wave; the faster of the two, each checked by its word sum
    DRAM latency     one thread chasing pointers, one 128-byte line per step, random order over ≥ 16 × L2;
                     each timed pass continues where the last ended, so no line is visited twice
    FP32 / FP64      independent FMA chains in registers (fma_peak, fma_peak_fp64)
    FP16 / TF32      cuBLAS GEMM through cupy.matmul (TF32: CuPy's compute type set to TF32; counted only
                     when it beats the FP32 cores, i.e. TF32 really applied)
    BF16             the same GEMM in bfloat16 where CuPy has it (CuPy 14+ with ml_dtypes); else reported as
                     not reachable from CuPy, not measured
    FP8              not reachable from CuPy (no float8 dtypes): reported, not measured

    With --device all (or 0,2,3) every GPU is calibrated at once, one process each; then, with the GPUs idle,
    the links between them are measured (as 'roofline interconnect' does, with 256 MiB copies and all-reduces
    up to 256 MiB). The table shows each figure's median across the GPUs and each GPU's deviation from it; the
    spec written with -o holds the medians and the measured links, and --format json every GPU's own figures.

    Every figure comes from a run whose result was checked; a failed one is reported and left out of the spec,
    never replaced by a guess. The spec written with -o loads like any other (--spec FILE in analyze, measure,
    sweep; plot --calibrated FILE draws it beside the datasheet roofs). About 30 s on an H200; off a
    terminal, one line per step on standard error as it finishes.

    \b
    Examples:
      roofline calibrate -o h200-measured.yaml
      roofline analyze vector_add --spec h200 --spec h200-measured.yaml
      roofline plot --spec h200 --calibrated h200-measured.yaml -o roofs.png
      roofline calibrate --device all --outlier 5% -o node-measured.yaml
      mpirun -n 16 roofline calibrate --outlier 5% -o fleet-measured.yaml   # every rank its GPU; slow GPU, node
    """
    if under_ranks(device_text, timeout):  # each rank calibrates its node-local GPU; rank 0 writes and judges
        if energy:
            raise InputError("--energy calibrates one GPU's energy figures: run it without mpirun, on one GPU")

        return calibrate_fleet(spec_name, output, quick, outlier, fmt, timeout)
    started = time.perf_counter()
    try:
        where = place(device_text)
    except BackendUnavailable as exc:
        raise needs_gpu(exc) from None
    devices = list(where.devices)
    if energy and where.kind == HOST:
        raise InputError("--energy calibrates one GPU's energy figures: give one device (--device N)")
    if where.kind == HOST:
        return calibrate_many(devices, spec_name, output, quick, outlier, links, fmt, started)
    if outlier is not None:
        raise InputError("--outlier compares the GPUs of one host: give several devices (--device all)")
    gpu = open_gpu(devices[0], spec_name, energy)
    with Steps("calibrate") as steps:
        one = calibrate_one(gpu, quick, energy, steps, started)

    if output is not None:
        write_output(output, one.spec.text, "measured-spec")
    to_stdout = output is not None and is_stdout(output)  # -o -: the spec is standard output, the rest stderr
    if fmt == "json":
        click.echo(dumps(one.document()), nl=False, err=to_stdout)
    else:
        tables = [comparison_table(one.comparison, one.datasheet, one.device, one.wall, quick, CAPPED_FRACTION)]
        if one.energy_runs:
            tables.append(energy_table([r.to_dict() for r in one.energy_runs]))
        print_tables(tables, None, stderr=to_stdout)
    for line in calibration_notes(one.comparison, one.spec.warnings):
        note(line)
    if output is not None and not to_stdout:
        note(f"wrote {output} (spec id {one.spec.doc['id']})")
    else:
        note("the measured spec was not saved: add -o FILE.yaml to write it")
