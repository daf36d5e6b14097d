"""The table `roofline profile` and `roofline import ncu --group-by` print: one row per group, ranked by
recoverable time, with the program's totals as the footer (also as Markdown, for the README and reviews)."""

from __future__ import annotations

from typing import Any, Mapping

from roofline.render.text import literal, md
from roofline.units import format_bytes, format_flops, format_rate, format_time

COLUMNS = ("#", "group", "launches", "time", "share", "FLOPs", "DRAM bytes", "intensity", "achieved",
           "achieved BW", "roof", "of ceiling", "SOL time", "recoverable", "model")


def _model_cell(g: Mapping[str, Any]) -> str:
    """'2MNK 1.00x' (counter FLOPs over the model's), 'bytes 2.3x !' (flagged), or ''."""
    cells = []
    if g.get("flops_ratio") is not None:
        cells.append(f"FLOPs {g['flops_ratio']:.2f}x")
    if g.get("bytes_ratio") is not None:
        cells.append(f"bytes {g['bytes_ratio']:.2f}x" + (" !" if g.get("flag") else ""))
    return ", ".join(cells)


def group_row(rank: int, g: Mapping[str, Any]) -> list[str]:
    roof = g["roof"] + (" +" if len(g.get("roofs") or []) > 1 else "")
    return [str(rank), str(g["name"]), str(g["launches"]), format_time(g["time"]), f"{g['share']:.1%}",
            f"{g['flops']:.4g}", format_bytes(g["bytes"]),
            "-" if g.get("intensity") is None else f"{g['intensity']:.3g}", format_flops(g["achieved_flops"]),
            format_rate(g["achieved_bandwidth"]), roof, f"{g['fraction_of_ceiling']:.1%}",
            format_time(g["sol_time"]), format_time(g["recoverable_time"]), _model_cell(g)]


def footer(doc: Mapping[str, Any]) -> str:
    p = doc.get("program") or {}
    if not p:
        return ""
    top = p.get("top_share_of_recoverable")
    return (f"program: GPU time {format_time(p['time'])}, speed-of-light time {format_time(p['sol_time'])}, "
            f"time-weighted fraction of ceiling {p['fraction_of_ceiling']:.1%}, recoverable "
            f"{format_time(p['recoverable_time'])}"
            + (f" ({top:.0%} of it in the top {p['top']} groups)" if top is not None else ""))


def grouped_table(doc: Mapping[str, Any]) -> Any:
    from rich.table import Table

    by = doc["groups"][0]["by"] if doc.get("groups") else "?"
    title = (f"{doc['device']['name']} · {len(doc['kernels'])} launches grouped by {by}, ranked by recoverable "
             f"time · ceilings of {doc['machine']['id']}")
    table = Table(title=literal(title), title_justify="left", caption=literal(footer(doc)),
                  caption_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("group", "roof", "model") else "right")
    for i, g in enumerate(doc.get("groups") or [], 1):
        table.add_row(*[literal(c) for c in group_row(i, g)])
    return table


def grouped_markdown(doc: Mapping[str, Any], limit: int | None = None) -> str:
    """The ranked groups as a Markdown table (the first `limit` rows), footer below."""
    groups = list(doc.get("groups") or [])
    rows = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for i, g in enumerate(groups[:limit] if limit else groups, 1):
        rows.append("| " + " | ".join(md(c) for c in group_row(i, g)) + " |")
    return "\n".join(rows) + "\n\n" + md(footer(doc)) + "\n"
