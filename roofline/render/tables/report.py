"""Report documents (roofline/report/v1, built by roofline.gates.report.build_report) as a table, Markdown, JSON or JUnit.

Pure functions: a report document in, text out. Nothing here computes a gate or a ceiling.
"""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree as ET

from rich.table import Table

from roofline.render.tables.fit import droppable
from roofline.render.text import literal, md, md_code, xml
from roofline.model.units import format_flops, format_fraction, format_rate, format_si, format_time
from roofline.load.jsonio import dumps
from roofline.gates.report import baseline_text
from roofline.records.coverage import Unmodelled
from roofline.render.tables.grouped import UNMODELLED, unmodelled_line
from roofline.model.counts import counted

COLUMNS = ("device", "kernel", "params", "status", "time (median)", "achieved BW", "achieved FLOP/s", "ceiling",
           "of ceiling", "gap", "vs baseline", "gate")
_LEFT = {0, 1, 2, 3, 11}


def _fraction(x: float | None) -> str:
    return format_fraction(x)


def _gap(row: dict[str, Any]) -> str:
    fraction = row["fraction_of_ceiling"]
    if fraction is None:
        return "–"
    if fraction < 0.5 and fraction > 0:
        return f"×{row['slowdown']:.1f} slower"
    return f"{row['gap']:.1%}"


def _change(row: dict[str, Any], has_baseline: bool) -> str:
    change = row["change"]
    if change is None:
        new = has_baseline and row["device_in_baseline"] and row["baseline_time"] is None
        return "new" if new and row["time_median"] is not None else "–"
    if abs(change) < 0.0005:
        return "±0.0%"
    return f"{abs(change):.1%} {'slower' if change > 0 else 'faster'}"


_SHORT = {"verified": "unverified", "fail_below": "below {fail_below:.0%}", "max_regression": "regressed",
          "outlier": "below host median", "node_outlier": "slow node", "energy": "energy below gate",
          "model": "above ceiling (model)"}


def _gate(row: dict[str, Any]) -> str:
    """Short verdict for a table cell; the full reasons are listed under the table."""
    if row["verdict"] == "fail":
        return "FAIL: " + ", ".join(_SHORT[g].format(**row["thresholds"]) for g in row["failed_gates"])
    if row["verdict"] == "skip":
        return "skip"
    if row["verdict"] == "above-ceiling":
        return "above-ceiling *"
    return "pass" + (" *" if row["notes"] else "")


def _attainable(row: dict[str, Any]) -> str:
    return format_si(row["attainable"], row["attainable_unit"])


def cells(row: dict[str, Any], has_baseline: bool) -> list[str]:
    return [
        row["device"], row["kernel"], row["params_text"], row["status"], format_time(row["time_median"]),
        format_rate(row["achieved_bandwidth"]), format_flops(row["achieved_flops"]), _attainable(row),
        _fraction(row["fraction_of_ceiling"]), _gap(row), _change(row, has_baseline), _gate(row),
    ]


ENERGY_COLUMN = "of energy ceiling"  # shown only where a row has a measured energy (issue 33, docs/energy.md)


def _columns(report: dict[str, Any]) -> tuple[str, ...]:
    return COLUMNS + ((ENERGY_COLUMN,) if _has_energy(report) else ())


def _has_energy(report: dict[str, Any]) -> bool:
    return any("fraction_of_energy_ceiling" in r for r in report["rows"])


def _row_cells(row: dict[str, Any], has_baseline: bool, energy: bool) -> list[str]:
    values = cells(row, has_baseline)
    if energy:
        values.append(_fraction(row.get("fraction_of_energy_ceiling")) if "joules_per_run" in row else "–")
    return values


def summary_line(report: dict[str, Any]) -> str:
    s = report["summary"]
    devices = len(report["devices"])
    where = f"{counted(s['kernels'], 'kernel result')} on {counted(devices, 'device')}"
    if s["ok"]:
        verdict = "all gates hold"
    else:
        verdict = f"{s['failed']} failed"
    skipped = f", {s['skipped']} skipped" if s["skipped"] else ""
    if s.get("above_ceiling"):  # never a pass: their figures are wrong (the notes say why)
        skipped += f", {s['above_ceiling']} above their ceiling"
    compared = baseline_text(s)
    if s.get("baseline") and not s["baseline"]["ok"]:
        verdict = f"FAILED, {compared}" if not s["failed"] else f"{verdict}; {compared}"
        compared = None
    return f"{where}: {verdict}{skipped}" + (f"; {compared}" if compared else "")


