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
import signal
import subprocess
import tempfile
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator, Sequence, TextIO

from roofline.ncu.metrics import IMPORT_METRICS, metrics_argument
from roofline.errors import BackendUnavailable, InputError
from roofline.ncu.table import diagnose

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


NO_COUNTERS_FIX = ("profile without counters: 'roofline profile --with torch -- python3 SCRIPT.py' runs a PyTorch "
                   "program under torch.profiler (FLOPs and bytes from op shape models); or have an administrator "
                   "allow counter access (RmProfilingAdminOnly=0)")
PARAMS = Path("/proc/driver/nvidia/params")  # the loaded driver's settings, RmProfilingAdminOnly among them
CAP_SYS_ADMIN, CAP_PERFMON = 21, 38  # either lets a process read them (CAP_PERFMON from driver R565)


def counter_access(params: Path = PARAMS, status: Path = Path("/proc/self/status")) -> str | None:
    """Why this process cannot read the GPU performance counters, or None when it may (or this cannot tell): the
    driver's RmProfilingAdminOnly: 1 and neither CAP_SYS_ADMIN (root has it) nor CAP_PERFMON is what makes ncu fail
    with ERR_NVGPUCTRPERM. Two small file reads, no GPU call: cheap enough to choose a profiler with. Where the
    driver's file is not visible (some containers) it cannot tell, and ncu's own error says what to do."""
    try:
        text = params.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    m = re.search(r"^RmProfilingAdminOnly:\s*(\d+)", text, re.MULTILINE)
    if m is None or m.group(1) == "0":
        return None
    try:
        caps = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", status.read_text(encoding="utf-8", errors="replace"),
                         re.MULTILINE)
    except OSError:
        caps = None
    admin = (any(int(caps.group(1), 16) >> bit & 1 for bit in (CAP_SYS_ADMIN, CAP_PERFMON)) if caps
             else os.geteuid() == 0)
    if admin:
        return None
    return ("the NVIDIA driver allows GPU performance counters to administrators only (RmProfilingAdminOnly: 1) "
            "and this process has neither CAP_SYS_ADMIN nor CAP_PERFMON")


GRACE = 2.0  # seconds between SIGTERM and SIGKILL when a process group is ended
LEFTOVER = 2.0  # seconds ncu's output may stay open after ncu exited (a program's background child holds it)
KEEP_LINES = 200  # lines of each stream kept (the last ones): what messages quote, never the whole output
MAX_LINE = 8192  # characters of one line kept; a longer line is cut (a program may write gigabytes on one line)


class Terminated(BaseException):
    """SIGTERM reached `roofline profile`: raised in the main thread so that every `finally` runs (ncu's process
    group ended, its temporary report and any partial -o file removed). A BaseException, so that no `except
    Exception` on the way swallows it."""


@dataclass
class Run:
    """What ncu printed (bounded: the last KEEP_LINES lines of each stream, ncu's own ==ERROR==/==WARNING== lines)
    and how it ended."""

    returncode: int
    stdout: str
    stderr: str
    launches: int  # launches ncu said it profiled
    seconds: float
    lines: list[str] = field(default_factory=list)


class _Stream:
    """One of ncu's output streams, read as it comes in bytes and kept bounded: ==PROF== Profiling lines are
    counted, ncu's ==ERROR== and ==WARNING== lines and the last KEEP_LINES other lines are kept, each cut at
    MAX_LINE characters. A profiled program that writes gigabytes costs no memory."""

    def __init__(self) -> None:
        self.tail: deque[str] = deque(maxlen=KEEP_LINES)
        self.ncu: deque[str] = deque(maxlen=KEEP_LINES)
        self.launches = 0
        self._partial = bytearray()

    def feed(self, chunk: bytes) -> None:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            room = MAX_LINE - len(self._partial)
            if room > 0:
                self._partial += piece[:room]
            if end < 0:
                return
            self._line()
            start = end + 1

    def close(self) -> None:
        if self._partial:
            self._line()

    def _line(self) -> None:
        text = self._partial.decode("utf-8", "replace").rstrip("\r")
        self._partial.clear()
        stripped = text.lstrip()
        if _PROFILING.search(text):
            self.launches += 1
        elif stripped.startswith(("==ERROR==", "==WARNING==")):
            self.ncu.append(text)
        elif not stripped.startswith("==PROF=="):
            self.tail.append(text)

    def text(self) -> str:
        return "".join(line + "\n" for line in (*self.ncu, *self.tail))


def _pump(pipe: BinaryIO, stream: _Stream) -> None:
    try:
        while True:
            chunk = pipe.read1(1 << 16) if hasattr(pipe, "read1") else pipe.read(1 << 16)
            if not chunk:
                break
            stream.feed(chunk)
    except (OSError, ValueError):  # the pipe closed under us: what was read stands
        pass
    stream.close()


