"""The table `roofline measure` prints after measuring: one row per kernel. It reads the typed results
(roofline.records.document: ResultsDocument, KernelResult, MeasuredEnergy), never the document's dict (issue 30)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rich.table import Table

from roofline.records import caveats
from roofline.records.document import KernelResult, ResultsDocument, Status, as_document, as_result
from roofline.render.tables.fit import droppable, fit
from roofline.render.text import literal, styled
from roofline.render.console import make_console
from roofline.records.energy import MIN_ENERGY_WINDOW, MeasuredEnergy
from roofline.model.units import format_flops, format_fraction, format_rate, format_si, format_small, format_time
from roofline.model.counts import counted


def _fraction(value: float | None) -> str:
    return "unknown" if value is None else format_fraction(value)


def _spread(k: KernelResult) -> str:
    if not k.time_min:
        return "–"
    return f"{k.time_min / k.time_median:.2f}–{k.time_max / k.time_median:.2f}×"


def results_table(doc: ResultsDocument | Mapping[str, Any]) -> Any:
    """The table under `measure`: a title naming the device and the spec, a row per kernel (and GPU). A producer's
    dict is taken in its typed form once (as_document)."""
    doc = as_document(doc)
    if doc.backend == "numpy":
        title = f"Measured on the HOST CPU with NumPy ({doc.device_name}), not a GPU"
    else:
        title = f"Measured on {doc.device_name} (CuPy {doc.cupy_version}, CUDA {doc.cuda_runtime})"
    if doc.machine:
        derived = " [derived from device properties]" if doc.spec_derived else ""
        title += f"; ceilings from spec {doc.machine_id}{derived}"
    else:
        title += "; no spec given, so the ceiling is unknown"
    return kernel_table(doc.kernels, title, unit=ran_on(doc))


def ran_on(doc: ResultsDocument | Mapping[str, Any]) -> str:
    """What one of the document's devices is, for a column header: 'CPU' for the NumPy backend (a host rank under
    mpirun, or `measure --backend numpy`), 'GPU' otherwise: a CPU rank's table is not headed GPU."""
    doc = as_document(doc)
    return "CPU" if doc.backend == "numpy" or doc.device_kind == "cpu" else "GPU"


def show(kernel: KernelResult) -> None:
    """Print one typed result as the row `roofline measure` prints: the API's Result.show(). rich is imported here,
    at the first print, so `import roofline` stays fast."""
    console = make_console(markup=False, emoji=False)
    table = kernel_table([kernel], kernel.name, unit="CPU" if kernel.measured_backend == "numpy" else "GPU")
    fit(table, console.width)  # a notebook or an 80-column terminal: numbers whole, less important columns out
    console.print(table)


def kernel_table(kernels: Sequence[KernelResult | Mapping[str, Any]], title: str, unit: str = "GPU") -> Any:
    """The rows of measured kernels under a title (the API's Result.show() prints one); `unit` heads the column
    of devices (several devices in one document: 'GPU', or 'CPU' for host ranks)."""
    rows = [as_result(k) for k in kernels]
    table = Table(title=literal(title), title_justify="left")
    per_gpu = any(k.device_index is not None for k in rows)  # measure --device all: one row per kernel and GPU
    if per_gpu:
        table.add_column(unit, justify="right")
    energy = any(k.energy_measured for k in rows)  # NVML read the energy: joules beside the seconds
    for col in ("kernel", "status", "time (median)", "spread min–max", "achieved BW", "achieved FLOP/s",
                "ceiling", "of ceiling", *(_ENERGY_COLUMNS if energy else ()), "timing"):
        table.add_column(col, justify="left" if col in ("kernel", "status", "timing") else "right")
    for k in rows:
        status = k.status.value
        style = "yellow" if k.status is Status.SKIPPED or (k.status is Status.OK and k.warnings) else (
            "green" if k.status is Status.OK else "bold red")
        table.add_row(
            *([literal(str("–" if k.device_index is None else k.device_index))] if per_gpu else []),
            literal(k.name),
            styled(status, style),
            format_time(k.time_median),
            _spread(k),
            format_rate(k.achieved_bandwidth),
            format_flops(k.achieved_flops),
            format_si(*k.ceiling),
            _fraction(k.fraction_of_ceiling) if k.status is Status.OK else "–",
            *(energy_cells(k.energy_measured) if energy else ()),
            literal(f"{k.timing or '–'}" + (f" ×{k.buffer_sets} sets" if k.buffer_sets > 1 else "")),
        )
    return droppable(table, "timing", "spread min–max", "FLOP/J", "power", "achieved FLOP/s", "ceiling",
                     "of energy ceiling", "achieved BW", "energy/run", whole=("kernel",))


