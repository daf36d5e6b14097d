"""Loading a kernel's implementation module (NAME.py next to its descriptor) and checking its interface."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping

import numpy as np

from roofline.errors import InputError
from roofline.kernelapi import import_file
from roofline.model import KernelDescriptor

INTERFACE_VERSION = 1
_REQUIRED = ("inputs", "outputs", "reference")


@dataclass(frozen=True)
class Implementation:
    """What the harness needs from NAME.py (docs/kernel-interface.md)."""

    path: Path
    module: ModuleType
    tolerance: Mapping[str, Any] = field(default_factory=dict)
    test_params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def has_cupy(self) -> bool:
        return callable(getattr(self.module, "cupy", None))

    def fn(self, name: str) -> Callable[..., Any] | None:
        value = getattr(self.module, name, None)
        return value if callable(value) else None


def load_implementation(d: KernelDescriptor) -> Implementation:
    if d.implementation is None:
        raise InputError(f"{d.path}: kernel '{d.name}' has no implementation, so it can be analysed but not measured")
    path = d.implementation
    try:
        module = import_file(path)
    except Exception as exc:  # a user's file: report, don't crash
        raise InputError(f"{path}: importing the implementation failed: {type(exc).__name__}: {exc}") from None
    version = getattr(module, "INTERFACE", None)
    if version != INTERFACE_VERSION:
        raise InputError(
            f"{path}: INTERFACE: expected INTERFACE = {INTERFACE_VERSION} (see docs/kernel-interface.md), got {version!r}"
        )
    for name in _REQUIRED:
        if not callable(getattr(module, name, None)):
            raise InputError(f"{path}: {name}: the implementation must define a function {name}(...)")
    tolerance = getattr(module, "TOLERANCE", {}) or {}
    if not isinstance(tolerance, dict) or set(tolerance) - {"rtol", "atol"}:
        raise InputError(f"{path}: TOLERANCE: expected a dict with rtol and/or atol")
    test_params = getattr(module, "TEST_PARAMS", {}) or {}
    return Implementation(path=path, module=module, tolerance=tolerance, test_params=test_params)


def numpy_dtype(d: KernelDescriptor) -> np.dtype:
    try:
        return np.dtype(d.dtype)
    except TypeError:
        raise InputError(f"{d.path}: dtype: NumPy has no dtype '{d.dtype}', so this kernel cannot be measured") from None
