"""`roofline profile -- PROGRAM ARGS`: a whole program on the roofline, grouped by op and ranked by the time it
leaves on the table (recoverable time = time - speed-of-light time). Two sources: Nsight Compute's counters
(`--with ncu`, roofline.ncu.program) or a PyTorch profiler trace and op shape models (`--with torch`,
roofline.kineto.program); `--with auto` picks ncu where it is found and may read the counters."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from roofline.cli.common import (FilePath, OutputPath, emit_results, group_by_option, ncu_path_option, note,
                                 output_option_for, wide_option, writable_path)
from roofline.records.schema import RESULTS_SCHEMA

if TYPE_CHECKING:
    from roofline.kineto.select import LaunchScope

GROUP_BY_HELP = ("How launches are grouped: 'op' (the innermost NVTX range around a launch: with PyTorch's "
                 "emit_nvtx, the aten op), 'kernel' (the demangled kernel name, template arguments left out), "
                 "'range:N' (the N-th level of the NVTX stack, 1 the outermost: a module name when the program "
                 "pushes module ranges) or 'none' (launch by launch, as kernel gates and --baseline in 'report' "
                 "need). 'op' is the default of both 'profile' and 'import ncu'; a capture without NVTX ranges is "
                 "then grouped by kernel name, and a note says so.")


WITH_HELP = ("Where the FLOPs and bytes come from. 'ncu': Nsight Compute's counters (what each kernel really moved; "
             "replays every kernel, needs counter permission). 'torch': the PyTorch profiler, for a Python program "
             "('python3 script.py ARGS'): op shape models from the trace, at about the program's own speed, no "
             "permission needed. 'auto': ncu where it is found and the driver lets this user read the counters, "
             "else torch for a Python program; options of one source (--ncu-path, --save-csv; --save-trace, --group-by "
             "module) choose it.")
NCU_ONLY = ("--ncu-path", "--save-csv")


def _check_kernel_name(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """An expression Python and ncu both read (ncu would fail only after starting the program)."""
    from roofline.errors import InputError
    from roofline.kineto.select import kernel_pattern

    if value is not None:
        try:
            kernel_pattern(value)
        except InputError as exc:
            raise click.BadParameter(exc.message.removeprefix("--kernel-name: ")) from None
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
@output_option_for("the results JSON (roofline/results/v1, with the groups)", RESULTS_SCHEMA)
@click.option("--spec", "spec_name", default=None, metavar="SPEC",
              help="Ceilings to compare with: a bundled id, alias or YAML path. Default: the spec whose "
                   "device_names lists the GPU ncu (or the trace) names.")
@click.option("--with", "source", type=click.Choice(["auto", "ncu", "torch"]), default="auto", show_default=True,
              help=WITH_HELP)
@group_by_option("op",
                 help=GROUP_BY_HELP + " With --with torch: 'op' is the innermost ATen op, 'module' the innermost "
                   "nn.Module (recorded with_stack; slower), and range:N does not apply.")
@click.option("--range", "ranges", multiple=True, metavar="NAME|start-stop",
              help="Profile only inside the NVTX push/pop range NAME (ncu --nvtx-include NAME/; with torch the first "
                   "torch.cuda.nvtx range of that name), or with 'start-stop' only between cudaProfilerStart and "
                   "cudaProfilerStop (torch.cuda.profiler.start()/stop(); with torch the first such pair). "
                   "Repeatable with ncu; one with torch. Default: the whole run.")
@click.option("--kernel-name", "kernel_regex", default=None, metavar="REGEX",
              callback=_check_kernel_name,
              help="Profile only kernels whose function name (no template arguments or parameters) matches REGEX "
                   "anywhere (ncu --kernel-name regex:REGEX; with torch the trace's launches are selected the "
                   "same way after the run, copies and fills left out).")
@click.option("--kernel", "kernel_alias", default=None, metavar="REGEX", hidden=True,
              help="Deprecated spelling of --kernel-name (--kernels PATH means descriptors elsewhere); removed in "
                   "the next release.")
@click.option("--launch-skip", type=click.IntRange(0), default=0, show_default=True,
              help="Skip this many matching kernel launches first (with torch: in the trace, in launch order).")
@click.option("--launch-count", type=click.IntRange(1), default=None,
              help="Profile at most this many matching kernel launches (with torch: keep at most this many).")
@ncu_path_option()
@click.option("--save-csv", type=OutputPath(), default=None, metavar="FILE",
              callback=writable_path,
              help="Also keep ncu's CSV capture, for 'roofline import ncu FILE' later.")
@click.option("--save-trace", type=OutputPath(), default=None, metavar="FILE",
              callback=writable_path,
              help="With torch: also keep the PyTorch profiler trace (gzipped when FILE ends .gz), for 'roofline "
                   "import torch FILE', Perfetto or TensorBoard.")
@click.option("--timeout", type=float, default=None, metavar="SECONDS", callback=_check_timeout,
              help="End the profiler, the program and everything it started after this long (the profile and "
                   "ncu's read-back together; at least 1, finite; default: no limit); exit 5.")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="What to print on standard output.")
@click.option("--tokens", type=click.IntRange(1), default=None, metavar="N",
              help="With torch: the tokens the profiled range processes, for its energy per token (the range's "
                   "joules from NVML's counter of the program's GPU; docs/energy.md).")
@click.pass_context
def profile(ctx: click.Context, program: tuple[str, ...], output: Path | None, spec_name: str | None,
            source: str, group_by: str, ranges: tuple[str, ...], kernel_regex: str | None, kernel_alias: str | None,
            launch_skip: int, launch_count: int | None, ncu_path: str | None, save_csv: Path | None,
            save_trace: Path | None, timeout: float | None, fmt: str, tokens: int | None = None) -> None:
    """Run PROGRAM under Nsight Compute or the PyTorch profiler and put every kernel it launches on the roofline,
    grouped and ranked.

    With ncu (--with ncu; the default where ncu is found and may read the counters), ncu collects exactly the
    metrics the roofline needs (those of 'roofline import ncu --list-metrics'), with NVTX stacks (--nvtx), the
    raw CSV page in base units and the clocks left alone (--clock-control none). Each group shows its launches,
    time and share of the program's GPU time, FLOPs and DRAM bytes, intensity, achieved rates, the roof that
    bounds it, its time-weighted fraction of ceiling, its speed-of-light time and the recoverable time (time -
    speed-of-light time); groups are ranked by recoverable time. With emit_nvtx(record_shapes=True), matmul-like
    ops get the model 2*M*N*K beside the counters, and ops whose counted DRAM traffic is more than 1.5x their
    model's are flagged.

    ncu replays each kernel for every metric pass: profile one step, not a whole run.

    With torch (--with torch; what 'auto' picks for a Python program where ncu is missing or the driver keeps the
    counters to administrators), PROGRAM must be 'python3 script.py ARGS' (or script.py): it runs unchanged in
    its own Python under torch.profiler (record_shapes), emit_nvtx made a no-op, and the trace is read as 'roofline
    import torch' reads one: each kernel under its innermost ATen op, FLOPs and bytes from the op's input shapes
    (shape models, not counters), time with no model listed apart. The program's Python needs torch, not
    roofline. The output says which source was used.

    The profiler and the program run in a process group of their own, ended as a whole (SIGTERM, then SIGKILL)
    on --timeout, Ctrl-C or SIGTERM, with temporary files and any partial output removed. The program's output is
    not kept (the last lines of its standard error are shown if it fails).

    \b
    Exit codes beside the common ones: 4 the program failed (its status and
    standard error are printed; nothing is written), 5 --timeout ran out,
    130 Ctrl-C, 143 SIGTERM.

    \b
    Examples:
      roofline profile -o gpt2.json -- python3 my_model.py --batch 4
      roofline profile --range start-stop --group-by op -o step.json -- python3 train.py
      roofline profile --with torch --range start-stop --save-trace step.json.gz -o step.json -- python3 train.py
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
    ncu_options = [name for name, given in zip(NCU_ONLY, (ncu_path, save_csv)) if given]
    chosen, why = choose_source(source, program, ncu_options, save_trace, group_by, ranges)
    from roofline.kineto.select import LaunchScope

    scope = LaunchScope(kernel_regex, launch_skip, launch_count)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if main_thread else None
    try:
        if chosen == "torch":
            _profile_torch(program, output, spec_name, group_by, ranges, scope, save_trace, timeout, fmt, why,
                           tokens)
        else:
            if tokens is not None:
                note("note: --tokens is for the energy of a torch profile; under ncu each kernel is replayed, so "
                     "the range's energy is not the program's: no energy recorded")
            _profile(program, output, spec_name, group_by, ranges, scope, ncu_path, save_csv, timeout, fmt, why)
    except Terminated:
        note(f"error: terminated (SIGTERM): {'ncu' if chosen == 'ncu' else 'the PyTorch capture'} and the program "
             "were ended; nothing was written")
        ctx.exit(EXIT_TERMINATED)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def choose_source(source: str, program: tuple[str, ...], ncu_options: list[str], save_trace: Path | None,
                  group_by: str, ranges: tuple[str, ...] = ()) -> tuple[str, str]:
    """('ncu' or 'torch', why): --with as given, its options checked against it; for 'auto', the options of one
    source choose it, else ncu where it is found and the driver lets this user read the counters, else torch for
    a Python program. A usage error (exit 2) for options of the other source."""
    from roofline.kineto.program import runs_as_python
    from roofline.ncu.profile import find_ncu
    from roofline.ncu.program import counter_access

    torch_options = [name for name, given in (("--save-trace", save_trace is not None),
                                              ("--group-by module", group_by == "module")) if given]
    ncu_options = ncu_options + (["--group-by " + group_by] if group_by.startswith("range:") else []) + (
        [f"{len(ranges)} --range options"] if len(ranges) > 1 else [])
    if source == "torch" and ncu_options:
        raise click.UsageError(f"{', '.join(ncu_options)}: options of ncu, not of --with torch (which records every "
                               "launch in the range, grouped by op, kernel, module or none): leave them out")
    if source == "ncu" and torch_options:
        raise click.UsageError(f"{', '.join(torch_options)}: options of --with torch, not of ncu (keep ncu's capture "
                               "with --save-csv; group module ranges with --group-by range:N)")
    if source != "auto":
        return source, f"--with {source}"
    if ncu_options and torch_options:
        raise click.UsageError(f"{', '.join(ncu_options)} (ncu) and {', '.join(torch_options)} (torch) belong to "
                               "different sources: choose one with --with ncu or --with torch")
    if ncu_options or torch_options:
        chosen = "ncu" if ncu_options else "torch"
        return chosen, f"auto: {', '.join(ncu_options or torch_options)} given"
    if not runs_as_python(program):
        return "ncu", "auto: not a Python script"
    exe, _ = find_ncu(None)
    if exe is None:
        why = "auto: ncu is not on PATH"
    else:
        no_counters = counter_access()
        if no_counters is None:
            return "ncu", "auto: ncu found"
        why = f"auto: {no_counters}"
    note(f"profile: with torch.profiler ({why[6:]}): FLOPs and bytes from op shape models, not counters; --with ncu "
         "to insist on counters")
    return "torch", why


