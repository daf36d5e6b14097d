"""Errors a user can act on. Each carries the process exit code the CLI contract promises."""

from __future__ import annotations

# Exit codes are a contract that CI pipelines rely on (README, "Exit codes").
EXIT_GATE_FAILED = 1
EXIT_INPUT = 2
EXIT_BACKEND = 3
EXIT_PROGRAM_FAILED = 4  # `roofline profile`: the profiled program failed (its own status is in the message)
EXIT_TIMED_OUT = 5  # `roofline profile --timeout`: the run did not finish in time
EXIT_INTERNAL = 101
EXIT_INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)
EXIT_TERMINATED = 143  # SIGTERM (128 + SIGTERM), handled by `roofline profile`: its processes ended, temp files gone


class RooflineError(Exception):
    """A problem the user can fix; printed as one line, never with a traceback."""

    exit_code = EXIT_INPUT

    def __init__(self, message: str, *, fix: str | None = None):
        """`message` says what is wrong (kept as `reason`); `fix`, when given, what to do, appended after '; '.
        A caller that wants to give its own fix reads `reason` instead of taking the message apart."""
        self.reason, self.fix = message, fix
        self.message = f"{message}; {fix}" if fix else message
        super().__init__(self.message)


class InputError(RooflineError):
    """Bad spec, descriptor, formula, option value or results file (exit 2)."""


class BackendUnavailable(RooflineError):
    """No CUDA device, no CuPy, or another missing measurement tool (exit 3)."""

    exit_code = EXIT_BACKEND


class GateFailed(RooflineError):
    """A CI gate did not hold (exit 1)."""

    exit_code = EXIT_GATE_FAILED


class ProgramFailed(RooflineError):
    """The program `roofline profile` ran failed (exit 4, whatever its own status: a program's 2 or 3 must not
    read as our input error or missing backend)."""

    exit_code = EXIT_PROGRAM_FAILED


class TimedOut(RooflineError):
    """`roofline profile --timeout` ran out (exit 5): ncu, the program and its children were ended."""

    exit_code = EXIT_TIMED_OUT


def at(source: object, field: str | None, message: str) -> InputError:
    """An InputError that names the file and the dotted field, the form every input message takes."""
    where = str(source)
    if field:
        where = f"{where}: {field}"
    return InputError(f"{where}: {message}")


def first_line(exc: BaseException, limit: int | None = None) -> str:
    """The first line of an exception's message (its type name when it has none), for one-line reports."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return line if limit is None else line[:limit]


def closest(word: str, choices: object) -> str:
    """' (did you mean X?)' for the nearest choice, or '' when nothing is close."""
    import difflib  # lazy: not needed by `roofline --help`, which imports this module (start-up)

    word = str(word)
    cutoff = 0.5 if len(word) <= 3 else 0.6  # 't5' -> 't4' scores 0.5; longer words need more in common
    match = difflib.get_close_matches(word, [str(c) for c in choices], n=1, cutoff=cutoff)
    return f" (did you mean '{match[0]}'?)" if match else ""
