"""The table `roofline profile` and `roofline import ncu --group-by` print: one row per group, ranked by
recoverable time, with the program's totals as the footer (also as Markdown, for the README and reviews)."""

from __future__ import annotations

from typing import Any, Mapping
import xml.etree.ElementTree as ET
import json

from rich.table import Table

from roofline.ncu.halfprec import roof_text
from roofline.render.tables.fit import droppable
from roofline.render.text import literal, md, styled, xml
from roofline.model.units import format_bytes, format_count, format_flops, format_fraction, format_rate, format_time

_DROP_ORDER = ("model", "#", "intensity", "FLOPs", "DRAM bytes", "achieved", "achieved BW", "SOL time", "launches",
               "roof", "share")  # what a narrow terminal leaves out first (roofline.render.tables.fit)
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


MIXED_ROOF = "roof +: work on more than one roof, timed at each; the roof shown holds most of it"


def group_row(rank: int, g: Mapping[str, Any]) -> list[str]:
    roof = roof_text(g["roof"], g.get("dtype")) + (" +" if len(g.get("roofs") or []) > 1 else "")
    return [str(rank), str(g["name"]), str(g["launches"]), format_time(g["time"]), f"{g['share']:.1%}",
            format_count(g["flops"]), format_bytes(g["bytes"]),
            "-" if g.get("intensity") is None else f"{g['intensity']:.3g}", format_flops(g["achieved_flops"]),
            format_rate(g["achieved_bandwidth"]), roof, format_fraction(g["fraction_of_ceiling"]),
            format_time(g["sol_time"]), format_time(g["recoverable_time"]), _model_cell(g)]


def footer(doc: Mapping[str, Any]) -> str:
    p = doc.get("program") or {}
    if not p:
        return ""
    top = p.get("top_share_of_recoverable")
    recoverable = (f"recoverable {format_time(p['recoverable_time'])}"
                   + (f" ({top:.0%} of it in the top {p['top']} groups)" if top is not None else ""))
    timeline = doc.get("timeline")
    step = timeline.get("step") if isinstance(timeline, dict) else None
    if p.get("gpu_time") is None:  # an ncu profile: every launch is in the groups
        return (f"program: GPU time {format_time(p['time'])}, speed-of-light time {format_time(p['sol_time'])}, "
                f"time-weighted fraction of ceiling {p['fraction_of_ceiling']:.1%}, {recoverable}"
                + (f"; {p['unmodelled_share']:.1%} of GPU time ({format_time(p['unmodelled_time'])}) has no model "
                   "and is not in these groups" if p.get("unmodelled_share") is not None else ""))
    # an imported trace: the GPU time is every event's, modelled or not, and each share is of it
    line = (f"program: GPU time {format_time(p['gpu_time'])} (every GPU event), of it "
            f"{p['unmodelled_share']:.1%} ({format_time(p['unmodelled_time'])}) with no model and in no group; the "
            f"modelled {format_time(p['time'])} at {p['fraction_of_ceiling']:.1%} of ceiling (time-weighted over "
            f"kernel time), speed-of-light time {format_time(p['sol_time'])}, {recoverable}")
    return line + (f"; {step_text(step)}" if isinstance(step, dict) else "")


def step_text(s: Mapping[str, Any]) -> str:
    """The step over its wall time: 'step: wall time 16.0 ms, GPU idle 59.2%, 23.5% of ceiling over wall time,
    MFU 9.5%, HFU 9.5% of the bf16_tensor peak (989 TFLOP/s)'."""
    wall = format_time(s["wall_time"]) + (f" over {s['devices']} devices" if s.get("devices", 1) > 1 else "")
    text = f"step: wall time {wall}, GPU idle {s['idle_share']:.1%}"
    if s.get("fraction_of_ceiling_wall") is not None:
        text += f", {s['fraction_of_ceiling_wall']:.1%} of ceiling over wall time"
        if s.get("unmodelled_time"):
            text += " (unmodelled work counted as none)"
    peak = s.get("peak")
    if s.get("mfu") is not None and isinstance(peak, dict):
        text += (f", MFU {s['mfu']:.1%} and HFU {s['hfu']:.1%} of the {peak['roof']} peak "
                 f"({format_flops(peak['flops'])}; MFU counts matrix ops' FLOPs, HFU every modelled FLOP)")
    return text


SOURCES = {"ncu": "ncu counters", "torch": "torch trace, op shape models"}


