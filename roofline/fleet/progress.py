"""Rank 0's progress lines as the ranks report (pure: events and a clock in, lines out).

Up to PER_RANK_UP_TO ranks a line per rank ('fleet: rank 3 on gpu-node-1 (GPU 3) done; ranks done 4/16'). Past
that a line per rank is thousands of lines, so a counter: 'fleet: ranks done 2048/4096 (50%)', at most one line a
second and only when another 5 % are done (or 30 s passed with some progress, so a slow job still shows it moves);
the last rank always gives one. A failure is printed as it comes, once per distinct error (the ranks that fail the
same way are counted, not repeated: 4,096 ranks without CuPy say so once). ROOFLINE_FLEET_PROGRESS=ranks or count
chooses either way whatever the size.
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Mapping

PER_RANK_UP_TO = 16
VARIABLE = "ROOFLINE_FLEET_PROGRESS"
STYLES = ("auto", "ranks", "count")
EVERY_S = 1.0  # at most one counter line a second
STEP = 0.05  # and only when another 5 % of the ranks are done
QUIET_S = 30.0  # or this long has passed since the last line, with some progress


def progress_style(environ: Mapping[str, str] | None = None) -> tuple[str, str | None]:
    """(style, warning): ROOFLINE_FLEET_PROGRESS read leniently (a progress display is no reason to stop a job
    that every rank has started: an unknown value is 'auto', with a warning)."""
    env = os.environ if environ is None else environ
    value = env.get(VARIABLE, "").strip().lower() or "auto"
    if value in STYLES:
        return value, None
    return "auto", f"warning: {VARIABLE}={value[:40]!r} is not one of {', '.join(STYLES)}; using auto"


class FleetProgress:
    """Turns rank events (kind 'identity' or 'finished', the rank's outcome, how many have finished) into lines."""

    def __init__(self, size: int, style: str = "auto", clock: Callable[[], float] = time.monotonic):
        self.size, self.clock = size, clock
        self.per_rank = style == "ranks" or (style == "auto" and size <= PER_RANK_UP_TO)
        self.first: dict[str, int] = {}  # error text → the first rank that failed with it
        self.failed = 0
        self.shown, self.shown_at = 0, clock()  # the count on the last counter line, and when it was printed

    def event(self, kind: str, out: Any, finished: int) -> list[str]:
        if kind != "finished":
            return []
        error = None if out.state == "done" else str(out.error)
        repeat = error is not None and error in self.first
        if error is not None:
            self.failed += 1
            self.first.setdefault(error, out.rank)
        if self.per_rank:
            verdict = ("done" if error is None else f"FAILED (as rank {self.first[error]})" if repeat
                       else f"FAILED ({error})")
            return [f"fleet: {out.label()} {verdict}; ranks done {finished}/{self.size}"]
        lines = []
        if error is not None and not repeat:
            lines.append(f"fleet: {out.label()} FAILED ({error})" + self._count(finished))
            self._shown(finished)
        elif self._due(finished):
            lines.append("fleet:" + self._count(finished).lstrip(";"))
            self._shown(finished)
        return lines

    def _count(self, finished: int) -> str:
        failed = f", {self.failed} failed" if self.failed else ""
        return f"; ranks done {finished}/{self.size} ({100 * finished // max(self.size, 1)}%{failed})"

    def _due(self, finished: int) -> bool:
        if finished >= self.size:
            return finished > self.shown
        since = self.clock() - self.shown_at
        more = finished - self.shown
        return since >= EVERY_S and more > 0 and (more >= STEP * self.size or since >= QUIET_S)

    def _shown(self, finished: int) -> None:
        self.shown, self.shown_at = finished, self.clock()
