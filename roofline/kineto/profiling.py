"""`profile`'s library side: which source profiles the program (Nsight Compute's counters or torch.profiler), the
run under it, and the run's document. Every way out (an error, a timeout, SIGTERM) leaves no process and no
temporary file; the command line only parses, then renders what comes back."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from roofline.errors import BackendUnavailable, InputError, ProgramFailed as ProgramError, TimedOut
from roofline.kineto import document as trace_document
from roofline.kineto.program import Running, capture, capture_range, python_program, runs_as_python
from roofline.kineto.select import LaunchScope
from roofline.load.specs import SpecCatalog
from roofline.model.units import format_bytes, format_time
from roofline.ncu import importer as ncu_importer, program as ncu_program, profile as ncu_profile
from roofline.ncu.group import add_groups
from roofline.ncu.readback import check_import
from roofline.ncu.table import NcuParseError, TooManyLaunches, parse_csv_file
from roofline.records.energy import step_energy, step_energy_line

NCU_SOURCE = {"with": "ncu", "figures": "FLOPs and DRAM bytes counted by ncu"}
TORCH_SOURCE = {"with": "torch", "figures": "FLOPs and bytes from op shape models of the torch trace, not counters"}

Keep = Callable[[Path, bytes], None]  # writes a kept capture (--save-trace, --save-csv) through the CLI's -o checks
Say = Callable[[str], None]  # a line for people on standard error, as it happens


@dataclass(frozen=True)
class Profiled:
    """A profile's results document and the lines to print after it (notes, then the summary)."""

    doc: dict[str, Any]
    lines: list[str]


def choose_source(source: str, program: Sequence[str], ncu_options: Sequence[str], save_trace: Path | None,
                  group_by: str, ranges: Sequence[str] = ()) -> tuple[str, str, str | None]:
    """('ncu' or 'torch', why, a note or None): --with as given, its options checked against it; for 'auto', the
    options of one source choose it, else ncu where it is found and the driver lets this user read the counters,
    else torch for a Python program. Options of the other source are an input error (exit 2)."""
    torch_options = [name for name, given in (("--save-trace", save_trace is not None),
                                              ("--group-by module", group_by == "module")) if given]
    ncu_options = list(ncu_options) + (["--group-by " + group_by] if group_by.startswith("range:") else []) + (
        [f"{len(ranges)} --range options"] if len(ranges) > 1 else [])
    if source == "torch" and ncu_options:
        raise InputError(f"{', '.join(ncu_options)}: options of ncu, not of --with torch (which records every "
                         "launch in the range, grouped by op, kernel, module or none): leave them out")
    if source == "ncu" and torch_options:
        raise InputError(f"{', '.join(torch_options)}: options of --with torch, not of ncu (keep ncu's capture "
                         "with --save-csv; group module ranges with --group-by range:N)")
    if source != "auto":
        return source, f"--with {source}", None
    if ncu_options and torch_options:
        raise InputError(f"{', '.join(ncu_options)} (ncu) and {', '.join(torch_options)} (torch) belong to "
                         "different sources: choose one with --with ncu or --with torch")
    if ncu_options or torch_options:
        chosen = "ncu" if ncu_options else "torch"
        return chosen, f"auto: {', '.join(ncu_options or torch_options)} given", None
    if not runs_as_python(program):
        return "ncu", "auto: not a Python script", None
    exe, _ = ncu_profile.find_ncu(None)
    if exe is None:
        why = "auto: ncu is not on PATH"
    else:
        no_counters = ncu_program.counter_access()  # through the module: tests stand in for the driver here
        if no_counters is None:
            return "ncu", "auto: ncu found", None
        why = f"auto: {no_counters}"
    return "torch", why, (f"profile: with torch.profiler ({why[6:]}): FLOPs and bytes from op shape models, not "
                          "counters; --with ncu to insist on counters")


