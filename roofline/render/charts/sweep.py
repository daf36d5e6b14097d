"""The sweep chart: achieved bandwidth against bytes moved for kernels measured at several sizes, with the
latency-bound region that Little's Law marks out and the bandwidth roof(s).

It exists because the sweep chart shares nothing with the roofline chart but the palette and the log-range
helper (roofline.render.charts.roofs), so it stands on its own. Pure: a results document in, a Figure out; matplotlib is
imported lazily, only inside sweep_figure. The results are read typed (ResultsDocument, KernelResult, Prediction;
issue 30); machine blocks (the analysis machine summary, a --calibrated spec's) are dicts.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from roofline.render.charts.roofs import COLORS, FAILED_COLOR, GID, log_bounds, require_matplotlib
from roofline.render.text import mpl
from roofline.records.files import sweep_series
from roofline.model.units import format_bytes, format_rate, format_time
from roofline.records.document import KernelResult, ResultsDocument, as_document
from roofline.errors import InputError


def sweep_figure(doc: ResultsDocument | Mapping[str, Any], kernels: Sequence[str] = (),
                 measured_machines: Sequence[dict[str, Any]] = (), title: str | None = None, *,
                 source: str = "the results") -> Any:
    """Achieved bandwidth against bytes moved (log x) for kernels measured at several sizes. `source` names the
    document in an error (its file's path)."""
    require_matplotlib()
    doc = as_document(doc)
    from matplotlib.figure import Figure  # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.lines import Line2D  # lazy: matplotlib is a start-up cost only this path pays
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    groups = sweep_series(doc)
    if kernels:
        def named(key: str, k: str) -> bool:
            return key == k or key.startswith(f"{k} (GPU ")

        missing = [k for k in kernels if not any(named(key, k) for key in groups)]
        if missing:
            raise InputError(f"--sweep: {', '.join(missing)} not measured at several sizes in {source}; "
                             f"sweeps there: {', '.join(groups) or 'none'}")
        groups = {key: v for key, v in groups.items() if any(named(key, k) for k in kernels)}
    if not groups:
        raise InputError(f"{source}: no kernel measured at several sizes (entries sharing a "
                         "name with different bytes); run a sweep first")
    machine = doc.machine
    if machine is None:
        raise InputError(f"{source}: machine: is null (measured without a spec, so there is no bandwidth roof or "
                         "Little's Law bytes to draw); sweep again with --spec, e.g. 'roofline sweep KERNEL "
                         "--backend numpy --spec h100'")
    bw, in_flight = machine["bandwidth"], machine["bytes_in_flight"]

    all_bytes = [k.bytes for g in groups.values() for k in g] + [in_flight]
    x_lo, x_hi = log_bounds(all_bytes, 0.2, 0.2)
    achieved = [k.achieved_bandwidth for g in groups.values() for k in g if k.achieved_bandwidth]
    achieved += [k.bytes / k.predicted_time for g in groups.values() for k in g if k.predicted_time]
    ceilings = [bw] + [m["bandwidth"] for m in measured_machines]
    y_hi = max(ceilings + achieved) * 1.15

    fig = Figure(figsize=(11, 6.5))
    ax = fig.add_axes((0.09, 0.1, 0.86, 0.8))
    ax.set_xscale("log")
    ax.set_xlim(x_lo, x_hi)
    ax.set_ylim(0, y_hi)
    ax.xaxis.set_major_locator(LogLocator(base=10))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: format_bytes(v)))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _p: format_rate(v) if v else "0"))
    ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)
    # A predicted sweep (--predict) ran nothing: its points are the model's, drawn and labelled as predictions, never
    # as achieved figures or as failures at 0 B/s.
    measured_any = any(k.achieved_bandwidth for g in groups.values() for k in g)
    ax.set_xlabel("Bytes moved per launch (B)")
    ax.set_ylabel("Achieved bandwidth (B/s)" if measured_any else "Predicted bandwidth, bytes ÷ predicted time (B/s)")
    what = "Bandwidth vs size" if measured_any else "Predicted bandwidth vs size"
    ax.set_title(mpl(title or f"{what}: {', '.join(groups)} on {doc.device_name}"), loc="left", fontsize=13)

    # the latency-bound region and the Little's Law line; its note hangs below the lowest roof and its label, where
    # the latency-bound points (at most about half the bandwidth) never reach, so it overlaps neither
    ax.axvspan(x_lo, in_flight, color="#f4f4f4", zorder=0, gid=GID + "latency-region")
    ax.axvline(in_flight, color="#555555", linestyle="-.", linewidth=1.2, gid=GID + "littles-law")
    ax.annotate(f"Little's Law: {format_bytes(in_flight)} in flight\n"
                f"({format_rate(bw)} × {_time(machine['latency'])})\nsmaller transfers are latency-bound",
                xy=(in_flight, 0.72 * min(ceilings)), xytext=(-6, 0), textcoords="offset points", ha="right",
                va="top", fontsize=8.5, color="#333333", gid=GID + "littles-law-label")
    ax.axhline(bw, color=COLORS[0], linewidth=2, gid=GID + "bandwidth-roof")
    ax.annotate(mpl(f"peak {format_rate(bw)} ({machine['name']})"), xy=(x_hi, bw), xytext=(-4, 4),
                textcoords="offset points", ha="right", va="bottom", fontsize=9, color=COLORS[0], fontweight="bold",
                gid=GID + "bandwidth-label")
    for m in measured_machines:
        ax.axhline(m["bandwidth"], color=COLORS[0], linewidth=1.5, linestyle="--", gid=GID + "bandwidth-roof")
        ax.annotate(f"measured {format_rate(m['bandwidth'])}", xy=(x_hi, m["bandwidth"]), xytext=(-4, -4),
                    textcoords="offset points", ha="right", va="top", fontsize=9, color=COLORS[0],
                    gid=GID + "bandwidth-label")

    handles = []
    for i, (name, entries) in enumerate(groups.items()):
        color = COLORS[(i + 1) % len(COLORS)]
        ok: list[KernelResult] = [k for k in entries if k.achieved_bandwidth and not k.failed]
        # a SKIPPED entry never ran: it is not a failure (a predicted sweep's are all SKIPPED, with predicted times)
        bad = [k for k in entries if all(k is not o for o in ok) and k.failed]
        ax.plot([k.bytes for k in ok], [k.achieved_bandwidth for k in ok], "-o", color=color, markersize=6,
                linewidth=1.6, gid=GID + "sweep-line")
        for k in ok:
            if k.fraction_of_ceiling is not None:
                fraction = k.fraction_of_ceiling
                ax.annotate(f"{fraction:.0%}" if fraction >= 0.01 else f"{fraction:.1%}",
                            xy=(k.bytes, k.achieved_bandwidth),
                            xytext=(0, 7), textcoords="offset points", ha="center", fontsize=7.5, color=color)
        if bad:
            ax.plot([k.bytes for k in bad], [y_hi * 0.02] * len(bad), "X", color=FAILED_COLOR, markersize=9,
                    linestyle="", gid=GID + "point-failed")
        if ok:
            handles.append(Line2D([], [], marker="o", color=color, label=mpl(f"{name} (achieved; % of its ceiling)")))
        predicted = [k for k in entries if k.predicted_time]
        if predicted:  # the model's prediction as the bandwidth it implies, beside the measured points
            only = not ok  # nothing measured: the prediction's own points, hollow, so they read as no measurement
            ax.plot([k.bytes for k in predicted], [k.bytes / k.predicted_time for k in predicted], "--",
                    color=color, linewidth=1.4, alpha=0.8, gid=GID + "sweep-prediction",
                    **({"marker": "o", "markerfacecolor": "white", "markersize": 6} if only else {}))
            prediction = predicted[0].prediction
            model = prediction.model if prediction is not None and prediction.model is not None else "model"
            label = f"{name} predicted ({model}){', not measured' if only else ''}"
            handles.append(Line2D([], [], linestyle="--", color=color, label=mpl(label),
                                  **({"marker": "o", "markerfacecolor": "white"} if only else {})))
    if any(k.failed for g in groups.values() for k in g):
        handles.append(Line2D([], [], marker="X", linestyle="", color=FAILED_COLOR, label="FAILED verification"))
    ax.legend(handles=handles, loc="lower right", fontsize=8.5, framealpha=0.9)
    return fig


def _time(seconds: float) -> str:
    return format_time(seconds)
