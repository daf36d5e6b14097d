"""`roofline report` of a grouped profile (results with `groups`): the CI gates on groups, not launches.

  --fail-below F          a group whose time-weighted fraction of ceiling (its speed-of-light time over its time)
                          is below F fails; each launch counts as at least the launch floor (the spec's
                          model.launch_floor, roofline.model.launch), so a tiny op is judged against what a launch
                          can attain ("launch-bound: SOL below the launch floor" where the floor sets it)
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
from roofline.model.launch import LaunchFloor
from roofline.model.units import format_time, format_limit
from roofline.records.files import ResultsFile, device_labels
from roofline.records.groups import Group
from roofline.records.timeline import Timeline
from roofline.model.counts import counted

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
            out.append(f"{who}GPU idle for {r.idle_share:.1%} of the step's window, over the {format_limit(max_idle)} "
                       "gate")
    return out


def launches_by_id(kernels: Sequence[Any]) -> dict[int, Mapping[str, Any]]:
    """A grouped document's kernel entries by their params.launch, the id a group's `kernels` lists."""
    out: dict[int, Mapping[str, Any]] = {}
    for entry in kernels:
        launch = (entry.get("params") or {}).get("launch") if isinstance(entry, Mapping) else None
        if isinstance(launch, int) and not isinstance(launch, bool):
            out[launch] = entry
    return out


def attainable_time(group: Group, kernels: Mapping[int, Mapping[str, Any]], floor: float) -> float:
    """The group's speed-of-light time with each launch at least the launch floor: Σ max(SOL, launches × floor)
    over its launches (roofline.model.launch); without every launch's SOL time, max(SOL, launches × floor) of the
    group's totals."""
    total, known = 0.0, 0.0
    for launch in group.written.get("kernels") or ():
        entry = kernels.get(launch) if isinstance(launch, int) else None
        sol = entry.get("sol_time") if entry is not None else None
        if not isinstance(sol, (int, float)):
            return max(group.sol_time, group.launches * floor)
        n = entry.get("launches") if entry is not None else 1
        n = n if isinstance(n, int) and n > 0 else 1
        total, known = total + max(float(sol), n * floor), known + float(sol)
    return max(total, group.sol_time) if known or total else max(group.sol_time, group.launches * floor)


LAUNCH_BOUND = "launch-bound: SOL below the launch floor"


def _group_gate(g: Group, kernels: Mapping[int, Mapping[str, Any]], floor: LaunchFloor | None,
                fail_below: float | None) -> tuple[list[str], bool]:
    """(failures, launch_bound) of one group under --fail-below: judged against the attainable time (each launch
    at least the launch floor), so a 1 µs op whose bytes take 2 ns at DRAM bandwidth is not failed for the
    launch it cannot avoid. launch_bound: the floor, not the roofline, sets the group's attainable time."""
    if floor is None or g.time <= 0:
        fraction, bound = g.fraction_of_ceiling, False
    else:
        attainable = attainable_time(g, kernels, floor.seconds)
        fraction = attainable / g.time
        bound = g.launches * floor.seconds >= g.sol_time
    if not _below(fraction, fail_below):
        return [], bound
    assert fail_below is not None  # _below is False without a gate
    if floor is not None and bound:
        return [f"{LAUNCH_BOUND} ({format_time(floor.seconds)} a launch, {floor.source}); {fraction:.1%} of that "
                f"attainable time, below the {format_limit(fail_below)} gate"], bound
    counted_floor = f", each launch at least {format_time(floor.seconds)}" if floor is not None else ""
    return [f"{fraction:.1%} of ceiling (time-weighted{counted_floor}), below the {format_limit(fail_below)} gate"], bound


def group_report(files: Sequence[ResultsFile], fail_below: float | None = None,
                 fail_below_program: float | None = None, max_idle: float | None = None,
                 strict_model: bool = False, max_unmodelled: float | None = MAX_UNMODELLED,
                 floors: Sequence[LaunchFloor | None] | None = None) -> dict[str, Any]:
    """One row per group of each grouped document (ranked as the document ranks them) and one program row per
    document, each with its verdict: 'pass', 'fail', or 'above-ceiling' for a group or program beyond its roof
    (never a pass; with `strict_model` a fail). A program whose unmodelled share of GPU time is over
    `max_unmodelled` fails: its figures would judge the part a model covers, not the program. `floors` (one per
    file, roofline.model.launch): under --fail-below each launch counts as at least that long; None judges the
    written SOL time alone."""
    rows: list[dict[str, Any]] = []
    programs: list[dict[str, Any]] = []
    for i, (label, results) in enumerate(zip(device_labels(files), files)):
        doc = results.typed
        kind = input_kind(doc.extra)
        floor = floors[i] if floors is not None and i < len(floors) else None
        kernels = launches_by_id(results.doc.get("kernels") or []) if floor is not None else {}
        for rank, g in enumerate(doc.grouped(), 1):
            failures, bound = _group_gate(g, kernels, floor, fail_below)
            above = above_ceiling(g.fraction_of_ceiling, bound_of(g.intensity, g.roof, doc.machine),
                                  g.bytes / g.launches if g.launches else None, doc.machine, kind)
            rows.append({**g.shown(), "share": g.share, "device": label, "rank": rank,
                         **({"launch_bound": True} if bound else {}), **_verdict(failures, above, strict_model)})
        program = doc.program()  # from the groups, never the stored copy (checked equal on reading)
        unmodelled = doc.unmodelled()
        lost = unmodelled.time if unmodelled is not None else 0.0
        bounds = fraction_bounds(program.sol_time, program.time, lost)
        failures = _program_failures(bounds, fail_below_program)
        if unmodelled is not None and max_unmodelled is not None and unmodelled.share > max_unmodelled:
            top = "; ".join(f"{r.text} ({r.share:.1%})" for r in unmodelled.reasons[:2])
            failures.append(f"{unmodelled.share:.1%} of GPU time has no model, over the {format_limit(max_unmodelled)} "
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
        return ([f"program at {bounds.modelled:.1%} of ceiling (time-weighted), below the {format_limit(limit)} gate"]
                if bounds.modelled < limit else [])
    if bounds.low is not None and bounds.low < limit:
        return [f"program at ≥ {bounds.low:.1%} of ceiling over all its GPU time (≤ {bounds.high:.1%}; "
                f"{bounds.unmodelled_share:.1%} of it has no model), so not shown to hold the {format_limit(limit)} gate"]
    return []


def group_failure_message(report: Mapping[str, Any]) -> str:
    """One line for the exit-1 error."""
    groups = [r for r in report["rows"] if r["verdict"] == "fail"]
    progs = [p for p in report["programs"] if p["verdict"] == "fail"]
    parts = []
    if groups:
        names = ", ".join(f"{r['name']} on {r['device']}" for r in groups[:3])
        parts.append(f"{len(groups)} of {counted(len(report['rows']), 'group')} failed a gate: {names}"
                     + (f" and {len(groups) - 3} more" if len(groups) > 3 else ""))
    for p in progs:
        parts.append("; ".join(p["failures"]) + f" on {p['device']}")
    return "; ".join(parts)
