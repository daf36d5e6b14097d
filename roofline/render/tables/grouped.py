"""The table `roofline profile` and `roofline import ncu --group-by` print: one row per group, ranked by
recoverable time, with the program's totals as the footer (also as Markdown, for the README and reviews).

Groups and the program line are read typed (roofline.records.groups: Group, Program; issue 30), from a results
document or from the rows of `report`'s group report (a dict file format the gates write, which carries each group's
figures as written). The timeline's `step` block is shown as written, as roofline.records.timeline keeps it."""

from __future__ import annotations

from typing import Any, Mapping, NamedTuple, Sequence
import xml.etree.ElementTree as ET
import json

from rich.table import Table

from roofline.ncu.halfprec import roof_text
from roofline.render.tables.fit import droppable
from roofline.render.text import literal, md, styled, xml
from roofline.records.document import ResultsDocument
from roofline.records.groups import Group, Program
from roofline.model.units import format_bytes, format_count, format_flops, format_fraction, format_rate, format_time

_DROP_ORDER = ("model", "#", "intensity", "FLOPs", "DRAM bytes", "achieved", "achieved BW", "SOL time", "launches",
               "roof", "share")  # what a narrow terminal leaves out first (roofline.render.tables.fit)
COLUMNS = ("#", "group", "launches", "time", "share", "FLOPs", "DRAM bytes", "intensity", "achieved",
           "achieved BW", "roof", "of ceiling", "SOL time", "recoverable", "model")


def _model_cell(g: Group) -> str:
    """'2MNK 1.00x' (counter FLOPs over the model's), 'bytes 2.3x !' (flagged), or ''."""
    cells = []
    if g.flops_ratio is not None:
        cells.append(f"FLOPs {g.flops_ratio:.2f}x")
    if g.bytes_ratio is not None:
        cells.append(f"bytes {g.bytes_ratio:.2f}x" + (" !" if g.flag else ""))
    return ", ".join(cells)


MIXED_ROOF = "roof +: work on more than one roof, timed at each; the roof shown holds most of it"


class Grouped(NamedTuple):
    """What the grouped table reads of a document: its device, launch count, spec, where its figures came from,
    its groups and program typed, and the timeline's step as written."""

    device_name: str
    launches: int
    machine_id: str | None
    source_with: Any
    groups: Sequence[Group]
    program: Program | None
    step: Mapping[str, Any] | None

    @classmethod
    def of(cls, doc: ResultsDocument | Mapping[str, Any]) -> "Grouped":
        """A ResultsDocument's parts; a dict is a producer's document (profile, import ncu/torch, a rank's part of
        an import) read here once, without building a typed entry per launch (an import may hold 38,000)."""
        if isinstance(doc, ResultsDocument):
            timeline = doc.timeline
            return cls(doc.device_name, len(doc.kernels), doc.machine_id, doc.source_with, doc.grouped(),
                       doc.written_program(), timeline.step if timeline else None)
        stored, timeline, block = doc.get("program"), doc.get("timeline"), doc.get("source")
        step = timeline.get("step") if isinstance(timeline, dict) else None
        return cls(str((doc.get("device") or {}).get("name")), len(doc.get("kernels") or ()),
                   (doc.get("machine") or {}).get("id"), block.get("with") if isinstance(block, dict) else None,
                   Group.all_of(doc.get("groups")), Program.as_written(stored) if stored else None,
                   step if isinstance(step, dict) else None)


def _group(g: Group | Mapping[str, Any]) -> Group:
    return g if isinstance(g, Group) else Group.from_checked(g)


