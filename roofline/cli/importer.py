"""`roofline import`: bring other tools' measurements into roofline results (`roofline import ncu REPORT.csv`)."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import emit_results


@click.group("import")
def import_group() -> None:
    """Turn another tool's measurements into roofline results, for 'report' and 'plot'.

    \b
    Examples:
      ncu --csv --page raw --print-units base --metrics METRICS python3 model.py > model.csv
      roofline import ncu model.csv -o model.json
      roofline report model.json
      roofline plot --results model.json -o model.png
    """


def _list_metrics(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from roofline import ncu

    click.echo(ncu.metrics_argument(ncu.IMPORT_METRICS))
    ctx.exit(0)


@import_group.command("ncu")
@click.argument("report", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--spec", "spec_name", default=None, metavar="SPEC",
              help="Ceilings to compare with: a bundled id, alias or YAML path. Default: the spec whose "
                   "device_names lists the CSV's GPU (needs device__attribute_display_name, or --set full).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the results JSON (roofline/results/v1) here, atomically.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="What to print on standard output.")
@click.option("--list-metrics", is_flag=True, expose_value=False, is_eager=True, callback=_list_metrics,
              help="Print the comma-separated metric list for 'ncu --metrics' and exit.")
def ncu_command(report: Path, spec_name: str | None, output: Path | None, fmt: str) -> None:
    """Read the CSV that 'ncu --csv --page raw' writes for any program; one results entry per kernel launch.

    The file may be redirected standard output that also holds the program's own output and ncu's ==PROF==
    lines; numbers may carry thousands separators and any units. FLOPs are add + mul + 2 × FMA of the
    sm__sass_thread_inst_executed_op_*_pred_on counters the CSV has (absent ones are listed in the entry);
    bytes are DRAM read + written; time is gpu__time_duration. A launch without DRAM bytes or time is
    named and skipped. Entries have status IMPORTED: roofline did not run or verify them.

    \b
    Examples:
      ncu --csv --page raw --print-units base --metrics "$(roofline import ncu --list-metrics)" \\
          python3 my_program.py > my_program.csv
      roofline import ncu my_program.csv -o my_program.json     # spec from the CSV's GPU name
      roofline import ncu a.out.csv --spec h200 --format json
      roofline report my_program.json

    The metrics are listed in docs/ncu.md. ncu's '--set full' captures work too (FLOPs then come from the
    per-cycle rates it records).
    """
    from roofline.ncu_import import import_csv

    doc, notes = import_csv(report, spec_name)
    lines = list(notes)
    for k in doc["kernels"]:
        for w in k.get("warnings", []):
            if "× the model" in w:
                lines.append(f"note: {k['name']} (launch {k['params']['launch']}): {w}")
    lines.append(f"imported {len(doc['kernels'])} of {doc['source']['launches']} launch(es) on {doc['machine']['id']}")
    emit_results(doc, output, fmt, imported_table, lines)

def imported_table(doc: dict) -> object:
    from rich.table import Table

    from roofline.render.text import literal
    from roofline.units import format_bytes, format_flops, format_rate, format_time

    table = Table(title=literal(f"{doc['device']['name']} · imported from ncu · ceilings of {doc['machine']['id']}"),
                  title_justify="left")
    for col in ("launch", "kernel", "time", "DRAM bytes", "FLOPs", "intensity", "achieved BW", "achieved FLOP/s",
                "of ceiling", "bound"):
        table.add_column(col, justify="left" if col in ("kernel", "bound") else "right")
    for k in doc["kernels"]:
        table.add_row(
            str(k["params"]["launch"]), literal(k["name"]), format_time(k["time_median"]), format_bytes(k["bytes"]),
            f"{k['flops']:.4g}", f"{k['intensity']:.3g}", format_rate(k["achieved_bandwidth"]),
            format_flops(k["achieved_flops"]), f"{k['fraction_of_ceiling']:.1%}", k["bound"],
        )
    return table


COMMANDS = [import_group]
