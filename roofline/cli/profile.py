"""`roofline profile -- PROGRAM ARGS`: a whole program on the roofline, grouped by op and ranked by the time it
leaves on the table (recoverable time = time - speed-of-light time). Two sources: Nsight Compute's counters
(`--with ncu`, roofline.ncu.program) or a PyTorch profiler trace and op shape models (`--with torch`,
roofline.kineto.program); `--with auto` picks ncu where it is found and may read the counters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from roofline.cli.common import (OutputPath, check_output_kind, emit_results, group_by_option, ncu_path_option, note,
                                 output_option_for, single_spec_option, wide_option, writable_path, write_output)
from roofline.records.schema import RESULTS_SCHEMA
from roofline.errors import InputError, EXIT_TERMINATED
from roofline.kineto.select import kernel_pattern, LaunchScope
import math
from roofline.kineto.profiling import choose_source, profile_ncu, profile_torch, sigterm_ends_the_run
from roofline.ncu.program import Terminated
from roofline.render.tables.grouped import grouped_table
from roofline.render.tables.trace import launch_table, timeline_tables
from roofline.render.tables.imported import imported_table

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
    if value is not None:
        try:
            kernel_pattern(value)
        except InputError as exc:
            raise click.BadParameter(exc.message.removeprefix("--kernel-name: ")) from None
    return value


def _check_timeout(_ctx: click.Context, _param: click.Parameter, value: float | None) -> float | None:
    if value is not None and not (math.isfinite(value) and value >= 1):
        raise click.BadParameter(f"{value!r}: give a finite number of seconds, at least 1 (leave it out for no "
                                 "limit)")
    return value


@click.command("profile", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@wide_option
@click.argument("program", nargs=-1, required=True, type=click.UNPROCESSED)
@output_option_for("the results JSON (roofline/results/v1, with the groups)", RESULTS_SCHEMA)
@single_spec_option("Ceilings to compare with: a bundled id, alias or YAML path. Default: the spec whose "
                   "device_names lists the GPU ncu (or the trace) names.")
@click.option("--with", "source", type=click.Choice(["auto", "ncu", "torch"]), default="auto", show_default=True,
              help=WITH_HELP)
@group_by_option("op",
                 help=GROUP_BY_HELP + " With --with torch: 'op' is the innermost ATen op, 'module' the innermost "
                   "nn.Module (recorded with_stack; slower), and range:N does not apply.")
@click.option("--range", "ranges", multiple=True, metavar="NAME|start-stop",
              help="Profile only inside the NVTX push/pop range NAME (ncu --nvtx-include NAME/; with torch the first "
                   "torch.cuda.nvtx range of that name), or with 'start-stop' only between cudaProfilerStart and "
                   "cudaProfilerStop (torch.cuda.profiler.start()/stop(); with torch the first such pair, or the "
                   "first N with --steps N). Repeatable with ncu; one with torch. Default: the whole run.")
@click.option("--steps", type=click.IntRange(1), default=1, show_default=True, metavar="N",
              help="With torch and --range: record the first N occurrences of the range (N training steps), each "
                   "marked ProfilerStep#k, so 'report --baseline' compares per-step times with the noise-aware "
                   "test and 'diff' shows times per step.")
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
            save_trace: Path | None, timeout: float | None, fmt: str, tokens: int | None = None,
            steps: int = 1) -> None:
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
      roofline profile --with torch --range step --steps 10 -o pr.json -- python3 train.py
      roofline profile --kernel-name 'gemm|attention' --launch-count 20 -- ./a.out
      roofline report step.json --fail-below 0.5
      roofline plot --results step.json -o step.html
    """
    if kernel_alias is not None:
        note("warning: --kernel is deprecated and will be removed in the next release; use --kernel-name REGEX "
             "(ncu's own word)")
        if kernel_regex is not None and kernel_regex != kernel_alias:
            raise click.UsageError("--kernel is the old spelling of --kernel-name: give one of them")
        kernel_regex = kernel_alias
    ncu_options = [name for name, given in zip(NCU_ONLY, (ncu_path, save_csv)) if given]
    chosen, why, said = choose_source(source, program, ncu_options, save_trace, group_by, ranges)
    check_output_kind(f"{RESULTS_SCHEMA}@{chosen}")  # before the run: not a GPU measurement lost after it
    if said:
        note(said)
    if steps > 1 and chosen != "torch":
        raise InputError("--steps records several steps under torch.profiler: give --with torch (ncu replays each "
                         "kernel; profile one step with it)")
    if steps > 1 and not ranges:
        raise InputError("--steps N records the first N occurrences of a range: give --range NAME (an NVTX range "
                         "around one step) or --range start-stop")
    scope = LaunchScope(kernel_regex, launch_skip, launch_count)
    with sigterm_ends_the_run():
        try:
            if chosen == "torch":
                done = profile_torch(program, spec_name, group_by, ranges, scope, save_trace, timeout, why,
                                     write_output, note, tokens, steps)
            else:
                if tokens is not None:
                    note("note: --tokens is for the energy of a torch profile; under ncu each kernel is replayed, "
                         "so the range's energy is not the program's: no energy recorded")
                done = profile_ncu(program, spec_name, group_by, ranges, scope, ncu_path, save_csv, timeout, why,
                                   write_output, note)
        except Terminated:
            note(f"error: terminated (SIGTERM): {'ncu' if chosen == 'ncu' else 'the PyTorch capture'} and the "
                 "program were ended; nothing was written")
            ctx.exit(EXIT_TERMINATED)
    emit_results(done.doc, output, fmt, _tables(chosen, done.doc), done.lines)


def _tables(chosen: str, doc: dict) -> Any:
    """What the profile prints: the groups, or launch by launch; with torch, the step's timeline after it."""
    if chosen == "torch":
        table = grouped_table if doc.get("groups") else launch_table
        return lambda d: [table(d), *timeline_tables(d)]

    return grouped_table if doc.get("groups") else imported_table