def _gates_line(report: dict[str, Any]) -> str:
    g = report["gates"]
    text = f"Gates: {g['description']}"
    if g.get("baseline"):
        text += f"; baseline {', '.join(str(b) for b in g['baseline'])}"
    return text


def _fail_text(row: dict[str, Any]) -> list[str]:
    """A failed gate's reasons, and whether the GPU was held down by its power or thermal limit meanwhile."""
    return list(row["failures"]) + ([row["throttled"]] if row.get("throttled") else [])


def _unmodelled(device: dict[str, Any]) -> Unmodelled | None:
    """An imported trace's work no model covers (its kernels are only the modelled ones), where the device has it."""
    block = device.get("unmodelled")
    return Unmodelled.from_json(block) if isinstance(block, dict) else None


def _unmodelled_lines(report: dict[str, Any]) -> list[str]:
    """'DEVICE: unmodelled: 1.02 ms, 27.1% of GPU time: ...' per device with work no model covers."""
    return [f"{d['label']}: {unmodelled_line(u)}" for d in report["devices"]
            if (u := _unmodelled(d)) is not None and u.reasons]


def _footer(report: dict[str, Any]) -> str:
    lines = [_gates_line(report), *_unmodelled_lines(report)]
    for r in report["rows"]:
        if r["verdict"] == "fail":
            lines.append(f"FAIL {r['kernel']} ({r['params_text']}) on {r['device']}: {'; '.join(_fail_text(r))}")
    for r in report["rows"]:
        if r["verdict"] != "fail" and r["notes"]:
            lines.append(f"* {r['kernel']} ({r['params_text']}) on {r['device']}: {'; '.join(r['notes'])}")
    return "\n".join(lines)


def rich_table(report: dict[str, Any]) -> Any:
    has_baseline = bool(report["gates"].get("baseline"))
    table = Table(title=literal(f"roofline report: {summary_line(report)}"), caption=literal(_footer(report)),
                  title_justify="left", caption_justify="left")
    energy = _has_energy(report)
    for i, col in enumerate(_columns(report)):
        table.add_column(col, justify="left" if i in _LEFT else "right", )
    for row in report["rows"]:
        values = _row_cells(row, has_baseline, energy)
        style = ("red" if row["verdict"] == "fail" else "dim" if row["verdict"] == "skip" else
                 "yellow" if row["verdict"] == "above-ceiling" else None)
        table.add_row(*(literal(v) for v in values), style=style)
    return droppable(table, "gap", "achieved FLOP/s", "ceiling", "achieved BW", "params", "time (median)",
                     "vs baseline", "device",
                     whole=("kernel",))


def _md_where(row: dict[str, Any]) -> str:
    return f"{md_code(row['kernel'])} ({md(row['params_text'])}) on {md(row['device'])}"


def to_markdown(report: dict[str, Any]) -> str:
    """GitHub-flavoured Markdown, ready to append to $GITHUB_STEP_SUMMARY. Deterministic."""
    has_baseline = bool(report["gates"].get("baseline"))
    mark = "✅" if report["summary"]["ok"] else "❌"
    lines = [f"### {mark} roofline report: {summary_line(report)}", "", md(_gates_line(report)) + ".", ""]
    columns, energy = _columns(report), _has_energy(report)
    lines.append("| " + " | ".join(columns) + " |")
    lines.append("|" + "|".join(" :--- " if i in _LEFT else " ---: " for i in range(len(columns))) + "|")
    gate = COLUMNS.index("gate")
    for row in report["rows"]:
        values = _row_cells(row, has_baseline, energy)
        values = [md(v) for v in values]
        if row["verdict"] == "fail":
            values[gate] = f"**{values[gate]}**"
        lines.append("| " + " | ".join(values) + " |")
    failed = [r for r in report["rows"] if r["verdict"] == "fail"]
    if failed:
        lines += ["", "**Failed gates**", ""]
        for r in failed:
            lines.append(f"- {_md_where(r)}: {md('; '.join(_fail_text(r)))}")
    unmodelled = _unmodelled_lines(report)
    if unmodelled:  # the kernels' shares leave it out: it is said beside them, by reason
        lines += ["", "**Unmodelled**", ""] + [f"- {md(line)}" for line in unmodelled]
    noted = [r for r in report["rows"] if r["verdict"] != "fail" and r["notes"]]
    if noted:
        lines += ["", "**Notes**", ""]
        for r in noted:
            lines.append(f"- \\* {_md_where(r)}: {md('; '.join(r['notes']))}")
    lines.append("")
    return "\n".join(lines)


def to_json(report: dict[str, Any]) -> str:
    return dumps(report)


