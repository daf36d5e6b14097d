"""The tables `roofline import torch` prints: per launch (--group-by none), or the groups, one table per rank and
the merged one when several traces were imported. The launches are read typed (KernelResult; issue 30); the
per-rank blocks (`ranks`) and the timeline are the importer's trace summaries, shown as written."""

from __future__ import annotations

from typing import Any, Mapping

from roofline.render.tables.fit import droppable
from roofline.render.text import literal, styled
from roofline.model.units import format_bytes, format_count, format_fraction, format_time
from rich.table import Table
from roofline.render.tables.grouped import grouped_table, step_text, unmodelled_line, unmodelled_rows
from roofline.ncu.importer import short_name
from roofline.records.document import ResultsDocument, as_document


def launch_table(doc: ResultsDocument | Mapping[str, Any]) -> Any:
    """A row per launch (--group-by none), read typed (issue 30); a producer's dict is taken typed once."""
    doc = as_document(doc)
    table = Table(title=literal(f"{doc.device_name} · imported from PyTorch profiler traces · ceilings of "
                                f"{doc.machine_id}"), title_justify="left")
    for col in ("launch", "rank", "kernel", "op", "roof", "time", "bytes", "FLOPs", "of ceiling", "bound"):
        table.add_column(col, justify="left" if col in ("kernel", "op", "roof", "bound") else "right")
    for k in doc.kernels:
        table.add_row(str(k.launch), str(k.rank), literal(k.name), literal(k.op), k.roof,
                      format_time(k.time_median), format_bytes(k.bytes), format_count(k.flops),
                      format_fraction(k.fraction_of_ceiling), k.bound)
    unmodelled = doc.unmodelled()
    for cells in unmodelled_rows(unmodelled):  # its time and share of all GPU time, by reason (issue 38)
        table.add_row("–", "–", styled(cells[1], "dim"), "–", "–", styled(f"{cells[3]} ({cells[4]})", "dim"),
                      "–", "–", "no model", "–")
    line = unmodelled_line(unmodelled)
    if line:
        table.caption, table.caption_justify = literal(line), "left"
    return droppable(table, "FLOPs", "bytes", "rank", "roof", "op")


def tables(doc: Mapping[str, Any]) -> list[Any]:
    """Each rank's grouped table, then the merged one (or the launch table without groups)."""
    if not doc.get("groups"):
        return [launch_table(doc)]
    out = []
    steps = {t["rank"]: t.get("step") for t in (doc.get("timeline") or {}).get("ranks") or []}
    for r in doc.get("ranks") or []:
        if r["groups"]:
            sub = {**doc, "device": {**doc["device"], "name": f"rank {r['rank']} ({doc['device']['name']})"},
                   "kernels": [k for k in doc["kernels"] if k["rank"] == r["rank"]], "groups": r["groups"],
                   "program": r["program"],
                   "unmodelled": [u for u in doc.get("unmodelled") or () if u.get("rank") == r["rank"]]}
            sub.pop("timeline", None)  # the whole document's step is the merged table's; this rank's is its own
            if steps.get(r["rank"]):
                sub["timeline"] = {"step": steps[r["rank"]]}
            out.append(grouped_table(sub))
    merged = dict(doc)
    if doc.get("ranks"):
        merged["device"] = {**doc["device"], "name": f"all {len(doc['ranks'])} ranks ({doc['device']['name']})"}
    out.append(grouped_table(merged))
    return out


def _short(name: str | None, limit: int = 48) -> str:
    if not name:
        return "–"
    name = short_name(name)
    return name if len(name) <= limit else name[:limit - 1] + "…"


def _gap_text(g: Mapping[str, Any]) -> str:
    where = f" in {g['host_op']}" if g.get("host_op") else ""
    launched = f" (launched in {_short(g['launch_op'])})" if g.get("launch_op") else ""
    return (f"{format_time(g['duration'])} at {format_time(g['start'])}: {g['cause']}{where}, before "
            f"{_short(g.get('next'))}{launched}")


def timeline_tables(doc: Mapping[str, Any]) -> list[Any]:
    """The timeline section: each device's window, busy and idle time with the idle split by cause, launch delay
    and overlap; the largest gaps of the idlest device and the straggler under it. None without a timeline."""
    block = doc.get("timeline")
    if not isinstance(block, dict) or not block.get("devices"):
        return []
    devices = block["devices"]
    idlest = max(devices, key=lambda d: d["idle"])
    caption = [] if doc.get("groups") else [step_text(block["step"])]  # the groups' program line says it
    if idlest["gaps"]:
        where = f"rank {idlest['rank']} device {idlest['device']}" if len(devices) > 1 else "the GPU"
        caption.append(f"largest idle gaps on {where}: " + "; ".join(_gap_text(g) for g in idlest["gaps"][:3]))
    graphs = [d["graph_launch_delay"] for d in devices if d.get("graph_launch_delay")]
    if graphs:  # measured from the call's start: a cudaGraphLaunch returns long after its first kernel began
        n = sum(g["count"] for g in graphs)
        caption.append(f"CUDA graph launches (n={n}), cudaGraphLaunch start (or the end of the work queued before "
                       "it on its stream) to first kernel: " + "; ".join(
            f"p50 {format_time(g['p50'])} / p95 {format_time(g['p95'])}" for g in graphs)
            + " (the launch delay column covers the other launches)")
    s = block.get("straggler")
    if s:
        caption.append(f"straggler by {s['by']}: rank {s['rank']} ({format_time(s['busy'])}, "
                       f"{s['vs_median']:.2f}x the median rank)" if s.get("vs_median") else
                       f"straggler by {s['by']}: rank {s['rank']}")
    table = Table(title=literal("timeline · GPU busy = the union of kernels, copies and fills; idle = the window "
                                "less busy (HTA's definition)"), title_justify="left",
                  caption=literal("\n".join(caption)), caption_justify="left")
    columns = ("rank", "device", "streams", "window", "busy", "idle", "host-bound", "launch-bound", "sync",
               "other", "launch delay p50/p95", "overlap")
    for col in columns:
        table.add_column(col, justify="right")
    for d in devices:
        causes = d["idle_by_cause"]
        delay = d.get("launch_delay")
        table.add_row(str(d["rank"]), "–" if d["device"] is None else str(d["device"]), str(len(d["streams"])),
                      format_time(d["window"]), format_time(d["busy"]), format_fraction(d["idle_share"]),
                      *(format_time(causes.get(c, 0.0)) for c in ("host-bound", "launch-bound", "synchronisation",
                                                                   "other")),
                      f"{format_time(delay['p50'])} / {format_time(delay['p95'])}" if delay else "–",
                      format_fraction(d["overlap"]["concurrent_share"]))
    return [droppable(table, "streams", "other", "sync", "overlap", "launch delay p50/p95", "device")]
