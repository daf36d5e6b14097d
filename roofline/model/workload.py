"""Evaluating a descriptor's formulas at concrete parameters. Pure: descriptor + overrides in, Workload out."""

from __future__ import annotations

import math
from typing import Mapping

from roofline.errors import InputError, at
from roofline.model.expr import Expr, FormulaError, Number
from roofline.model.units import format_param
from roofline.model.types import DEFAULT_ACCESS_BYTES, KernelDescriptor, Stage, Workload


def _value(d: KernelDescriptor, field: str, expr: Expr, env: Mapping[str, Number]) -> Number:
    try:
        return expr.evaluate(env)
    except FormulaError as exc:
        raise at(d.path or d.name, field, f"{exc} (in '{expr.source}')") from None


def _count(d: KernelDescriptor, field: str, expr: Expr, env: Mapping[str, Number]) -> float:
    value = _value(d, field, expr, env)
    if not math.isfinite(value) or value < 0:
        raise at(d.path or d.name, field, f"'{expr.source}' gives {value} with {_shown(env)}; it must be ≥ 0")
    return float(value)


def _shown(env: Mapping[str, Number]) -> str:
    return ", ".join(f"{k}={format_param(v)}" for k, v in env.items()) or "no parameters"


def resolve_params(d: KernelDescriptor, overrides: Mapping[str, Expr] | None = None) -> dict[str, Number]:
    """Defaults in file order; an override replaces a default and may use the parameters before it."""
    overrides = overrides or {}
    env: dict[str, Number] = {} if d.itemsize is None else {"itemsize": d.itemsize}
    for name, expr in d.params.items():
        chosen = overrides.get(name, expr)
        field = f"-p {name}" if name in overrides else f"params.{name}"
        if name in overrides:
            try:
                value = chosen.evaluate(env)
            except FormulaError as exc:
                raise InputError(f"{field}={chosen.source}: {exc}") from None
        else:
            value = _value(d, field, chosen, env)
        if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
            value = int(value)
        allowed = d.values.get(name)
        if allowed is not None and value not in allowed:
            shown = ", ".join(format_param(v) for v in allowed)
            raise at(d.path or d.name, f"values.{name}",
                     f"kernel '{d.name}' has no code for {name}={format_param(value)}; {name} must be one of {shown}")
        env[name] = value
    return env


def evaluate(d: KernelDescriptor, overrides: Mapping[str, Expr] | None = None) -> Workload:
    env = resolve_params(d, overrides)
    if d.stages:
        stages = tuple(
            Stage(s.name, _count(d, f"stages[{i}].flops", s.flops, env), _count(d, f"stages[{i}].bytes", s.bytes, env))
            for i, s in enumerate(d.stages)
        )
        flops = sum(s.flops for s in stages)
        bytes_ = sum(s.bytes for s in stages)
    else:
        stages = ()
        assert d.flops is not None and d.bytes is not None
        flops = _count(d, "flops", d.flops, env)
        bytes_ = _count(d, "bytes", d.bytes, env)
    if bytes_ <= 0:
        raise at(d.path or d.name, "bytes", f"evaluates to {bytes_:g}; a kernel moves at least one byte")
    access = float(d.itemsize or DEFAULT_ACCESS_BYTES)
    if d.access_bytes is not None:
        access = _count(d, "access_bytes", d.access_bytes, env)
        if access <= 0:
            raise at(d.path or d.name, "access_bytes", "must be positive")
    traffic = {level: _count(d, f"traffic.{level}", expr, env) for level, expr in d.traffic.items()}
    links = {link: _count(d, f"interconnect.{link}", expr, env) for link, expr in d.interconnect.items()}
    params = {k: v for k, v in env.items() if k != "itemsize"}
    return Workload(
        name=d.name, pattern=d.pattern, dtype=d.dtype, roof=d.roof, params=params,
        flops=flops, bytes=bytes_, access_bytes=access, stages=stages, traffic=traffic,
        declared_launches=d.geometry.launches, interconnect=links,
    )
