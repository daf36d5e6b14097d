"""CI gates, pure: thresholds from options or a YAML file, and results + baseline in → report rows with verdicts.

Gates:
  verified       a kernel that failed verification (status FAILED, or verified false) always fails;
  fail_below     a verified kernel achieving less than this fraction of its ceiling fails;
  max_regression a kernel whose median time is more than this fraction slower than the baseline's fails, when
                 (the default 'ci' test) the 95 % bootstrap intervals of the two medians do not overlap too.
  model          a kernel above 102 % of its ceiling gets the verdict 'above-ceiling' (never 'pass'), naming the
                 likely cause (roofline.records.coverage.above_ceiling: L2-resident operands, or the spec or the
                 model); with --strict-model it fails.
  energy         (--min-energy-fraction) a verified kernel whose minimum energy (the spec's energy roofline) is less
                 than this fraction of the energy NVML measured per run fails; one without a measured energy or an
                 energy ceiling fails it too, unless unknown ceilings are allowed (issue 33, docs/energy.md).
A kernel with status SKIPPED is reported and never gated. A kernel without a known ceiling (fraction null) fails
the fail_below gate it cannot be judged by, unless unknown ceilings are allowed (--allow-unknown-ceiling); a kernel
without a baseline entry passes the regression gate, and the row says so; but a baseline that matches none of the
kernels fails the report (a comparison that compared nothing cannot pass), and the summary says how many kernels
were compared. Fractions are in (0, 1].
Per-kernel entries must name kernels in the results: a misspelt name would otherwise switch a gate off silently.
The thresholds (options and the gates file) are roofline.gates.config.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from roofline.records import caveats
from roofline.records.clockstate import power_over_limit, throttle_warning
from roofline.gates.config import GateConfig, Thresholds
from roofline.records.document import (MODEL_ERROR_FRACTION, KernelResult, ResultsDocument, Status,
                                       model_error_warning)
from roofline.records.schema import RESULTS_SCHEMA
from roofline.records.coverage import above_ceiling, input_kind
from roofline.records.files import ResultsFile, device_labels, params_text
from roofline.model.units import format_time, format_limit
from roofline.gates.hosts import device_name, outliers
from roofline.model.counts import counted

REPORT_SCHEMA = "roofline/report/v1"
ABOVE = "above-ceiling"  # a row's verdict: above its ceiling, no gate failed; never a pass


# ---- evaluation -------------------------------------------------------------------------------


def _baseline_index(baseline: Sequence[ResultsFile]) -> dict[tuple[str, ...], KernelResult]:
    index: dict[tuple[str, ...], KernelResult] = {}
    for b in baseline:
        for kernel in b.typed.kernels:
            name, params = kernel.key
            index.setdefault(("device", b.typed.device_name, name, params), kernel)
            if b.typed.machine_id is not None:
                index.setdefault(("machine", str(b.typed.machine_id), name, params), kernel)
    return index


def _fraction_text(fraction: float | None) -> str:
    return "–" if fraction is None else f"{fraction:.1%}"


def evaluate_kernel(kernel: KernelResult, thresholds: Thresholds, base: KernelResult | None,
                    device_in_baseline: bool = True, allow_unknown_ceiling: bool = False,
                    strict_model: bool = False, regression_test: str = "ci",
                    machine: Mapping[str, Any] | None = None, kind: str = "the results file") -> dict[str, Any]:
    """One report row's gate part: verdict 'pass', 'fail', 'skip', or 'above-ceiling' for a kernel beyond its
    ceiling that no gate failed (never a pass: its figure is wrong, and the note names the likely cause from
    `machine`'s L2 and the input's `kind`; --strict-model fails it), with the reasons."""
    fraction = kernel.fraction_of_ceiling
    time = kernel.time_median
    failures: list[str] = []
    failed_gates: list[str] = []
    notes: list[str] = []
    change = None
    base_time = base.time_median if base is not None else None
    if time is not None and base_time:
        change = time / base_time - 1.0

    if kernel.status is Status.SKIPPED:
        return {"verdict": "skip", "failures": [], "failed_gates": [], "notes": [kernel.error or "skipped"],
                "change": change, "baseline_time": base_time}
    if kernel.imported:  # from `roofline import ncu`: not ours to check
        notes.append("imported: not verified by roofline")
    above = None  # the kernel above its ceiling, and why (not judged for a kernel that failed verification)
    if kernel.failed:
        reason = "not verified" if kernel.status is not Status.FAILED else "FAILED verification"
        error = kernel.error
        failures.append(f"{reason}: {error}" if error else reason)
        failed_gates.append("verified")
    else:
        if thresholds.fail_below is not None:
            if fraction is None and allow_unknown_ceiling:
                notes.append("ceiling unknown: fail-below not checked (--allow-unknown-ceiling)")
            elif fraction is None:
                failures.append("ceiling unknown, so the fail-below gate cannot hold (measure with a spec, or "
                                "pass --allow-unknown-ceiling)")
                failed_gates.append("fail_below")
            elif fraction < thresholds.fail_below:
                failures.append(f"{_fraction_text(fraction)} of ceiling, below the {format_limit(thresholds.fail_below)} gate")
                failed_gates.append("fail_below")
        above = above_ceiling(fraction, kernel.bound,
                              kernel.bytes / (kernel.launches or 1) if kernel.bytes is not None else None,
                              machine, kind)
        if above is not None:
            # a verified kernel's bytes are its descriptor's: the model's words; an imported one's, the likely cause
            text = (caveats.line(model_error_warning(fraction, kernel.bound))
                    + (f"; {above.text}" if above.cause == "l2-resident" else "")
                    if not kernel.imported else above.text)
            if strict_model:
                failures.append(text)
                failed_gates.append("model")
            else:
                notes.append(text)
        if thresholds.max_regression is not None:
            if base is None:
                notes.append("not in baseline" if device_in_baseline else "no baseline for this device")
            elif change is None:
                notes.append("baseline has no time")
            elif change > thresholds.max_regression:
                verdict = regression_verdict(kernel.time_ci, base.time_ci, regression_test)
                text = f"{change:.1%} slower than baseline, over the {format_limit(thresholds.max_regression)} limit{verdict[1]}"
                if verdict[0]:
                    failures.append(text)
                    failed_gates.append("max_regression")
                else:
                    notes.append(text)
    verdict = "fail" if failures else (ABOVE if above is not None else "pass")
    return {"verdict": verdict, "failures": failures, "failed_gates": failed_gates, "notes": notes, "change": change,
            "baseline_time": base_time, **({"above_ceiling": above.to_json()} if above is not None else {})}


def _interval_text(ci: Any) -> str:
    return f"{format_time(ci[0])}–{format_time(ci[1])}"


def regression_verdict(current: Any, base: Any, test: str) -> tuple[bool, str]:
    """(fails, detail) for a median over the regression limit. With the 'ci' test it fails only when the two
    medians' bootstrap intervals do not overlap: a slowdown inside the noise of two runs is not a regression."""
    if test == "median":
        return True, ""
    if not current or not base:
        return True, " (no confidence interval in one file: compared medians)"
    intervals = f" (95% CI {_interval_text(current)} vs baseline {_interval_text(base)})"
    if current[0] <= base[1]:
        return False, intervals + ": the intervals overlap, so within noise"
    return True, intervals


