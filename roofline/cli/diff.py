"""`roofline diff A B`: two programs side by side (issue 40). Parses options, reads or imports both sides, calls
roofline.records.diff and renders (roofline.render.tables.diff)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roofline.cli.common import (FilePath, OutputPath, emit, group_by_option, is_stdout, note, output_option,
                                 print_tables, wide_option, write_output)
from roofline.errors import InputError
from roofline.load.jsonio import dumps
from roofline.records.diff import DIFF_SCHEMA, diff
from roofline.records.files import ResultsFile, load_results

_TRACE_PROBE = 1 << 16  # bytes of a .json read to tell a Kineto trace (traceEvents) from a results file


def _kind(path: Path) -> str:
    """'ncu' for an ncu CSV, 'torch' for a Kineto trace, 'results' for a roofline results file."""
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        return "ncu"
    if name.endswith(".gz"):
        return "torch"  # results files are never compressed; a .json.gz is a trace
    try:
        with open(path, "rb") as handle:
            head = handle.read(_TRACE_PROBE)
    except OSError as exc:
        raise InputError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    return "torch" if b'"traceEvents"' in head and b'"roofline/results/' not in head else "results"


CHART_FORMATS = ("png", "svg", "pdf", "html")


def _chart_format(path: Path) -> str | None:
    suffix = path.suffix.lower().lstrip(".")
    return suffix if suffix in CHART_FORMATS else None


def _chart_path(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
    """--chart FILE: a name ending .png, .svg, .pdf or .html (the format), checked before any work."""
    if value is not None and _chart_format(value) is None:
        raise click.BadParameter(f"'{value}': name a .png, .svg, .pdf or .html file", param=param)
    return value


def _draw(result: Any, side_a: ResultsFile, side_b: ResultsFile, chart: Path) -> None:
    """The chart of both programs, written as --chart names it."""
    # lazy: matplotlib is a start-up cost only this path pays
    from roofline.render.charts.diff import diff_figure, diff_html
    from roofline.render.charts.plot import figure_bytes

    fmt = _chart_format(chart) or "png"
    machine_a, machine_b = side_a.machine_to_draw(), side_b.machine_to_draw()
    data: str | bytes = (diff_html(result, machine_a, machine_b) if fmt == "html"
                         else figure_bytes(diff_figure(result, machine_a, machine_b), fmt, 150))
    write_output(chart, data, f"figure:{fmt}")
    if not is_stdout(chart):
        note(f"wrote {chart}")


def load_side(path: Path, spec_name: str | None, group_by: str, triton_source: tuple[Path, ...]) -> ResultsFile:
    """A results file as it is, or a trace or ncu CSV imported on the way with import's own steps and checks."""
    kind = _kind(path)
    if kind == "results":
        return load_results(path)
    # lazy: importing a trace or CSV needs the importers, which reading results files does not
    from roofline.ncu.readback import check_import

    if kind == "ncu" and group_by == "module":
        raise InputError(f"{path}: an ncu CSV has no nn.Module ranges, so --group-by module cannot group it "
                         "(group both sides by op, kernel or range:N)")
    if kind == "ncu":
        from roofline.ncu import importer as ncu_importer
        from roofline.ncu.group import add_groups

        doc, _notes = ncu_importer.import_csv(path, spec_name)
        add_groups(doc, group_by)
    else:
        from roofline.kineto import document as trace_document

        doc, _notes = trace_document.import_traces([path], spec_name, group_by, triton_source=triton_source)
    check_import(doc, str(path))
    return ResultsFile.of(doc, path)


@click.command("diff")
@wide_option
@click.argument("a", type=FilePath(), metavar="A")
@click.argument("b", type=FilePath(), metavar="B")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json", "csv"]), default="table",
              show_default=True,
              help="table for people; markdown for a PR comment or a CI job summary; json (roofline/diff/v1, "
                   "docs/diff-v1.schema.json) and csv for tools.")
@output_option
@click.option("--spec", "spec_name", default=None, metavar="SPEC",
              help="For a trace or ncu CSV given as A or B: the ceilings to import it with (as 'import' takes).")
@group_by_option("op", help="For a trace or ncu CSV given as A or B: how its launches are grouped (as 'import' "
                            "groups them); both sides must be grouped alike.",
                 refused={"none": "diff compares groups: 'none' makes none"})
@click.option("--triton-source", "triton_source", multiple=True, metavar="DIR",
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="For a trace given as A or B: torch.compile's generated kernels (as 'import torch' takes it).")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Markdown: show the LIMIT groups that moved most (and the unmodelled row).")
@click.option("--chart", type=OutputPath(), default=None, metavar="FILE", callback=_chart_path,
              help="Also draw both programs' groups on one roofline, an arrow from each group's A point to its B "
                   "point: .png, .svg, .pdf, or .html (hover a point for both sides).")
def diff_command(a: Path, b: Path, fmt: str, output: Path | None, spec_name: str | None, group_by: str,
                 triton_source: tuple[Path, ...], limit: int | None, chart: Path | None = None) -> None:
    """Two programs side by side: GPU time, wall time, idle, MFU and each op group, with the changes.

    A and B are results of 'roofline profile', 'import torch' or 'import ncu' (or a PyTorch trace or ncu CSV,
    imported on the way with --spec and --group-by). One page: both programs' GPU time, wall time, idle share,
    MFU, HFU and launches with their changes; then per group A's time, B's, the change and its share of A's
    time, each side's share of its own GPU time (all of it: unmodelled work included), fraction of ceiling and
    recoverable time, the groups that moved most first. A group on one side only says so; an ATen op of an
    eager program whose work torch.compile fused into Triton kernels names them. Each side's unmodelled time is a
    row of its own, so the rows' changes add up to the program's. Where both traces mark their steps
    (ProfilerStep#N), times are per step.

    To gate B against A in CI, use 'roofline report B.json --baseline A.json --max-regression 5%'.

    \b
    Examples:
      roofline diff eager.json compiled.json
      roofline diff main.json pr.json --format markdown >> "$GITHUB_STEP_SUMMARY"
      roofline diff eager-trace.json.gz compiled-trace.json.gz --format json -o diff.json
      roofline diff eager.json compiled.json --chart diff.html
    """
    side_a = load_side(a, spec_name, group_by, triton_source)
    side_b = load_side(b, spec_name, group_by, triton_source)
    result = diff(side_a, side_b)
    if chart is not None:
        _draw(result, side_a, side_b, chart)
    if fmt == "table":
        # lazy: the table module imports rich
        from roofline.render.tables.diff import diff_tables

        print_tables(diff_tables(result), output)
        return
    from roofline.render.tables.diff import diff_csv, diff_markdown

    writers: dict[str, Any] = {"markdown": lambda d: diff_markdown(d, limit), "csv": diff_csv,
                               "json": lambda d: dumps(d.to_json())}
    emit(writers[fmt](result), output, DIFF_SCHEMA if fmt == "json" else "text")
