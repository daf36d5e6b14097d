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
                 "pushes module ranges) or 'none' (launch by launch, as kernel gates and --baseline in 'report' "
                 "need). 'op' is the default of both 'profile' and 'import ncu'; a capture without NVTX ranges is "
                 "then grouped by kernel name, and a note says so.")


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


def _check_timeout(_ctx: click.Context, _param: click.Parameter, value: float | None) -> float | None:
    import math

    if value is not None and not (math.isfinite(value) and value >= 1):
        raise click.BadParameter(f"{value!r}: give a finite number of seconds, at least 1 (leave it out for no "
                                 "limit)")
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
@click.option("--kernel-name", "kernel_regex", default=None, metavar="REGEX",
              help="Profile only kernels whose name matches REGEX (ncu --kernel-name regex:REGEX).")
@click.option("--kernel", "kernel_alias", default=None, metavar="REGEX", hidden=True,
              help="Deprecated spelling of --kernel-name (--kernels PATH means descriptors elsewhere); removed in "
                   "the next release.")
@click.option("--launch-skip", type=click.IntRange(0), default=0, show_default=True,
              help="Skip this many matching launches first.")
@click.option("--launch-count", type=click.IntRange(1), default=None, help="Profile at most this many launches.")
@click.option("--ncu", "ncu_path", default=None, metavar="PATH", help="The ncu executable (default: on PATH).")
@click.option("--save-csv", type=click.Path(path_type=Path, dir_okay=False), default=None, metavar="FILE",
              callback=writable_path,
              help="Also keep ncu's CSV capture, for 'roofline import ncu FILE' later.")
