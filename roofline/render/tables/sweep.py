"""`roofline sweep` as text: the table of sizes (measured beside predicted) and the lines under it that state the
model's inputs with their sources, the verdict and what was measured.

The entries are read typed (KernelResult, Prediction; issue 30). The sweep block's `model` (the size model's machine
figures and their sources, roofline.sizes MachineFigures.to_dict) and `summary` are shown as written: they are a
model object's figures, not results a gate reads."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence

from rich.table import Table

from roofline.records import caveats
from roofline.sizes.predict import FIRST_PRINCIPLES
from roofline.render.tables.fit import droppable
from roofline.render.text import literal, styled
from roofline.model.units import format_bytes, format_rate, format_time
from roofline.records.files import params_text
from roofline.records.document import KernelResult, ResultsDocument, Status, as_result


class _Sweep(NamedTuple):
    """What the sweep table reads of a document: its backend and device, the sweep (or prediction) block, and its
    entries typed."""

    backend: str | None
    device_name: str | None
    block: Mapping[str, Any]
    kernels: Sequence[KernelResult]


def _view(doc: ResultsDocument | Mapping[str, Any]) -> _Sweep:
    """The typed document as the table reads it. A dict is a producer's document (sweep, analyze --predict, one
    device's part of a several-GPU sweep) or one a test built with only the parts a table shows: read here, once."""
    if isinstance(doc, ResultsDocument):
        return _Sweep(doc.backend, doc.device_name, doc.size_model, doc.kernels)
    return _Sweep(doc.get("backend"), (doc.get("device") or {}).get("name"),
                  doc.get("sweep") or doc.get("prediction") or {}, [as_result(k) for k in doc.get("kernels") or ()])


def _cupy_device(doc: ResultsDocument | Mapping[str, Any]) -> str:
    if isinstance(doc, ResultsDocument):
        return f"{doc.device_name} (CuPy {doc.cupy_version}, CUDA {doc.cuda_runtime})"
    device = doc["device"]
    return f"{device['name']} (CuPy {device.get('cupy_version')}, CUDA {device.get('cuda_runtime')})"


def _size(s: Mapping[str, Any], e: KernelResult) -> str:
    """The swept parameter's value of an entry, as its row names it."""
    return params_text({s["param"]: e.size if e.size is not None else e.params.get(s["param"])})


def sweep_table(doc: ResultsDocument | Mapping[str, Any]) -> Any:
    view = _view(doc)
    s = view.block
    if s.get("predicted"):
        return predicted_table(doc, f"Sweep of {s['kernel']} over {s['param']}", lambda e: _size(s, e))
    where = (f"the HOST CPU with NumPy ({view.device_name})" if view.backend == "numpy" else _cupy_device(doc))
    m = s["model"]
    if m["model"] == FIRST_PRINCIPLES:
        figures = (f"L {format_time(m['launch_floor'])}, λk {format_time(m['round_trip'])}, "
                   f"BW {format_rate(m['bandwidth'])}")
    else:
        figures = (f"L {format_time(m['launch_floor'])}, λ {format_time(m['latency'])}, "
                   f"BW {format_rate(m['bandwidth'])} × η {m['efficiency']:.2f}")
    title = f"Sweep of {s['kernel']} over {s['param']} on {where}; model: {m['model']}, {figures}"
    table = Table(title=literal(title), title_justify="left")
    for col in ("size", "bytes", "measured", "predicted", "error", "achieved BW", "regime", "sets"):
        table.add_column(col, justify="left" if col in ("size", "regime") else "right")
    for e in view.kernels:
        err = e.prediction_error
        if e.status is not Status.OK:
            err_text, measured = "–", styled(e.status.value, "bold red")
        else:
            style = "green" if abs(err) <= s["summary"]["target"] else "bold red"
            err_text, measured = styled(f"{err:+.1%}", style), format_time(e.time_median)
        table.add_row(literal(_size(s, e)), format_bytes(e.bytes), measured, format_time(e.predicted_time), err_text,
                      format_rate(e.achieved_bandwidth), _regime(e), str(e.buffer_sets))
    return droppable(table, "sets", "bytes", "achieved BW")


def _regime(e: KernelResult) -> str:
    return e.prediction.regime if e.prediction is not None else "–"


def predicted_table(doc: ResultsDocument | Mapping[str, Any], what: str, label: Any = None) -> Any:
    """The table of a prediction without a GPU (`--predict`): each entry's predicted time, regime and the terms
    behind it; no measured column, because nothing was measured."""
    view = _view(doc)
    m = view.block["model"]
    title = (f"{what} on {view.device_name}: first-principles model, L {format_time(m['launch_floor'])}, "
             f"λk {format_time(m['round_trip'])}, BW {format_rate(m['bandwidth'])}")
    table = Table(title=literal(title), title_justify="left")
    for col in ("kernel", "size", "bytes", "predicted", "regime", "launches", "transfer", "windows", "SMs",
                "streams at"):
        table.add_column(col, justify="left" if col in ("kernel", "size", "regime") else "right")
    for e in view.kernels:
        p = e.prediction
        assert p is not None  # a predicted entry has its prediction block (roofline.sizes.whatif)
        size = label(e) if label is not None else params_text(e.params)
        active = p.active_sms
        table.add_row(literal(e.name), literal(size), format_bytes(e.bytes), format_time(e.predicted_time),
                      p.regime, str(p.launches), format_time(p.transfer), str(p.windows),
                      "–" if active is None else f"{active:.0f}", format_rate(p.stream_bandwidth))
    return droppable(table, "launches", "windows", "transfer", "bytes")


