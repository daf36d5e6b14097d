"""Errors a user can act on. Each carries the process exit code the CLI contract promises."""

from __future__ import annotations

import re
from typing import Callable
import copy

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


# ---- hints in the words of the caller ------------------------------------------------------------------------------
# The library's messages name command-line options (`--backend numpy`, `--spec`, `-p n=...`), as the CLI raises them.
# The Python API and the pytest plugin reword them at their boundary, so a hint names what exists where it is read:
# `backend="numpy"` for roofline.measure, `--roofline-backend numpy` for the plugin's user. One table, here.

DISTRIBUTION = "gpu-roofline"  # [project].name in pyproject.toml; `roofline` is the import package and the command


def install_extra(extra: str) -> str:
    """The install hint for an optional part: the extra of our distribution, installed from its checkout. Never
    the extra of 'roofline' from an index (another project's name on PyPI), nor of 'gpu-roofline' (not published
    there: pip would fail, or install whatever took the name)."""
    return f"pip install -e '.[{extra}]' in the {DISTRIBUTION} checkout"


# option -> the pattern of the values it takes in a message (a placeholder such as SPEC, or a literal)
OPTION_VALUES = {
    "--backend": r"auto|cupy|numpy",
    "--spec": r"[A-Z]+|auto|[\w.-]*\d[\w.-]*|[\w./-]+\.ya?ml",
    "--min-time": r"[\d.]+(?:e-?\d+)?|[A-Z]+",
    "--min-repeats": r"\d+|[A-Z]+",
    "--device": r"\d+|all|[A-Z]+",
    "--kernels": r"[A-Z]+|/[^\s:;,)]+|[\w./-]+\.ya?ml",
    "-p": r"[\w.]+=[^\s:;,)]+|[A-Z]+=[A-Z]+",
}
API_WORDS = {"--backend": "backend", "--spec": "spec", "--min-time": "min_time", "--min-repeats": "min_repeats",
             "--device": "device", "--kernels": "kernels", "-p": "params"}
_QUOTED_COMMAND = re.compile(r"'roofline [^']*'|`roofline [^`]*`|\"roofline [^\"]*\"")


def _keyword(name: str, value: str | None) -> str:
    if value is None:
        return f"{name}="
    if name == "params":
        key, _, given = value.partition("=")
        return f"params={{'{key}': {given}}}" if key.isupper() else f"params={{'{key}': '{given}'}}"
    if value.isupper() or re.fullmatch(r"[\d.]+(?:e-?\d+)?", value):
        return f"{name}={value}"
    return f'{name}="{value}"'


def in_api_words(text: str | None, words: dict[str, str] = API_WORDS) -> str | None:
    """`text` with each command-line option in `words` written as the keyword argument it is in the Python API
    (`--backend numpy` -> `backend="numpy"`, `-p n=4` -> `params={'n': '4'}`); a quoted command line
    ('roofline measure --spec h100') stays as it is: it is a command to run, true anywhere."""
    if not text:
        return text
    options = "|".join(re.escape(o) for o in sorted(words, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w-])({options})(?![\w-])(?:(:)|[ =](?!-)(\S+?)(?=[\s:;,)]|$))?")

    def one(match: re.Match[str]) -> str:
        option, colon, value = match.group(1), match.group(2), match.group(3)
        if value is not None and not re.fullmatch(OPTION_VALUES[option], value):
            return _keyword(words[option], None) + match.group(0)[len(option):]  # the next word is prose
        return _keyword(words[option], value) + ("..." + colon if colon else "")

    pieces, last = [], 0
    for quoted in _QUOTED_COMMAND.finditer(text):
        pieces += [pattern.sub(one, text[last:quoted.start()]), quoted.group(0)]
        last = quoted.end()
    return "".join(pieces + [pattern.sub(one, text[last:])])


def reworded(exc: RooflineError, say: Callable[[str | None], str | None]) -> RooflineError:
    """The same error (its type, its exit code) with its reason and fix passed through `say`."""
    new = copy.copy(exc)
    new.reason, new.fix = say(exc.reason) or "", say(exc.fix)
    new.message = f"{new.reason}; {new.fix}" if new.fix else new.reason
    new.args = (new.message,)
    return new