def build_report(files: Sequence[ResultsFile], config: GateConfig = GateConfig(),
                 baseline: Sequence[ResultsFile] = ()) -> dict[str, Any]:
    """The report document (roofline/report/v1): one row per kernel and device, with gate verdicts.

    Only numbers and verdicts; renderers format them.
    """
    config.check_names({str(k.name) for f in files for k in f.typed.kernels})
    index = _baseline_index(baseline)
    rows = []
    devices = []
    compared = 0  # rows (not skipped) that found their kernel in the baseline
    elsewhere = 0  # rows (not skipped) of a device the baseline has no results of
    for label, results in zip(device_labels(files), files):
        doc = results.typed
        unmodelled = doc.unmodelled()  # an imported trace's work no model covers: shown beside the kernels
        devices.append({"label": label, "name": doc.device_name, "spec_id": doc.spec_id,
                        "machine": doc.machine_id, "backend": doc.backend, "created": doc.created,
                        "source": results.source,
                        **({"unmodelled": unmodelled.to_json()} if unmodelled is not None and unmodelled.time
                           else {})})
        device_in_baseline = any(_same_device(b.typed, doc) for b in baseline)
        kind = input_kind(doc.extra)
        for kernel in doc.kernels:
            name, params = kernel.key
            # The same device name, else the same machine spec: never a kernel measured on another GPU.
            base = index.get(("device", doc.device_name, name, params)) or index.get(
                ("machine", str(doc.machine_id), name, params))
            thresholds = config.for_kernel(name)
            if not baseline:  # nothing to regress against
                thresholds = replace(thresholds, max_regression=None)
            gate = evaluate_kernel(kernel, thresholds, base if baseline else None, device_in_baseline,
                                   config.allow_unknown_ceiling, config.strict_model, config.regression_test,
                                   doc.machine, kind)
            if config.min_energy_fraction is not None and gate["verdict"] != "skip" and not kernel.failed:
                failures, notes = energy_gate(kernel, config.min_energy_fraction, config.allow_unknown_ceiling)
                gate = {**gate, "failures": gate["failures"] + failures, "notes": gate["notes"] + notes,
                        "failed_gates": gate["failed_gates"] + (["energy"] if failures else [])}
                gate["verdict"] = "fail" if gate["failures"] else gate["verdict"]
            compared += base is not None and gate["verdict"] != "skip"
            elsewhere += base is None and not device_in_baseline and gate["verdict"] != "skip"
            fraction = kernel.fraction_of_ceiling
            ceiling = kernel.ceiling
            # A gate that fails while the GPU was held down by its power or thermal limit needs saying so.
            throttled = throttle_warning(kernel.gpu_state)
            # A mean above the power limit is explained where the throttle warning does not already (the file may
            # predate the power-over-limit warning, so it is worked out from gpu_state here).
            over = None if throttled else power_over_limit(kernel.gpu_state)
            rows.append({
                "device": label,
                "kernel": name,
                "params": kernel.params,
                "params_text": params_text(kernel.params),
                "dtype": kernel.dtype,
                "roof": kernel.roof,
                "bound": kernel.bound,
                "status": kernel.status.value,
                "verified": kernel.verified,
                "error": kernel.error,
                "time_median": kernel.time_median,
                "time_ci": None if kernel.time_ci is None else list(kernel.time_ci),
                "baseline_ci": list(base.time_ci) if base is not None and base.time_ci is not None else None,
                "sol_time": kernel.sol_time,
                "achieved_bandwidth": kernel.achieved_bandwidth,
                "achieved_flops": kernel.achieved_flops,
                "attainable": ceiling[0],
                "attainable_unit": ceiling[1],
                "fraction_of_ceiling": fraction,
                "gap": None if fraction is None else 1.0 - fraction,
                "slowdown": None if not fraction else 1.0 / fraction,
                "baseline_time": gate["baseline_time"],
                "device_in_baseline": device_in_baseline,
                "change": gate["change"],
                "thresholds": {"fail_below": thresholds.fail_below, "max_regression": thresholds.max_regression},
                "verdict": gate["verdict"],
                "failures": gate["failures"],
                "failed_gates": gate["failed_gates"],
                "notes": gate["notes"] + ([throttled] if throttled else []) + ([over] if over else []),
                "throttled": throttled,
                **({"above_ceiling": gate["above_ceiling"]} if "above_ceiling" in gate else {}),
                **_energy_fields(kernel),
            })
    report: dict[str, Any] = {
        "schema": REPORT_SCHEMA,
        "results_schema": RESULTS_SCHEMA,
        "devices": devices,
        "gates": {"fail_below": config.default.fail_below, "max_regression": config.default.max_regression,
                  "kernels": {k: dict(v) for k, v in config.kernels.items()}, "source": config.source,
                  "baseline": [b.source for b in baseline] or None,
                  "description": config.describe()},
        "summary": {"kernels": len(rows)},
        "rows": rows,
    }
    if baseline:
        report["summary"]["baseline"] = baseline_comparison(rows, compared, elsewhere)
    return {**report, "summary": recount(report, rows)}


