"""`roofline profile`: run a user's program under Nsight Compute with exactly the roofline metrics.

ncu replays every kernel launch once per metric pass, so a whole program is slow to profile; the scope options map
one to one onto ncu's (`--range NAME` -> `--nvtx-include NAME/`, `--range start-stop` -> `--profile-from-start
off`, `--kernel-name` -> `--kernel-name regex:`, `--launch-skip`, `--launch-count`). ncu's own output is long: while
it runs, the `==PROF== Profiling "..." - N` lines are counted and shown as one progress figure.

Outcomes, decided from ncu's exit status and output (`classify`):
  table      the CSV page, parsed: import it
  program    the program failed (non-zero status, no profiler problem named): its status and standard error
  profiler   ncu could not profile (no counter access, library not loaded, nothing profiled): why
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence, TextIO

from roofline.ncu.metrics import IMPORT_METRICS, metrics_argument

START_STOP = "start-stop"  # --range value: between cudaProfilerStart and cudaProfilerStop
_PROFILING = re.compile(r"==PROF==\s+Profiling\s")
_APP_FAILED = re.compile(r"==ERROR==\s+The application returned an error code \((-?\d+)\)")


@dataclass(frozen=True)
class Scope:
    """Which launches ncu profiles."""

    ranges: tuple[str, ...] = ()
    kernel: str | None = None
    launch_skip: int = 0
    launch_count: int | None = None


def profile_command(ncu_exe: str, program: Sequence[str], report: str, scope: Scope = Scope(),
                    metrics: Sequence[str] = IMPORT_METRICS) -> list[str]:
    """The ncu run: the roofline metrics, NVTX stacks, clocks left alone, into the report file `report`
    (.ncu-rep). A report rather than --csv on standard output because only then does ncu print one ==PROF==
    Profiling line per launch, which is the progress shown while it runs."""
    cmd = [ncu_exe, "--metrics", metrics_argument(metrics), "--nvtx", "--clock-control", "none",
           "--export", report, "--force-overwrite"]
    for name in scope.ranges:
        if name == START_STOP:
            cmd += ["--profile-from-start", "off"]
        else:  # a push/pop range: NAME/ (ncu's syntax; domain@NAME/ for a named domain)
            cmd += ["--nvtx-include", name if name.endswith("/") else f"{name}/"]
    if scope.kernel:
        cmd += ["--kernel-name", f"regex:{scope.kernel}"]
    if scope.launch_skip:
        cmd += ["--launch-skip", str(scope.launch_skip)]
    if scope.launch_count is not None:
        cmd += ["--launch-count", str(scope.launch_count)]
    return cmd + list(program)


def import_command(ncu_exe: str, report: str) -> list[str]:
    """The report as the raw CSV page in base units, NVTX stacks included (what `roofline import ncu` reads).
    ncu refuses --nvtx with --import; the stacks recorded at profile time are printed without it."""
    return [ncu_exe, "--import", report, "--csv", "--page", "raw", "--print-units", "base"]


@dataclass
class Run:
    """What ncu printed and how it ended."""

    returncode: int
    stdout: str
    stderr: str
    launches: int  # launches ncu said it profiled
    seconds: float
    lines: list[str] = field(default_factory=list)


def run_profiled(cmd: Sequence[str], progress: Callable[[int, float], None] | None = None,
                 timeout: float | None = None, env: dict[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> Run:
    """Run ncu, reading both streams as they come; `progress(launches, elapsed)` about twice a second and at
    the end. Raises OSError when the executable cannot start, subprocess.TimeoutExpired past `timeout`."""
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            text=True, errors="replace", env=env if env is not None else dict(os.environ))
    out: list[str] = []
    err: list[str] = []
    count = [0]
    lock = threading.Lock()

    def pump(stream: object, sink: list[str]) -> None:
        for line in stream:  # type: ignore[attr-defined]
            if _PROFILING.search(line):
                with lock:
                    count[0] += 1
            sink.append(line)

    readers = [threading.Thread(target=pump, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=pump, args=(proc.stderr, err), daemon=True)]
    for t in readers:
        t.start()
    began = clock()
    try:
        while True:
            try:
                proc.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if timeout is not None and clock() - began > timeout:
                    proc.kill()
                    proc.wait()
                    raise subprocess.TimeoutExpired(list(cmd), timeout) from None
                if progress is not None:
                    progress(count[0], clock() - began)
    except KeyboardInterrupt:
        proc.kill()
        proc.wait()
        raise
    for t in readers:
        t.join()
    seconds = clock() - began
    if progress is not None:
        progress(count[0], seconds)
    return Run(proc.returncode, "".join(out), "".join(err), count[0], seconds)


class ProgramFailed(Exception):
    """The profiled program exited with a non-zero status (ncu itself was fine)."""

    def __init__(self, status: int, stderr: str) -> None:
        super().__init__(f"the program exited with status {status}")
        self.status, self.stderr = status, stderr


def capture(ncu_exe: str, program: Sequence[str], scope: Scope = Scope(),
            progress: Callable[[int, float], None] | None = None,
            timeout: float | None = None) -> tuple[str, Run]:
    """Profile `program` and return (the raw CSV page, the run). Raises ProgramFailed when the program fails,
    BackendUnavailable when ncu cannot profile here, InputError when it profiled nothing (scope too narrow),
    OSError when ncu cannot start and subprocess.TimeoutExpired past `timeout`."""
    from roofline.errors import BackendUnavailable, InputError
    from roofline.ncu.table import diagnose

    with tempfile.TemporaryDirectory(prefix="roofline-profile-") as tmp:
        report = str(Path(tmp) / "profile.ncu-rep")
        run = run_profiled(profile_command(ncu_exe, program, report, scope), progress, timeout)
        both = run.stdout + "\n" + run.stderr
        failed = _APP_FAILED.search(both)
        problem = diagnose(both)
        if run.returncode != 0 and (failed or problem is None):
            raise ProgramFailed(int(failed.group(1)) if failed else run.returncode, run.stderr)
        if not Path(report).is_file():
            if problem is None or "No kernels were profiled" in problem:
                hint = ("check --range, --kernel-name and --launch-skip" if scope != Scope() else
                        "does the program launch CUDA kernels?")
                raise InputError(f"{problem or 'ncu profiled no kernel launches'}; {hint}")
            raise BackendUnavailable(problem)
        imported = subprocess.run(import_command(ncu_exe, report), capture_output=True, text=True,
                                  errors="replace", timeout=timeout)
    if imported.returncode != 0:
        why = diagnose(imported.stdout + "\n" + imported.stderr) or f"status {imported.returncode}"
        raise BackendUnavailable(f"ncu could not read back its report: {why}")
    return imported.stdout, run


def program_stderr(stderr: str, limit: int = 40) -> str:
    """The program's own standard error: ncu's ==PROF==/==WARNING== lines taken out, the last `limit` lines."""
    own = ("==PROF==", "==WARNING==", "==ERROR== The application returned")
    lines = [ln for ln in stderr.splitlines() if not ln.lstrip().startswith(own)]
    return "\n".join(lines[-limit:])


class ProgressLine:
    """A live 'profile: 42 launches profiled, 12 s' on a terminal; off one, a plain line every `every` seconds
    when the count moved, and the last one at the end, so a CI log shows where a long run is."""

    def __init__(self, stream: TextIO, every: float = 10.0) -> None:
        self.stream, self.every = stream, every
        isatty = getattr(stream, "isatty", None)
        self.interactive = bool(isatty and isatty())
        self._printed_at: float | None = None
        self._printed_count = 0

    @staticmethod
    def _text(launches: int, elapsed: float, final: bool = False) -> str:
        noun = "launch" if launches == 1 else "launches"
        return f"profile: {launches} {noun} profiled " + (f"in {elapsed:.1f} s" if final else f"({elapsed:.0f} s)")

    def __call__(self, launches: int, elapsed: float) -> None:
        if self.interactive:
            self.stream.write("\r" + self._text(launches, elapsed) + "\x1b[K")
        elif launches != self._printed_count and (self._printed_at is None
                                                  or elapsed - self._printed_at >= self.every):
            self.stream.write(self._text(launches, elapsed) + "\n")
            self._printed_at, self._printed_count = elapsed, launches
        else:
            return
        self.stream.flush()

    def done(self, launches: int, elapsed: float) -> None:
        text = self._text(launches, elapsed, final=True)
        self.stream.write(("\r" + text + "\x1b[K\n") if self.interactive else text + "\n")
        self.stream.flush()
