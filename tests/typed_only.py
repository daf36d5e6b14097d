"""A results file whose parsed dict refuses every access: what tests/test_typed_gates.py and test_typed_render.py
hand a gate or a renderer to prove it reads only the typed form (issue 30)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, NoReturn

from roofline.records.files import ResultsFile


class Unreadable(dict):
    """A parsed document no reader may index: every access fails the test."""

    def _refuse(self, *_: Any, **__: Any) -> NoReturn:
        raise AssertionError("the results dict was indexed instead of the typed form")

    __getitem__ = get = __contains__ = __iter__ = keys = items = values = _refuse  # type: ignore[assignment]


def typed_only(results: ResultsFile) -> ResultsFile:
    """`results` with its dict replaced by an Unreadable one; its typed form untouched."""
    return replace(results, doc=Unreadable())
