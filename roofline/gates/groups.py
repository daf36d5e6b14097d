"""`roofline report` of a grouped profile (results with `groups`): the CI gates on groups, not launches.

  --fail-below F          a group whose time-weighted fraction of ceiling (its speed-of-light time over its time)
                          is below F fails
  --fail-below-program F  the program fails when its own time-weighted fraction (all groups) is below F
  --max-idle F            the step fails when the GPU sat idle for more than F of its window (an imported trace's
                          timeline block, HTA's definition): each rank's idle share is held to it

Imported launches were never verified by roofline, so no verification gate applies. Only numbers and verdicts
here; roofline.render.tables.grouped formats them. Pure.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from roofline.records.files import ResultsFile, device_labels
from roofline.records.timeline import Timeline

PROFILE_REPORT_SCHEMA = "roofline/profile-report/v1"


def _below(fraction: float | None, limit: float | None) -> bool:
    return limit is not None and fraction is not None and fraction < limit


def idle_failures(timeline: Timeline | None, max_idle: float | None) -> list[str]:
    """The --max-idle gate on a document's timeline: one failure per rank idle for more than `max_idle` of its
    window (a document without a timeline is refused before this, by the command)."""
    if max_idle is None or timeline is None:
        return []
    out = []
    for r in timeline.ranks:
        if r.idle_share > max_idle:
            who = f"rank {r.rank}: " if len(timeline.ranks) > 1 else ""
            out.append(f"{who}GPU idle for {r.idle_share:.1%} of the step's window, over the {max_idle:.0%} "
                       "gate")
    return out


def group_report(files: Sequence[ResultsFile], fail_below: float | None = None,
                 fail_below_program: float | None = None, max_idle: float | None = None) -> dict[str, Any]:
    """One row per group of each grouped document (ranked as the document ranks them) and one program row per
    document, each with its verdict."""
    rows: list[dict[str, Any]] = []
    programs: list[dict[str, Any]] = []
    for label, results in zip(device_labels(files), files):
        doc = results.typed
        for rank, g in enumerate(doc.grouped(), 1):
            fraction = g.fraction_of_ceiling
            failures = ([f"{fraction:.1%} of ceiling (time-weighted), below the {fail_below:.0%} gate"]
                        if _below(fraction, fail_below) else [])
            rows.append({**g.shown(), "device": label, "rank": rank,
                         "verdict": "fail" if failures else "pass", "failures": failures})
        program = doc.program()  # from the groups, never the stored copy (checked equal on reading)
        fraction = program.fraction_of_ceiling
        failures = ([f"program at {fraction:.1%} of ceiling (time-weighted), below the {fail_below_program:.0%} "
                     "gate"] if _below(fraction, fail_below_program) else [])
        timeline = doc.timeline
        failures += idle_failures(timeline, max_idle)
        programs.append({**program.totals(), **program.shown_extra,
                         **({"step": timeline.step} if timeline is not None else {}),
                         **({"timeline": doc.extra["timeline"]} if timeline is not None else {}),
                         "device": label, "source": results.source, "machine": doc.machine_id,
                         "verdict": "fail" if failures else "pass", "failures": failures})
    failed = [r for r in rows if r["verdict"] == "fail"] + [p for p in programs if p["verdict"] == "fail"]
    return {
        "schema": PROFILE_REPORT_SCHEMA,
        "gates": {"fail_below": fail_below, "fail_below_program": fail_below_program, "max_idle": max_idle},
        "summary": {"groups": len(rows), "failed_groups": sum(r["verdict"] == "fail" for r in rows),
                    "failed_programs": sum(p["verdict"] == "fail" for p in programs), "ok": not failed},
        "programs": programs,
        "rows": rows,
    }


def group_failure_message(report: Mapping[str, Any]) -> str:
    """One line for the exit-1 error."""
    groups = [r for r in report["rows"] if r["verdict"] == "fail"]
    progs = [p for p in report["programs"] if p["verdict"] == "fail"]
    parts = []
    if groups:
        names = ", ".join(f"{r['name']} on {r['device']}" for r in groups[:3])
        parts.append(f"{len(groups)} of {len(report['rows'])} group(s) failed a gate: {names}"
                     + (f" and {len(groups) - 3} more" if len(groups) > 3 else ""))
    for p in progs:
        parts.append("; ".join(p["failures"]) + f" on {p['device']}")
    return "; ".join(parts)