def prediction_lines(m: dict[str, Any]) -> list[str]:
    """Where each machine figure of a prediction came from, the assumed ones first and named as such."""
    lines = [f"assumed (not measured) - {a}" for a in m.get("assumed") or ()]
    lines += _first_principles_lines(m)
    if not m.get("sm_curve"):
        lines.append(f"  fewer blocks than SMs: {m.get('sm_curve_source')}")
    lines.append(f"  L2: {m.get('l2_source')}")
    if m.get("accuracy"):
        lines.append(str(m["accuracy"]))
    return lines


def explanation(doc: ResultsDocument | Mapping[str, Any]) -> list[str]:
    """Lines for standard error under the table: the model's inputs and sources, the verdict, what was measured."""
    view = _view(doc)
    s = view.block
    m, summ = s["model"], s["summary"]
    if s.get("predicted"):
        return [*prediction_lines(m), s["measurement"]]
    lines = []
    failed_floor = s.get("overheads", {}).get("launch_floor_error")
    if failed_floor:
        lines.append(f"warning: measuring the launch floor failed ({failed_floor}); the model uses 0 for it and the "
                     "spec's latency")
    lines += _first_principles_lines(m) if m["model"] == FIRST_PRINCIPLES else [
        f"model: t = {'L + λ + B/(η·BW)' if m['model'] == 'additive' else 'max(L, λ + B/(η·BW))'}",
        f"  L  = {format_time(m['launch_floor'])}: {m['launch_floor_source']}",
        f"  λ  = {format_time(m['latency'])}: {m['latency_source']}",
        f"  BW = {format_rate(m['bandwidth'])}: {m['bandwidth_source']}",
        f"  η  = {m['efficiency']:.3f}: {m['efficiency_source']}",
        f"  Little's Law: {format_rate(m['bandwidth'])} × {format_time(m['memory_latency'])} "
        f"({m['memory_latency_source']}) = {format_bytes(m['bytes_in_flight'])} in flight",
    ]
    if summ["worst_error"] is not None:
        lines.append(f"prediction within {summ['target']:.0%} at {summ['within_target']} of {summ['sizes']} sizes; "
                     f"worst {summ['worst_error']:+.1%} at {format_bytes(summ['worst_bytes'])}")
    if summ.get("simple_worst_error") is not None:
        lines.append(f"simple model max(L, λ_spec + B/BW) worst error: {summ['simple_worst_error']:+.1%}")
    for e in view.kernels:
        if e.status is not Status.OK:
            lines.append(f"FAILED {s['param']}={e.size}: {e.error}")
        for w in e.warnings:
            lines.append(f"warning {s['param']}={e.size}: {caveats.line(w)}")
    lines.append(s["measurement"])
    if view.backend == "numpy":
        lines.append("note: these times are the HOST CPU running NumPy; the GPU model's terms do not describe it")
    return lines


def _first_principles_lines(m: dict[str, Any]) -> list[str]:
    resident = m.get("resident_threads")
    return [
        "model: t = Σ over launches of L + max(λk + B/BW' + r·R, ceil(B/F)·(λk + r·R)), F = min(threads, resident) × "
        "bytes per thread, r the launch's block reductions, BW' the active SMs' (fewer blocks than SMs) or the L2's "
        "(a pass re-reading what L2 holds) or BW; nothing fitted on the kernel",
        f"  L  = {format_time(m['launch_floor'])}: {m['launch_floor_source']}",
        f"  λk = {format_time(m['round_trip'])}: {m['round_trip_source']}",
        f"  R  = {format_time(m.get('reduction') or 0.0)}: {m.get('reduction_source') or 'not measured: 0'}",
        f"  BW = {format_rate(m['bandwidth'])}: {m['bandwidth_source']}",
        f"  resident threads = {resident if resident else 'not capped'}: {m['resident_source']}",
        f"  Little's Law: streaming at BW needs BW × λk = {format_bytes(m['bandwidth'] * m['round_trip'])} in "
        "flight; a launch with less is concurrency-bound",
        *([f"  fewer blocks than SMs: {m['sm_curve_source']}"] if m.get("sm_curve") else []),
        *([f"  block dispatch = {format_time(m['block_interval'])} per block per SM: {m['block_interval_source']}"]
          if m.get("block_interval") else []),
    ]
