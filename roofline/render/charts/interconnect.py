"""The interconnect document (roofline/interconnect/v1) as a table and a chart: each measured link beside its roof.

Roofs come from the spec's `interconnect` block, which holds the datasheet's figure with both directions summed:
a one-way copy and nccl-tests' bus bandwidth compare with half of it, a both-ways copy with all of it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from rich.table import Table
from rich.text import Text

from roofline.model.units import format_bytes, format_rate
from roofline.render.tables.fit import droppable
from roofline.errors import InputError
from roofline.render.charts.roofs import COLORS, require_matplotlib
from roofline.records.interconnect import load_interconnect


def link_rows(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """(what, achieved B/s, roof B/s or None, roof name): one per measured figure, in a fixed order."""
    roofs = doc.get("roofs") or {}

    def roof(link: str, both: bool) -> float | None:
        r = roofs.get(link)
        return None if not r else (r["bandwidth"] if both else r["per_direction"])

    rows = []
    peer = doc.get("peer") or {}
    for p in peer.get("one_way", []):
        rows.append({"what": f"peer GPU {p['src']} → GPU {p['dst']}", "group": "peer", "achieved": p["bandwidth"],
                     "roof": roof("nvlink", False), "roof_name": "NVLink, one way"})
    for p in peer.get("both_ways", []):
        rows.append({"what": f"peer GPU {p['a']} ⇄ GPU {p['b']} (both ways)", "group": "peer",
                     "achieved": p["bandwidth"], "roof": roof("nvlink", True), "roof_name": "NVLink, both ways"})
    host = doc.get("host")
    for h in host if isinstance(host, list) else []:
        for key, arrow in (("h2d", f"host → GPU {h['device']}"), ("d2h", f"GPU {h['device']} → host")):
            rows.append({"what": f"{arrow} (pinned)", "group": "host", "achieved": h[key],
                         "roof": roof("pcie", False), "roof_name": "PCIe, one way"})
    ar = doc.get("allreduce") or {}
    for p in ar.get("points", []):
        rows.append({"what": f"all-reduce {format_bytes(p['bytes'], binary=True)} busbw ({ar['ranks']} GPUs)",
                     "group": "allreduce", "achieved": p["busbw"], "roof": roof("nvlink", False),
                     "roof_name": "NVLink, one way", "bytes": p["bytes"]})
    return rows


def skipped(doc: Mapping[str, Any]) -> list[str]:
    """'peer: one GPU only' for each step of the interconnect file that was skipped, with its reason."""
    return [f"{k}: {doc[k]['skipped']}" for k in ("peer", "host", "allreduce")
            if isinstance(doc.get(k), dict) and doc[k].get("skipped")]


def interconnect_table(doc: Mapping[str, Any]) -> Any:
    spec = doc.get("spec_id") or "no spec"
    table = Table(title=f"Interconnect, against the {spec} datasheet (roofs: both directions summed ÷ 2 one way)",
                  caption="; ".join(f"skipped {s}" for s in skipped(doc)) or None)
    for name in ("link", "achieved", "roof", "of roof", "roof is"):
        table.add_column(name, justify="left" if name in ("link", "roof is") else "right")
    for r in link_rows(doc):
        share = f"{r['achieved'] / r['roof']:.0%}" if r["roof"] else "–"
        table.add_row(Text(r["what"]), format_rate(r["achieved"]), format_rate(r["roof"]) if r["roof"] else "–",
                      share, Text(r["roof_name"] if r["roof"] else "no interconnect in the spec"))
    return droppable(table, "roof is")


def interconnect_figure(doc: Mapping[str, Any], title: str | None = None) -> Any:
    """Left: each copy as a bar, its roof as a tick. Right: all-reduce bus bandwidth against message size."""
    require_matplotlib()
    from matplotlib.figure import Figure  # lazy: matplotlib is a start-up cost only this path pays

    rows = link_rows(doc)
    if not rows:
        raise InputError("the interconnect file holds no measured link (every step was skipped: "
                         + ("; ".join(skipped(doc)) or "nothing measured") + ")")
    bars = [r for r in rows if r["group"] != "allreduce"]
    points = [r for r in rows if r["group"] == "allreduce"]
    fig = Figure(figsize=(13, max(4.0, 0.45 * len(bars) + 1.5)))
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    ys = list(range(len(bars)))
    left.barh(ys, [r["achieved"] / 1e9 for r in bars], color=[COLORS[0] if r["group"] == "peer" else COLORS[1]
                                                                for r in bars])
    for y, r in zip(ys, bars):
        if r["roof"]:
            left.plot([r["roof"] / 1e9] * 2, [y - 0.4, y + 0.4], color="black", linewidth=2)
        text = format_rate(r["achieved"]) + (f" ({r['achieved'] / r['roof']:.0%})" if r["roof"] else "")
        left.text(r["achieved"] / 1e9, y, " " + text, va="center", fontsize=8)
    left.set_yticks(ys, [r["what"] for r in bars], fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("GB/s (black tick: the datasheet roof)")
    left.set_title("copies")
    if points:
        right.plot([p["bytes"] for p in points], [p["achieved"] / 1e9 for p in points], "o-", color=COLORS[2],
                   label="bus bandwidth (nccl-tests)")
        if points[0]["roof"]:
            right.axhline(points[0]["roof"] / 1e9, color="black", linestyle="--", label=points[0]["roof_name"])
        right.set_xscale("log", base=2)
        right.set_xlabel("message size per GPU (B)")
        right.set_ylabel("GB/s")
        right.legend(fontsize=8)
        right.set_title("all-reduce")
    else:
        right.axis("off")
        right.text(0.5, 0.5, "all-reduce: " + ("; ".join(skipped(doc)) or "not measured"), ha="center",
                   va="center", wrap=True, fontsize=9)
    fig.suptitle(title or f"Interconnect ({doc.get('spec_id') or 'no spec'})")
    fig.tight_layout()
    return fig


def interconnect_chart(path: Path, title: str | None) -> Any:
    """The chart of an interconnect file, read and checked first (roofline.records.interconnect)."""
    return interconnect_figure(load_interconnect(path), title)
