"""`roofline profile -- PROGRAM ARGS`: a whole program on the roofline, grouped by op and ranked by the time it
leaves on the table (recoverable time = time - speed-of-light time)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from roofline.cli.common import emit_results, note, output_option_for, wide_option, writable_path

GROUP_BY_HELP = ("How launches are grouped: 'op' (the innermost NVTX range around a launch: with PyTorch's "
                 "emit_nvtx, the aten op), 'kernel' (the demangled kernel name, template arguments left out), "
                 "'range:N' (the N-th level of the NVTX stack, 1 the outermost: a module name when the program "
                 "pushes module ranges) or 'none' (launch by launch).")


def group_by_option(default: str) -> object:
    return click.option("--group-by", "group_by", default=default, show_default=True, metavar="op|kernel|range:N|none",
                        callback=_check_group_by, help=GROUP_BY_HELP)


def _check_group_by(_ctx: click.Context, _param: click.Parameter, value: str) -> str:
    from roofline.ncu.group import parse_group_by

    try:
        parse_group_by(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None
    return value


@click.command("profile", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@wide_option
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED)
@output_option_for("the results JSON (roofline/results/v1, with the groups)")
@click.option("--spec", "spec_name", default=None, metavar="SPEC",
              help="Ceilings to compare with: a bundled id, alias or YAML path. Default: the spec whose "
                   "device_names lists the GPU ncu names.")
@group_by_option("op")
@click.option("--range", "ranges", multiple=True, metavar="NAME|start-stop",
              help="Profile only inside the NVTX push/pop range NAME (ncu --nvtx-include NAME/), or with "
                   "'start-stop' only between cudaProfilerStart and cudaProfilerStop (torch.cuda.profiler."
                   "start()/stop()). Repeatable.")
@click.option("--kernel", "kernel_regex", default=None, metavar="REGEX",
              help="Profile only kernels whose name matches REGEX (ncu --kernel-name regex:REGEX).")
@click.option("--launch-skip", type=click.IntRange(0), default=0, show_default=True,
              help="Skip this many matching launches first.")
@click.option("--launch-count", type=click.IntRange(1), default=None, help="Profile at most this many launches.")
@click.option("--ncu", "ncu_path", default=None, metavar="PATH", help="The ncu executable (default: on PATH).")
@click.option("--save-csv", type=click.Path(path_type=Path, dir_okay=False), default=None, metavar="FILE",
              callback=writable_path,
              help="Also keep ncu's CSV capture, for 'roofline import ncu FILE' later.")
@click.option("--timeout", type=click.FloatRange(min=1), default=None, metavar="SECONDS",
              help="Stop ncu and the program after this long (default: no limit).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="What to print on standard output.")
@click.pass_context
def profile(ctx: click.Context, program: tuple[str, ...], output: Path | None, spec_name: str | None,
            group_by: str, ranges: tuple[str, ...], kernel_regex: str | None, launch_skip: int,
            launch_count: int | None, ncu_path: str | None, save_csv: Path | None, timeout: float | None,
            fmt: str) -> None:
    """Run PROGRAM under Nsight Compute and put every kernel it launches on the roofline, grouped and ranked.

    ncu collects exactly the metrics the roofline needs (those of 'roofline import ncu --list-metrics'), with
    NVTX stacks (--nvtx), the raw CSV page in base units and the clocks left alone (--clock-control none). Each
    group shows its launches, time and share of the program's GPU time, FLOPs and DRAM bytes, intensity,
    achieved rates, the roof that bounds it, its time-weighted fraction of ceiling, its speed-of-light time and
    the recoverable time (time - speed-of-light time); groups are ranked by recoverable time. With
    emit_nvtx(record_shapes=True), matmul-like ops get the model 2*M*N*K beside the counters, and ops whose
    counted DRAM traffic is more than 1.5x their model's are flagged.

    ncu replays each kernel for every metric pass: profile one step, not a whole run. A program that fails
    exits with its own status and standard error, and nothing is written.

    \b
    Examples:
      roofline profile -o gpt2.json -- python3 my_model.py --batch 4
      roofline profile --range start-stop --group-by op -o step.json -- python3 train.py
      roofline profile --kernel 'gemm|attention' --launch-count 20 -- ./a.out
      roofline report step.json --fail-below 0.5
      roofline plot --results step.json -o step.html
    """
    from roofline.errors import BackendUnavailable, InputError
    from roofline.ncu.group import add_groups
    from roofline.ncu.importer import choose_spec, import_table, summary_line
    from roofline.ncu.profile import find_ncu
    from roofline.ncu.program import ProgramFailed, ProgressLine, Scope, capture, program_stderr
    from roofline.ncu.readback import check_import
    from roofline.ncu.table import NcuParseError, parse_csv
    from roofline.render.grouped import grouped_table
    from roofline.render.imported import imported_table
    from roofline.specs import SpecCatalog

    exe, why = find_ncu(ncu_path)
    if exe is None:
        raise BackendUnavailable(str(why), fix="Nsight Compute comes with the CUDA toolkit (https://developer."
                                 "nvidia.com/nsight-compute); put its ncu on PATH or give --ncu PATH")
    progress = ProgressLine(sys.stderr)
    try:
        text, run = capture(exe, program, Scope(ranges, kernel_regex, launch_skip, launch_count), progress, timeout)
    except OSError as exc:
        raise BackendUnavailable(f"cannot run {exe}: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        raise InputError(f"--timeout {timeout:g}: the program did not finish under ncu in time; profile one step "
                         "(--range start-stop, --launch-count) or give it longer") from None
    except ProgramFailed as exc:
        if progress.interactive:
            sys.stderr.write("\n")
        own = program_stderr(exc.stderr)
        if own:
            click.echo(own, err=True)
        note(f"error: the program exited with status {exc.status} under ncu; nothing was written")
        ctx.exit(exc.status if 0 < exc.status < 256 else 1)
    progress.done(run.launches, run.seconds)
    try:
        table = parse_csv(text)
    except NcuParseError as exc:
        raise BackendUnavailable(f"ncu's report read back as no table: {exc}") from None
    if save_csv is not None:
        from roofline.cli.common import write_output

        write_output(save_csv, text)
        note(f"wrote {save_csv}")
    machine = choose_spec(table, spec_name, SpecCatalog.bundled())
    doc, notes = import_table(table, machine, "ncu: " + " ".join(program))
    doc["source"]["command"] = list(program)
    doc["source"]["profile_seconds"] = run.seconds
    notes += add_groups(doc, group_by)
    notes += check_import(doc, "the profile")  # before anything is written: what report and plot will accept
    lines = [*notes, summary_line(doc, "profiled")]
    emit_results(doc, output, fmt, grouped_table if doc.get("groups") else imported_table, lines)