@contextmanager
def sigterm_ends_the_run() -> Iterator[None]:
    """SIGTERM raises ncu.program.Terminated in the main thread, so the capture's clean-up (the program's process
    group ended, temporary files removed) runs before the process exits; the handler before is restored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(_signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # one is enough: the cleanup it starts must not be cut short
        raise ncu_program.Terminated()

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def profile_torch(program: Sequence[str], spec_name: str | None, group_by: str, ranges: Sequence[str],
                  scope: LaunchScope, save_trace: Path | None, timeout: float | None, why: str, keep: Keep,
                  say: Say, tokens: int | None = None, steps: int = 1) -> Profiled:
    """The run under the PyTorch profiler, then the trace imported as 'import torch' would; with the profiled
    range's energy (NVML, read by the capture) and, given `tokens`, its joules per token (docs/energy.md)."""
    prog = python_program(program)
    range_ = capture_range(ranges)
    gz = save_trace is not None and save_trace.name.endswith(".gz")
    try:
        with capture(prog, range_, group_by == "module", timeout, gz, Running(sys.stderr), steps) as (trace, run):
            say(f"profile: ran under torch.profiler in {run.seconds:.1f} s (profiled range "
                f"{format_time(run.range_seconds)}, trace {format_bytes(run.trace_bytes)}, torch {run.torch})")
            if save_trace is not None:
                keep(save_trace, trace.read_bytes())
                say(f"wrote {save_trace}")
            doc, notes = trace_document.import_traces([trace], spec_name, group_by, scope=scope)
    except OSError as exc:
        raise BackendUnavailable(f"cannot run {prog.python}: {exc.strerror or exc}",
                                 fix="give the program's Python by its path: python3 SCRIPT.py") from None
    except subprocess.TimeoutExpired:
        raise TimedOut(f"--timeout {timeout:g}: the program did not finish under torch.profiler in time; it and what "
                       "it started were ended and nothing was written",
                       fix="profile one step (--range start-stop or --range NAME) or give it longer") from None
    except ncu_program.ProgramFailed as exc:
        own = "\n".join(exc.stderr.splitlines()[-40:])
        if own:
            say(own)
        raise ProgramError(f"the program exited with status {exc.status} under torch.profiler; nothing was "
                           "written") from None
    kept = str(save_trace) if save_trace is not None else None
    for k in doc["kernels"]:
        k["kineto"]["file"] = kept  # not the temporary file, gone by now
    doc["source"].update(files=[kept] if kept else [], command=list(program), profile_seconds=run.seconds,
                         program_seconds=run.program_seconds, range_seconds=run.range_seconds,
                         range=range_, torch=run.torch, chosen_by=why, **TORCH_SOURCE)
    if steps > 1:
        doc["source"]["steps"] = steps
    doc["energy"] = step_energy(run.energy, range_, tokens)
    notes += check_import(doc, "the profile")  # before anything is written: what report and plot will accept
    energy = step_energy_line(doc["energy"])
    return Profiled(doc, [*notes, trace_document.summary_line(doc, "profiled", "with torch.profiler") +
                          f"; {TORCH_SOURCE['figures']}", *([energy] if energy else [])])


def profile_ncu(program: Sequence[str], spec_name: str | None, group_by: str, ranges: Sequence[str],
                scope: LaunchScope, ncu_path: str | None, save_csv: Path | None, timeout: float | None,
                chosen_by: str, keep: Keep, say: Say) -> Profiled:
    """The run under Nsight Compute, then its CSV imported as 'import ncu' would, grouped."""
    exe, why = ncu_profile.find_ncu(ncu_path)
    if exe is None:
        raise BackendUnavailable(str(why), fix="Nsight Compute comes with the CUDA toolkit (https://developer."
                                 "nvidia.com/nsight-compute); put its ncu on PATH or give --ncu-path PATH; a PyTorch "
                                 "program can be profiled without it: --with torch -- python3 SCRIPT.py")
    progress = ncu_program.ProgressLine(sys.stderr)
    try:
        with ncu_program.capture(exe, program, ncu_program.Scope(tuple(ranges), scope.kernel, scope.skip,
                                                                 scope.count), progress, timeout) as (csv_path, run):
            progress.done(run.launches, run.seconds)
            try:
                table = parse_csv_file(csv_path)
            except TooManyLaunches as exc:
                raise InputError(f"ncu's capture: {exc}", fix="profile fewer: --launch-count N, --kernel-name "
                                 "REGEX or --range; nothing was written") from None
            except NcuParseError as exc:
                raise BackendUnavailable(f"ncu's report read back as no table: {exc}") from None
            if save_csv is not None:
                keep(save_csv, csv_path.read_bytes())
                say(f"wrote {save_csv}")
    except OSError as exc:
        raise BackendUnavailable(f"cannot run {exe}: {exc.strerror or exc}") from None
    except subprocess.TimeoutExpired:
        if progress.interactive:
            sys.stderr.write("\n")
        raise TimedOut(f"--timeout {timeout:g}: the program did not finish under ncu in time; ncu, the program and "
                       "what it started were ended and nothing was written",
                       fix="profile one step (--range start-stop, --launch-count) or give it longer") from None
    except ncu_program.ProgramFailed as exc:
        if progress.interactive:
            sys.stderr.write("\n")
        own = ncu_program.program_stderr(exc.stderr)
        if own:
            say(own)
        raise ProgramError(f"the program exited with status {exc.status} under ncu; nothing was written") from None
    machine = ncu_importer.choose_spec(table, spec_name, SpecCatalog.bundled())
    doc, notes = ncu_importer.import_table(table, machine, "ncu: " + " ".join(program))
    doc["source"].update(command=list(program), profile_seconds=run.seconds, chosen_by=chosen_by, **NCU_SOURCE)
    if scope.given:
        doc["source"]["scope"] = scope.to_json()
    notes += add_groups(doc, group_by)
    notes += check_import(doc, "the profile")  # before anything is written: what report and plot will accept
    return Profiled(doc, [*notes, ncu_importer.summary_line(doc, "profiled") + f"; {NCU_SOURCE['figures']}"])
