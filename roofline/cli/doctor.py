"""`roofline doctor`: is this GPU, and this measurement stack, telling the truth? Run it before trusting a figure."""

from __future__ import annotations

import click

from roofline.cli.common import (devices_option, format_option, measure_spec_option, ncu_path_option, note,
                                 print_tables, wide_option)
from roofline.cli.fleet import timeout_option
from roofline.errors import BackendUnavailable


@click.command()
@wide_option
@measure_spec_option("Datasheet spec the figures are held to")
@devices_option(help="CUDA device ordinal of the GPU to check (the same forms as every --device; doctor checks one "
                     "GPU per run: under mpirun or srun every rank checks its own).")
@click.option("--ncu/--no-ncu", "use_ncu", default=True, show_default=True,
              help="Replay a copy and a cuBLAS GEMM under Nsight Compute (when ncu is found): its duration joins "
                   "the timer check, and its DRAM bytes and tensor FLOPs are held to the exact counts.")
@ncu_path_option(old=False)
@format_option(["table", "json"], help="The table with a line per WARN and FAIL, or JSON with every check's "
                                       "figure and bounds in SI units.")
@timeout_option
def doctor(spec_name: str, device_text: str, use_ncu: bool, ncu_path: str | None, fmt: str,
           timeout: float | None = None) -> None:
    """Check that this GPU and the measurement stack tell the truth, before any figure is trusted.

    \b
    bandwidth   copy, triad and a read-only sum at 2^27 float32 reach 85-105 % of the datasheet DRAM
    compute     an FMA kernel reaches 95-102 % of the FP32 peak at the SM clock observed in its window
    hierarchy   L2 between DRAM and SMs × 128 B/clock; L1 below that bound; DRAM latency 150 ns-2 µs
    timers      one copy timed by CUDA events, by CUDA-graph replay and by Nsight Compute agree within 10 %;
                an L2-resident working set runs faster than the same work rotated past the L2, and the
                rotated one does not beat DRAM (buffer rotation really evicts)
    counters    ncu's DRAM bytes of the copy within 2 % of 2·n·4 B; a cuBLAS FP16 GEMM's tensor FLOPs
                within 1 % of 2·n³
    state       clocks and clock-event reasons in the timed windows, power limit, persistence mode, ECC,
                pending row remaps, other processes on the GPU

    Every kernel's output is checked before it is timed. Exit 0 when nothing FAILED (WARNs say what to look
    at), 1 on any FAIL, 3 without a GPU. About 40 s on an H200.

    \b
    Examples:
      roofline doctor
      roofline doctor --device 1 --format json > doctor.json
      mpirun -n 16 roofline doctor --timeout 300    # every rank its GPU: a row per rank, exit 1 naming a FAIL
    """
    from roofline.cli.progress import Steps
    from roofline.measurement.backend_cupy import CupyBackend
    from roofline.ncu.doctor import doctor as run_doctor
    from roofline.measurement.session import choose_machine
    from roofline.render.tables.doctor import doctor_notes, doctor_table
    from roofline.load.specs import SpecCatalog

    from roofline.fleet.placement import place, under_ranks

    catalog = SpecCatalog.bundled()
    check_inputs(spec_name, use_ncu, ncu_path, catalog)  # exit 2 before a GPU is looked for (exit 3)
    if under_ranks(device_text, timeout):  # each rank checks its node-local GPU; rank 0 prints a row per rank
        from roofline.cli.fleet_gpu import doctor_fleet

        return doctor_fleet(spec_name, use_ncu, ncu_path, fmt, timeout)
    device_id = place(device_text, *ONE_GPU).device
    try:
        backend = CupyBackend(device_id)
    except BackendUnavailable as exc:
        from roofline.measurement.backend_cupy import CUPY_INSTALL

        error = BackendUnavailable(f"doctor checks a GPU: {exc.reason}",
                                   fix=CUPY_INSTALL + ", on a machine with an NVIDIA GPU")
        if fmt == "json":  # standard output is a verdict even now: a script gets the reason, not nothing
            from roofline.gates.doctor import unavailable
            from roofline.load.jsonio import dumps

            click.echo(dumps(unavailable(error.reason, error.fix, device_id)), nl=False)
        raise error from None
    spec = choose_machine(spec_name, backend, catalog)
    with Steps("doctor") as steps:
        verdict = run_doctor(backend, spec, progress=steps, use_ncu=use_ncu, ncu_path=ncu_path)
    if fmt == "json":
        from roofline.load.jsonio import dumps

        click.echo(dumps(verdict.to_dict()), nl=False)
    else:
        print_tables([doctor_table(verdict)], None)
        for line in doctor_notes(verdict.checks):
            note(line)
    if verdict.exit_code:
        raise click.exceptions.Exit(verdict.exit_code)


# doctor's verdict and its JSON are one GPU's: a list or 'all' is refused with the way to check several
ONE_GPU = ("doctor checks one GPU per run", "run 'roofline doctor --device N' for each, or under mpirun/srun, one "
           "rank per GPU")


def check_inputs(spec_name: str, use_ncu: bool, ncu_path: str | None, catalog: object) -> None:
    """What the user typed, checked before any GPU is opened: a bad --spec or --ncu-path is exit 2 on any
    machine, never hidden behind 'no GPU' (exit 3)."""
    from roofline.errors import InputError
    from roofline.ncu.profile import find_ncu

    if spec_name and spec_name != "auto":
        catalog.resolve(spec_name)  # type: ignore[attr-defined]
    if use_ncu and ncu_path:
        _exe, why = find_ncu(ncu_path)
        if why is not None:
            raise InputError(f"--ncu-path {ncu_path}: no such executable", fix="give the path of ncu, or --no-ncu")

