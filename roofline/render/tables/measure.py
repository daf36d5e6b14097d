"""The table `roofline measure` prints after measuring: one row per kernel."""

from __future__ import annotations

from typing import Any, Sequence

from rich.table import Table

from roofline.records import caveats
from roofline.records.document import KernelResult
from roofline.render.tables.fit import droppable, fit
from roofline.render.text import literal, styled
from roofline.records.files import ceiling_of
from roofline.render.console import make_console
from roofline.records.energy import MIN_ENERGY_WINDOW, short_window_note
from roofline.model.units import format_flops, format_fraction, format_rate, format_si, format_small, format_time


def _fraction(value: float | None) -> str:
    return "unknown" if value is None else format_fraction(value)


def _spread(k: dict[str, Any]) -> str:
    if not k.get("time_min"):
        return "–"
    return f"{k['time_min'] / k['time_median']:.2f}–{k['time_max'] / k['time_median']:.2f}×"


def results_table(doc: dict[str, Any]) -> Any:
    device = doc["device"]
    machine = doc.get("machine")
    if doc["backend"] == "numpy":
        title = f"Measured on the HOST CPU with NumPy ({device['name']}), not a GPU"
    else:
        title = f"Measured on {device['name']} (CuPy {device.get('cupy_version')}, CUDA {device.get('cuda_runtime')})"
    if machine:
        derived = " [derived from device properties]" if device.get("spec_derived") else ""
        title += f"; ceilings from spec {machine['id']}{derived}"
    else:
        title += "; no spec given, so the ceiling is unknown"
    return kernel_table(doc["kernels"], title, unit=ran_on(doc))


def ran_on(doc: dict[str, Any]) -> str:
    """What one of the document's devices is, for a column header: 'CPU' for the NumPy backend (a host rank under
    mpirun, or `measure --backend numpy`), 'GPU' otherwise: a CPU rank's table is not headed GPU."""
    device = doc.get("device") or {}
    return "CPU" if doc.get("backend") == "numpy" or device.get("kind") == "cpu" else "GPU"


def show(kernel: KernelResult) -> None:
    """Print one typed result as the row `roofline measure` prints: the API's Result.show(). rich is imported here,
    at the first print, so `import roofline` stays fast."""
    console = make_console(markup=False, emoji=False)
    table = kernel_table([kernel.to_json()], kernel.name,
                         unit="CPU" if (kernel.extra.get("measured_with") or {}).get("backend") == "numpy" else "GPU")
    fit(table, console.width)  # a notebook or an 80-column terminal: numbers whole, less important columns out
    console.print(table)


def kernel_table(kernels: Sequence[dict[str, Any]], title: str, unit: str = "GPU") -> Any:
    """The rows of measured kernels under a title (the API's Result.show() prints one); `unit` heads the column
    of devices (several devices in one document: 'GPU', or 'CPU' for host ranks)."""
    table = Table(title=literal(title), title_justify="left")
    per_gpu = any(k.get("device") is not None for k in kernels)  # measure --device all: one row per kernel and GPU
    if per_gpu:
        table.add_column(unit, justify="right")
    energy = any(k.get("energy_measured") for k in kernels)  # NVML read the energy: joules beside the seconds
    for col in ("kernel", "status", "time (median)", "spread min–max", "achieved BW", "achieved FLOP/s",
                "ceiling", "of ceiling", *(_ENERGY_COLUMNS if energy else ()), "timing"):
        table.add_column(col, justify="left" if col in ("kernel", "status", "timing") else "right")
    for k in kernels:
        status = k["status"]
        style = "yellow" if status == "SKIPPED" or (status == "OK" and k.get("warnings")) else (
            "green" if status == "OK" else "bold red")
        table.add_row(
            *([literal(str(k.get("device", "–")))] if per_gpu else []),
            literal(k["name"]),
            styled(status, style),
            format_time(k["time_median"]),
            _spread(k),
            format_rate(k["achieved_bandwidth"]),
            format_flops(k["achieved_flops"]),
            format_si(*ceiling_of(k)),
            _fraction(k["fraction_of_ceiling"]) if status == "OK" else "–",
            *(energy_cells(k.get("energy_measured")) if energy else ()),
            literal(f"{k.get('timing') or '–'}"
                    + (f" ×{k['buffer_sets']} sets" if k.get("buffer_sets", 1) > 1 else "")),
        )
    return droppable(table, "timing", "spread min–max", "FLOP/J", "power", "achieved FLOP/s", "ceiling",
                     "of energy ceiling", "achieved BW", "energy/run", whole=("kernel",))


_ENERGY_COLUMNS = ("energy/run", "power", "FLOP/J", "of energy ceiling")


def energy_cells(e: dict[str, Any] | None) -> list[str]:
    """Joules per run (marked '~' where the window was short for NVML's counter), mean power, FLOP/J and the share
    of the energy ceiling (roofline.measurement.energy); dashes where NVML read no energy."""
    if not e:
        return ["–"] * len(_ENERGY_COLUMNS)
    mark = "~" if e.get("short_window") else ""
    return [mark + format_small(e["joules_per_run"], "J"), format_small(e["power_mean"], "W"),
            format_si(e.get("flops_per_joule"), "FLOP/J"), _fraction(e.get("fraction_of_energy_ceiling"))]


def problems(doc: dict[str, Any]) -> list[str]:
    """One line per failure or warning, for standard error under the table."""
    lines = []
    for k in doc["kernels"]:
        if k["status"] == "SKIPPED":
            lines.append(f"SKIPPED {k['name']}: {k['error']}")
        elif k["status"] != "OK":
            lines.append(f"FAILED {k['name']}: {k['error']}")
        for w in k.get("warnings") or []:
            lines.append(f"warning {k['name']}: {caveats.line(w)}")
    short = [k for k in doc["kernels"] if short_window_note(k.get("energy_measured"))]
    if len(short) == 1:
        lines.append(f"note {short[0]['name']}: {short_window_note(short[0]['energy_measured'])}")
    elif short:  # one line for the run, not one per kernel: the default windows are all short
        worst = max(short, key=lambda k: k["energy_measured"]["uncertainty"])
        lines.append(f"note: the energy of {len(short)} kernels ('~' in the table) is over windows shorter than "
                     f"{MIN_ENERGY_WINDOW:g} s, short for NVML's energy counter (updated every 20-100 ms): up to "
                     f"{worst['energy_measured']['uncertainty']:.0%} off; --min-time {MIN_ENERGY_WINDOW:g} or more "
                     "makes it tighter")
    return lines