_ENERGY_COLUMNS = ("energy/run", "power", "FLOP/J", "of energy ceiling")


def energy_cells(e: MeasuredEnergy | None) -> list[str]:
    """Joules per run (marked '~' where the window was short for NVML's counter), mean power, FLOP/J and the share
    of the energy ceiling (roofline.measurement.energy); dashes where NVML read no energy."""
    if not e:
        return ["–"] * len(_ENERGY_COLUMNS)
    mark = "~" if e.short_window else ""
    return [mark + format_small(e.joules_per_run, "J"), format_small(e.power_mean, "W"),
            format_si(e.flops_per_joule, "FLOP/J"), _fraction(e.fraction_of_energy_ceiling)]


def power_bound_line(m: Mapping[str, Any] | None) -> str | None:
    """A kernel that ran at the board's power limit (roofline.records.clockstate.power_measured), with its clock and
    its fraction of both ceilings; None for one that did not, or where nothing was recorded."""
    if not m or not m.get("power_bound"):
        return None
    clock = (f", SM clock {m['sm_clock'] / 1e6:.0f}" + (f" of {m['sm_clock_max'] / 1e6:.0f}" if m.get("sm_clock_max")
                                                          else "") + " MHz") if m.get("sm_clock") else ""
    watts = f" ({m['power_mean']:.0f} W" + (f" of {m['power_limit']:.0f} W)" if m.get("power_limit") else ")") \
        if m.get("power_mean") else ""
    shares = (f"; {_fraction(m['fraction_of_power_roof'])} of the power roof's ceiling, "
              f"{_fraction(m['fraction_of_time_roof'])} of the datasheet roofs'"
              if m.get("fraction_of_power_roof") is not None else "")
    return f"ran power-bound: held at the board's power limit{watts}{clock}{shares}"


def problems(doc: ResultsDocument | Mapping[str, Any]) -> list[str]:
    """One line per failure or warning, for standard error under the table."""
    kernels = doc.kernels if isinstance(doc, ResultsDocument) else [as_result(k) for k in doc["kernels"]]
    lines = []
    for k in kernels:
        if k.status is Status.SKIPPED:
            lines.append(f"SKIPPED {k.name}: {k.error}")
        elif k.status is not Status.OK:
            lines.append(f"FAILED {k.name}: {k.error}")
        for w in k.warnings:
            lines.append(f"warning {k.name}: {caveats.line(w)}")
        if line := power_bound_line(k.extra.get("power_measured")):
            lines.append(f"note {k.name}: {line}")
    short = [(k, e) for k, e in ((k, k.energy_measured) for k in kernels) if e is not None and e.short_window_note]
    if len(short) == 1:
        lines.append(f"note {short[0][0].name}: {short[0][1].short_window_note}")
    elif short:  # one line for the run, not one per kernel: the default windows are all short
        worst = max(e.uncertainty for _, e in short)
        lines.append(f"note: the energy of {counted(len(short), 'kernel')} ('~' in the table) is over windows shorter than "
                     f"{MIN_ENERGY_WINDOW:g} s, short for NVML's energy counter (updated every 20-100 ms): up to "
                     f"{worst:.0%} off; --min-time {MIN_ENERGY_WINDOW:g} or more makes it tighter")
    return lines
