"""The fleet chart: every GPU of an mpirun run as a point per kernel, at its speed against the fleet median, beside
each node's median against the median of the node medians; the outlier limit drawn, the slow GPUs and nodes named.

Why deviations and not a roofline: a fleet's question is which GPU or node is slower than its peers, and on a log-log
roofline 64 points of one kernel within 2 % of each other are one dot. The deviations, the intervals and the outlier
rule are roofline.gates.hosts' and roofline.gates.nodes' (the ones `report --outlier` gates on); this module only
places them. Pure: a document in, a Figure out (matplotlib's object API, no pyplot).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence
import textwrap

from roofline.render.text import mpl
from roofline.records.files import params_text
from roofline.gates.hosts import is_outlier, outliers
from roofline.errors import InputError
from roofline.gates.nodes import fleet_rows
from roofline.render.charts.roofs import require_matplotlib
from roofline.model.counts import counted

ANNOTATED = 3  # slow points named beside each kernel's points, worst first; the caption names (and counts) the rest
SLOW_COLOR = "#d62728"
SPREAD = 0.7  # of the space between two kernels, the width a kernel's points spread over


def _xs(i: int, n: int) -> list[float]:
    """n points of kernel i spread evenly across SPREAD around x = i (in rank order, so a node's GPUs sit together)."""
    return [i + ((j + 0.5) / n - 0.5) * SPREAD for j in range(n)] if n > 1 else [float(i)]


def _label(row: Mapping[str, Any]) -> str:
    params = params_text(row["params"])
    return mpl(row["kernel"]) + (f"\n{mpl(params)}" if params else "")


def _panel(ax: Any, rows: Sequence[Mapping[str, Any]], limit: float, colors: Mapping[str, str],
           what: str) -> list[dict[str, Any]]:
    """Draw one panel (GPUs or nodes); return its outliers, worst first, each with where it was drawn."""
    slow = []
    for i, row in enumerate(rows):
        devices = [d for d in row["devices"] if d.get("deviation") is not None]
        for x, d in zip(_xs(i, len(devices)), devices):
            y = d["deviation"] * 100
            if is_outlier(d, limit):
                ax.scatter([x], [y], marker="X", s=70, color=SLOW_COLOR, zorder=4)
                slow.append({"where": d.get("where") or d["label"], "kernel": row["kernel"], "x": x, "y": y,
                             "deviation": d["deviation"], "params": row["params"], "column": i})
            else:
                ax.scatter([x], [y], s=18, color=colors.get(str(d.get("host")), "#1f77b4"), alpha=0.85, zorder=3,
                           linewidths=0)
    ax.axhline(0.0, color="#555555", linewidth=0.8, zorder=1)
    ax.axhline(-limit * 100, color=SLOW_COLOR, linewidth=0.9, linestyle="--", zorder=1)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([_label(r) for r in rows], fontsize=8)
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_title(what, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    slow.sort(key=lambda s: s["deviation"])
    return slow


def _annotate(ax: Any, slow: Sequence[Mapping[str, Any]], columns: int) -> None:
    """Name the worst slow points of each kernel: the labels stacked under the kernel's lowest point, centred on its
    column (so they stay out of the neighbours' columns), each joined to its point by a thin line; the y axis is
    extended down to hold them."""
    lo, hi = ax.get_ylim()
    gap = 0.06 * (hi - lo)
    bottom = lo
    for column in range(columns):
        named = [s for s in slow if s["column"] == column][:ANNOTATED]
        if not named:
            continue
        lowest = min(s["y"] for s in named)
        for k, s in enumerate(named):
            y = lowest - gap * (k + 1)
            bottom = min(bottom, y - gap / 2)
            ax.annotate(mpl(f"{s['where']} {s['deviation']:+.1%}"), (s["x"], s["y"]), xytext=(column, y),
                        textcoords="data", fontsize=7.5, color=SLOW_COLOR, zorder=5, va="center", ha="center",
                        arrowprops={"arrowstyle": "-", "color": SLOW_COLOR, "linewidth": 0.5, "alpha": 0.5})
    ax.set_ylim(bottom, hi)


def _names(slow: Sequence[Mapping[str, Any]], shown: int = 4) -> str:
    worst: dict[str, Mapping[str, Any]] = {}
    for s in slow:
        worst.setdefault(str(s["where"]), s)
    items = [f"{w} ({s['kernel']} {s['deviation']:+.1%})" for w, s in list(worst.items())[:shown]]
    return ", ".join(items) + (f" and {len(worst) - shown} more" if len(worst) > shown else "")


def fleet_figure(doc: Mapping[str, Any], limit: float, title: str | None = None, *,
                 source: str = "the results") -> Any:
    """The chart of a fleet results document (roofline.fleet.merge.fleet_document). Returns a Figure; its texts name
    every slow GPU and node (annotations for the worst, the caption for all). `source` names the document in an
    error (its file's path)."""
    from matplotlib.figure import Figure  # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.lines import Line2D  # lazy: matplotlib is a start-up cost only this path pays

    require_matplotlib()
    rows, nodes = fleet_rows(doc)
    if not rows:
        raise InputError(f"{source}: no kernel was timed on two or more ranks, so there is "
                         "no fleet median to draw against")
    hosts = sorted({str(d.get("host")) for r in rows for d in r["devices"] if d.get("host")})
    palette = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#ff7f0e"]
    colors = {h: palette[i % len(palette)] for i, h in enumerate(hosts)}
    width = min(20.0, max(10.0, 4.0 + 2.2 * len(rows) * (1.6 if nodes else 1.0)))
    fig = Figure(figsize=(width, 6.4))
    if nodes:
        ax, ax_nodes = fig.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [3, 2]})
    else:
        ax, ax_nodes = fig.subplots(1, 1), None
    ranks = max(len(r["devices"]) for r in rows)
    slow = _panel(ax, rows, limit, colors, f"each GPU against the fleet median ({ranks} ranks)")
    ax.set_ylabel("speed against the median (%)")
    slow_nodes = _panel(ax_nodes, nodes, limit, colors, f"each node against the median\nof the node medians "
                                                        f"({len(hosts)} nodes)") if ax_nodes is not None else []
    for panel, found in ((ax, slow), (ax_nodes, slow_nodes)):
        if panel is not None:
            _annotate(panel, found, len(rows))
    handles = [Line2D([], [], color=SLOW_COLOR, linestyle="--", label=f"outlier limit −{limit:.0%}"),
               Line2D([], [], marker="X", color=SLOW_COLOR, linestyle="", label="slow (outside the noise)")]
    if len(hosts) <= len(palette):
        handles += [Line2D([], [], marker="o", color=colors[h], linestyle="", label=mpl(h)) for h in hosts]
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 0.945), ncol=min(len(handles), 6),
               fontsize=7.5, frameon=False)
    fleet = doc.get("fleet") or {}
    name = (doc.get("device") or {}).get("base_name") or (doc.get("device") or {}).get("name") or "fleet"
    fig.suptitle(mpl(title or f"{name}: {counted(fleet.get('size', ranks), 'rank')} on {counted(len(hosts), 'node')}"), fontsize=11)

    chars = int(width * 15)
    lines = [f"slow GPUs (more than {limit:.0%} below the fleet median, intervals not overlapping): "
             f"{_names(slow) or 'none'}",
             f"slow nodes (more than {limit:.0%} below the median of the node medians): {_names(slow_nodes) or 'none'}"
             if nodes else "one node: no node comparison"]
    caption = "\n".join(textwrap.fill(mpl(line), chars) for line in lines)
    fig.text(0.01, 0.01, caption, fontsize=8, va="bottom", color=SLOW_COLOR if slow or slow_nodes else "#333333")
    fig.subplots_adjust(bottom=0.22, top=0.80, left=0.07, right=0.98, wspace=0.05)
    return fig


def slow_table(doc: Mapping[str, Any], limit: float) -> tuple[tuple[str, ...], list[list[str]]]:
    """The slow GPUs and nodes as the HTML page's table: (columns, rows)."""
    rows, nodes = fleet_rows(doc)
    found = [("GPU", o) for o in outliers(rows, limit)] + [("node", o) for o in outliers(nodes, limit)]
    return (("what", "where", "kernel", "params", "against the median"),
            [[what, str(o.get("where") or o["label"]), str(o["kernel"]), params_text(o["params"]),
              f"{o['deviation']:+.1%}"] for what, o in found])