def _same_device(base: ResultsDocument, doc: ResultsDocument) -> bool:
    """A baseline file of the same device name, or measured against the same spec."""
    return base.device_name == doc.device_name or (base.machine_id is not None and base.machine_id == doc.machine_id)


def _energy_fields(kernel: KernelResult) -> dict[str, Any]:
    """A row's energy figures where the entry has them (measured with NVML), else nothing: a report of results
    without energy is what it always was."""
    e = kernel.energy_measured
    if e is None:
        return {}
    return {"joules_per_run": e.joules_per_run, "power_mean": e.power_mean, "flops_per_joule": e.flops_per_joule,
            "fraction_of_energy_ceiling": e.fraction_of_energy_ceiling}


def energy_gate(kernel: KernelResult, limit: float, allow_unknown: bool) -> tuple[list[str], list[str]]:
    """(failures, notes) of the energy gate on one entry: its minimum energy over the energy NVML measured per run
    (energy_measured.fraction_of_energy_ceiling) against `limit`."""
    e = kernel.energy_measured
    share = None if e is None else e.fraction_of_energy_ceiling
    if share is None:
        why = ("no energy was measured (NVML did not read the counter)" if e is None
               else "the spec has no energy figures for this roof, so the energy ceiling is unknown")
        if allow_unknown:
            return [], [f"{why}: min-energy-fraction not checked (--allow-unknown-ceiling)"]
        return [f"{why}; the min-energy-fraction gate cannot hold (measure with NVML and a spec with an energy "
                "block, or pass --allow-unknown-ceiling)"], []
    loose = f" (a {e.window:.2g} s window: up to {e.uncertainty:.0%} off)" if e.short_window else ""
    if share < limit:
        return [f"{_fraction_text(share)} of the energy ceiling, below the {format_limit(limit)} gate{loose}"], []
    return [], []


