"""The energy roofline chart (`roofline plot --energy`, issue 33; docs/energy.md): two panels against arithmetic
intensity.

- left, FLOP/J (log-log): each machine's energy roofline for each roof it has an energy figure for (Choi et al.,
  IPDPS 2013: 1 / (ε_flop + ε_mem / I + π0·max(τ_flop, τ_mem / I))), with its energy-balance point and its time
  ridge marked; measured kernels (results with NVML energy) as filled points, the model's as hollow ones.
- right, power (W, log x): the power each roof draws at its time ceiling (highest at the ridge), held at the board's
  power limit (the spec's power_limit, or the one the measured windows ran under), where the GPU lowers its clock
  instead (Choi et al., IPDPS 2014), the uncapped model dotted above it; each measured kernel's mean power (filled)
  and each model kernel's (hollow), labelled as such. A model kernel's power is its minimum energy over its SOL time,
  which the power roof (roofline.model.power) holds at the limit; a model point still above the limit (an analysis
  made without the power roof) is labelled as a power it cannot run at.

Pure: machine blocks, analysis and results documents in, a Figure out; matplotlib is imported lazily. Results are
read typed (ResultsDocument, KernelResult, MeasuredEnergy; issue 30); a machine block (the analysis machine summary)
and an analysis document (roofline.model.analysis, not a results file) are dicts.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from roofline.errors import InputError
from roofline.model.energy import flops_per_joule, power_at_ceiling
from roofline.model.units import format_si
from roofline.records.document import ResultsDocument, as_document
from roofline.render.charts.roofs import COLORS, GID, intensity_tick, log_bounds, require_matplotlib
from roofline.render.text import mpl


def energy_lines(machine: dict[str, Any]) -> list[dict[str, Any]]:
    """One line per roof the machine has an energy figure for: {machine, roof, eps_flop, eps_mem, idle, peak,
    bandwidth, energy_balance, ridge}; none for a machine block without energy."""
    e = machine.get("energy")
    if not e:
        return []
    out = []
    for roof, eps in e["compute"].items():
        peak = machine["roofs"].get(roof)
        if not peak:
            continue
        out.append({"machine": machine["id"], "power_limit": machine.get("power_limit"),
                    "roof": roof, "eps_flop": eps, "eps_mem": e["memory"]["dram"],
                    "idle": e["idle_power"], "peak": peak, "bandwidth": machine["bandwidth"],
                    "energy_balance": e["memory"]["dram"] / eps, "ridge": peak / machine["bandwidth"]})
    return out


def energy_points(results_docs: Sequence[ResultsDocument | Mapping[str, Any]],
                  analysis_docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """{name, intensity, flops_per_joule, power, measured, power_limit}: measured kernels with NVML energy and
    FLOPs, then model kernels with energy figures and FLOPs (a kernel without FLOPs has no place on a FLOP/J axis)."""
    points = []
    for doc in results_docs:
        for r in as_document(doc).kernels:
            e = r.energy_measured
            if e and r.flops and r.bytes and e.flops_per_joule:
                points.append({"name": r.name, "intensity": r.flops / r.bytes, "flops_per_joule": e.flops_per_joule,
                               "power": e.power_mean, "measured": True, "power_limit": r.power_limit})
    for doc in analysis_docs:
        for k in doc["kernels"]:
            e = k.get("energy")
            if e and k.get("flops") and k.get("bytes") and e.get("flops_per_joule"):
                points.append({"name": k["name"], "intensity": k["intensity"], "flops_per_joule": e["flops_per_joule"],
                               "power": e["power"], "measured": False,
                               "power_limit": doc["machine"].get("power_limit")})
    return points


def energy_figure(machines: Sequence[dict[str, Any]], analysis_docs: Sequence[dict[str, Any]],
                  results_docs: Sequence[ResultsDocument | Mapping[str, Any]], title: str | None = None) -> Any:
    """FLOP/J and power against intensity. Refuses a chart with nothing on it: no machine with an energy block and
    no measured energy."""
    lines = [line for m in machines for line in energy_lines(m)]
    points = energy_points(results_docs, analysis_docs)
    if not lines and not points:
        ids = ", ".join(dict.fromkeys(m["id"] for m in machines)) or "none"
        raise InputError(f"plot --energy: nothing to draw: the specs ({ids}) have no energy block and no results "
                         "carry a measured energy (measure on a GPU with NVML); see docs/energy.md")
    require_matplotlib()
    # lazy: numpy is a start-up cost only this path pays
    import numpy as np
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.figure import Figure
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.ticker import FuncFormatter

    xs = [p["intensity"] for p in points] + [v for line in lines for v in (line["ridge"], line["energy_balance"])]
    x_lo, x_hi = log_bounds(xs or [1.0], 1.0, 1.0)
    grid = np.logspace(np.log10(x_lo), np.log10(x_hi), 400)
    fig = Figure(figsize=(14, 6.2))
    left = fig.add_axes((0.085, 0.1, 0.39, 0.78))
    right = fig.add_axes((0.565, 0.1, 0.415, 0.78))
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlim(x_lo, x_hi)
        ax.set_xlabel("arithmetic intensity (FLOP/B, DRAM)")
        ax.xaxis.set_major_formatter(FuncFormatter(intensity_tick))
        ax.grid(True, which="major", alpha=0.3)
    left.set_yscale("log")
    left.set_ylabel("FLOP per joule")
    left.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: format_si(v, "FLOP/J")))
    right.set_ylabel("power (W)")
    for i, line in enumerate(lines):
        color = COLORS[i % len(COLORS)]
        args = (line["eps_flop"], line["eps_mem"], line["idle"], line["peak"], line["bandwidth"])
        label = mpl(f"{line['machine']} {line['roof']}")
        left.plot(grid, [flops_per_joule(x, *args) for x in grid], color=color, lw=2, label=label,
                  gid=f"{GID}energy-roof:{line['machine']}:{line['roof']}")
        power = [power_at_ceiling(x, *args) for x in grid]
        cap = line["power_limit"]
        if cap and max(power) > cap:  # the board lowers its clock instead (Choi et al., IPDPS 2014: the cap is a roof)
            right.plot(grid, power, color=color, lw=0.8, ls=":", alpha=0.6,
                       gid=f"{GID}power-line-uncapped:{line['machine']}:{line['roof']}")
            power = [min(p, cap) for p in power]
        right.plot(grid, power, color=color, lw=2, label=label,
                   gid=f"{GID}power-line:{line['machine']}:{line['roof']}")
        for ax in (left, right):
            ax.axvline(line["energy_balance"], color=color, ls=":", lw=1,
                       gid=f"{GID}energy-balance:{line['machine']}:{line['roof']}")
            ax.axvline(line["ridge"], color=color, ls="--", lw=0.8, alpha=0.6)
        right.axhline(line["idle"], color=color, ls="-.", lw=0.8, alpha=0.6)
    # the board's limit: where measured windows recorded one, and the spec's power_limit (its datasheet's)
    limits = sorted({p["power_limit"] for p in points if p["power_limit"]}
                    | {m["power_limit"] for m in machines if m.get("power_limit")})
    for limit in limits:
        right.axhline(limit, color="#d62728", lw=1, ls="--", gid=f"{GID}power-limit")
        right.annotate(f"power limit {limit:.0f} W", (x_lo, limit), xytext=(4, 3), textcoords="offset points",
                       fontsize=8, color="#d62728")
    for n, p in enumerate(points, 1):
        style = {"color": "black", "s": 36, "zorder": 5} if p["measured"] else \
            {"facecolors": "none", "edgecolors": "black", "s": 36, "zorder": 5}
        kind = "measured" if p["measured"] else "model"
        # A model point above the board's limit is a power the GPU never draws (an analysis without the power roof,
        # or bytes charged past the DRAM's measured rate): drawn where the model puts it, and said so beside it.
        over = not p["measured"] and p["power_limit"] and p["power"] > p["power_limit"] * (1 + 1e-9)
        left.scatter([p["intensity"]], [p["flops_per_joule"]], gid=f"{GID}{kind}-point:{n}", **style)
        right.scatter([p["intensity"]], [p["power"]], gid=f"{GID}{kind}-power{'-over-limit' if over else ''}:{n}",
                      **style)
        for ax, y in ((left, p["flops_per_joule"]), (right, p["power"])):
            text = f"{n} {p['name']}"
            if over and ax is right:
                text += f" (model: {p['power']:.0f} W, above the {p['power_limit']:.0f} W limit: cannot run here)"
            ax.annotate(mpl(text), (p["intensity"], y), xytext=(4, 4), textcoords="offset points", fontsize=7)
    uncapped = [power_at_ceiling(line["ridge"], line["eps_flop"], line["eps_mem"], line["idle"], line["peak"],
                                 line["bandwidth"]) for line in lines]
    top = max([p["power"] for p in points] + limits + ([min(uncapped)] if limits and uncapped else uncapped))
    right.set_ylim(0, (max(limits) * 1.3 if limits and top > max(limits) * 1.3 else top * 1.15))
    if lines:
        left.legend(loc="lower right", fontsize=8)
    left.set_title("energy roofline: dotted = energy balance, dashed = time ridge", fontsize=9)
    kinds = [k for k, present in (("measured mean power (filled)", any(p["measured"] for p in points)),
                                  ("model, at the ceiling (hollow)", any(not p["measured"] for p in points))) if present]
    right.set_title("power at the time ceiling (lines, held at the power limit; dotted: the uncapped model; dash-dot: "
                    "idle)" + (f"\npoints: {', '.join(kinds)}" if kinds else ""), fontsize=9)
    fig.suptitle(mpl(title or "energy roofline (Choi et al. 2013): "
                 + ", ".join(dict.fromkeys(m["id"] for m in machines))), fontsize=11)
    return fig
