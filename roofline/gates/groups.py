"""`roofline report` of a grouped profile (results with `groups`): the CI gates on groups, not launches.

  --fail-below F          a group whose time-weighted fraction of ceiling (its speed-of-light time over its time)
                          is below F fails
  --fail-below-program F  the program fails when its own time-weighted fraction (all groups) is below F
  --max-idle F            the step fails when the GPU sat idle for more than F of its window (an imported trace's
                          timeline block, HTA's definition): each rank's idle share is held to it
  --max-unmodelled F      the program fails when more than F (default 5%) of its GPU time has no model (an imported
                          trace's `unmodelled`): its figures would judge only the part a model covers
  --strict-model          a group or program above its ceiling fails; without it its verdict is 'above-ceiling',
                          never 'pass', naming the likely cause (roofline.records.coverage.above_ceiling)
Where more than 1% of the GPU time has no model, --fail-below-program judges the lower bound of the program's
fraction over all its GPU time (roofline.records.coverage.fraction_bounds).

Imported launches were never verified by roofline, so no verification gate applies. Only numbers and verdicts
here; roofline.render.tables.grouped formats them. Pure.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from roofline.records.coverage import (MAX_UNMODELLED, AboveCeiling, Bounds, above_ceiling, bound_of,
                                       fraction_bounds, input_kind)
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
                 fail_below_program: float | None = None, max_idle: float | None = None,
                 strict_model: bool = False, max_unmodelled: float | None = MAX_UNMODELLED) -> dict[str, Any]:
    """One row per group of each grouped document (ranked as the document ranks them) and one program row per
    document, each with its verdict: 'pass', 'fail', or 'above-ceiling' for a group or program beyond its roof
    (never a pass; with `strict_model` a fail). A program whose unmodelled share of GPU time is over
    `max_unmodelled` fails: its figures would judge the part a model covers, not the program."""
    rows: list[dict[str, Any]] = []
    programs: list[dict[str, Any]] = []
    for label, results in zip(device_labels(files), files):
        doc = results.typed
        kind = input_kind(doc.extra)
        for rank, g in enumerate(doc.grouped(), 1):
            fraction = g.fraction_of_ceiling
            failures = ([f"{fraction:.1%} of ceiling (time-weighted), below the {fail_below:.0%} gate"]
                        if _below(fraction, fail_below) else [])
            above = above_ceiling(fraction, bound_of(g.intensity, g.roof, doc.machine),
                                  g.bytes / g.launches if g.launches else None, doc.machine, kind)
            rows.append({**g.shown(), "share": g.share, "device": label, "rank": rank,
                         **_verdict(failures, above, strict_model)})
        program = doc.program()  # from the groups, never the stored copy (checked equal on reading)
        unmodelled = doc.unmodelled()
        lost = unmodelled.time if unmodelled is not None else 0.0
        bounds = fraction_bounds(program.sol_time, program.time, lost)
        failures = _program_failures(bounds, fail_below_program)
        if unmodelled is not None and max_unmodelled is not None and unmodelled.share > max_unmodelled:
            top = "; ".join(f"{r.text} ({r.share:.1%})" for r in unmodelled.reasons[:2])
            failures.append(f"{unmodelled.share:.1%} of GPU time has no model, over the {max_unmodelled:.0%} "
                            f"--max-unmodelled gate: the program's figures would judge only the modelled "
                            f"{program.time / unmodelled.gpu_time:.1%} of it ({top})")
        timeline = doc.timeline
        failures += idle_failures(timeline, max_idle)
        above = above_ceiling(program.fraction_of_ceiling, None, None, doc.machine, kind)
        beyond = [r for r in rows if r["device"] == label and "above_ceiling" in r]
        if above is not None and beyond:  # the program beats its roof because these groups do: name them
            named = ", ".join(f"{r['name']} ({r['fraction_of_ceiling']:.0%}, {r['above_ceiling']['cause']})"
                              for r in beyond[:3]) + (f" and {len(beyond) - 3} more" if len(beyond) > 3 else "")
            if all(r["above_ceiling"]["cause"] == "l2-resident" for r in beyond):
                above = replace(above, cause="l2-resident", text=(
                    f"above its ceiling, at {above.fraction:.0%} of it: its groups above their own ceilings all "
                    f"most likely read L2-resident operands ({named}), which the model counts as DRAM traffic"))
            else:
                above = replace(above, text=f"{above.text}; the groups above their own ceilings: {named}")
        programs.append({**program.totals(), **program.shown_extra,
                         **({"step": timeline.step} if timeline is not None else {}),
                         **({"timeline": doc.extra["timeline"]} if timeline is not None else {}),
                         **({"unmodelled": unmodelled.to_json()} if unmodelled is not None else {}),
                         "fraction_bounds": bounds.to_json(),
                         "device": label, "source": results.source, "machine": doc.machine_id,
                         **_verdict(failures, above, strict_model)})
    failed = [r for r in rows if r["verdict"] == "fail"] + [p for p in programs if p["verdict"] == "fail"]
    return {
        "schema": PROFILE_REPORT_SCHEMA,
        "gates": {"fail_below": fail_below, "fail_below_program": fail_below_program, "max_idle": max_idle,
                  "max_unmodelled": max_unmodelled, "strict_model": strict_model},
        "summary": {"groups": len(rows), "failed_groups": sum(r["verdict"] == "fail" for r in rows),
                    "failed_programs": sum(p["verdict"] == "fail" for p in programs),
                    **({"above_ceiling": above} if (above := sum(r["verdict"] == ABOVE for r in [*rows, *programs]))
                       else {}), "ok": not failed},
        "programs": programs,
        "rows": rows,
    }


ABOVE = "above-ceiling"


def _verdict(failures: list[str], above: AboveCeiling | None, strict_model: bool) -> dict[str, Any]:
    """A row's verdict: a figure above its ceiling is never a pass (its own verdict, naming the likely cause); with
    --strict-model it fails."""
    notes = []
    if above is not None:
        text = above.text
        if strict_model:
            failures = [*failures, text + " (--strict-model)"]
        else:
            notes.append(text)
    verdict = "fail" if failures else (ABOVE if above is not None else "pass")
    return {"verdict": verdict, "failures": failures, "notes": notes,
            **({"above_ceiling": above.to_json()} if above is not None else {})}


def _program_failures(bounds: Bounds, limit: float | None) -> list[str]:
    """--fail-below-program on the program's fraction of ceiling over ALL its GPU time: the modelled figure where
    at most 1% has no model, else its lower bound (coverage.fraction_bounds: the unmodelled work's own fraction is
    unknown, so only the low end is sure)."""
    if limit is None or bounds.modelled is None:
        return []
    if bounds.exact:
        return ([f"program at {bounds.modelled:.1%} of ceiling (time-weighted), below the {limit:.0%} gate"]
                if bounds.modelled < limit else [])
    if bounds.low is not None and bounds.low < limit:
        return [f"program at ≥ {bounds.low:.1%} of ceiling over all its GPU time (≤ {bounds.high:.1%}; "
                f"{bounds.unmodelled_share:.1%} of it has no model), so not shown to hold the {limit:.0%} gate"]
    return []


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
