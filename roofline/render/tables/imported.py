"""The table `roofline import ncu` prints: one row per imported kernel launch, with the roof its work decided. It
reads the typed results (KernelResult; issue 30)."""

from __future__ import annotations

from typing import Any, Mapping

from rich.table import Table

from roofline.ncu.halfprec import roof_text
from roofline.render.tables.fit import droppable
from roofline.render.tables.grouped import MIXED_ROOF
from roofline.records.document import ResultsDocument, as_document
from roofline.render.text import literal
from roofline.model.units import format_bytes, format_count, format_flops, format_fraction, format_rate, format_time


def imported_table(doc: ResultsDocument | Mapping[str, Any]) -> Any:
    """A row per launch of an import, read typed (issue 30); a producer's dict is taken in its typed form once."""
    doc = as_document(doc)
    title = f"{doc.device_name} · imported from ncu · ceilings of {doc.machine_id}"
    mixed = any(k.mixed_roof for k in doc.kernels)
    table = Table(title=literal(title), title_justify="left", caption=MIXED_ROOF if mixed else None,
                  caption_justify="left")
    for col in ("launch", "kernel", "roof", "time", "DRAM bytes", "FLOPs", "intensity", "achieved BW",
                "achieved FLOP/s", "of ceiling", "bound"):
        table.add_column(col, justify="left" if col in ("kernel", "roof", "bound") else "right")
    for k in doc.kernels:
        roof = roof_text(k.roof, k.dtype) + (" +" if k.mixed_roof else "")  # + : MIXED_ROOF
        table.add_row(
            str(k.launch), literal(k.name), roof, format_time(k.time_median),
            format_bytes(k.bytes), format_count(k.flops), f"{k.intensity:.3g}",
            format_rate(k.achieved_bandwidth), format_flops(k.achieved_flops),
            format_fraction(k.fraction_of_ceiling), k.bound,
        )
    return droppable(table, "intensity", "FLOPs", "DRAM bytes", "achieved FLOP/s", "achieved BW", "roof")
