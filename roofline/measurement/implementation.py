"""Loading a kernel's implementation module (NAME.py next to its descriptor), over its family module when the
descriptor names one, and checking its interface."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Mapping

import numpy as np

from roofline.errors import InputError
from roofline.kernelapi import import_file
from roofline.model.types import KernelDescriptor
from roofline.model.workload import resolve_params

INTERFACE_VERSION = 1
_REQUIRED = ("inputs", "outputs", "reference")


class VariantModule(ModuleType):
    """A variant module seen over its family: the variant's own names win, every other name comes from the family.

    Variants of one operation (three layer norms, two gemv batches) share inputs, reference and tolerance; this
    lets each variant file hold only what differs (its launcher). Names are looked up when used, not copied, so
    the view follows both modules as they are."""

    def __init__(self, variant: ModuleType, family: ModuleType) -> None:
        super().__init__(variant.__name__, variant.__doc__)
        self.__dict__["__variant__"] = variant
        self.__dict__["__family__"] = family

    def __getattr__(self, name: str) -> Any:
        for module in (self.__dict__["__variant__"], self.__dict__["__family__"]):
            try:
                return getattr(module, name)
            except AttributeError:
                pass
        raise AttributeError(f"neither the variant nor its family defines {name!r}")


@dataclass(frozen=True)
class Implementation:
    """What the harness needs from NAME.py (docs/kernel-interface.md)."""

    path: Path
    module: ModuleType
    tolerance: Mapping[str, Any] = field(default_factory=dict)
    test_params: Mapping[str, Any] = field(default_factory=dict)

    def fn(self, name: str) -> Callable[..., Any] | None:
        value = getattr(self.module, name, None)
        return value if callable(value) else None


def _import(path: Path, key: str) -> ModuleType:
    try:
        return import_file(path)
    except Exception as exc:  # a user's file: report, don't crash
        raise InputError(f"{path}: importing the {key} failed: {type(exc).__name__}: {exc}") from None


def load_implementation(d: KernelDescriptor) -> Implementation:
    if d.implementation is None:
        raise InputError(f"{d.path}: kernel '{d.name}' has no implementation, so it can be analysed but not measured")
    path = d.implementation
    module = _import(path, "implementation")
    if d.family is not None and d.family != path:
        module = VariantModule(module, _import(d.family, "family"))
    where = f"{path} (with its family {d.family.name})" if d.family is not None and d.family != path else str(path)
    version = getattr(module, "INTERFACE", None)
    if version != INTERFACE_VERSION:
        raise InputError(
            f"{where}: INTERFACE: expected INTERFACE = {INTERFACE_VERSION} (see docs/kernel-interface.md), got {version!r}"
        )
    for name in _REQUIRED:
        if not callable(getattr(module, name, None)):
            raise InputError(f"{where}: {name}: the implementation must define a function {name}(...)")
    tolerance = getattr(module, "TOLERANCE", {}) or {}
    if not isinstance(tolerance, dict) or set(tolerance) - {"rtol", "atol"}:
        raise InputError(f"{where}: TOLERANCE: expected a dict with rtol and/or atol")
    test_params = getattr(module, "TEST_PARAMS", {}) or {}
    if not isinstance(test_params, dict):
        raise InputError(f"{where}: TEST_PARAMS: expected a dict of parameter name -> value")
    return Implementation(path=path, module=module, tolerance=tolerance,
                          test_params={**test_params, **_descriptor_test_params(d)})


def _descriptor_test_params(d: KernelDescriptor) -> dict[str, Any]:
    """The descriptor's test_params as numbers (they may use the parameters before them)."""
    if not d.test_params:
        return {}

    env = resolve_params(d, d.test_params)
    return {name: env[name] for name in d.test_params}


def numpy_dtype(d: KernelDescriptor) -> np.dtype:
    try:
        return np.dtype(d.dtype)
    except TypeError:
        raise InputError(f"{d.path}: dtype: NumPy has no dtype '{d.dtype}', so this kernel cannot be measured") from None


_ML_DTYPES = ("bfloat16", "float8_e4m3", "float8_e5m2")  # NumPy has them once the ml_dtypes package is imported


def host_dtype_problem(d: KernelDescriptor) -> str | None:
    """Why the host cannot make this kernel's arrays, or None. Inputs and the reference are NumPy arrays on every
    backend, so a dtype NumPy lacks here means the kernel cannot run here. Ask after importing the implementation:
    its `import ml_dtypes` is what gives NumPy bfloat16."""
    try:
        np.dtype(d.dtype)
    except TypeError:
        hint = " (the ml_dtypes package adds it: pip install ml_dtypes)" if d.dtype in _ML_DTYPES else ""
        return f"has dtype {d.dtype}, which NumPy cannot make here{hint}"
    return None
