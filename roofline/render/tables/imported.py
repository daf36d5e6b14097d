"""The table `roofline import ncu` prints: one row per imported kernel launch, with the roof its work decided."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from roofline.ncu.halfprec import roof_text
from roofline.render.tables.fit import droppable
from roofline.render.tables.grouped import MIXED_ROOF
from roofline.render.text import literal
from roofline.model.units import format_bytes, format_count, format_flops, format_fraction, format_rate, format_time


def imported_table(doc: dict[str, Any]) -> Any:
    title = f"{doc['device']['name']} · imported from ncu · ceilings of {doc['machine']['id']}"
    mixed = any(len(k.get("work") or []) > 1 for k in doc["kernels"])
    table = Table(title=literal(title), title_justify="left", caption=MIXED_ROOF if mixed else None,
                  caption_justify="left")
    for col in ("launch", "kernel", "roof", "time", "DRAM bytes", "FLOPs", "intensity", "achieved BW",
                "achieved FLOP/s", "of ceiling", "bound"):
        table.add_column(col, justify="left" if col in ("kernel", "roof", "bound") else "right")
    for k in doc["kernels"]:
        roof = roof_text(k["roof"], k.get("dtype")) + (" +" if len(k.get("work") or []) > 1 else "")  # + : MIXED_ROOF
        table.add_row(
            str(k["params"]["launch"]), literal(k["name"]), roof, format_time(k["time_median"]),
            format_bytes(k["bytes"]), format_count(k["flops"]), f"{k['intensity']:.3g}",
            format_rate(k["achieved_bandwidth"]), format_flops(k["achieved_flops"]),
            format_fraction(k["fraction_of_ceiling"]), k["bound"],
        )
    return droppable(table, "intensity", "FLOPs", "DRAM bytes", "achieved FLOP/s", "achieved BW", "roof")
