"""The step of an imported trace in `report` (issue 38 item 6): the timeline `import torch` printed (GPU busy, window,
idle share split by cause, the largest gaps with their causes) and the step's MFU and HFU over wall time, in every
format report writes. The table is the timeline table `import` prints (roofline.render.tables.trace); Markdown and
JUnit say the same from the same pieces (step_text, the gap lines). No physics: the figures are the `timeline` block
as the results file holds it, carried by each program row of the group report (roofline.gates.groups)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any, Mapping

from roofline.model.units import format_fraction, format_time
from roofline.render.tables.grouped import step_text
from roofline.render.tables.trace import _gap_text, timeline_tables
from roofline.render.text import md, xml

GAPS = 3  # the largest gaps shown, as import's table shows them
_CAUSES = ("host-bound", "launch-bound", "synchronisation", "other")
STEP_PROPERTIES = ("wall_time", "gpu_time", "busy", "idle_share", "unmodelled_share", "fraction_of_ceiling_kernels",
                   "fraction_of_ceiling_wall", "mfu", "hfu")


def _timed(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [p for p in report["programs"] if isinstance(p.get("timeline"), dict)]


def _idlest(block: Mapping[str, Any]) -> Mapping[str, Any] | None:
    devices = block.get("devices") or []
    return max(devices, key=lambda d: d["idle"]) if devices else None


def gap_lines(block: Mapping[str, Any], limit: int = GAPS) -> list[str]:
    """The largest idle gaps of the idlest device, each with its cause: '1.78 ms at 5.78 ms: host-bound in ...'."""
    idlest = _idlest(block)
    return [_gap_text(g) for g in (idlest["gaps"][:limit] if idlest else [])]


def step_tables(report: Mapping[str, Any]) -> list[Any]:
    """import's timeline table for each program whose file holds a timeline (the step's line is the program's
    caption already, so the table's caption holds the gaps)."""
    out = []
    for p in _timed(report):
        out += timeline_tables({"timeline": p["timeline"], "groups": True})
    return out


def step_markdown(report: Mapping[str, Any]) -> str:
    """A 'step' section per program with a timeline: the step line, each device's window, busy and idle time by
    cause, and the largest gaps."""
    out: list[str] = []
    for p in _timed(report):
        block = p["timeline"]
        out += [f"\n#### Step: {md(p['device'])}\n", md(step_text(block["step"])) + "\n",
                "| rank | device | window | busy | idle | host-bound | launch-bound | sync | other |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for d in block.get("devices") or []:
            causes = d["idle_by_cause"]
            out.append(f"| {d['rank']} | {'–' if d.get('device') is None else d['device']} | "
                       f"{format_time(d['window'])} | {format_time(d['busy'])} | {format_fraction(d['idle_share'])} | "
                       + " | ".join(format_time(causes.get(c, 0.0)) for c in _CAUSES) + " |")
        gaps = gap_lines(block)
        if gaps:
            out += ["", "Largest idle gaps:", *(f"- {md(g)}" for g in gaps)]
    return ("\n".join(out) + "\n") if out else ""


def _properties(step: Mapping[str, Any]) -> list[tuple[str, str]]:
    out = [(f"step.{k}", repr(float(step[k]))) for k in STEP_PROPERTIES if isinstance(step.get(k), (int, float))
           and not isinstance(step.get(k), bool)]
    peak = step.get("peak")
    if isinstance(peak, dict) and peak.get("roof"):
        out.append(("step.peak_roof", str(peak["roof"])))
    return out


def with_step_junit(text: str, report: Mapping[str, Any]) -> str:
    """The group report's JUnit with each program testcase carrying its step: the figures as <properties> (SI
    units, shares 0..1) and the step line and largest gaps as <system-out>, which CI test pages show."""
    timed = {p["device"]: p for p in _timed(report)}
    if not timed:
        return text
    root = ET.fromstring(text)
    for suite in root.iter("testsuite"):
        for case in suite.iter("testcase"):
            p = timed.get(case.get("classname") or "")
            if case.get("name") != "program" or p is None:
                continue
            block = p["timeline"]
            props = ET.Element("properties")
            for name, value in _properties(block["step"]):
                ET.SubElement(props, "property", name=xml(name), value=xml(value))
            case.insert(0, props)
            out = ET.SubElement(case, "system-out")
            out.text = xml("\n".join([step_text(block["step"]), *(f"gap: {g}" for g in gap_lines(block))]))
    return ET.tostring(root, encoding="unicode") + "\n"