def group_row(rank: int, g: Group | Mapping[str, Any]) -> list[str]:
    """A group's cells; a report row or a group block as written is read as its typed Group."""
    g = _group(g)
    roof = roof_text(g.roof, g.dtype) + (" +" if g.mixed else "")
    return [str(rank), str(g.name), str(g.launches), format_time(g.time), f"{g.share:.1%}",
            format_count(g.flops), format_bytes(g.bytes),
            "-" if g.intensity is None else f"{g.intensity:.3g}", format_flops(g.achieved_flops),
            format_rate(g.achieved_bandwidth), roof, format_fraction(g.fraction_of_ceiling),
            format_time(g.sol_time), format_time(g.recoverable_time), _model_cell(g)]


def footer(doc: "ResultsDocument | Grouped | Mapping[str, Any]") -> str:
    """The program line under a grouped table; '' for a document without a program block."""
    view = doc if isinstance(doc, Grouped) else Grouped.of(doc)
    return program_line(view.program, view.step) if view.program is not None else ""


def program_line(p: Program, step: Mapping[str, Any] | None) -> str:
    """The program's totals as the stored block gives them, and the step over its wall time where known."""
    top = p.top_share_of_recoverable
    recoverable = (f"recoverable {format_time(p.recoverable_time)}"
                   + (f" ({top:.0%} of it in the top {p.top} groups)" if top is not None else ""))
    if p.gpu_time is None:  # an ncu profile: every launch is in the groups
        return (f"program: GPU time {format_time(p.time)}, speed-of-light time {format_time(p.sol_time)}, "
                f"time-weighted fraction of ceiling {p.fraction_of_ceiling:.1%}, {recoverable}"
                + (f"; {p.unmodelled_share:.1%} of GPU time ({format_time(p.unmodelled_time)}) has no model "
                   "and is not in these groups" if p.unmodelled_share is not None else ""))
    # an imported trace: the GPU time is every event's, modelled or not, and each share is of it
    line = (f"program: GPU time {format_time(p.gpu_time)} (every GPU event), of it "
            f"{p.unmodelled_share:.1%} ({format_time(p.unmodelled_time)}) with no model and in no group; the "
            f"modelled {format_time(p.time)} at {p.fraction_of_ceiling:.1%} of ceiling (time-weighted over "
            f"kernel time), speed-of-light time {format_time(p.sol_time)}, {recoverable}")
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


def grouped_table(doc: ResultsDocument | Mapping[str, Any]) -> Any:
    view = Grouped.of(doc)
    by = view.groups[0].by if view.groups else "?"
    title = (f"{view.device_name} · {view.launches} launches grouped by {by}, ranked by recoverable "
             f"time · ceilings of {view.machine_id}")
    source = view.source_with  # `profile`: counted or modelled figures; any JSON in a file someone wrote
    if isinstance(source, str) and source in SOURCES:
        title += f" · {SOURCES[source]}"
    mixed = [MIXED_ROOF] if any(g.mixed for g in view.groups) else []
    caption = "\n".join(x for x in (footer(view), *mixed) if x)
    table = Table(title=literal(title), title_justify="left", caption=literal(caption), caption_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("group", "roof", "model") else "right")
    for i, g in enumerate(view.groups, 1):
        table.add_row(*[literal(c) for c in group_row(i, g)])
    return droppable(table, *_DROP_ORDER)


def grouped_markdown(doc: ResultsDocument | Mapping[str, Any], limit: int | None = None) -> str:
    """The ranked groups as a Markdown table (the first `limit` rows), footer below."""
    view = Grouped.of(doc)
    groups = list(view.groups)
    rows = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for i, g in enumerate(groups[:limit] if limit else groups, 1):
        rows.append("| " + " | ".join(md(c) for c in group_row(i, g)) + " |")
    mixed = ["", md(MIXED_ROOF)] if any(g.mixed for g in groups) else []
    return "\n".join(rows) + "\n\n" + "\n".join([md(footer(view)), *mixed]) + "\n"


# ---- `roofline report` of grouped profiles (roofline.gates.groups.group_report) ----------------------------


def _program_line(p: Mapping[str, Any]) -> str:
    shown = program_line(Program.as_written(p), p.get("step") or None)
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
