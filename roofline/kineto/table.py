"""The tables `roofline import torch` prints: per launch (--group-by none), or the groups, one table per rank and
the merged one when several traces were imported."""

from __future__ import annotations

from typing import Any, Mapping

from rich.table import Table

from roofline.render.tables.fit import droppable
from roofline.render.text import literal
from roofline.model.units import format_bytes, format_count, format_fraction, format_time
from roofline.render.tables.grouped import grouped_table


def launch_table(doc: Mapping[str, Any]) -> Any:
    table = Table(title=literal(f"{doc['device']['name']} · imported from PyTorch profiler traces · ceilings of "
                                f"{doc['machine']['id']}"), title_justify="left")
    for col in ("launch", "rank", "kernel", "op", "roof", "time", "bytes", "FLOPs", "of ceiling", "bound"):
        table.add_column(col, justify="left" if col in ("kernel", "op", "roof", "bound") else "right")
    for k in doc["kernels"]:
        table.add_row(str(k["params"]["launch"]), str(k["rank"]), literal(k["name"]), literal(k["op"]), k["roof"],
                      format_time(k["time_median"]), format_bytes(k["bytes"]), format_count(k["flops"]),
                      format_fraction(k["fraction_of_ceiling"]), k["bound"])
    return droppable(table, "FLOPs", "bytes", "rank", "roof", "op")


def tables(doc: Mapping[str, Any]) -> list[Any]:
    """Each rank's grouped table, then the merged one (or the launch table without groups)."""
    if not doc.get("groups"):
        return [launch_table(doc)]
    out = []
    for r in doc.get("ranks") or []:
        if r["groups"]:
            sub = {**doc, "device": {**doc["device"], "name": f"rank {r['rank']} ({doc['device']['name']})"},
                   "kernels": [k for k in doc["kernels"] if k["rank"] == r["rank"]], "groups": r["groups"],
                   "program": r["program"]}
            out.append(grouped_table(sub))
    merged = dict(doc)
    if doc.get("ranks"):
        merged["device"] = {**doc["device"], "name": f"all {len(doc['ranks'])} ranks ({doc['device']['name']})"}
    out.append(grouped_table(merged))
    return out
