"""`report B --baseline A --max-regression F` of grouped profiles (issue 40): each group of B against the same group
of A, and the program's GPU time against A's, with the rule the kernel gate uses (roofline.gates.report):

  a group (or the program) regresses when its time is more than F slower than the baseline's AND, with the 'ci'
  test, the 95 % bootstrap intervals of the two medians do not overlap (a slowdown inside the noise of two runs is
  not a regression; pyperf and asv compare likewise).

The samples are steps: a trace of a torch.profiler schedule marks each step (ProfilerStep#N) and every launch
carries its step (roofline.records.diff), so a profile of N steps gives each group N per-step times, and the
medians of those are compared. A profile without steps (one capture, an ncu profile) gives one figure per side:
the totals are compared, with no interval, and the row says so. A group of B the baseline lacks is new (passes,
said so); a baseline that shares no group with B fails the report, as a kernel baseline that matched nothing does.
Pure: the interval function is handed in (roofline.measurement.stats.median_interval), so this floor needs no
numpy of its own.
"""

from __future__ import annotations

import statistics
from typing import Any, Callable, Mapping, Sequence

from roofline.gates.report import regression_verdict
from roofline.errors import InputError
from roofline.records.diff import difference, ranks, read_program, program_samples, replay_mismatch
from roofline.records.files import ResultsFile, device_labels
from roofline.model.counts import counted

Interval = Callable[[Sequence[float]], tuple[float, float]]
MIN_SAMPLES = 2  # steps a side needs for the interval test


def limit_text(limit: float) -> str:
    """'5%', '0.5%', '0.01%': a limit as given, never rounded to '0%' (which reads as 'no slowdown allowed')."""
    return f"{limit * 100:.3g}%"


def _compare(now: Sequence[float], base: Sequence[float], now_total: float, base_total: float,
             limit: float, test: str, interval: Interval, why_single: str = "") -> tuple[float | None, float, float, bool, str, list[float] | None,
                                                                 list[float] | None]:
    """(change, now, base, fails, detail, now CI, base CI): the medians of the steps where both sides have several,
    else the totals."""
    stepped = len(now) >= MIN_SAMPLES and len(base) >= MIN_SAMPLES
    t_now = statistics.median(now) if stepped else now_total
    t_base = statistics.median(base) if stepped else base_total
    change = difference(t_now, t_base) / t_base if t_base > 0 else None
    if change is None or change <= limit:
        return change, t_now, t_base, False, "", None, None
    if not stepped:
        detail = (f" ({why_single}; profile several steps on each side for the noise-aware test)"
                  if test == "ci" and why_single else "")
        return change, t_now, t_base, True, detail, None, None
    ci_now, ci_base = interval(now), interval(base)
    fails, detail = regression_verdict(ci_now, ci_base, test)
    return change, t_now, t_base, fails, detail, list(ci_now), list(ci_base)


