"""What a long measurement tells its caller as it goes: a step starts, a step finishes with its status.

The library only reports; the command decides how to show it (a spinner on a terminal, one plain line per finished
step in a CI log: roofline.cli.progress). Steps are named as a person reads them: 'copy', 'L2 bandwidth',
'vector_add n=4096'.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, name: str) -> None:
        """A step begins (shown while it runs)."""

    def finish(self, name: str, status: str) -> None:
        """The step ends with a status: OK, FAILED, SKIPPED."""


class Silent:
    """Reports nothing: the default for library callers and tests."""

    def start(self, name: str) -> None:
        return None

    def finish(self, name: str, status: str) -> None:
        return None


SILENT = Silent()
