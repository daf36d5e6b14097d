"""`roofline calibrate`: measure this GPU's ceilings and write them as a spec (measured: true)."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import is_stdout, note, print_tables, write_output


@click.command()
@click.option("--spec", "spec_name", default="auto", show_default=True, metavar="SPEC",
              help="Datasheet spec to compare with: 'auto' matches the GPU to a bundled spec (or derives one from "
                   "its properties); or a bundled id, alias, prefix, or YAML path.")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the measured spec (YAML, the bundled specs' schema, measured: true) here, atomically.")
@click.option("--quick", is_flag=True,
              help="Smaller sizes and fewer runs (2^26 streams, 4096³ GEMMs, 5 chase passes): a smoke test, "
                   "a few percent below the full figures.")
@click.option("--device", "device_id", type=int, default=0, show_default=True, help="CUDA device ordinal.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="What to print on standard output: the comparison table, or JSON with every figure, its "
                   "method and raw numbers, and the spec.")
def calibrate(spec_name: str, output: Path | None, quick: bool, device_id: int, fmt: str) -> None:
    """Measure the ceilings of this GPU and compare them with its datasheet.

    \b
    DRAM bandwidth   copy and triad kernels at 2^28 float32 (bytes read plus written), the better of the two
    L2 bandwidth     a buffer of L2/4 read repeatedly with 16-byte L2-cached loads
    DRAM latency     one thread chasing pointers, one 128-byte line per step, random order over ≥ 16 × L2;
                     each timed pass continues where the last ended, so no line is visited twice
    FP32 / FP64      independent FMA chains in registers (fma_peak, fma_peak_fp64)
    FP16 / TF32      cuBLAS GEMM through cupy.matmul (TF32: CuPy's compute type set to TF32; counted only
                     when it beats the FP32 cores, i.e. TF32 really applied)
    BF16             the same GEMM in bfloat16 where CuPy has it (CuPy 14+ with ml_dtypes); else reported as
                     not reachable from CuPy, not measured
    FP8              not reachable from CuPy (no float8 dtypes): reported, not measured

    Every figure comes from a run whose result was checked; a failed one is reported and left out of the spec,
    never replaced by a guess. The spec written with -o loads like any other (--spec FILE in analyze, measure,
    sweep; plot --measured-spec FILE draws it beside the datasheet roofs). About 30 s on an H200.

    \b
    Examples:
      roofline calibrate -o h200-measured.yaml
      roofline analyze vector_add --spec h200 --spec h200-measured.yaml
      roofline plot --spec h200 --measured-spec h200-measured.yaml -o roofs.png
    """
    import datetime as dt
    import tempfile
    import time

    from roofline import __version__
    from roofline.calibrate import calibration_document, measured_spec, spec_yaml
    from roofline.errors import BackendUnavailable
    from roofline.measure import calibrate_gpu
    from roofline.measure.calibrate_plan import FULL, QUICK
    from roofline.measure.backend_cupy import CupyBackend
    from roofline.measure.session import choose_machine
    from roofline.specs import SpecCatalog, load_spec

    started = time.perf_counter()
    try:
        backend = CupyBackend(device_id)
    except BackendUnavailable as exc:  # exit 3; the shared hint's "--backend numpy" does not apply here
        why = exc.message.split("; install CuPy")[0].split("; run the NumPy")[0]
        raise BackendUnavailable(f"calibrate measures a GPU: {why}; install CuPy for your CUDA version "
                                 "(pip install 'gpu-roofline[cuda12]' or 'gpu-roofline[cuda13]')") from None
    datasheet = choose_machine(spec_name, backend, SpecCatalog.bundled())
    plan = QUICK if quick else FULL

    from rich.console import Console

    with Console(stderr=True).status("calibrating", spinner="dots") as status:
        figures = calibrate_gpu.calibrate(backend, datasheet, plan,
                                          lambda what: status.update(f"calibrating: {what}"))
    device = backend.device_info()
    date = dt.datetime.now(dt.timezone.utc).date().isoformat()
    spec_doc, warnings = measured_spec(figures, device, datasheet, date, __version__)
    text = spec_yaml(spec_doc)
    with tempfile.TemporaryDirectory() as tmp:  # never write a spec the loader would refuse
        probe = Path(tmp) / "measured.yaml"
        probe.write_text(text, encoding="utf-8")
        load_spec(probe)
    wall = time.perf_counter() - started

    if output is not None:
        write_output(output, text)

    to_stdout = output is not None and is_stdout(output)  # -o -: the spec is standard output, the rest stderr
    if fmt == "json":
        from roofline.jsonio import dumps

        click.echo(dumps(calibration_document(figures, datasheet, device, spec_doc, wall)), nl=False, err=to_stdout)
    else:
        print_tables([comparison_table(figures, datasheet, device, wall, quick)], None, stderr=to_stdout)
    for f in figures:
        if not f.ok:
            note(f"{f.status} {f.field}: {f.note}")
        elif f.note:
            note(f"note {f.field}: {f.note}")
    for w in warnings:
        note(f"warning: {w}")
    if output is not None and not to_stdout:
        note(f"wrote {output} (spec id {spec_doc['id']})")
    else:
        note("the measured spec was not saved: add -o FILE.yaml to write it")


def comparison_table(figures, datasheet, device, wall: float, quick: bool):  # type: ignore[no-untyped-def]
    from rich.table import Table

    from roofline.calibrate import OK, comparison_rows, format_value
    from roofline.render.text import literal, styled

    sheet = f"datasheet {datasheet.id}" + (" [derived from device properties]" if datasheet.derived else "") \
        if datasheet is not None else "no datasheet spec"
    title = (f"Calibrated on {device.get('name')} (CuPy {device.get('cupy_version')}, CUDA {device.get('cuda_runtime')})"
             f" vs {sheet}; {wall:.0f} s{' (--quick)' if quick else ''}")
    table = Table(title=literal(title), title_justify="left")
    for col in ("figure", "datasheet", "measured", "measured / datasheet", "SM clock", "datasheet at that clock",
                "status"):
        table.add_column(col, justify="left" if col in ("figure", "SM clock", "status") else "right")
    percent = lambda r: "–" if r is None else f"{r:.0%}"  # noqa: E731
    for row in comparison_rows(figures, datasheet):
        style = "green" if row["status"] == OK else ("yellow" if row["status"] == "SKIPPED" else "bold red")
        at_clock = row["datasheet_at_clock"]
        table.add_row(row["label"], format_value(row["datasheet"], row["kind"]),
                      format_value(row["measured"], row["kind"]), percent(row["ratio"]), clock_text(row),
                      "–" if at_clock is None else f"{format_value(at_clock, row['kind'])} "
                                                   f"(measured {percent(row['ratio_at_clock'])})",
                      styled(row["status"], style))
    return table


def clock_text(row) -> str:  # type: ignore[no-untyped-def]
    """'1440 MHz, power-capped 96%': the clock at the end of the figure's timed window."""
    from roofline.measure.gpustate import CAPPED_FRACTION

    if not row.get("sm_clock"):
        return "–"
    capped = row.get("power_capped")
    held = f", power-capped {capped:.0%}" if capped is not None and capped > CAPPED_FRACTION else ""
    return f"{row['sm_clock'] / 1e6:.0f} MHz{held}"


COMMANDS = [calibrate]
