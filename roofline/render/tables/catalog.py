"""Spec and kernel listings as rich renderables."""

from __future__ import annotations

from typing import Any, Sequence

from roofline.model.analysis import ridge_point
from roofline.model.types import KernelDescriptor, MachineSpec, Workload
from roofline.render.charts.roofs import best_tensor
from roofline.render.tables.fit import droppable
from roofline.render.text import literal
from roofline.model.units import format_bytes, format_count, format_flops, format_intensity, format_rate, format_si, format_time
from roofline.model.units import format_small
from roofline.model.energy import energy_balance
from roofline.model.counts import counted


def best_tensor_roof(spec: MachineSpec) -> tuple[str, float] | None:
    name = best_tensor(spec.roofs)
    return (name, spec.roofs[name]) if name else None


def spec_rows(specs: Sequence[MachineSpec]) -> list[dict[str, Any]]:
    rows = []
    for s in specs:
        best = best_tensor_roof(s)
        fp32 = s.roofs.get("fp32")
        rows.append({
            "id": s.id, "name": s.name, "aliases": list(s.aliases), "bandwidth": s.bandwidth, "fp32": fp32,
            "best_tensor_roof": best[0] if best else None, "best_tensor_flops": best[1] if best else None,
            "fp32_ridge": ridge_point(fp32, s.bandwidth) if fp32 else None,
            "tensor_ridge": ridge_point(best[1], s.bandwidth) if best else None,
        })
    return rows


def specs_table(specs: Sequence[MachineSpec]) -> Any:
    # lazy: not needed by `roofline specs --format json`, which imports this module (start-up)
    from rich.table import Table

    table = Table(title="Machine specs (dense peaks; ridge = peak ÷ bandwidth)", title_justify="left")
    for col in ("id", "name", "aliases", "bandwidth", "FP32", "FP32 ridge", "best tensor roof", "tensor ridge"):
        table.add_column(col, justify="right" if col in ("bandwidth", "FP32", "FP32 ridge", "tensor ridge") else "left")
    for row in spec_rows(specs):
        table.add_row(*(literal(cell) for cell in (
            row["id"], row["name"], ", ".join(row["aliases"]), format_rate(row["bandwidth"]), format_flops(row["fp32"]),
            format_intensity(row["fp32_ridge"]),
            f"{row['best_tensor_roof']} {format_flops(row['best_tensor_flops'])}" if row["best_tensor_roof"] else "–",
            format_intensity(row["tensor_ridge"]),
        )))
    return droppable(table, "aliases", "tensor ridge", "FP32 ridge", "name", whole=("id",))


def spec_detail(s: MachineSpec) -> list[Any]:
    # lazy: not needed by `roofline specs --format json`, which imports this module (start-up)
    from rich.table import Table

    head = Table(title=literal(f"{s.name} ({s.id})" + ("  [measured]" if s.measured else "")), title_justify="left",
                 show_header=False)
    head.add_column("field")
    head.add_column("value")
    rows: list[tuple[str, str]] = [
        ("file", str(s.path)),
        ("aliases", ", ".join(s.aliases) or "–"),
        ("device names", ", ".join(s.device_names) or "–"),
        ("architecture", f"{s.architecture or '–'} (compute capability {s.compute_capability or '–'})"),
        ("memory.bandwidth", format_rate(s.bandwidth)),
        ("memory.latency", format_time(s.latency)),
        ("memory.capacity", format_bytes(s.capacity)),
        ("Little's Law", f"{format_bytes(s.bytes_in_flight)} in flight"),
        ("sm_count × max_threads_per_sm",
         f"{s.sm_count or '–'} × {s.max_threads_per_sm or '–'} = {s.resident_threads or '–'} resident threads"),
    ]
    for name, value in s.roofs.items():
        rows.append((f"compute.{name}", f"{format_flops(value)}   ridge {format_intensity(ridge_point(value, s.bandwidth))}"))
    for level, c in s.caches.items():
        parts = [p for p in (format_bytes(c.size, binary=True) if c.size else None,
                             format_rate(c.bandwidth) if c.bandwidth else None,
                             f"latency {format_time(c.latency)}" if c.latency else None) if p]
        rows.append((f"caches.{level}", ", ".join(parts)))
    for name, hz in s.clocks.items():
        rows.append((f"clocks.{name}", format_si(hz, "Hz")))
    rows += energy_rows(s)
    for k, v in s.measurement.items():
        rows.append((f"measurement.{k}", v))
    if s.notes:
        rows.append(("notes", s.notes))
    for key, value in rows:
        head.add_row(literal(key), literal(value))
    sources = Table(title="Sources", title_justify="left")
    sources.add_column("#", justify="right")
    sources.add_column("for")
    sources.add_column("citation")
    for i, src in enumerate(s.sources, 1):
        sources.add_row(str(i), literal(", ".join(src.fields) or "–"), literal(src.cite))
    return [head, sources]


