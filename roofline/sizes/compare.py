"""Every model's prediction for a saved sweep, computed again from its results file: the first-principles model
(roofline.sizes.predict) and the fitted one (roofline.sizes.fitted) anchored on the kernel, and unanchored (λ the one-element
round trip, η = 1, the form the issue measured missing by −71.5 %). Pure: a parsed results document, the kernel's
descriptor and the spec in; rows out.

It exists so a sweep measured on a GPU can be re-judged on any machine (a CPU in CI, the next model) from the
measurements alone: nothing here needs the device, only the overheads the sweep recorded.
"""

from __future__ import annotations

from roofline.model.units import format_param

import copy
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from roofline.model.types import KernelDescriptor, MachineSpec
from roofline.model.geometry import launch_shapes
from roofline.sizes.predict import machine_figures, predict
from roofline.sizes.fitted import TARGET_ERROR, fit_model, measured_time, predict_time
from roofline.model.expr import compile_expr
from roofline.model.workload import evaluate
from roofline.model.units import format_bytes, format_time


@dataclass(frozen=True)
class Row:
    """One size of one sweep: its measurement and each model's prediction (errors = predicted / measured − 1)."""

    kernel: str
    param: str
    size: float
    bytes: float
    measured: float | None  # s; None when the size FAILED
    predicted: float  # s, first principles
    error: float | None
    regime: str
    fitted_error: float | None  # λ and η anchored on this kernel's smallest and largest sizes
    unfitted_error: float | None  # λ the one-element round trip, η = 1

    @property
    def within(self) -> bool:
        return self.error is not None and abs(self.error) <= TARGET_ERROR


def compare(doc: Mapping[str, Any], d: KernelDescriptor, source: MachineSpec) -> list[Row]:
    """Rows for every entry of the sweep in `doc` (a results document with a 'sweep' block) of kernel `d`, with the
    machine figures of `source` (the calibrated or datasheet spec) and the overheads the sweep measured."""
    s = doc["sweep"]
    overheads = s["overheads"]
    entries = [copy.deepcopy(e) for e in doc["kernels"] if e["name"] == s["kernel"]]
    figures = machine_figures(source, overheads)
    fits = {}
    for key, latency, eta in (("fitted", "auto", "auto"), ("unfitted", "measured", 1.0)):
        inputs = fit_model(entries, source, overheads, "additive", latency, eta)
        fits[key] = [predict_time(float(e["bytes"]), inputs.streaming_bandwidth, inputs.latency,
                                  inputs.launch_floor) for e in entries]
    rows = []
    for i, e in enumerate(entries):
        work = evaluate(d, {k: compile_expr(v) for k, v in e["params"].items() if k in d.params})
        total, _, regime = predict(launch_shapes(d, work, figures.sm_count), figures)
        measured = measured_time(e)
        rows.append(Row(
            kernel=s["kernel"], param=s["param"], size=e.get("size", e["params"].get(s["param"])),
            bytes=float(e["bytes"]), measured=measured, predicted=total,
            error=total / measured - 1 if measured else None, regime=regime,
            fitted_error=fits["fitted"][i] / measured - 1 if measured else None,
            unfitted_error=fits["unfitted"][i] / measured - 1 if measured else None))
    return rows


def table_lines(rows: Sequence[Row]) -> list[str]:
    """A plain-text table: one line per size, the three models' errors; then the worst error of each model."""
    def pct(x: float | None) -> str:
        return "–" if x is None else f"{x:+.1%}"

    def size(r: Row) -> str:
        n = int(r.size)
        return f"{r.param}=2^{n.bit_length() - 1}" if n >= 1024 and n & (n - 1) == 0 else f"{r.param}={format_param(r.size)}"

    lines = [f"{'kernel':18} {'size':>12} {'bytes':>10} {'measured':>10} {'predicted':>10} {'error':>8} "
             f"{'regime':17} {'fitted':>8} {'unfitted':>9}"]
    for r in rows:
        lines.append(f"{r.kernel:18} {size(r):>12} {format_bytes(r.bytes):>10} "
                     f"{format_time(r.measured) if r.measured else 'FAILED':>10} {format_time(r.predicted):>10} "
                     f"{pct(r.error):>8}{' ' if r.within or r.error is None else '!'} {r.regime:17} "
                     f"{pct(r.fitted_error):>8} {pct(r.unfitted_error):>9}")
    return lines


def worst(rows: Sequence[Row], field: str = "error") -> float | None:
    """The error of largest magnitude among the rows that have one."""
    values = [getattr(r, field) for r in rows if getattr(r, field) is not None]
    return max(values, key=abs) if values else None