def baseline_comparison(rows: Sequence[Mapping[str, Any]], compared: int, elsewhere: int = 0) -> dict[str, Any]:
    """How many of the gated (not skipped) kernel results the baseline was compared with: {compared, of, new,
    other_device, ok}; new are kernels of a device the baseline has, other_device the results of a device it lacks.
    Comparing none of them is a failure of the report, not a pass with every row 'new': a baseline of another
    device, spec or kernel set would otherwise switch the regression gate off without a word."""
    of = sum(r["verdict"] != "skip" for r in rows)
    return {"compared": compared, "of": of, "new": of - compared - elsewhere, "other_device": elsewhere,
            "ok": compared > 0 or of == 0}


def baseline_text(summary: Mapping[str, Any]) -> str | None:
    """'compared 3 of 5 kernels with the baseline; 2 new', or why comparing none fails; None without a baseline."""
    b = summary.get("baseline")
    if not b:
        return None
    if not b["ok"]:
        return (f"the baseline matched none of the {counted(b['of'], 'kernel result')}, so nothing was compared: a baseline "
                "must be measured on the same device (or spec) with the same kernels and parameters")
    other = f", {b['other_device']} on a device it lacks" if b.get("other_device") else ""
    return f"compared {b['compared']} of {counted(b['of'], 'kernel')} with the baseline; {b['new']} new{other}"


def recount(report: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The summary of `rows` (after any gate changed their verdicts): counts, and ok when no row failed and the
    baseline, if one was given, compared something."""
    failed = sum(r["verdict"] == "fail" for r in rows)
    baseline = report["summary"].get("baseline")
    summary = {**report["summary"], "kernels": len(rows), "passed": sum(r["verdict"] == "pass" for r in rows),
               "failed": failed, "skipped": sum(r["verdict"] == "skip" for r in rows),
               "ok": not failed and (baseline is None or baseline["ok"])}
    above = sum(r["verdict"] == ABOVE for r in rows)
    if above:  # only where some are: a report without any reads as it always did
        summary["above_ceiling"] = above
    else:
        summary.pop("above_ceiling", None)
    if baseline is not None:  # after the counts, where readers of older reports do not look
        summary["baseline"] = summary.pop("baseline")
    return summary


def failure_message(report: dict[str, Any]) -> str:
    """One line for the exit-1 error: how many gates failed and the first few kernels, or that the baseline
    compared nothing."""
    failed = [r for r in report["rows"] if r["verdict"] == "fail"]
    names = ", ".join(f"{r['kernel']} on {r['device']}" for r in failed[:3])
    more = f" and {len(failed) - 3} more" if len(failed) > 3 else ""
    parts = [f"{len(failed)} of {counted(len(report['rows']), 'kernel')} failed a gate: {names}{more}"] if failed else []
    baseline = report["summary"].get("baseline")
    if baseline is not None and not baseline["ok"]:
        parts.append(f"{report['gates']['baseline'][0]}: {baseline_text(report['summary'])}")
    return "; ".join(parts)


def apply_outlier(report: dict[str, Any], rows: Sequence[Mapping[str, Any]], limit: float) -> dict[str, Any]:
    """The node-acceptance gate (`report --outlier 5%`): fail each row whose device is more than `limit` below its
    host's median on that kernel (roofline.gates.hosts), naming the device by index and PCI bus id. Returns the report
    with those rows failed, an `outliers` list, and the summary recounted."""
    found = outliers(rows, limit)
    by_row = {(o["label"], o["kernel"], params_text(o["params"])): o for o in found}
    new_rows = []
    for row in report["rows"]:
        o = by_row.get((row["device"], row["kernel"], row["params_text"]))
        if o is not None and row["verdict"] != "skip":
            where = o.get("where") or device_name(o["index"], o["pci_bus_id"])
            text = (f"{-o['deviation']:.1%} below the {'fleet' if o.get('where') else 'host'} median on {where}, "
                    f"over the {format_limit(limit)} outlier limit")
            row = {**row, "verdict": "fail", "failures": [*row["failures"], text],
                   "failed_gates": [*row["failed_gates"], "outlier"]}
        new_rows.append(row)
    gates = {**report["gates"], "outlier": limit}
    return {**report, "rows": new_rows, "summary": recount(report, new_rows), "gates": gates, "outliers": found}
