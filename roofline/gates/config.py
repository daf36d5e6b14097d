"""Gate thresholds: from command-line options or a YAML gates file, validated, per kernel.

The gates file (YAML):
  schema_version: 1          # optional
  default:                   # for every kernel
    fail_below: 0.7          # or "70%"
    max_regression: 0.05     # or "5%"
    max_unmodelled: 0.05     # a grouped profile's program: at most this share of GPU time without a model
                             # (default block only; report --max-unmodelled replaces it; 5% when neither says)
  kernels:                   # per kernel name; overrides the default, key by key
    sum: {fail_below: 0.5}
    matmul_naive: {fail_below: null}   # null switches a gate off for this kernel
Command-line --fail-below/--max-regression replace the file's default; per-kernel entries still win.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from roofline.errors import InputError, closest
from roofline.model.units import parse_number, format_limit
from roofline.load.yamlio import read_yaml_mapping
from roofline.model.counts import counted

GATES_SCHEMA_VERSION = 1
_GATE_KEYS = ("fail_below", "max_regression")
_PROGRAM_KEYS = ("max_unmodelled",)  # gates of a whole program: the default block only


def parse_fraction(value: Any, what: str) -> float:
    """0.7, '0.7' or '70%' → 0.7; refuses anything outside (0, 1] with a message naming `what` (5 is not 500 %)."""
    if isinstance(value, bool):
        raise InputError(f"{what}: expected a fraction like 0.7 or 70%, got {value!r:.40}")
    try:
        if isinstance(value, str) and value.strip().endswith("%"):
            number = parse_number(value.strip()[:-1]) / 100.0
        elif isinstance(value, str):
            number = parse_number(value)
        else:
            number = float(value)
    except (TypeError, ValueError, OverflowError):  # UnitError is a ValueError
        raise InputError(f"{what}: expected a fraction like 0.7 or 70%, got {value!r:.40}") from None
    if not 0 < number <= 1:
        raise InputError(f"{what}: expected a fraction in (0, 1] like 0.7 or 70%, got {value!r:.40}")
    return number


@dataclass(frozen=True)
class Thresholds:
    fail_below: float | None = None
    max_regression: float | None = None


@dataclass(frozen=True)
class GateConfig:
    default: Thresholds = Thresholds()
    kernels: Mapping[str, Mapping[str, float | None]] = field(default_factory=dict)
    source: str | None = None
    allow_unknown_ceiling: bool = False  # a fail_below gate on a kernel with no ceiling passes instead of failing
    strict_model: bool = False  # a verified kernel above 102 % of its ceiling fails (the model under-counts)
    regression_test: str = "ci"  # "ci": slower beyond the limit AND the medians' intervals apart; "median": the first
    # (--min-energy-fraction) a verified kernel whose measured energy is above its energy ceiling by more than this
    # allows (min energy / measured energy below it) fails; roofline.gates.report.energy_gate
    min_energy_fraction: float | None = None
    # (max_unmodelled in the default block) a grouped profile's program fails when more than this share of its GPU
    # time has no model; None: report's default (roofline.records.coverage.MAX_UNMODELLED)
    max_unmodelled: float | None = None

    def check_names(self, names: set[str]) -> None:
        """Per-kernel entries must name kernels in the results: a misspelt name would switch nothing on or off."""
        unknown = sorted(k for k in self.kernels if k not in names)
        if unknown:
            where = f"{self.source}: kernels" if self.source else "gates: kernels"
            raise InputError(f"{where}: {', '.join(repr(u) for u in unknown[:5])} "
                             f"{'is' if len(unknown) == 1 else 'are'} not in the results{closest(unknown[0], names)}; "
                             f"the results hold: {', '.join(sorted(names)[:8])}" + (" …" if len(names) > 8 else ""))

    def for_kernel(self, name: str) -> Thresholds:
        override = self.kernels.get(name, {})
        return Thresholds(
            fail_below=override.get("fail_below", self.default.fail_below),
            max_regression=override.get("max_regression", self.default.max_regression),
        )

    def with_options(self, fail_below: float | None, max_regression: float | None) -> "GateConfig":
        default = self.default
        if fail_below is not None:
            default = replace(default, fail_below=fail_below)
        if max_regression is not None:
            default = replace(default, max_regression=max_regression)
        return replace(self, default=default)

    def describe(self) -> str:
        parts = ["unverified kernels fail"]
        if self.strict_model:
            parts.append("above 102% of ceiling fails (model error)")
        if self.default.fail_below is not None:
            parts.append(f"below {format_limit(self.default.fail_below)} of ceiling fails")
        if self.default.max_regression is not None:
            parts.append(f"more than {format_limit(self.default.max_regression)} slower than baseline fails")
        if self.min_energy_fraction is not None:
            parts.append(f"below {format_limit(self.min_energy_fraction)} of the energy ceiling fails")
        if self.max_unmodelled is not None:
            parts.append(f"a grouped profile's program with more than {format_limit(self.max_unmodelled)} of its GPU time "
                         "unmodelled fails")
        if self.kernels:
            parts.append(counted(len(self.kernels), "per-kernel override"))
        return "; ".join(parts)


def gates_from_mapping(data: Any, source: str = "<gates>") -> GateConfig:
    """A GateConfig from the parsed gates YAML, with errors naming the file and field."""
    if not isinstance(data, dict):
        raise InputError(f"{source}: expected a mapping with 'default' and/or 'kernels'")
    for key in data:
        if key not in ("schema_version", "default", "kernels"):
            raise InputError(f"{source}: {key}: unknown key; known keys: schema_version, default, kernels")
    version = data.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise InputError(f"{source}: schema_version: expected a whole number from 1, got {version!r}")
    if version > GATES_SCHEMA_VERSION:
        raise InputError(f"{source}: schema_version: is {version}, newer than this roofline reads "
                         f"({GATES_SCHEMA_VERSION}): upgrade roofline")

    def thresholds(raw: Any, where: str) -> dict[str, float | None]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise InputError(f"{source}: {where}: expected a mapping with fail_below and/or max_regression")
        out: dict[str, float | None] = {}
        known = _GATE_KEYS + (_PROGRAM_KEYS if where == "default" else ())
        for key, value in raw.items():
            if key not in known:
                extra = (f" ({', '.join(_PROGRAM_KEYS)} gates a whole program: give it under default)"
                         if key in _PROGRAM_KEYS else "")
                raise InputError(f"{source}: {where}.{key}: unknown gate; known gates: {', '.join(known)}{extra}")
            out[key] = None if value is None else parse_fraction(value, f"{source}: {where}.{key}")
        return out

    default = thresholds(data.get("default"), "default")
    kernels_raw = data.get("kernels") or {}
    if not isinstance(kernels_raw, dict):
        raise InputError(f"{source}: kernels: expected a mapping of kernel name to gates")
    kernels = {str(name): thresholds(raw, f"kernels.{name}") for name, raw in kernels_raw.items()}
    return GateConfig(Thresholds(default.get("fail_below"), default.get("max_regression")), kernels, source,
                      max_unmodelled=default.get("max_unmodelled"))


def load_gates(path: Path) -> GateConfig:
    return gates_from_mapping(read_yaml_mapping(Path(path)), str(path))
