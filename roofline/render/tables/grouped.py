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
from roofline.model.counts import counted
from roofline.render.tables.fit import droppable
from roofline.render.text import literal, md, styled, xml
from roofline.records.document import ResultsDocument
from roofline.records.coverage import (MATERIAL, MOSTLY_UNKNOWN, REASONS_SHOWN, AboveCeiling, Bounds, Unmodelled, above_ceiling,
                                       fraction_bounds, input_kind, utilisation_bounds)
from roofline.records.groups import Group, Program
from roofline.gates.groups import ABOVE
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
    its groups and program typed, the timeline's step as written, the work no model covers (issue 38: every share
    is of all the GPU time, and the unmodelled time is a row of its own) and the machine block."""

    device_name: str
    launches: int
    machine_id: str | None
    source_with: Any
    groups: Sequence[Group]
    program: Program | None
    step: Mapping[str, Any] | None
    unmodelled: Unmodelled | None = None
    machine: Mapping[str, Any] | None = None
    kind: str = "the results file"

    @classmethod
    def of(cls, doc: ResultsDocument | Mapping[str, Any]) -> "Grouped":
        """A ResultsDocument's parts; a dict is a producer's document (profile, import ncu/torch, a rank's part of
        an import) read here once, without building a typed entry per launch (an import may hold 38,000)."""
        if isinstance(doc, ResultsDocument):
            timeline = doc.timeline
            return cls(doc.device_name, len(doc.kernels), doc.machine_id, doc.source_with, doc.grouped(),
                       doc.written_program(), timeline.step if timeline else None, doc.unmodelled(), doc.machine,
                       input_kind(doc.extra))
        stored, timeline, block = doc.get("program"), doc.get("timeline"), doc.get("source")
        step = timeline.get("step") if isinstance(timeline, dict) else None
        kernels = doc.get("kernels") or ()
        modelled = sum(k.get("time_median") or 0.0 for k in kernels)
        unmodelled = Unmodelled.of_document(doc, modelled)
        gpu_time = unmodelled.gpu_time if unmodelled is not None else modelled
        return cls(str((doc.get("device") or {}).get("name")), len(kernels),
                   (doc.get("machine") or {}).get("id"), block.get("with") if isinstance(block, dict) else None,
                   Group.all_of(doc.get("groups"), gpu_time), Program.as_written(stored) if stored else None,
                   step if isinstance(step, dict) else None, unmodelled, doc.get("machine"), input_kind(doc))


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
            format_time(g.sol_time), _recoverable(g.recoverable_time), _model_cell(g)]


def _recoverable(time: float) -> str:
    """A group faster than its roof has nothing to recover: its negative 'recoverable' time is the error its verdict
    (above-ceiling) names, not time to win back."""
    return "–" if time < 0 else format_time(time)


UNMODELLED = "unmodelled"


def unmodelled_rows(u: Unmodelled | None) -> list[list[str]]:
    """The work no model covers as rows under the groups, one per reason (the first REASONS_SHOWN, the rest in one
    row), each with its time and its share of all the GPU time; none where nothing is unmodelled."""
    if u is None or not u.reasons:
        return []
    shown, rest = u.reasons[:REASONS_SHOWN], u.reasons[REASONS_SHOWN:]
    rows = [_unmodelled_row(r.text, r.events, r.time, r.share) for r in shown]
    if rest:
        time = sum(r.time for r in rest)
        rows.append(_unmodelled_row(f"{counted(len(rest), 'more reason')}: " + "; ".join(r.why for r in rest[:3]),
                                    sum(r.events for r in rest), time, time / u.gpu_time if u.gpu_time else 0.0))
    return rows


def _unmodelled_row(why: str, events: int, time: float, share: float) -> list[str]:
    return ["–", f"{UNMODELLED}: {why}", str(events), format_time(time), f"{share:.1%}", "–", "–", "–", "–", "–",
            "–", "no model", "–", "–", "no model"]


def unmodelled_line(u: Unmodelled | None) -> str:
    """'unmodelled: 1.02 ms, 27.1% of GPU time: no model for aten::_fused_adamw_ (1.00 ms, 26.6%); ...' or ''."""
    if u is None or not u.reasons:
        return ""
    parts = [f"{r.text} ({format_time(r.time)}, {r.share:.1%})" for r in u.reasons[:REASONS_SHOWN]]
    more = len(u.reasons) - REASONS_SHOWN
    return (f"{UNMODELLED}: {format_time(u.time)}, {u.share:.1%} of GPU time: " + "; ".join(parts)
            + (f"; and {counted(more, 'more reason')}" if more > 0 else ""))


def bounded(b: Bounds, name: str) -> str:
    """A whole-program figure with what the unmodelled time makes of it: the figure where at most 1% of the GPU time
    has no model; 'n/a' where most has; else its lower bound, '≥ 40.0%' (coverage.fraction_bounds and
    utilisation_bounds say why the low end is the valid bound), with the upper one beside it."""
    if b.modelled is None and b.low is None:
        return f"{name} n/a"
    if b.exact:
        return f"{name} {format_fraction(b.modelled)}"
    if b.unknown:
        return f"{name} n/a"
    high = f" (≤ {format_fraction(b.high)})" if b.high is not None else ""
    return f"{name} ≥ {format_fraction(b.low)}{high}"


def utilisation(b: Bounds, name: str, peak: str) -> str:
    """MFU or HFU: never a figure above 100% (no GPU beats its peak: the FLOP model over-counts or the peak is not
    this GPU's), else as bounded() gives it."""
    if b.low is not None and b.low > 1.0:
        return (f"{name} not shown: the modelled FLOPs are {b.low:.0%} of what the {peak} peak allows in the wall "
                "time, which no GPU does (the FLOP model over-counts, or the peak is not this GPU's)")
    return bounded(b, name)


def footer(doc: "ResultsDocument | Grouped | Mapping[str, Any]") -> str:
    """The program line under a grouped table; '' for a document without a program block."""
    view = doc if isinstance(doc, Grouped) else Grouped.of(doc)
    return program_line(view.program, view.step, view.machine, view.kind) if view.program is not None else ""


def program_above(p: Program, machine: Mapping[str, Any] | None, kind: str) -> AboveCeiling | None:
    """The program's own above-ceiling finding: its time-weighted fraction over the modelled work beyond the roof
    (bound unknown for a mix of groups: the spec or the model, or the L2 when its bytes per launch fit)."""
    return above_ceiling(p.fraction_of_ceiling, None, None, machine, kind)


def program_line(p: Program, step: Mapping[str, Any] | None, machine: Mapping[str, Any] | None = None,
                 kind: str = "the results file", show_above: bool = True) -> str:
    """The program's totals as the stored block gives them, and the step over its wall time where known. Where
    more than 1% of the GPU time has no model, the program's fraction of ceiling is given as a bound (or n/a)."""
    top = p.top_share_of_recoverable
    recoverable = (f"recoverable {format_time(p.recoverable_time)}"
                   + (f" ({top:.0%} of it in the top {p.top} groups)" if top is not None else ""))
    above = program_above(p, machine, kind)
    above_text = f"; {above.text}" if above is not None and show_above else ""
    if p.gpu_time is None:  # an ncu profile: every launch is in the groups
        return (f"program: GPU time {format_time(p.time)}, speed-of-light time {format_time(p.sol_time)}, "
                f"time-weighted fraction of ceiling {format_fraction(p.fraction_of_ceiling)}, {recoverable}"
                + (f"; {p.unmodelled_share:.1%} of GPU time ({format_time(p.unmodelled_time)}) has no model "
                   "and is not in these groups" if p.unmodelled_share is not None else "") + above_text)
    # an imported trace: the GPU time is every event's, modelled or not, and each share is of it
    b = fraction_bounds(p.sol_time, p.time, p.unmodelled_time or 0.0)
    whole = bounded(b, "time-weighted fraction of ceiling over all GPU time")
    line = (f"program: GPU time {format_time(p.gpu_time)} (every GPU event), of it "
            f"{p.unmodelled_share:.1%} ({format_time(p.unmodelled_time)}) with no model and in no group; {whole}"
            + ("" if b.exact else " (the unmodelled work's own fraction is unknown)")
            + ("" if b.exact else f"; the modelled {format_time(p.time)} alone at "
                                  f"{format_fraction(p.fraction_of_ceiling)}")
            + f", speed-of-light time {format_time(p.sol_time)}, {recoverable}" + above_text)
    return line + (f"; {step_text(step)}" if isinstance(step, dict) else "")


def step_text(s: Mapping[str, Any]) -> str:
    """The step over its wall time: 'step: wall time 16.0 ms, GPU idle 59.2%, 23.5% of ceiling over wall time,
    MFU 9.5%, HFU 9.5% of the bf16_tensor peak (989 TFLOP/s)'. Where more than 1% of the GPU time has no model,
    each is a lower bound ('≥'), or n/a where most of it has none; an MFU or HFU above 100% is not shown."""
    wall_time = s["wall_time"]
    wall = format_time(wall_time) + (f" over {s['devices']} devices" if s.get("devices", 1) > 1 else "")
    text = f"step: wall time {wall}, GPU idle {s['idle_share']:.1%}"
    lost = float(s.get("unmodelled_time") or 0.0)
    gpu_time = float(s.get("gpu_time") or 0.0)
    if s.get("fraction_of_ceiling_wall") is not None:
        # sol_u >= 0: the modelled speed-of-light time over the wall time is a lower bound; no more than T_u more
        b = utilisation_bounds(s["fraction_of_ceiling_wall"], lost, wall_time, gpu_time)
        text += ", " + bounded(b, "of ceiling over wall time")
    peak = s.get("peak")
    if s.get("mfu") is not None and isinstance(peak, dict):
        roof = f"the {peak['roof']} peak ({format_flops(peak['flops'])})"
        mfu = utilisation(utilisation_bounds(s["mfu"], lost, wall_time, gpu_time), "MFU", roof)
        hfu = utilisation(utilisation_bounds(s.get("hfu"), lost, wall_time, gpu_time), "HFU", roof)
        text += (f", {mfu} and {hfu} of {roof}; MFU counts matrix ops' FLOPs, HFU every modelled FLOP")
    share = lost / gpu_time if gpu_time > 0 else 0.0
    if share > MATERIAL:
        text += (f" ({share:.1%} of the GPU time has no model: " + ("most is unknown, so n/a"
                 if share > MOSTLY_UNKNOWN else "its FLOPs can only add, so lower bounds (≥)") + ")")
    return text


SOURCES = {"ncu": "ncu counters", "torch": "torch trace, op shape models"}


def _pass(row: Mapping[str, Any], long: bool = False) -> str:
    """A passing group's verdict; one the launch floor carried says so (roofline.gates.groups)."""
    if not row.get("launch_bound"):
        return "pass"
    return "pass (launch-bound: SOL below the launch floor)" if long else "pass (launch-bound)"


def grouped_table(doc: ResultsDocument | Mapping[str, Any]) -> Any:
    view = Grouped.of(doc)
    by = view.groups[0].by if view.groups else "?"
    title = (f"{view.device_name} · {counted(view.launches, 'launch')} grouped by {by}, ranked by recoverable "
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
    for cells in unmodelled_rows(view.unmodelled):
        table.add_row(*[styled(c, "dim") for c in cells])
    return droppable(table, *_DROP_ORDER)


def grouped_markdown(doc: ResultsDocument | Mapping[str, Any], limit: int | None = None) -> str:
    """The ranked groups as a Markdown table (the first `limit` rows), footer below."""
    view = Grouped.of(doc)
    groups = list(view.groups)
    rows = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for i, g in enumerate(groups[:limit] if limit else groups, 1):
        rows.append("| " + " | ".join(md(c) for c in group_row(i, g)) + " |")
    for cells in unmodelled_rows(view.unmodelled):
        rows.append("| " + " | ".join(md(c) for c in cells) + " |")
    mixed = ["", md(MIXED_ROOF)] if any(g.mixed for g in groups) else []
    return "\n".join(rows) + "\n\n" + "\n".join([md(footer(view)), *mixed]) + "\n"


# ---- `roofline report` of grouped profiles (roofline.gates.groups.group_report) ----------------------------


def _program_line(p: Mapping[str, Any]) -> str:
    """A report's program row as its line: the totals (a bound where work has no model), then the verdict and its
    reasons; the above-ceiling finding is the verdict's, not repeated in the totals."""
    shown = program_line(Program.as_written(p), p.get("step") or None, show_above=False)
    if p["failures"]:
        return shown + f" · {p['verdict'].upper()}: {'; '.join(p['failures'])}"
    if p["verdict"] == ABOVE:
        return shown + f" · {ABOVE.upper()}: {'; '.join(p.get('notes') or ())}"
    return shown


def _report_unmodelled(p: Mapping[str, Any]) -> Unmodelled | None:
    block = p.get("unmodelled")
    return Unmodelled.from_json(block) if isinstance(block, dict) else None


def report_tables(report: Mapping[str, Any]) -> list[Any]:
    """One rich table per device: the ranked groups with their verdicts, the unmodelled time's rows under them,
    the program line as its caption."""
    tables = []
    for p in report["programs"]:
        rows = [r for r in report["rows"] if r["device"] == p["device"]]
        caption = "\n".join(x for x in (_program_line(p), *(_row_notes(rows))) if x)
        table = Table(title=literal(f"{p['device']} · groups ranked by recoverable time · ceilings of "
                                    f"{p.get('machine')}"), title_justify="left",
                      caption=literal(caption), caption_justify="left")
        for col in (*COLUMNS, "verdict"):
            table.add_column(col, justify="left" if col in ("group", "roof", "model", "verdict") else "right")
        for r in rows:
            verdict = (styled("FAIL", "bold red") if r["verdict"] == "fail" else
                       styled(ABOVE, "bold yellow") if r["verdict"] == ABOVE else literal(_pass(r)))
            table.add_row(*[literal(c) for c in group_row(r["rank"], r)], verdict)
        for cells in unmodelled_rows(_report_unmodelled(p)):
            table.add_row(*[styled(c, "dim") for c in cells], styled("not judged", "dim"))
        tables.append(droppable(table, *_DROP_ORDER))
    return tables


def _row_notes(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The reasons of the groups above their ceilings, one line each (the verdict cell says only the verdict)."""
    return [f"{r['rank']}. {r['name']}: {note}" for r in rows if r["verdict"] == ABOVE for note in r.get("notes") or ()]


def report_markdown(report: Mapping[str, Any]) -> str:
    out = []
    for p in report["programs"]:
        out.append(f"### {md(p['device'])}\n")
        out.append("| " + " | ".join((*COLUMNS, "verdict")) + " |")
        out.append("|" + "|".join("---" for _ in range(len(COLUMNS) + 1)) + "|")
        for r in (r for r in report["rows"] if r["device"] == p["device"]):
            if r["failures"]:
                verdict = "**FAIL** " + md(r["failures"][0])
            elif r["verdict"] == ABOVE:
                verdict = f"**{ABOVE}** " + md("; ".join(r.get("notes") or ()))
            else:
                verdict = md(_pass(r, long=True))
            out.append("| " + " | ".join(md(c) for c in group_row(r["rank"], r)) + f" | {verdict} |")
        for cells in unmodelled_rows(_report_unmodelled(p)):
            out.append("| " + " | ".join(md(c) for c in cells) + " | not judged |")
        out.append("\n" + md(_program_line(p)) + "\n")
    s = report["summary"]
    above = (f" {counted(s['above_ceiling'], 'figure')} above their ceiling (not a pass: see the verdicts)."
             if s.get("above_ceiling") else "")
    out.append(("All gates hold." if s["ok"] else f"**Gates failed**: {counted(s['failed_groups'], 'group')}, "
                                                  f"{counted(s['failed_programs'], 'program')}.") + above)
    return "\n".join(out) + "\n"


def report_junit(report: Mapping[str, Any]) -> str:
    """One testsuite per device: a testcase per group, one per unmodelled reason and one for the program. A group
    or program above its ceiling is 'skipped' with its reason (its figure cannot be judged: never a pass), unless
    --strict-model failed it; unmodelled time is 'skipped' too (no model to judge it by)."""
    suites = ET.Element("testsuites", name="roofline profile")
    for p in report["programs"]:
        rows = [r for r in report["rows"] if r["device"] == p["device"]]
        cases: list[tuple[str, Mapping[str, Any]]] = [(f"{r['rank']}. {r['name']}", r) for r in rows]
        unmodelled = _report_unmodelled(p)
        lost = [(f"{UNMODELLED}: {r.why}", {"time": r.time, "failures": [], "verdict": "skip",
                                            "notes": [f"{r.text}: {r.share:.1%} of GPU time, no model"]})
                for r in (unmodelled.reasons if unmodelled is not None else ())]
        cases += [*lost, ("program", p)]
        suite = ET.SubElement(suites, "testsuite", name=xml(p["device"]), tests=str(len(cases)),
                              failures=str(sum(c["verdict"] == "fail" for _, c in cases)),
                              skipped=str(sum(c["verdict"] in (ABOVE, "skip") for _, c in cases)))
        for name, case in cases:
            element = ET.SubElement(suite, "testcase", classname=xml(p["device"]), name=xml(name),
                                    time=f"{case['time']:.9f}")
            if case["failures"]:
                ET.SubElement(element, "failure", message=xml(case["failures"][0]))
            elif case["verdict"] in (ABOVE, "skip"):
                prefix = f"{ABOVE}: " if case["verdict"] == ABOVE else ""
                ET.SubElement(element, "skipped", message=xml(prefix + "; ".join(case.get("notes") or ())))
    return ET.tostring(suites, encoding="unicode") + "\n"


def report_github_benchmark(report: Mapping[str, Any]) -> str:
    """github-action-benchmark's customSmallerIsBetter: each group's time in microseconds."""
    entries = [{"name": f"{r['name']} ({r['device']})", "unit": "us", "value": r["time"] * 1e6,
                "extra": f"{counted(r['launches'], 'launch')}, {r['fraction_of_ceiling']:.1%} of ceiling"}
               for r in report["rows"]]
    entries += [{"name": f"program ({p['device']})", "unit": "us", "value": p["time"] * 1e6}
                for p in report["programs"]]
    entries += [{"name": f"{UNMODELLED} ({p['device']})", "unit": "us", "value": p["unmodelled"]["time"] * 1e6,
                 "extra": f"{p['unmodelled']['share']:.1%} of GPU time, no model"}
                for p in report["programs"] if isinstance(p.get("unmodelled"), dict) and p["unmodelled"]["time"]]
    return json.dumps(entries, indent=2) + "\n"