def apply_baseline(report: Mapping[str, Any], files: Sequence[ResultsFile], baseline: ResultsFile,
                   max_regression: float | None, regression_test: str, interval: Interval) -> dict[str, Any]:
    """The group report (roofline.gates.groups.group_report) with each group and program compared with the
    baseline: change, baseline time, and a failure where the gate says so. A new report; the given one is kept."""
    base = read_program(baseline, per_step=True)
    base_program = program_samples(base)
    rows = [dict(r) for r in report["rows"]]
    programs = [dict(p) for p in report["programs"]]
    compared = new = 0
    missing: list[str] = []
    limit = max_regression if max_regression is not None else float("inf")
    for label, results in zip(device_labels(files), files):
        if ranks(results) != ranks(baseline):
            # Every time is a sum over the ranks: 2 ranks against 1 'regresses' every group by ~100 %.
            raise InputError(f"{results.name} holds {counted(ranks(results), 'rank')} and the baseline "
                             f"{baseline.name} {ranks(baseline)}: their GPU times sum different numbers of GPUs, "
                             "so no change between them is the program's; compare captures of the same ranks")
        replay = replay_mismatch(baseline, results, ("the baseline", results.name))
        if replay:
            raise InputError(f"{results.name} against the baseline {baseline.name}: {replay}, so a change between "
                             "them is the measurement's, not the program's; compare profiles measured alike")
        now = read_program(results, per_step=True)
        per_step = bool(now.step_numbers) and bool(base.step_numbers)
        steps, base_steps = len(now.step_numbers), len(base.step_numbers)
        why_single = single_sample_reason(steps, base_steps)
        if not per_step:  # the whole capture on both sides
            now, side_base = read_program(results, per_step=False), read_program(baseline, per_step=False)
        else:
            side_base = base
        for row in (r for r in rows if r["device"] == label):
            g_now, g_base = now.groups.get(row["name"]), side_base.groups.get(row["name"])
            if g_now is None:
                continue
            if g_base is None:
                new += 1
                row["notes"] = [*row.get("notes", []), "new: not in the baseline"]
                continue
            compared += 1
            change, t_now, t_base, fails, detail, ci_now, ci_base = _compare(
                g_now.samples, g_base.samples, g_now.time, g_base.time, limit, regression_test, interval, why_single)
            row.update(baseline_time=t_base, compared_time=t_now, change=change, time_ci=ci_now, baseline_ci=ci_base)
            if change is not None and change > limit:
                _judged(row, f"{change:.1%} slower than baseline, over the {limit_text(limit)} limit{detail}", fails)
        missing += [n for n in side_base.groups if n not in now.groups]
        for p in (p for p in programs if p["device"] == label):
            change, t_now, t_base, fails, detail, ci_now, ci_base = _compare(
                program_samples(now) if per_step else (), program_samples(side_base) if per_step else (),
                now.side.gpu_time, side_base.side.gpu_time, limit, regression_test, interval, why_single)
            p.update(baseline_gpu_time=t_base, compared_gpu_time=t_now, change=change, time_ci=ci_now,
                     baseline_ci=ci_base, steps=steps, baseline_steps=base_steps)
            if change is not None and change > limit:
                _judged(p, f"program GPU time {change:.1%} slower than baseline, over the {limit_text(limit)} limit{detail}",
                        fails)
    of = len(rows)
    ok_compared = compared > 0 or of == 0
    failed = [r for r in rows if r["verdict"] == "fail"] + [p for p in programs if p["verdict"] == "fail"]
    summary = {**report["summary"], "failed_groups": sum(r["verdict"] == "fail" for r in rows),
               "failed_programs": sum(p["verdict"] == "fail" for p in programs),
               "ok": not failed and ok_compared,
               "baseline": {"source": baseline.source, "compared": compared, "of": of, "new": new,
                            "gone": sorted(set(missing)), "ok": ok_compared, "max_regression": max_regression,
                            "regression_test": regression_test}}
    gates = {**report["gates"], "baseline": baseline.source, "max_regression": max_regression,
             "regression_test": regression_test}
    return {**report, "gates": gates, "summary": summary, "programs": programs, "rows": rows}


def single_sample_reason(steps: int, base_steps: int) -> str:
    """Why a side gives one figure, not a median with an interval ('' where both have several steps): the steps
    (ProfilerStep#N) each capture holds, B's then the baseline's."""
    if steps >= MIN_SAMPLES and base_steps >= MIN_SAMPLES:
        return ""
    if steps and base_steps:
        return f"means per step of {steps} vs {base_steps} steps: a side of one step gives no interval"
    if steps or base_steps:
        which = "the baseline" if steps else "B"
        return (f"totals of each whole capture: {which} marks no steps (ProfilerStep#N), so neither is compared per "
                "step")
    return "totals of one capture each (no ProfilerStep ranges)"


def baseline_message(report: Mapping[str, Any]) -> str | None:
    """'the baseline shares none of the 12 groups' when nothing was compared; None otherwise."""
    b = report["summary"].get("baseline")
    if not b or b["ok"]:
        return None
    return (f"the baseline {b['source']} shares none of the {counted(b['of'], 'group')}, so nothing was compared: profile "
            "both with the same --group-by")


def _judged(row: dict[str, Any], text: str, fails: bool) -> None:
    """A change over the limit fails the row when the noise-aware test says it is real; else it is noted."""
    if fails:
        row["failures"] = [*row["failures"], text]
        row["verdict"] = "fail"
    else:
        row["notes"] = [*row.get("notes", []), text]
