"""The one place a rich Console is made for output people read, so every table, spinner and bar agrees on colour.

Colour (and the spinner's and bars' cursor codes) only on a terminal that wants it:

  --color always, FORCE_COLOR=1    colour, even into a pipe or a log
  --color never                    none
  NO_COLOR (any non-empty value)   none (no-color.org; rich alone drops the colours but keeps bold)
  TERM=dumb                        none
  under an MPI launcher            none: Open MPI forwards each rank's output through a pseudo-terminal, so
                                   `mpirun ... > log` looked like a terminal and filled the log with escape codes
                                   (OMPI_COMM_WORLD_RANK/SIZE; PMI_RANK, PMIX_RANK for MPICH and PMIx; SLURM_PROCID
                                   under srun)
  otherwise                        colour when the stream is a terminal

An explicit --color wins over the environment, FORCE_COLOR over the rest.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Mapping, TextIO

from roofline.fleet.launch import LAUNCHER_VARIABLES as MPI_RANK_VARIABLES, under_launcher

COLOR_CHOICES = ("auto", "always", "never")


def colour(choice: str | None = None, environ: Mapping[str, str] | None = None) -> bool | None:
    """True: colour whatever the stream; False: none; None: colour only when the stream is a terminal."""
    env = os.environ if environ is None else environ
    if choice == "always":
        return True
    if choice == "never":
        return False
    if env.get("FORCE_COLOR"):
        return True
    if env.get("NO_COLOR") or env.get("TERM") == "dumb" or under_launcher(env):
        return False
    return None


def interactive(stream: Any, choice: str | None = None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether a spinner or a live bar (cursor codes, carriage returns) may be drawn on `stream`: a terminal, and
    not one of the cases above that want no colour (a dumb terminal, a launcher's pseudo-terminal)."""
    isatty = getattr(stream, "isatty", None)
    try:
        tty = bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False
    return tty and colour(choice, environ) is not False


def make_console(file: TextIO | None = None, *, stderr: bool = False, color: str | None = None,
                 **options: Any) -> Any:
    """A rich Console on `file` (standard output, or standard error with stderr=True) with the colour decided
    above; `options` go to rich as they are (markup, emoji, width, ...). Explicit color_system=None in `options`
    (a file written with -o) is never overridden."""
    # lazy: not needed by `roofline analyze --format json`, which imports this module (start-up)
    from rich.console import Console

    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    wanted = colour(color)
    if wanted is False:
        options.update(color_system=None, no_color=True)
    elif wanted is True and "color_system" not in options:
        options.setdefault("force_terminal", True)
    return Console(file=stream, **options)


def stderr_width(stream: Any = None, environ: Mapping[str, str] | None = None) -> int | None:
    """The width notes, warnings and errors wrap to on standard error: $COLUMNS, else the terminal's width; None
    (one line each, as written) when the stream is not a terminal: a CI log or a file is searched with grep and
    shown by a viewer that wraps for itself, and a line broken in two there no longer matches."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        tty = bool(isatty and isatty())
    except ValueError:  # a closed stream
        return None
    if not tty:
        return None
    env = os.environ if environ is None else environ
    columns = env.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(stream.fileno()).columns or None
    except (OSError, ValueError, AttributeError):
        return None


def wrap_message(text: str, width: int | None) -> str:
    """Each line of `text` wrapped to `width` at its spaces, continued with a two-space indent under its own
    indent; a word (an identifier, a path, a number with its unit's separator) is never broken, even when it alone
    is wider than `width`. None: as it is."""
    if width is None:
        return text
    # lazy: only a long message on a terminal needs it
    import textwrap

    out: list[str] = []
    for line in text.split("\n"):
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        out.extend(textwrap.wrap(line, width, initial_indent="", subsequent_indent=indent + "  ",
                                 break_long_words=False, break_on_hyphens=False, drop_whitespace=True)
                   or [line])
    return "\n".join(out)
