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
