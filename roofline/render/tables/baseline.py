"""`report B --baseline A` of grouped profiles: each group and the program against the baseline (the figures and
verdicts roofline.gates.baseline computed), as a table and as Markdown. No physics."""

from __future__ import annotations

from typing import Any, Mapping

from rich.table import Table

from roofline.gates.baseline import limit_text, single_sample_reason
from roofline.model.units import format_time
from roofline.render.tables.fit import droppable
from roofline.render.text import literal, md, styled
from roofline.model.counts import counted

COLUMNS = ("device", "group", "baseline", "now", "change", "verdict")


def _change(value: float | None) -> str:
    return "–" if value is None else ("+" if value > 0 else "−" if value < 0 else "") + f"{abs(value):.1%}"


def _lines(report: Mapping[str, Any]) -> list[tuple[str, str, str, str, str, str, str]]:
    """(device, group, baseline, now, change, verdict, detail): the program first, then the groups compared, most
    slowed first."""
    out = []
    for p in report["programs"]:
        if "baseline_gpu_time" in p:
            regress = [f for f in p["failures"] if "slower than baseline" in f]
            out.append((p["device"], "program (GPU time)", format_time(p["baseline_gpu_time"]),
                        format_time(p["compared_gpu_time"]), _change(p["change"]), "FAIL" if regress else "pass",
                        regress[0] if regress else next((n for n in p.get("notes", []) if "baseline" in n), "")))
    rows = [r for r in report["rows"] if "baseline_time" in r]
    rows.sort(key=lambda r: -(r["change"] if r["change"] is not None else float("-inf")))
    for r in rows:
        regress = [f for f in r["failures"] if "slower than baseline" in f]
        out.append((r["device"], r["name"], format_time(r["baseline_time"]), format_time(r["compared_time"]),
                    _change(r["change"]), "FAIL" if regress else "pass",
                    regress[0] if regress else next((n for n in r.get("notes", []) if "baseline" in n), "")))
    return out


def summary_text(report: Mapping[str, Any]) -> str:
    b = report["summary"]["baseline"]
    gone = f"; not in B: {', '.join(b['gone'][:5])}" + (f" and {len(b['gone']) - 5} more" if len(b["gone"]) > 5
                                                       else "") if b["gone"] else ""
    limit = ("no --max-regression" if b["max_regression"] is None
             else f"--max-regression {limit_text(b['max_regression'])}")
    programs = report["programs"]
    s, bs = (programs[0].get("steps", 0), programs[0].get("baseline_steps", 0)) if programs else (0, 0)
    steps = single_sample_reason(s, bs) or f"medians of {s} vs {bs} steps, test '{b['regression_test']}'"
    return (f"vs baseline {b['source']}: compared {b['compared']} of {counted(b['of'], 'group')}, {b['new']} new{gone}; "
            f"{limit}; {steps}")


def baseline_tables(report: Mapping[str, Any]) -> list[Any]:
    if not report["summary"].get("baseline"):
        return []
    table = Table(title=literal(summary_text(report)), title_justify="left")
    for col in COLUMNS:
        table.add_column(col, justify="left" if col in ("device", "group", "verdict") else "right")
    for device, group, base, now, change, verdict, _detail in _lines(report):
        table.add_row(literal(device), literal(group), base, now, change,
                      styled("FAIL", "bold red") if verdict == "FAIL" else literal(verdict))
    return [droppable(table, "device")]


def baseline_markdown(report: Mapping[str, Any]) -> str:
    if not report["summary"].get("baseline"):
        return ""
    out = ["", f"#### {md(summary_text(report))}", "", "| " + " | ".join(COLUMNS) + " |",
           "|---|---|---:|---:|---:|---|"]
    for device, group, base, now, change, verdict, detail in _lines(report):
        shown = f"**FAIL** {md(detail)}" if verdict == "FAIL" else "pass"
        out.append(f"| {md(device)} | {md(group)} | {base} | {now} | {change} | {shown} |")
    return "\n".join(out) + "\n"
