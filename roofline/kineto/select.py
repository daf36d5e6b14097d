"""Which of a trace's launches a profile keeps: --kernel-name, --launch-skip and --launch-count, read as ncu reads them.

ncu profiles only kernel launches: those whose function name (no template arguments, no parameters: ncu's default
--kernel-name-base function) matches the regular expression anywhere (a search), the first N of them skipped and at
most M kept after that; copies and fills are never profiled. The PyTorch profiler records every launch, so the same
selection is made on the trace after the run, and a profile answers the same question whichever source made it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from roofline.errors import InputError
from roofline.kineto.reader import Trace
from roofline.ncu.importer import short_name


@dataclass(frozen=True)
class LaunchScope:
    """The launches a profile keeps; the default keeps every GPU event of the trace."""
    kernel: str | None = None  # a regular expression, searched in the function name
    skip: int = 0
    count: int | None = None

    @property
    def given(self) -> bool:
        return self.kernel is not None or self.skip > 0 or self.count is not None

    def to_json(self) -> dict[str, Any]:
        """What a results document's source records of the selection (its totals cover these launches alone)."""
        return {"kernel_name": self.kernel, "launch_skip": self.skip, "launch_count": self.count}

    def describe(self) -> str:
        """The options as a user gave them: "--kernel-name 'gemm' --launch-count 20"."""
        parts = [f"--kernel-name {self.kernel!r}"] if self.kernel is not None else []
        parts += [f"--launch-skip {self.skip}"] if self.skip else []
        parts += [f"--launch-count {self.count}"] if self.count is not None else []
        return " ".join(parts)


def kernel_pattern(text: str) -> re.Pattern[str]:
    """--kernel-name compiled, or an InputError that names the option and what is wrong with the expression."""
    try:
        return re.compile(text)
    except re.error as exc:
        raise InputError(f"--kernel-name: {text[:80]!r} is not a regular expression: {exc}") from None


def select(trace: Trace, scope: LaunchScope) -> Trace:
    """The trace with only the kernel launches `scope` keeps, in launch order (copies and fills dropped, as ncu never
    profiles them); the trace itself when nothing was asked."""
    if not scope.given:
        return trace
    pattern = kernel_pattern(scope.kernel) if scope.kernel is not None else None
    kernels = sorted((e for e in trace.gpu if e.kind == "kernel"
                      and (pattern is None or pattern.search(short_name(e.name, limit=10**6)))), key=lambda e: e.ts)
    end = None if scope.count is None else scope.skip + scope.count
    return dataclasses.replace(trace, gpu=kernels[scope.skip:end])
