"""Progress of a long command on standard error: a spinner on a terminal; in a CI log (standard error not a
terminal), one plain line per step as it finishes, with its status and time, so the log shows where a run is.

`measure`, `calibrate` and `sweep` pass a Steps object (roofline.measurement.progress.Progress) to the library:

    with Steps("calibrate") as steps:
        figures = calibrate(backend, datasheet, plan, steps)
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, TextIO

from roofline.render.text import markup, clean
from roofline.render.console import interactive, make_console


class Steps:
    """start(name) / finish(name, status): 'sweep: m_add n=256 (1/4): OK, 0.05 s' per finished step off a terminal."""

    def __init__(self, command: str, stream: TextIO | None = None,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self.command, self.clock = command, clock
        self.stream = stream if stream is not None else sys.stderr
        self._started: dict[str, float] = {}
        self._status: Any = None

    @property
    def interactive(self) -> bool:
        return interactive(self.stream)  # a terminal that wants a spinner: not TERM=dumb, NO_COLOR, mpirun's pty

    def __enter__(self) -> "Steps":
        if self.interactive:
            self._status = make_console(self.stream).status(self.command, spinner="dots")
            self._status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)
            self._status = None

    def start(self, name: str) -> None:
        self._started[name] = self.clock()
        if self._status is not None:
            self._status.update(f"{self.command}: {markup(name)}")

    def finish(self, name: str, status: str) -> None:
        began = self._started.pop(name, None)
        seconds = self.clock() - began if began is not None else 0.0
        if not self.interactive:
            self.stream.write(f"{self.command}: {clean(name, newlines=False)}: {status}, {seconds:.2f} s\n")
            self.stream.flush()