def grouped_table(doc: Mapping[str, Any]) -> Any:
    by = doc["groups"][0]["by"] if doc.get("groups") else "?"
    title = (f"{doc['device']['name']} · {len(doc['kernels'])} launches grouped by {by}, ranked by recoverable "
             f"time · ceilings of {doc['machine']['id']}")
    block = doc.get("source")  # `profile`: counted or modelled figures; any JSON in a file someone wrote
    source = block.get("with") if isinstance(block, dict) else None
    if source in SOURCES:
        title += f" · {SOURCES[source]}"
    groups = doc.get("groups") or []
    mixed = [MIXED_ROOF] if any(len(g.get("roofs") or []) > 1 for g in groups) else []
    caption = "\n".join(x for x in (footer(doc), *mixed) if x)
    table = Table(title=literal(title), title_justify="left", caption=literal(caption), caption_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("group", "roof", "model") else "right")
    for i, g in enumerate(doc.get("groups") or [], 1):
        table.add_row(*[literal(c) for c in group_row(i, g)])
    return droppable(table, *_DROP_ORDER)


def grouped_markdown(doc: Mapping[str, Any], limit: int | None = None) -> str:
    """The ranked groups as a Markdown table (the first `limit` rows), footer below."""
    groups = list(doc.get("groups") or [])
    rows = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for i, g in enumerate(groups[:limit] if limit else groups, 1):
        rows.append("| " + " | ".join(md(c) for c in group_row(i, g)) + " |")
    mixed = ["", md(MIXED_ROOF)] if any(len(g.get("roofs") or []) > 1 for g in groups) else []
    return "\n".join(rows) + "\n\n" + "\n".join([md(footer(doc)), *mixed]) + "\n"


# ---- `roofline report` of grouped profiles (roofline.gates.groups.group_report) ----------------------------


def _program_line(p: Mapping[str, Any]) -> str:
    shown = footer({"program": p, **({"timeline": {"step": p["step"]}} if p.get("step") else {})})
    return shown + (f" · {p['verdict'].upper()}: {'; '.join(p['failures'])}" if p["failures"] else "")


def report_tables(report: Mapping[str, Any]) -> list[Any]:
    """One rich table per device: the ranked groups with their verdicts, the program line as its caption."""
    tables = []
    for p in report["programs"]:
        rows = [r for r in report["rows"] if r["device"] == p["device"]]
        table = Table(title=literal(f"{p['device']} · groups ranked by recoverable time · ceilings of "
                                    f"{p.get('machine')}"), title_justify="left",
                      caption=literal(_program_line(p)), caption_justify="left")
        for col in (*COLUMNS, "verdict"):
            table.add_column(col, justify="left" if col in ("group", "roof", "model", "verdict") else "right")
        for r in rows:
            verdict = styled("FAIL", "bold red") if r["verdict"] == "fail" else literal("pass")
            table.add_row(*[literal(c) for c in group_row(r["rank"], r)], verdict)
        tables.append(droppable(table, *_DROP_ORDER))
    return tables


def report_markdown(report: Mapping[str, Any]) -> str:
    out = []
    for p in report["programs"]:
        out.append(f"### {md(p['device'])}\n")
        out.append("| " + " | ".join((*COLUMNS, "verdict")) + " |")
        out.append("|" + "|".join("---" for _ in range(len(COLUMNS) + 1)) + "|")
        for r in (r for r in report["rows"] if r["device"] == p["device"]):
            verdict = "**FAIL** " + md(r["failures"][0]) if r["failures"] else "pass"
            out.append("| " + " | ".join(md(c) for c in group_row(r["rank"], r)) + f" | {verdict} |")
        out.append("\n" + md(_program_line(p)) + "\n")
    ok = report["summary"]["ok"]
    out.append("All gates hold." if ok else f"**Gates failed**: {report['summary']['failed_groups']} group(s), "
                                            f"{report['summary']['failed_programs']} program(s).")
    return "\n".join(out) + "\n"


def report_junit(report: Mapping[str, Any]) -> str:
    """One testsuite per device: a testcase per group and one for the program."""
    suites = ET.Element("testsuites", name="roofline profile")
    for p in report["programs"]:
        rows = [r for r in report["rows"] if r["device"] == p["device"]]
        cases = [(f"{r['rank']}. {r['name']}", r) for r in rows] + [("program", p)]
        suite = ET.SubElement(suites, "testsuite", name=xml(p["device"]), tests=str(len(cases)),
                              failures=str(sum(c["verdict"] == "fail" for _, c in cases)))
        for name, case in cases:
            element = ET.SubElement(suite, "testcase", classname=xml(p["device"]), name=xml(name),
                                    time=f"{case['time']:.9f}")
            if case["failures"]:
                ET.SubElement(element, "failure", message=xml(case["failures"][0]))
    return ET.tostring(suites, encoding="unicode") + "\n"


def report_github_benchmark(report: Mapping[str, Any]) -> str:
    """github-action-benchmark's customSmallerIsBetter: each group's time in microseconds."""
    entries = [{"name": f"{r['name']} ({r['device']})", "unit": "us", "value": r["time"] * 1e6,
                "extra": f"{r['launches']} launches, {r['fraction_of_ceiling']:.1%} of ceiling"}
               for r in report["rows"]]
    entries += [{"name": f"program ({p['device']})", "unit": "us", "value": p["time"] * 1e6}
                for p in report["programs"]]
    return json.dumps(entries, indent=2) + "\n"