def _profile_torch(program: tuple[str, ...], output: Path | None, spec_name: str | None, group_by: str,
                   ranges: tuple[str, ...], scope: LaunchScope, save_trace: Path | None, timeout: float | None,
                   fmt: str, why: str, tokens: int | None = None) -> None:
    """The run under the PyTorch profiler, then the trace imported as 'import torch' would; every way out leaves
    no process and no temporary file."""
    from roofline.cli.common import write_output
    from roofline.errors import BackendUnavailable, ProgramFailed as ProgramError, TimedOut
    from roofline.kineto.document import import_traces, summary_line
    from roofline.kineto.program import Running, capture, capture_range, python_program
    from roofline.kineto.table import launch_table, timeline_tables
    from roofline.ncu.program import ProgramFailed
    from roofline.ncu.readback import check_import
    from roofline.render.tables.grouped import grouped_table
    from roofline.model.units import format_bytes, format_time

    prog = python_program(program)
    range_ = capture_range(ranges)
    progress = Running(sys.stderr)
    gz = save_trace is not None and save_trace.name.endswith(".gz")
    try:
        with capture(prog, range_, group_by == "module", timeout, gz, progress) as (trace, run):
            note(f"profile: ran under torch.profiler in {run.seconds:.1f} s (profiled range "
                 f"{format_time(run.range_seconds)}, trace {format_bytes(run.trace_bytes)}, torch {run.torch})")
            if save_trace is not None:
                write_output(save_trace, trace.read_bytes())
                note(f"wrote {save_trace}")
            doc, notes = import_traces([trace], spec_name, group_by, scope=scope)
    except OSError as exc:
        raise BackendUnavailable(f"cannot run {prog.python}: {exc.strerror or exc}",
                                 fix="give the program's Python by its path: python3 SCRIPT.py") from None
    except subprocess.TimeoutExpired:
        raise TimedOut(f"--timeout {timeout:g}: the program did not finish under torch.profiler in time; it and what "
                       "it started were ended and nothing was written",
                       fix="profile one step (--range start-stop or --range NAME) or give it longer") from None
    except ProgramFailed as exc:
        own = "\n".join(exc.stderr.splitlines()[-40:])
        if own:
            click.echo(own, err=True)
        raise ProgramError(f"the program exited with status {exc.status} under torch.profiler; nothing was "
                           "written") from None
    kept = str(save_trace) if save_trace is not None else None
    for k in doc["kernels"]:
        k["kineto"]["file"] = kept  # not the temporary file, gone by now
    doc["source"].update(files=[kept] if kept else [], command=list(program), profile_seconds=run.seconds,
                         program_seconds=run.program_seconds, range_seconds=run.range_seconds,
                         range=range_, torch=run.torch, chosen_by=why, **TORCH_SOURCE)
    notes += check_import(doc, "the profile")  # before anything is written: what report and plot will accept
    from roofline.records.energy import step_energy, step_energy_line

    doc["energy"] = step_energy(run.energy, range_, tokens)
    lines = [*notes, summary_line(doc, "profiled", "with torch.profiler") + f"; {TORCH_SOURCE['figures']}",
             step_energy_line(doc["energy"]) or ""]
    lines = [line for line in lines if line]
    table = grouped_table if doc.get("groups") else launch_table
    emit_results(doc, output, fmt, lambda d: [table(d), *timeline_tables(d)], lines)


