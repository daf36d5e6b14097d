"""The roofline frame and its roofs: the log-log axes every roofline chart shares, the roof labels and their
placement, and the palette and artist ids that the roofline, sweep and hierarchy charts have in common.

It exists so the geometry of a roofline chart (axes, tick labels, which colour a machine's roofs get, where the
memory roof's label goes) lives apart from the kernel points and from the sweep chart, and so the hierarchical
roofline can reuse the same frame. Pure: nothing here computes physics, and matplotlib is imported lazily, only
inside the functions that draw.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Collection, Mapping, Protocol, Sequence

from roofline.errors import InputError
from roofline.model.units import format_rate, format_si

COLORS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#bcbd22", "#7f7f7f", "#e377c2")
FAILED_COLOR = "#d62728"
GID = "roofline:"  # every artist these charts draw carries a gid, so tests can count roofs and points
ROOF_CHOICES = ("used", "all")  # plot --roofs: which compute roofs of each machine a roofline chart draws


def roof_label(roof: str) -> str:
    """'bf16_tensor' -> 'BF16 tensor', 'fp32' -> 'FP32'."""
    base, _, rest = roof.partition("_")
    return base.upper() + (f" {rest}" if rest else "")


def roofs_label(roofs: Sequence[str]) -> str:
    """['fp16_tensor', 'bf16_tensor'] -> 'FP16 / BF16 tensor'."""
    suffixes = {r.partition("_")[2] for r in roofs}
    if len(suffixes) == 1:
        suffix = suffixes.pop()
        return " / ".join(r.partition("_")[0].upper() for r in roofs) + (f" {suffix}" if suffix else "")
    return " / ".join(roof_label(r) for r in roofs)


def peak_text(roofs: Sequence[str], value: float) -> str:
    unit = "OP/s" if all(r.startswith("int") for r in roofs) else "FLOP/s"
    return format_si(value, unit)


def best_tensor(roofs: Mapping[str, float]) -> str | None:
    """The fastest floating-point tensor roof (FP64 tensor and the integer roofs are not candidates)."""
    tensor = {k: v for k, v in roofs.items() if k.endswith("_tensor") and not k.startswith(("int", "fp64"))}
    return max(tensor, key=lambda k: tensor[k]) if tensor else None


def shown_roofs(roofs: Mapping[str, float], used: Collection[str], choice: str) -> dict[str, float]:
    """The compute roofs a chart draws for one machine: all of them ('all'), or ('used') those the plotted kernels
    use plus the best tensor roof, so three machines do not put thirty labels beside the chart. Every roof when no
    kernel names one of this machine's roofs and it has no tensor roof: a machine is never drawn without a roof."""
    if choice not in ROOF_CHOICES:
        raise ValueError(choice)
    if choice == "all":
        return dict(roofs)
    best = best_tensor(roofs)
    kept = {k: v for k, v in roofs.items() if k in used or k == best}
    return kept or dict(roofs)


@dataclass(frozen=True)
class RoofSet:
    """One machine's roofs as drawn: solid for the datasheet, dashed for a measured (calibrated) spec."""

    machine: dict[str, Any]
    measured: bool
    color: str


def roofline_axes(fig: Any, rect: tuple[float, float, float, float], xlim: tuple[float, float],
                  ylim: tuple[float, float]) -> Any:
    """Log-log axes in FLOP/B and FLOP/s with human tick labels: the frame every roofline chart shares."""
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax = fig.add_axes(rect)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.yaxis.set_major_locator(LogLocator(base=10))
    ax.xaxis.set_major_formatter(FuncFormatter(intensity_tick))
    ax.yaxis.set_major_formatter(FuncFormatter(_flops_tick))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    return ax


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401 - lazy: matplotlib is a start-up cost only this path pays
    except ImportError as exc:  # pragma: no cover - matplotlib is a dependency; the message is for broken installs
        raise InputError(f"plotting needs matplotlib ({exc}): pip install matplotlib") from None


def assign_roofsets(datasheet: Sequence[dict[str, Any]], measured: Sequence[dict[str, Any]]) -> list[RoofSet]:
    sets: list[RoofSet] = []
    colors: dict[str, str] = {}
    for m in datasheet:
        colors.setdefault(m["id"], COLORS[len(colors) % len(COLORS)])
        sets.append(RoofSet(m, False, colors[m["id"]]))
    for m in measured:
        paired = next((c for mid, c in colors.items() if m["id"].startswith(mid) or mid.startswith(m["id"])), None)
        if paired is None:
            paired = colors.setdefault(m["id"], COLORS[len(colors) % len(COLORS)])
        sets.append(RoofSet(m, True, paired))
    return sets

def log_bounds(values: Sequence[float], pad_low: float, pad_high: float) -> tuple[float, float]:
    lo = math.log10(min(values)) - pad_low
    hi = math.log10(max(values)) + pad_high
    return 10.0 ** math.floor(lo), 10.0 ** math.ceil(hi)  # floats: NumPy holds no int past 2**63 (10**19)


def intensity_tick(value: float, _pos: object = None) -> str:
    if value >= 1000:
        return format_si(value, "").strip()
    return f"{value:g}"


