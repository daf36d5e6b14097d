"""`roofline sweep` as text: the table of sizes (measured beside predicted) and the lines under it that state the
model's inputs with their sources, the verdict and what was measured."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from roofline.records import caveats
from roofline.sizes.predict import FIRST_PRINCIPLES
from roofline.render.tables.fit import droppable
from roofline.render.text import literal, styled
from roofline.model.units import format_bytes, format_rate, format_time
from roofline.records.files import params_text


def sweep_table(doc: dict[str, Any]) -> Any:
    s, device = doc["sweep"], doc["device"]
    if s.get("predicted"):
        return predicted_table(doc, f"Sweep of {s['kernel']} over {s['param']}",
                               lambda e: params_text({s["param"]: e.get("size", e["params"].get(s["param"]))}))
    where = (f"the HOST CPU with NumPy ({device['name']})" if doc["backend"] == "numpy"
             else f"{device['name']} (CuPy {device.get('cupy_version')}, CUDA {device.get('cuda_runtime')})")
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
    for e in doc["kernels"]:
        err = e.get("prediction_error")
        if e["status"] != "OK":
            err_text, measured = "–", styled(e["status"], "bold red")
        else:
            style = "green" if abs(err) <= s["summary"]["target"] else "bold red"
            err_text, measured = styled(f"{err:+.1%}", style), format_time(e["time_median"])
        table.add_row(literal(params_text({s["param"]: e.get("size", e["params"].get(s["param"]))})),
                      format_bytes(e["bytes"]), measured, format_time(e["predicted_time"]), err_text,
                      format_rate(e.get("achieved_bandwidth")), e["prediction"]["regime"],
                      str(e.get("buffer_sets", 1)))
    return droppable(table, "sets", "bytes", "achieved BW")


def predicted_table(doc: dict[str, Any], what: str, label: Any = None) -> Any:
    """The table of a prediction without a GPU (`--predict`): each entry's predicted time, regime and the terms
    behind it; no measured column, because nothing was measured."""
    m = (doc.get("sweep") or doc.get("prediction") or {})["model"]
    title = (f"{what} on {doc['device']['name']}: first-principles model, L {format_time(m['launch_floor'])}, "
             f"λk {format_time(m['round_trip'])}, BW {format_rate(m['bandwidth'])}")
    table = Table(title=literal(title), title_justify="left")
    for col in ("kernel", "size", "bytes", "predicted", "regime", "launches", "transfer", "windows", "SMs",
                "streams at"):
        table.add_column(col, justify="left" if col in ("kernel", "size", "regime") else "right")
    for e in doc["kernels"]:
        p = e["prediction"]
        size = label(e) if label is not None else params_text(e["params"])
        active = p.get("active_sms")
        table.add_row(literal(e["name"]), literal(size), format_bytes(e["bytes"]), format_time(e["predicted_time"]),
                      p["regime"], str(len(p.get("launches") or [])), format_time(p["transfer"]),
                      str(p["windows"]), "–" if active is None else f"{active:.0f}",
                      format_rate(p.get("stream_bandwidth")))
    return droppable(table, "launches", "windows", "transfer", "bytes")


def prediction_lines(m: dict[str, Any]) -> list[str]:
    """Where each machine figure of a prediction came from, the assumed ones first and named as such."""
    lines = [f"assumed (not measured) - {a}" for a in m.get("assumed") or ()]
    lines += _first_principles_lines(m)
    if not m.get("sm_curve"):
        lines.append(f"  fewer blocks than SMs: {m.get('sm_curve_source')}")
    lines.append(f"  L2: {m.get('l2_source')}")
    return lines


def explanation(doc: dict[str, Any]) -> list[str]:
    """Lines for standard error under the table: the model's inputs and sources, the verdict, what was measured."""
    s = doc["sweep"]
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
    for e in doc["kernels"]:
        if e["status"] != "OK":
            lines.append(f"FAILED {s['param']}={e.get('size')}: {e.get('error')}")
        for w in e.get("warnings") or []:
            lines.append(f"warning {s['param']}={e.get('size')}: {caveats.line(w)}")
    lines.append(s["measurement"])
    if doc["backend"] == "numpy":
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
