"""`roofline import`: bring other tools' measurements into roofline results (`roofline import ncu REPORT.csv`)."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import emit_results, wide_option
from roofline.cli.profile import group_by_option, profile


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
    from roofline.ncu.metrics import IMPORT_METRICS, metrics_argument

    click.echo(metrics_argument(IMPORT_METRICS))
    ctx.exit(0)


@import_group.command("ncu")
@wide_option
@click.argument("report", type=click.Path(path_type=Path, dir_okay=False))
@click.option("--spec", "spec_name", default=None, metavar="SPEC",
              help="Ceilings to compare with: a bundled id, alias or YAML path. Default: the spec whose "
                   "device_names lists the CSV's GPU (needs device__attribute_display_name, or --set full).")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the results JSON (roofline/results/v1) here, atomically.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="What to print on standard output.")
@group_by_option("op")
@click.option("--list-metrics", is_flag=True, expose_value=False, is_eager=True, callback=_list_metrics,
              help="Print the comma-separated metric list for 'ncu --metrics' and exit.")
def ncu_command(report: Path, spec_name: str | None, output: Path | None, fmt: str, group_by: str) -> None:
    """Read the CSV that 'ncu --csv --page raw' writes for any program; one results entry per kernel launch.

    The file may be redirected standard output that also holds the program's own output and ncu's ==PROF==
    lines; numbers may carry thousands separators and any units. FLOPs are the CUDA-core counters (add + mul +
    2 × FMA of sm__sass_thread_inst_executed_op_*) plus the tensor-core counters (sm__ops_path_tensor_src_*);
    bytes are DRAM read + written; time is gpu__time_duration. Each launch sits under the roof of its dominant
    work (a BF16 GEMM under bf16_tensor; 'roof_counters' says which counters decided it); a launch of mixed work
    is placed by the sum of the times each part needs at its roof. A launch without DRAM bytes or time is named
    and skipped; a negative or infinite count is refused. Entries have status IMPORTED: roofline did not run or
    verify them.

    \b
    Examples:
      ncu --csv --page raw --print-units base --metrics "$(roofline import ncu --list-metrics)" \\
          python3 my_program.py > my_program.csv
      roofline import ncu my_program.csv -o my_program.json     # spec from the CSV's GPU name
      roofline import ncu a.out.csv --spec h200 --format json
      roofline import ncu model.csv --group-by op -o model.json   # ranked by recoverable time
      roofline report my_program.json

    The metrics are listed in docs/ncu.md. ncu's '--set full' captures work too (FLOPs then come from the
    per-cycle rates it records).
    """
    from roofline.ncu.group import add_groups
    from roofline.ncu.importer import import_csv, summary_line
    from roofline.ncu.readback import check_import
    from roofline.render.grouped import grouped_table
    from roofline.render.imported import imported_table

    doc, notes = import_csv(report, spec_name)
    notes += add_groups(doc, group_by)
    notes += check_import(doc, str(report))  # before anything is written: what report and plot will accept
    lines = [*notes, summary_line(doc, "imported")]
    emit_results(doc, output, fmt, grouped_table if doc.get("groups") else imported_table, lines)


COMMANDS = [import_group, profile]  # profile lives in roofline/cli/profile.py; registered with the importers