def _flops_tick(value: float, _pos: object = None) -> str:
    return format_si(value, "FLOP/s", digits=3)


def spread_positions(wanted: list[float], gap: float, lo: float = 0.0, hi: float = 1.0) -> list[float]:
    """Positions near `wanted` (sorted ascending) at least `gap` apart, kept within [lo, hi]."""
    placed: list[float] = []
    for y in wanted:
        placed.append(max(y, placed[-1] + gap) if placed else max(y, lo))
    overflow = placed[-1] - hi if placed else 0.0
    if overflow > 0:  # shift down, keeping the gaps
        placed = [p - overflow for p in placed]
        for i in range(len(placed) - 2, -1, -1):
            placed[i] = min(placed[i], placed[i + 1] - gap)
    return placed


class Placed(Protocol):
    """Anything drawn at (x, y) that a roof label should keep clear of: the kernel points (roofline.render.charts.points)."""

    @property
    def x(self) -> float: ...

    @property
    def y(self) -> float: ...


def overlaps_any(box: Any, others: Sequence[Any], pad: float = 1.0) -> bool:
    """Whether display-coordinate box `box` comes within `pad` pixels of any of `others`."""
    return any(box.x0 < o.x1 + pad and o.x0 < box.x1 + pad and box.y0 < o.y1 + pad and o.y0 < box.y1 + pad
               for o in others)


def label_memory_roof(ax: Any, fig: Any, rs: RoofSet, points: Sequence[Placed], x_lo: float, x_top: float,
                       tag: str, taken: list[Any] | None = None) -> Any:
    """The memory roof's label, along its slope where no point is near and clear of the labels in `taken`
    (display-coordinate boxes, checked with the text's real extent; the new label's box is added). A measured
    roof's label goes under its line, the datasheet's over it, so the two near-parallel lines keep theirs apart.
    Returns the annotation."""
    bw = rs.machine["bandwidth"]
    trans = ax.transData
    lo, hi = math.log10(x_lo), math.log10(x_top)
    candidates = [10 ** (lo + (hi - lo) * f / 20) for f in range(1, 18)]
    pts = [trans.transform((p.x, p.y)) for p in points]
    ymin = ax.get_ylim()[0]
    below = rs.measured

    length = 0.6 * 9 * (len(format_rate(bw)) + len(tag) + 8) * fig.dpi / 72.0  # the label's extent, pixels

    def clearance(x: float) -> float:
        if bw * x < ymin * 1.5:
            return -1.0
        a, b = trans.transform((x, bw * x)), trans.transform((x * 10, bw * x * 10))
        step = ((b[0] - a[0]) / math.dist(a, b), (b[1] - a[1]) / math.dist(a, b))
        side = -12 if below else 12
        samples = [(a[0] + step[0] * t - step[1] * side, a[1] + step[1] * t + step[0] * side)
                   for t in (0, length / 4, length / 2, 3 * length / 4, length)]
        if trans.inverted().transform(samples[-1])[1] > ax.get_ylim()[1]:
            return -1.0
        return min((math.dist(q, sample) for q in pts for sample in samples), default=1e9)

    label = ax.annotate(f"memory{tag} {format_rate(bw)}", xy=(x_lo, bw * x_lo), xytext=(0, -5 if below else 5),
                        textcoords="offset points", rotation_mode="anchor", ha="left",
                        va="top" if below else "bottom", fontsize=9, color=rs.color, fontweight="bold",
                        gid=GID + "memory-label",
                        bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.7})

    def place(x: float) -> Any:
        a, b = trans.transform((x, bw * x)), trans.transform((x * 10, bw * x * 10))
        label.xy = (x, bw * x)
        label.set_rotation(math.degrees(math.atan2(b[1] - a[1], b[0] - a[0])))
        return label.get_window_extent(fig.canvas.get_renderer())

    ranked = sorted(candidates, key=clearance, reverse=True)
    taken = [] if taken is None else taken
    for x in ranked:  # the clearest spot whose label touches no label already placed
        box = place(x)
        if not overlaps_any(box, taken):
            break
    else:
        box = place(ranked[0])
    taken.append(box)
    return label


def separate_labels(fig: Any, labels: Sequence[Any], taken: Sequence[Any] = (), pad: float = 1.0) -> None:
    """Move text labels up (in display coordinates) until no two of them, nor any box in `taken`, overlap: each
    keeps its place unless a label below it is in the way. For ax.text labels placed in data coordinates."""
    renderer = fig.canvas.get_renderer()
    placed = list(taken)
    for label in sorted(labels, key=lambda t: t.get_window_extent(renderer).y0):
        box = label.get_window_extent(renderer)
        lift = 0.0
        for _ in range(len(placed) + 1):
            moved = box.translated(0, lift)
            hits = [o for o in placed if overlaps_any(moved, [o], pad)]
            if not hits:
                break
            lift = max(o.y1 + pad + 0.5 for o in hits) - box.y0
        if lift:
            transform = label.get_transform()
            x, y = transform.transform(label.get_position())
            label.set_position(transform.inverted().transform((x, y + lift)))
        placed.append(label.get_window_extent(renderer))
