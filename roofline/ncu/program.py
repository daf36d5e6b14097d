"""`roofline profile`: run a user's program under Nsight Compute with exactly the roofline metrics.

ncu replays every kernel launch once per metric pass, so a whole program is slow to profile; the scope options map
one to one onto ncu's (`--range NAME` -> `--nvtx-include NAME/`, `--range start-stop` -> `--profile-from-start
off`, `--kernel` -> `--kernel-name regex:`, `--launch-skip`, `--launch-count`). ncu's own output is long: while
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
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence, TextIO

from roofline.ncu.metrics import IMPORT_METRICS, metrics_argument

START_STOP = "start-stop"  # --range value: between cudaProfilerStart and cudaProfilerStop
_PROFILING = re.compile(r"==PROF==\s+Profiling\s")


@dataclass(frozen=True)
class Scope:
    """Which launches ncu profiles."""

    ranges: tuple[str, ...] = ()
    kernel: str | None = None
    launch_skip: int = 0
    launch_count: int | None = None


def profile_command(ncu_exe: str, program: Sequence[str], scope: Scope = Scope(),
                    metrics: Sequence[str] = IMPORT_METRICS) -> list[str]:
    """The ncu command line: the roofline metrics, NVTX stacks, raw CSV page in base units, clocks left alone."""
    cmd = [ncu_exe, "--metrics", metrics_argument(metrics), "--nvtx", "--csv", "--page", "raw",
           "--print-units", "base", "--clock-control", "none"]
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


def program_stderr(stderr: str, limit: int = 40) -> str:
    """The program's own standard error: ncu's ==PROF==/==WARNING== lines taken out, the last `limit` lines."""
    lines = [ln for ln in stderr.splitlines() if not ln.lstrip().startswith(("==PROF==", "==WARNING==", "==ERROR== The application returned"))]
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