def end_group(proc: subprocess.Popen[bytes], grace: float = GRACE) -> None:
    """End the process group `proc` leads (ncu, the program and whatever the program started without leaving the
    group): SIGTERM, then SIGKILL to whatever is left after `grace` seconds. Idempotent; never raises."""
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        proc.poll()
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        proc.poll()  # reap the leader, or it stays in the group as a zombie
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.02)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass


def _left(began: float, timeout: float | None, clock: Callable[[], float]) -> float | None:
    return None if timeout is None else timeout - (clock() - began)


def run_profiled(cmd: Sequence[str], progress: Callable[[int, float], None] | None = None,
                 timeout: float | None = None, env: dict[str, str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> Run:
    """Run ncu in a process group of its own, reading both streams as they come (bounded, see _Stream);
    `progress(launches, elapsed)` about twice a second and at the end. Raises OSError when the executable cannot
    start, subprocess.TimeoutExpired past `timeout`. On a timeout, Ctrl-C, SIGTERM (Terminated) or any other
    way out, the whole group is ended: ncu, the program and any background child the program left holding ncu's
    output. Once ncu has exited, a group member still holding its output after LEFTOVER seconds is ended too."""
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            env=env if env is not None else dict(os.environ), start_new_session=True)
    out, err = _Stream(), _Stream()
    readers = [threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
               threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True)]
    for t in readers:
        t.start()
    began = clock()

    def expired() -> subprocess.TimeoutExpired:
        return subprocess.TimeoutExpired(list(cmd), timeout or 0.0)

    try:
        while True:
            left = _left(began, timeout, clock)
            if left is not None and left <= 0:
                raise expired()
            try:
                proc.wait(timeout=0.5 if left is None else max(0.01, min(0.5, left)))
                break
            except subprocess.TimeoutExpired:
                if progress is not None:
                    progress(out.launches + err.launches, clock() - began)
        for t in readers:  # ncu exited; its output closes unless something it started still holds it
            left = _left(began, timeout, clock)
            t.join(LEFTOVER if left is None else max(0.0, min(LEFTOVER, left)))
        if any(t.is_alive() for t in readers):
            end_group(proc)
            for t in readers:
                t.join(GRACE)
    except BaseException:
        end_group(proc)
        raise
    finally:
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None and not any(t.is_alive() for t in readers):
                pipe.close()
    seconds = clock() - began
    launches = out.launches + err.launches
    if progress is not None:
        progress(launches, seconds)
    return Run(proc.returncode, out.text(), err.text(), launches, seconds)


class ProgramFailed(Exception):
    """The profiled program exited with a non-zero status (ncu itself was fine)."""

    def __init__(self, status: int, stderr: str) -> None:
        super().__init__(f"the program exited with status {status}")
        self.status, self.stderr = status, stderr


def run_to_file(cmd: Sequence[str], stdout: Path, timeout: float | None,
                env: dict[str, str] | None = None) -> tuple[int, str]:
    """(status, the last lines of standard error) of a command whose standard output goes to the file `stdout`
    (ncu's CSV: never held in memory), in a process group of its own, ended on a timeout (TimeoutExpired) or any
    other way out."""
    with open(stdout, "wb") as sink:
        proc = subprocess.Popen(list(cmd), stdout=sink, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                start_new_session=True, env=env)
    err = _Stream()
    reader = threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True)
    reader.start()
    try:
        proc.wait(timeout=timeout)
        reader.join(LEFTOVER)
        if reader.is_alive():
            end_group(proc)
            reader.join(GRACE)
    except BaseException:
        end_group(proc)
        raise
    return proc.returncode, err.text()


@contextmanager
def capture(ncu_exe: str, program: Sequence[str], scope: Scope = Scope(),
            progress: Callable[[int, float], None] | None = None,
            timeout: float | None = None) -> Iterator[tuple[Path, Run]]:
    """Profile `program`; yields (the raw CSV page as a file, the run). The file and ncu's report live in a
    temporary folder removed when the block ends, however it ends. Raises ProgramFailed when the program fails,
    BackendUnavailable when ncu cannot profile here, InputError when it profiled nothing (scope too narrow),
    OSError when ncu cannot start and subprocess.TimeoutExpired past `timeout` (the profile and the read-back
    together)."""
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
            raise BackendUnavailable(problem, fix=NO_COUNTERS_FIX if "ERR_NVGPUCTRPERM" in problem else None)
        csv_path = Path(tmp) / "profile.csv"
        left = None if timeout is None else timeout - run.seconds
        if left is not None and left <= 0:
            raise subprocess.TimeoutExpired(list(program), timeout)
        status, stderr = run_to_file(import_command(ncu_exe, report), csv_path, left)
        if status != 0:
            with open(csv_path, encoding="utf-8", errors="replace") as f:
                head = f.read(1 << 16)
            why = diagnose(head + "\n" + stderr) or f"status {status}"
            raise BackendUnavailable(f"ncu could not read back its report: {why}")
        yield csv_path, run


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
