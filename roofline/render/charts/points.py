"""The kernels on a roofline chart: which points to draw (model, measured, FAILED), the numbers beside them, and
the numbered side table that names each kernel and its fraction of the ceiling.

It exists so the points and their labelling, the busiest part of the roofline chart, live apart from the roof
geometry (roofline.render.charts.roofs) and the figure's assembly (roofline.render.charts.plot). Pure: results and analysis
documents in, artists on a given Figure; matplotlib is reached only through the Axes and Figure passed in. Results
are read in their typed form (ResultsDocument, KernelResult; issue 30); an analysis document (roofline.model.analysis,
not a results file) is a dict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from roofline.render.charts.roofs import COLORS, FAILED_COLOR, GID
from roofline.render.text import mpl
from roofline.records.files import params_text
from roofline.records.document import ResultsDocument, Status

STATUS_WIDTH = 10  # the side table's "of ceiling" column: "35%", "FAILED", or "35% FAILED" for a kernel twice


@dataclass(frozen=True)
class Point:
    number: int
    name: str
    params: str
    x: float  # FLOP/B
    y: float  # FLOP/s: attainable (model), achieved (measured) or the ceiling (FAILED, drawn there)
    ceiling: float
    kind: str  # "model" | "measured" | "failed"
    color: str
    fraction: float | None

    def __post_init__(self) -> None:
        # JSON whole numbers arrive as ints, and NumPy cannot transform one past 2**63: coordinates are floats
        for name in ("x", "y", "ceiling"):
            object.__setattr__(self, name, float(getattr(self, name)))


def collect_points(analysis_docs: Sequence[dict[str, Any]], results_docs: Sequence[ResultsDocument],
                   colors: dict[str, str]) -> tuple[list[Point], list[str]]:
    """Points to draw (numbered by kernel name and parameters) and the kernels that cannot sit on log axes."""
    numbers: dict[tuple[str, str], int] = {}
    points: list[Point] = []
    unplottable: list[str] = []

    def number(name: str, params: Any) -> int:
        return numbers.setdefault((name, params_text(params)), len(numbers) + 1)

    for doc in analysis_docs:
        color = colors.get(doc["machine"]["id"], COLORS[0])
        for k in doc["kernels"]:
            if k["intensity"] <= 0 or k["attainable_flops"] <= 0:
                unplottable.append(k["name"])
                continue
            points.append(Point(number(k["name"], k["params"]), k["name"], params_text(k["params"]), k["intensity"],
                                k["attainable_flops"], k["attainable_flops"], "model", color, None))
    for result in results_docs:
        color = colors.get(result.machine_id, COLORS[0])
        for r in result.kernels:
            if r.status is Status.SKIPPED:  # not run here: nothing measured, and not a failure to mark
                continue
            failed = r.failed or r.achieved_flops is None
            y = r.attainable_flops if failed else r.achieved_flops
            if r.intensity <= 0 or not y or y <= 0:
                unplottable.append(r.name)
                continue
            points.append(Point(number(r.name, r.params), r.name, params_text(r.params), r.intensity, y,
                                r.attainable_flops, "failed" if failed else "measured",
                                FAILED_COLOR if failed else color, r.fraction_of_ceiling))
    return points, sorted(set(unplottable))


def label_points(ax: Any, fig: Any, points: Sequence[Point]) -> None:
    """Numbers beside the points, placed greedily where they overlap nothing; a leader line when moved far."""
    scale = 72.0 / fig.dpi  # display pixels -> points
    fontsize = 7.5
    anchors = [tuple(v * scale for v in ax.transData.transform((p.x, p.y))) for p in points]
    box = ax.get_window_extent()
    bounds = (box.x0 * scale, box.y0 * scale, box.x1 * scale, box.y1 * scale)
    taken = [(x - 4.5, y - 4.5, x + 4.5, y + 4.5) for x, y in anchors]  # the markers themselves
    directions = [(1, 1), (-1, 1), (1, -1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1)]
    seen: set[tuple[int, float, float]] = set()

    def overlap(a: tuple[float, ...], b: tuple[float, ...]) -> float:
        w = min(a[2], b[2]) - max(a[0], b[0])
        h = min(a[3], b[3]) - max(a[1], b[1])
        return w * h if w > 0 and h > 0 else 0.0

    for p, (x, y) in sorted(zip(points, anchors), key=lambda t: (t[1][0], t[1][1])):
        key = (p.number, round(x, 1), round(y, 1))
        if key in seen:  # the same kernel drawn twice at one place (model and FAILED)
            continue
        seen.add(key)
        text = str(p.number)
        w, h = 0.62 * fontsize * len(text) + 5, fontsize + 3
        best, best_cost = None, float("inf")
        for radius in (7, 12, 18, 26, 36):
            for dx, dy in directions:
                norm = math.hypot(dx, dy)
                cx, cy = x + dx / norm * radius, y + dy / norm * radius
                rect = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
                outside = rect[0] < bounds[0] or rect[1] < bounds[1] or rect[2] > bounds[2] or rect[3] > bounds[3]
                cost = sum(overlap(rect, t) for t in taken) + (1e6 if outside else 0.0) + radius * 0.01
                if cost < best_cost:
                    best, best_cost = (cx - x, cy - y, rect, radius), cost
            if best is not None and best_cost < 1.0:
                break
        assert best is not None
        dx, dy, rect, radius = best
        taken.append(rect)
        arrow = {"arrowstyle": "-", "color": p.color, "linewidth": 0.6, "alpha": 0.7} if radius > 12 else None
        ax.annotate(text, xy=(p.x, p.y), xytext=(dx, dy), textcoords="offset points", ha="center", va="center",
                    fontsize=fontsize, color=p.color if p.kind != "model" else "black", fontweight="bold",
                    arrowprops=arrow, gid=GID + "point-label", zorder=7,
                    bbox={"boxstyle": "round,pad=0.12", "facecolor": "white", "edgecolor": "none", "alpha": 0.75})


def kernel_table(fig: Any, points: Sequence[Point], unplottable: Sequence[str], x0: float) -> None:
    """The numbered legend to the right of the roof labels: number, kernel, parameters, fraction of ceiling."""
    entries: dict[int, list[Point]] = {}
    for p in points:
        entries.setdefault(p.number, []).append(p)
    lines: list[tuple[str, str]] = []
    measured = any(p.kind != "model" for p in points)
    for number in sorted(entries):
        group = entries[number]
        first = group[0]
        status = []
        for p in group:
            if p.kind == "failed":
                status.append("FAILED")
            elif p.kind == "measured":
                status.append("?" if p.fraction is None else f"{p.fraction:.0%}")
        color = FAILED_COLOR if any(p.kind == "failed" for p in group) else "black"
        column = f"{' '.join(status):>{STATUS_WIDTH}} " if measured else ""
        lines.append((f"{number:>2} {column}{first.name} {first.params}", color))
    for name in unplottable:
        lines.append((f" – {' ' * (STATUS_WIDTH + 1) if measured else ''}{name}: 0 FLOP/s, not on a log chart",
                      "#777777"))
    if not lines:
        return
    header = " # " + (f"{'of ceiling':>{STATUS_WIDTH}} " if measured else "") + "kernel (parameters)"
    rows_per_column = 46
    columns = [lines[i:i + rows_per_column] for i in range(0, len(lines), rows_per_column)]
    fontsize = 7.5 if len(lines) <= rows_per_column else 6.5
    width = (0.995 - x0) / len(columns)
    chars = int(width * fig.get_figwidth() * 72 / (0.62 * fontsize))  # monospace advance ~0.6 em
    lines = [(t if len(t) <= chars else t[:chars - 1] + "…", c) for t, c in lines]
    columns = [lines[i:i + rows_per_column] for i in range(0, len(lines), rows_per_column)]
    step = min(0.0185, 0.86 / max(len(c) for c in columns))
    for c, column in enumerate(columns):
        x = x0 + c * width
        fig.text(x, 0.935, header, fontsize=fontsize, family="monospace", fontweight="bold", va="top",
                 gid=GID + "table-header")
        for i, (text, color) in enumerate(column):
            fig.text(x, 0.935 - (i + 1.2) * step, mpl(text), fontsize=fontsize, family="monospace", color=color,
                     va="top", gid=GID + "table-row")
