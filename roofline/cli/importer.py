"""`roofline import`: bring other tools' measurements into roofline results (`roofline import ncu REPORT.csv`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import click

from roofline.cli.common import (MODULE_IN_NCU, OUTPUT_HELP, FilePath, OutputPath, emit_results, force_option,
                                 group_by_option, single_spec_option, wide_option, writable_path_for)
from roofline.records.schema import RESULTS_SCHEMA as RESULTS
from roofline.cli.profile import GROUP_BY_HELP
from roofline.ncu.metrics import IMPORT_METRICS, metrics_argument
from roofline.ncu.group import add_groups
from roofline.ncu.readback import check_import
from roofline.render.tables.grouped import grouped_table
from roofline.render.tables.imported import imported_table
from roofline.cli.common import is_stdout, print_tables
from roofline.render.tables.trace import tables, timeline_tables
from roofline.cli.progress import Steps
from roofline.kineto import document as trace_document
from roofline.ncu import importer as ncu_importer


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

    click.echo(metrics_argument(IMPORT_METRICS))
    ctx.exit(0)


def import_outputs(producer: str) -> Callable[[Any], Any]:
    """-o and --format, as every importer takes them; `producer` (roofline.load.jsonio.PRODUCERS) is who the
    results file is from, so an existing results file of another kind of run is not replaced unasked."""
    return lambda f: _import_outputs(f, producer)


def _import_outputs(f: Any, producer: str) -> Any:
    f = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
                     help="What to print on standard output.")(f)
    f = force_option(f)
    return click.option("-o", "--output", type=OutputPath(), default=None,
                        callback=writable_path_for(f"{RESULTS}@{producer}"),
                        help="Write the results JSON (roofline/results/v1) here, atomically. " + OUTPUT_HELP)(f)


@import_group.command("ncu")
@wide_option
@click.argument("report", type=FilePath())
@single_spec_option("Ceilings to compare with: a bundled id, alias or YAML path. Default: the spec whose "
                   "device_names lists the CSV's GPU (needs device__attribute_display_name, or --set full).")
@import_outputs("ncu")
@group_by_option("op", help=GROUP_BY_HELP, refused={"module": MODULE_IN_NCU})
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
    doc, notes = ncu_importer.import_csv(report, spec_name)
    notes += add_groups(doc, group_by)
    notes += check_import(doc, str(report))  # before anything is written: what report and plot will accept
    lines = [*notes, ncu_importer.summary_line(doc, "imported")]
    emit_results(doc, output, fmt, grouped_table if doc.get("groups") else imported_table, lines)


@import_group.command("torch")
@wide_option
@click.argument("traces", nargs=-1, required=True, type=FilePath())
@single_spec_option("Ceilings to compare with: a bundled id, alias or YAML path. Default: the spec whose "
                   "device_names lists the GPU in the traces' deviceProperties.")
@import_outputs("torch")
@group_by_option("op", refused={"range": "range:N is the N-th NVTX level of an ncu capture; a PyTorch trace "
                                          "groups by its nn.Module ranges with --group-by module"},
                 help="How launches are grouped: 'op' (the innermost ATen op around the launch), 'kernel' (the kernel "
                   "name, template arguments left out), 'module' (the innermost nn.Module range: profile with "
                   "with_stack=True or with_modules=True) or 'none' (launch by launch).")
@click.option("--triton-source", "triton_source", multiple=True, metavar="DIR",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="A directory holding torch.compile's generated kernels (the program's Inductor cache, "
                   "TORCHINDUCTOR_CACHE_DIR or /tmp/torchinductor_USER), for a trace read on another machine: "
                   "each Triton kernel's source is looked up there by file name where the path the trace recorded "
                   "is gone. Repeatable.")
def torch_command(traces: tuple[Path, ...], spec_name: str | None, output: Path | None, fmt: str,
                  group_by: str, triton_source: tuple[Path, ...]) -> None:
    """Read PyTorch profiler traces (Kineto Chrome JSON, .json or .json.gz); one results entry per kernel.

    Each kernel is attributed through its correlation id to its launch and to the innermost ATen op around the
    launch; the op's FLOPs and bytes come from its input shapes, dtypes and arguments (profile with
    record_shapes=True) and are split across the op's kernels in proportion to their GPU time. Copies and fills
    move the bytes the trace recorded. A Triton kernel that torch.compile generated is modelled from its launch:
    each buffer at its footprint in memory, the FLOPs of the ops it fused; with its generated source at hand (the
    path the trace recorded, or --triton-source) reads and writes are told apart and its arithmetic is counted.
    Kernels of a CUDA-graph replay take the op that launched them at the graph's
    capture (by capture order) or the op of the same kernel (name, grid, block)
    launched outside the graph in the trace (a warm-up); the rest are attributed to
    'cuda graph replay'. Those with no op, and ops without a model, keep their time in 'unmodelled', and the program line says what share of
    the GPU time that is. Several traces (one per rank) give a table per rank, the merged groups, and the
    straggler: the rank whose GPU time is furthest above the median, with the spread. Entries have status
    IMPORTED: roofline did not run or verify them.

    \b
    Examples:
      roofline import torch trace.json.gz -o step.json    # spec from the trace's GPU name
      roofline import torch rank0.json rank1.json --group-by module -o all.json
      roofline report step.json --fail-below-program 0.3
      roofline plot --results step.json -o step.html
    """
    with Steps("import torch") as steps:  # a long trace's steps: a spinner on a terminal, a line each in a log
        doc, notes = trace_document.import_traces(list(traces), spec_name, group_by, triton_source=triton_source,
                                                  progress=steps)
    notes += check_import(doc, ", ".join(str(t) for t in traces))  # what report and plot will accept
    line = trace_document.straggler_line(doc.get("straggler"))
    lines = [*notes, *([line] if line else []), trace_document.summary_line(doc)]
    shown = tables(doc)
    if fmt == "table" and len(shown) > 1:  # each rank's table, then the merged one
        print_tables(shown[:-1], None, stderr=output is not None and is_stdout(output))
    emit_results(doc, output, fmt, lambda _doc: [shown[-1], *timeline_tables(doc)], lines)

