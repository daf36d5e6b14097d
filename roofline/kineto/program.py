"""`roofline profile --with torch`: run a Python program under roofline.kineto.capture and hand back its trace.

The program must be a Python script: `python3 script.py ARGS` (any `python`, `python3.11` or path to one, with
interpreter options such as -u or -X dev before the script) or `script.py ARGS` (its shebang's Python, else this
one). It runs as

    PYTHON [OPTIONS] -m roofline.kineto.capture --trace TMP --status TMP --range=R [--modules] -- script.py ARGS

in a process group of its own (roofline.ncu.program.run_profiled: bounded output, --timeout, Ctrl-C and SIGTERM end
the whole group), with a temporary folder holding the trace, the outcome and a link to this roofline package on
PYTHONPATH, so the program's Python needs torch but not roofline installed. The folder goes however the run ends.
The capture's outcome file, not its exit status, says what happened: the program's own status may be 2 or 3 too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence, TextIO

from roofline.errors import BackendUnavailable, InputError
from roofline.load import handoff
from roofline.load.inputs import input_chunks
from roofline.ncu.program import ProgramFailed, run_profiled
from roofline.render.console import interactive

WHOLE_RUN = "all"  # capture's --range for the whole run
START_STOP = "start-stop"
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?[a-z]?(\.exe)?", re.IGNORECASE)  # python, python3, python3.12, python3.13t
_VALUED = {"-W", "-X", "--check-hash-based-pycs"}  # interpreter options that take the next word


@dataclass(frozen=True)
class PythonProgram:
    """A Python program split into what runs it and what it is."""

    python: str  # the interpreter as given (or the script's shebang's); found on PATH by the OS
    options: tuple[str, ...]  # interpreter options before the script (-u, -X dev)
    script: str
    args: tuple[str, ...]


def _not_python(program: Sequence[str]) -> InputError:
    return InputError(f"--with torch runs a Python program ('python3 script.py ARGS' or 'script.py ARGS'); "
                      f"'{program[0]:.80}' is not one",
                      fix="profile it with --with ncu, or record a trace with torch.profiler and read it with "
                          "'roofline import torch TRACE'")


def _shebang_python(script: Path) -> list[str] | None:
    """The interpreter a script's '#!' line names when it is a Python (['/usr/bin/env', 'python3'] -> ['python3'])."""
    pieces = input_chunks(script, 1 << 30, "a Python script")  # a regular file only: a FIFO x.py never blocks
    try:
        first = next(pieces, b"").split(b"\n", 1)[0][:512]
    except InputError:
        return None  # named below (no such Python script)
    finally:
        pieces.close()
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if words and _PYTHON.fullmatch(Path(words[0]).name):
        return words[:1]
    return None


def runs_as_python(program: Sequence[str]) -> bool:
    """Whether --with torch can run the program (python_program accepts it): what `--with auto` asks before
    choosing torch; 'python -c CODE' and a missing script are left to ncu."""
    try:
        python_program(program)
    except InputError:
        return False
    return True


def python_program(program: Sequence[str], default_python: str = sys.executable) -> PythonProgram:
    """The program as a PythonProgram; InputError naming why when it is not a Python script this can run."""
    if not program:
        raise InputError("give the program to profile after --")
    first = program[0]
    if _PYTHON.fullmatch(Path(first).name):
        python, rest = first, list(program[1:])
        options: list[str] = []
        while rest and rest[0].startswith("-"):
            word = rest.pop(0)
            letters = word[1:] if not word.startswith("--") else ""
            if word in ("-m", "-c", "-") or (letters.isalpha() and not letters.startswith(("W", "X"))
                                              and ("m" in letters or "c" in letters)):
                raise InputError(f"--with torch runs a script file: '{first} {word}' is not one "
                                 "(give the script's path: python3 path/to/script.py ARGS)",
                                 fix="or profile it with --with ncu")
            if word.startswith("--") and word not in _VALUED:
                raise InputError(f"--with torch: the interpreter option '{word:.40}' is not supported; leave it out")
            options.append(word)
            if word in _VALUED:
                if not rest:
                    raise InputError(f"--with torch: '{first} {word}' needs a value")
                options.append(rest.pop(0))
        if not rest:
            raise InputError(f"--with torch runs a script file: '{' '.join(program):.80}' names none")
        script, args = rest[0], tuple(rest[1:])
    elif first.endswith(".py"):
        script, args, options = first, tuple(program[1:]), []
        python = (_shebang_python(Path(script)) or [default_python])[0]
    else:
        raise _not_python(program)
    if not Path(script).is_file():
        raise InputError(f"{script}: no such Python script" + (" (is it a file?)" if Path(script).exists() else ""))
    return PythonProgram(python, tuple(options), script, args)


def capture_range(ranges: Sequence[str]) -> str:
    """The capture's --range from profile's: none -> the whole run, 'start-stop', or one NVTX range NAME.
    InputError for what the capture cannot record (several ranges; a range named 'all')."""
    if not ranges:
        return WHOLE_RUN
    if len(ranges) > 1:
        raise InputError(f"--range: --with torch records one range, not {len(ranges)} "
                         f"({', '.join(r[:40] for r in ranges)})", fix="give one --range, or profile with --with ncu")
    name = ranges[0]
    if name == START_STOP:
        return START_STOP
    name = name[:-1] if name.endswith("/") else name  # ncu's NAME/ spelling of a push/pop range
    if not name or name == WHOLE_RUN:
        raise InputError(f"--range '{ranges[0]:.40}': --with torch cannot record an NVTX range by that name",
                         fix="leave --range out to profile the whole run")
    return name