@click.option("--timeout", type=float, default=None, metavar="SECONDS", callback=_check_timeout,
              help="End ncu, the program and everything it started after this long (the profile and ncu's "
                   "read-back together; at least 1, finite; default: no limit); exit 5.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="What to print on standard output.")
@click.pass_context
def profile(ctx: click.Context, program: tuple[str, ...], output: Path | None, spec_name: str | None,
            group_by: str, ranges: tuple[str, ...], kernel_regex: str | None, kernel_alias: str | None,
            launch_skip: int, launch_count: int | None, ncu_path: str | None, save_csv: Path | None,
            timeout: float | None, fmt: str) -> None:
    """Run PROGRAM under Nsight Compute and put every kernel it launches on the roofline, grouped and ranked.

    ncu collects exactly the metrics the roofline needs (those of 'roofline import ncu --list-metrics'), with
    NVTX stacks (--nvtx), the raw CSV page in base units and the clocks left alone (--clock-control none). Each
    group shows its launches, time and share of the program's GPU time, FLOPs and DRAM bytes, intensity,
    achieved rates, the roof that bounds it, its time-weighted fraction of ceiling, its speed-of-light time and
    the recoverable time (time - speed-of-light time); groups are ranked by recoverable time. With
    emit_nvtx(record_shapes=True), matmul-like ops get the model 2*M*N*K beside the counters, and ops whose
    counted DRAM traffic is more than 1.5x their model's are flagged.

    ncu replays each kernel for every metric pass: profile one step, not a whole run. ncu and the program run in
    a process group of their own, ended as a whole (SIGTERM, then SIGKILL) on --timeout, Ctrl-C or SIGTERM, with
    ncu's temporary report and any partial output removed. The program's output is not kept (the last lines of
    its standard error are shown if it fails).

    \b
    Exit codes beside the common ones: 4 the program failed (its status and
    standard error are printed; nothing is written), 5 --timeout ran out,
    130 Ctrl-C, 143 SIGTERM.

    \b
    Examples:
      roofline profile -o gpt2.json -- python3 my_model.py --batch 4
      roofline profile --range start-stop --group-by op -o step.json -- python3 train.py
      roofline profile --kernel-name 'gemm|attention' --launch-count 20 -- ./a.out
      roofline report step.json --fail-below 0.5
      roofline plot --results step.json -o step.html
    """
    import signal
    import threading

    from roofline.errors import EXIT_TERMINATED
    from roofline.ncu.program import Terminated

    def terminated(_signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: the cleanup it starts must not be cut short
        raise Terminated()

    if kernel_alias is not None:
        note("warning: --kernel is deprecated and will be removed in the next release; use --kernel-name REGEX "
             "(ncu's own word)")
        if kernel_regex is not None and kernel_regex != kernel_alias:
            raise click.UsageError("--kernel is the old spelling of --kernel-name: give one of them")
        kernel_regex = kernel_alias
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if main_thread else None
    try:
        _profile(program, output, spec_name, group_by, ranges, kernel_regex, launch_skip, launch_count, ncu_path,
                 save_csv, timeout, fmt)
    except Terminated:
        note("error: terminated (SIGTERM): ncu and the program were ended; nothing was written")
        ctx.exit(EXIT_TERMINATED)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _profile(program: tuple[str, ...], output: Path | None, spec_name: str | None, group_by: str,
             ranges: tuple[str, ...], kernel_regex: str | None, launch_skip: int, launch_count: int | None,
             ncu_path: str | None, save_csv: Path | None, timeout: float | None, fmt: str) -> None:
    """The run itself; every way out (an error, a timeout, Terminated) leaves no process and no temporary file."""
    from roofline.errors import BackendUnavailable, InputError, ProgramFailed as ProgramError, TimedOut
    from roofline.ncu.group import add_groups
    from roofline.ncu.importer import choose_spec, import_table, summary_line
    from roofline.ncu.profile import find_ncu
    from roofline.ncu.program import ProgramFailed, ProgressLine, Scope, capture, program_stderr
    from roofline.ncu.readback import check_import
    from roofline.ncu.table import NcuParseError, TooManyLaunches, parse_csv_file
    from roofline.render.tables.grouped import grouped_table
    from roofline.render.tables.imported import imported_table
    from roofline.load.specs import SpecCatalog

    exe, why = find_ncu(ncu_path)
    if exe is None:
        raise BackendUnavailable(str(why), fix="Nsight Compute comes with the CUDA toolkit (https://developer."
                                 "nvidia.com/nsight-compute); put its ncu on PATH or give --ncu PATH")
    progress = ProgressLine(sys.stderr)
    try:
        with capture(exe, program, Scope(ranges, kernel_regex, launch_skip, launch_count), progress,
                     timeout) as (csv_path, run):
            progress.done(run.launches, run.seconds)
            try:
                table = parse_csv_file(csv_path)
            except TooManyLaunches as exc:
                raise InputError(f"ncu's capture: {exc}", fix="profile fewer: --launch-count N, --kernel-name "
                                 "REGEX or --range; nothing was written") from None
            except NcuParseError as exc:
                raise BackendUnavailable(f"ncu's report read back as no table: {exc}") from None
            if save_csv is not None:
                from roofline.cli.common import write_output

                write_output(save_csv, csv_path.read_bytes())
                note(f"wrote {save_csv}")
    except OSError as exc:
        raise BackendUnavailable(f"cannot run {exe}: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        if progress.interactive:
            sys.stderr.write("\n")
        raise TimedOut(f"--timeout {timeout:g}: the program did not finish under ncu in time; ncu, the program and "
                       "what it started were ended and nothing was written",
                       fix="profile one step (--range start-stop, --launch-count) or give it longer") from None
    except ProgramFailed as exc:
        if progress.interactive:
            sys.stderr.write("\n")
        own = program_stderr(exc.stderr)
        if own:
            click.echo(own, err=True)
        raise ProgramError(f"the program exited with status {exc.status} under ncu; nothing was written") from None
    machine = choose_spec(table, spec_name, SpecCatalog.bundled())
    doc, notes = import_table(table, machine, "ncu: " + " ".join(program))
    doc["source"]["command"] = list(program)
    doc["source"]["profile_seconds"] = run.seconds
    notes += add_groups(doc, group_by)
    notes += check_import(doc, "the profile")  # before anything is written: what report and plot will accept
    lines = [*notes, summary_line(doc, "profiled")]
    emit_results(doc, output, fmt, grouped_table if doc.get("groups") else imported_table, lines)