def to_github_benchmark(report: dict[str, Any]) -> str:
    """The `customSmallerIsBetter` JSON that github-action-benchmark charts: one entry per timed kernel and device,
    the median in microseconds (readable on its axis), the 95 % interval as its range, the ceiling share as extra."""
    entries = []
    for r in report["rows"]:
        if r["time_median"] is None:
            continue
        entry: dict[str, Any] = {"name": f"{r['kernel']} {r['params_text']} on {r['device']}".replace("  ", " "),
                                 "unit": "us", "value": round(r["time_median"] * 1e6, 4)}
        ci = r.get("time_ci")
        if ci:
            entry["range"] = f"{ci[0] * 1e6:.4g}-{ci[1] * 1e6:.4g}"
        if r["fraction_of_ceiling"] is not None:
            entry["extra"] = f"{r['fraction_of_ceiling']:.1%} of ceiling; {r['verdict']}"
        entries.append(entry)
    return dumps(entries)


def to_junit(report: dict[str, Any]) -> str:
    """JUnit XML: one testsuite per device, one testcase per kernel, <failure> per failed gate."""
    s = report["summary"]
    root = ET.Element("testsuites", name="roofline", tests=str(s["kernels"]), failures=str(s["failed"]),
                      skipped=str(s["skipped"] + s.get("above_ceiling", 0)))
    for device in report["devices"]:
        rows = [r for r in report["rows"] if r["device"] == device["label"]]
        suite = ET.SubElement(
            root, "testsuite", name=device["label"], tests=str(len(rows)),
            failures=str(sum(r["verdict"] == "fail" for r in rows)),
            skipped=str(sum(r["verdict"] in ("skip", "above-ceiling") for r in rows)),
            time=f"{sum(r['time_median'] or 0.0 for r in rows):.9f}",
        )
        props = ET.SubElement(suite, "properties")
        for key in ("name", "spec_id", "machine", "backend", "created"):
            if device.get(key) is not None:
                ET.SubElement(props, "property", name=key, value=str(device[key]))
        classname = f"roofline.{device.get('machine') or device['label']}"
        for r in rows:
            name = f"{r['kernel']}[{r['params_text']}]" if r["params_text"] else r["kernel"]
            case = ET.SubElement(suite, "testcase", classname=classname, name=name,
                                 time=f"{r['time_median'] or 0.0:.9f}")
            detail = (f"status {r['status']}; time {format_time(r['time_median'])}; "
                      f"{_fraction(r['fraction_of_ceiling'])} of ceiling ({_attainable(r)})")
            if r["verdict"] == "fail":
                failure = ET.SubElement(case, "failure", message="; ".join(_fail_text(r)), type="roofline.gate")
                failure.text = detail
            elif r["verdict"] == "skip":
                ET.SubElement(case, "skipped", message="; ".join(r["notes"]))
            elif r["verdict"] == "above-ceiling":  # not a pass, and no gate failed: its figure cannot be judged
                ET.SubElement(case, "skipped", message="above-ceiling: " + "; ".join(r["notes"]))
            else:
                out = ET.SubElement(case, "system-out")
                out.text = detail + (f"; {'; '.join(r['notes'])}" if r["notes"] else "")
        u = _unmodelled(device)
        for reason in u.reasons if u is not None else ():  # no model to judge it by: skipped, with its share
            case = ET.SubElement(suite, "testcase", classname=classname, name=f"{UNMODELLED}: {reason.why}",
                                 time=f"{reason.time:.9f}")
            ET.SubElement(case, "skipped", message=f"{reason.text}: {reason.share:.1%} of GPU time, no model")
            suite.set("tests", str(int(suite.get("tests", "0")) + 1))
            suite.set("skipped", str(int(suite.get("skipped", "0")) + 1))
            root.set("tests", str(int(root.get("tests", "0")) + 1))
            root.set("skipped", str(int(root.get("skipped", "0")) + 1))
    baseline = s.get("baseline")
    if baseline is not None and not baseline["ok"]:  # a failed report shows as a failed test, not all green
        suite = ET.SubElement(root, "testsuite", name="baseline", tests="1", failures="1", skipped="0", time="0")
        case = ET.SubElement(suite, "testcase", classname="roofline.baseline", name="compared with the baseline",
                             time="0")
        ET.SubElement(case, "failure", message=baseline_text(s) or "", type="roofline.baseline")
        root.set("tests", str(int(root.get("tests", "0")) + 1))
        root.set("failures", str(s["failed"] + 1))
    for element in root.iter():  # XML 1.0 cannot hold control characters, whatever a name or message carries
        element.attrib.update({key: xml(value) for key, value in element.attrib.items()})
        if element.text:
            element.text = xml(element.text)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