NCU_SOURCE = {"with": "ncu", "figures": "FLOPs and DRAM bytes counted by ncu"}
TORCH_SOURCE = {"with": "torch", "figures": "FLOPs and bytes from op shape models of the torch trace, not counters"}


def _profile(program: tuple[str, ...], output: Path | None, spec_name: str | None, group_by: str,
             ranges: tuple[str, ...], scope: LaunchScope, ncu_path: str | None, save_csv: Path | None,
             timeout: float | None, fmt: str, chosen_by: str) -> None:
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
                                 "nvidia.com/nsight-compute); put its ncu on PATH or give --ncu-path PATH; a PyTorch "
                                 "program can be profiled without it: --with torch -- python3 SCRIPT.py")
    progress = ProgressLine(sys.stderr)
    try:
        with capture(exe, program, Scope(ranges, scope.kernel, scope.skip, scope.count), progress,
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
    doc["source"].update(command=list(program), profile_seconds=run.seconds, chosen_by=chosen_by, **NCU_SOURCE)
    if scope.given:
        doc["source"]["scope"] = scope.to_json()
    notes += add_groups(doc, group_by)
    notes += check_import(doc, "the profile")  # before anything is written: what report and plot will accept
    lines = [*notes, summary_line(doc, "profiled") + f"; {NCU_SOURCE['figures']}"]
    emit_results(doc, output, fmt, grouped_table if doc.get("groups") else imported_table, lines)
