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
from roofline.measurement.calibrate.figures import calibration_document, comparison_rows
from roofline.measurement.calibrate.plan import FULL, QUICK
from roofline.measurement.calibrate.spec import written_spec
from roofline.records.clockstate import CAPPED_FRACTION
from roofline.render.tables.calibrate import calibration_notes, comparison_table, energy_table
from roofline.load.specs import SpecCatalog
from roofline.fleet.placement import HOST, place, under_ranks
from roofline.cli.fleet_gpu import calibrate_fleet
from roofline.cli.calibrate_many import calibrate_many
from roofline.load.jsonio import dumps
from roofline.measurement.gpustate import INSTALL_HINT


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
    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import CupyBackend
    # lazy: roofline.measurement.calibrate.gpu imports numpy (start-up)
    from roofline.measurement.calibrate.gpu import calibrate as calibrate_gpu
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import choose_machine

    if under_ranks(device_text, timeout):  # each rank calibrates its node-local GPU; rank 0 writes and judges
        if energy:
            raise InputError("--energy calibrates one GPU's energy figures: run it without mpirun, on one GPU")

        return calibrate_fleet(spec_name, output, quick, outlier, fmt, timeout)
    started = time.perf_counter()
    try:
        where = place(device_text)
    except BackendUnavailable as exc:
        raise _needs_gpu(exc) from None
    devices = list(where.devices)
    if energy and where.kind == HOST:
        raise InputError("--energy calibrates one GPU's energy figures: give one device (--device N)")
    if where.kind == HOST:
        return calibrate_many(devices, spec_name, output, quick, outlier, links, fmt, started)
    if outlier is not None:
        raise InputError("--outlier compares the GPUs of one host: give several devices (--device all)")
    device_id = devices[0]
    try:
        backend = CupyBackend(device_id)
    except BackendUnavailable as exc:
        raise _needs_gpu(exc) from None
    datasheet = choose_machine(spec_name, backend, SpecCatalog.bundled())
    if energy and backend.monitor is None:
        why = backend.info.get("clock_monitor") or "NVML not opened"
        raise BackendUnavailable(f"--energy reads NVML's energy counter, and there is none ({why})", fix=INSTALL_HINT)

    with Steps("calibrate") as steps:
        figures = calibrate_gpu(backend, datasheet, QUICK if quick else FULL, steps)
        energy_runs = _energy_runs(backend, figures, quick, steps) if energy else []
    device = backend.device_info()

    amend = None
    if energy_runs:
        # lazy: roofline.measurement.calibrate.energy imports numpy (start-up)
        from roofline.measurement.calibrate.energy import with_energy

        amend = with_energy(energy_runs, device.get("name"))
    spec = written_spec(figures, device, datasheet, amend)
    spec_doc, warnings, text = spec.doc, spec.warnings, spec.text
    wall = time.perf_counter() - started

    if output is not None:
        write_output(output, text, "measured-spec")
    to_stdout = output is not None and is_stdout(output)  # -o -: the spec is standard output, the rest stderr
    rows = comparison_rows(figures, datasheet)
    if fmt == "json":
        doc = calibration_document(figures, datasheet, device, spec_doc, wall)
        if energy_runs:
            doc["energy"] = [r.to_dict() for r in energy_runs]
        click.echo(dumps(doc), nl=False, err=to_stdout)
    else:
        tables = [comparison_table(rows, datasheet, device, wall, quick, CAPPED_FRACTION)]
        if energy_runs:
            tables.append(energy_table([r.to_dict() for r in energy_runs]))
        print_tables(tables, None, stderr=to_stdout)
    for line in calibration_notes(rows, warnings):
        note(line)
    if output is not None and not to_stdout:
        note(f"wrote {output} (spec id {spec_doc['id']})")
    else:
        note("the measured spec was not saved: add -o FILE.yaml to write it")


def _energy_runs(backend: object, figures: list, quick: bool, steps: object) -> list:
    """calibrate --energy's runs (roofline.measurement.calibrate.energy), after the other figures: TF32's energy
    counts only where its GEMM beat the FP32 figure just measured."""
    # lazy: roofline.measurement.calibrate.energy imports numpy (start-up)
    from roofline.measurement.calibrate.energy import FULL_ENERGY, QUICK_ENERGY, calibrate_energy
    # lazy: roofline.measurement.calibrate.probes imports numpy (start-up)
    from roofline.measurement.calibrate.probes import current

    fp32 = next((f.value for f in figures if f.field == "compute.fp32" and f.ok), None)
    with current(backend):
        return calibrate_energy(backend, QUICK_ENERGY if quick else FULL_ENERGY, steps, fp32_rate=fp32)


def _needs_gpu(exc: BackendUnavailable) -> BackendUnavailable:
    """Exit 3 with calibrate's own fix: the shared "--backend numpy" does not apply to it."""
    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import CUPY_INSTALL

    return BackendUnavailable(f"calibrate measures a GPU: {exc.reason}", fix=CUPY_INSTALL)