def capture_command(prog: PythonProgram, trace: Path, status: Path, range_: str, modules: bool,
                    steps: int = 1) -> list[str]:
    """The capture's command line: the program's own interpreter and options, then the capture, then the script."""
    return [prog.python, *prog.options, "-m", "roofline.kineto.capture", "--trace", str(trace), "--status",
            str(status), f"--range={range_}", *([f"--steps={steps}"] if steps > 1 else []),
            *(["--modules"] if modules else []), "--", prog.script, *prog.args]


def _env(folder: Path) -> dict[str, str]:
    """This process's environment with a folder on PYTHONPATH holding only a link to this roofline package: the
    capture module is found in the program's Python, and nothing else of roofline's environment is put there."""
    package = Path(__file__).resolve().parents[1]
    link = folder / "path" / "roofline"
    link.parent.mkdir()
    try:
        os.symlink(package, link, target_is_directory=True)
    except OSError:
        shutil.copytree(package, link, ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(os.environ)
    env["PYTHONPATH"] = str(link.parent) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


@dataclass(frozen=True)
class TorchRun:
    """How the capture went: the program's and the profiled range's seconds, the trace's size, torch's version."""

    seconds: float  # the whole run, as timed here
    program_seconds: float
    range_seconds: float
    trace_bytes: int
    torch: str
    energy: dict[str, Any] | None = None  # the range's NVML energy ({joules, window, gpu, device} or {why})


class Running:
    """'profile: running under torch.profiler (12 s)' live on a terminal; off one, nothing until the end."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.interactive = interactive(stream)  # not on TERM=dumb, NO_COLOR or a launcher's pseudo-terminal

    def __call__(self, _launches: int, elapsed: float) -> None:
        if self.interactive:
            self.stream.write(f"\rprofile: running under torch.profiler ({elapsed:.0f} s)\x1b[K")
            self.stream.flush()

    def end(self) -> None:
        if self.interactive:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _outcome(path: Path) -> dict[str, Any] | None:
    try:
        data = handoff.read(path)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _what(range_: str) -> str:
    if range_ == START_STOP:
        return "torch.cuda.profiler.start()"
    return f"an NVTX range named '{range_}' (torch.cuda.nvtx.range_push)"


@contextmanager
def capture(prog: PythonProgram, range_: str = WHOLE_RUN, modules: bool = False, timeout: float | None = None,
            gzip_trace: bool = False, progress: Running | None = None, steps: int = 1
            ) -> Iterator[tuple[Path, TorchRun]]:
    """Run the program under the PyTorch profiler; yields (its trace, how it went). The trace lives in a temporary
    folder removed when the block ends, however it ends. Raises roofline.ncu.program.ProgramFailed when the program
    fails, InputError when it never reached its range, BackendUnavailable when its Python has no torch, torch sees
    no GPU or the capture could not run or write, OSError when the interpreter cannot start and
    subprocess.TimeoutExpired past `timeout`."""
    with tempfile.TemporaryDirectory(prefix="roofline-torch-") as tmp:
        folder = Path(tmp)
        trace = folder / ("trace.json.gz" if gzip_trace else "trace.json")
        status = folder / "outcome.json"
        began = time.monotonic()
        try:
            run = run_profiled(capture_command(prog, trace, status, range_, modules, steps), progress, timeout,
                               _env(folder))
        finally:
            if progress is not None:
                progress.end()
        seconds = time.monotonic() - began
        outcome = _outcome(status)
        if outcome is None:
            raise BackendUnavailable(f"{prog.python} could not run roofline's trace capture (status "
                                     f"{run.returncode}): {_last_line(run.stderr)}",
                                     fix="the program's Python must be 3.8 or newer; --with ncu needs no Python")
        state, code = outcome.get("outcome"), outcome.get("status")
        code = code if isinstance(code, int) else run.returncode
        if state == "no-torch":
            raise BackendUnavailable(f"{prog.python} cannot import torch ({outcome.get('why')})",
                                     fix="install PyTorch in the program's Python, or profile with --with ncu")
        if state == "running":  # the program ended the process itself: os._exit, a signal
            if run.returncode != 0:
                raise ProgramFailed(run.returncode, run.stderr)
            raise InputError("the program ended its Python process itself (os._exit?) before the trace could be "
                             "written; nothing was recorded",
                             fix="let the program return or call sys.exit(), or profile it with --with ncu")
        if code != 0:
            raise ProgramFailed(code, run.stderr)
        if state == "no-range":
            raise InputError(f"the program never reached {_what(range_)}; nothing was recorded",
                             fix="check --range (leave it out to profile the whole run)")
        if state != "traced" or not trace.is_file():
            raise BackendUnavailable(f"the PyTorch profiler wrote no trace: {outcome.get('why') or state}")
        if not outcome.get("cuda"):
            raise BackendUnavailable(f"torch {outcome.get('torch') or ''} in {prog.python} sees no CUDA device: the "
                                     "trace holds CPU ops only, nothing to put on a GPU roofline")
        yield trace, TorchRun(seconds, float(outcome.get("program_seconds") or 0.0),
                              float(outcome.get("range_seconds") or 0.0), int(outcome.get("trace_bytes") or 0),
                              str(outcome.get("torch") or ""),
                              outcome.get("energy") if isinstance(outcome.get("energy"), dict) else None)


def _last_line(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "no message"