def kernels_table(descriptors: Sequence[KernelDescriptor]) -> Any:
    # lazy: not needed by `roofline specs --format json`, which imports this module (start-up)
    from rich.table import Table

    table = Table(title="Kernel descriptors", title_justify="left")
    for col in ("name", "pattern", "dtype", "roof", "launches", "measurable", "params"):
        table.add_column(col)
    for d in descriptors:
        params = " ".join(f"{k}={v.source}" for k, v in d.params.items())
        table.add_row(*(literal(cell) for cell in (d.name, d.pattern, d.dtype, d.roof, str(max(len(d.stages), 1)),
                                                   "yes" if d.implementation else "no", params)))
    return droppable(table, "launches", "measurable", "pattern", whole=("name",))


def kernel_detail(d: KernelDescriptor, w: Workload) -> list[Any]:
    # lazy: not needed by `roofline specs --format json`, which imports this module (start-up)
    from rich.table import Table

    head = Table(title=literal(f"{d.name} ({d.pattern}, {d.dtype}, roof {d.roof})"), title_justify="left",
                 show_header=False)
    head.add_column("field")
    head.add_column("formula")
    head.add_column("value", justify="right")

    def row(*cells: object) -> None:
        head.add_row(*(literal(c) for c in cells))

    row("file", str(d.path), "")
    row("implementation", str(d.implementation) if d.implementation else "none (analysis only)", "")
    row("description", d.description, "")
    for k, v in d.params.items():
        row(f"params.{k}", v.source, f"{w.params[k]:,}" if isinstance(w.params[k], int) else f"{w.params[k]:g}")
    if d.stages:
        for s_spec, s in zip(d.stages, w.stages):
            row(f"stage {s.name}: flops", s_spec.flops.source, format_count(s.flops))
            row(f"stage {s.name}: bytes", s_spec.bytes.source, format_bytes(s.bytes))
    else:
        assert d.flops is not None and d.bytes is not None
        row("flops", d.flops.source, format_count(w.flops))
        row("bytes", d.bytes.source, format_bytes(w.bytes))
    row("total", counted(w.launches, "launch"), f"{format_count(w.flops)}, {format_bytes(w.bytes)}")
    row("intensity", "flops / bytes", format_intensity(w.flops / w.bytes))
    for level, expr in d.traffic.items():  # what the kernel requests from the caches (bytes is DRAM)
        row(f"traffic.{level}", expr.source, f"{format_bytes(w.traffic[level])}, "
            + (format_intensity(w.flops / w.traffic[level]) if w.traffic[level] else "–"))
    row("access_bytes", d.access_bytes.source if d.access_bytes else "itemsize", f"{w.access_bytes:g} B")
    return [head]


def energy_rows(s: MachineSpec) -> list[tuple[str, str]]:
    """The spec's energy block (docs/energy.md), one row per figure, with the energy-balance point of each roof
    beside its time ridge; nothing when the spec has no energy block."""
    e = s.energy
    if e is None:
        return []

    rows = [("energy.idle_power", format_small(e.idle_power, "W"))]
    rows += [(f"energy.memory.{level}", format_small(v, "J/B")) for level, v in e.memory.items()]
    if e.dram_bandwidth:
        rows.append(("energy.dram_bandwidth", f"{format_rate(e.dram_bandwidth)}   the rate energy.memory.dram was "
                     "measured at: the power roof charges DRAM bytes at most at it"))
    for roof, v in e.compute.items():
        balance, ridge = energy_balance(e.dram, v), ridge_point(s.roofs[roof], s.bandwidth)
        rows.append((f"energy.compute.{roof}", f"{format_small(v, 'J/FLOP')}   energy balance "
                     f"{format_intensity(balance)} (time ridge {format_intensity(ridge)})"))
    rows.append(("energy.inputs", e.inputs + ("  (constant inputs draw less power than real data: up to 2x low)"
                                              if e.inputs == "constant" else "")))
    rows.append(("energy.source", e.source))
    return rows
