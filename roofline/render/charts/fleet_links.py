"""The fleet links file (roofline/fleet-links/v1) as a table and a chart: bus bandwidth against message size for
each collective, one panel per scope (intra-node, inter-node), under the link roofs.

Roofs are one direction's bandwidth, the figure nccl-tests' bus bandwidth compares with: a spec's interconnect
link halved (specs print both directions summed) and, dotted, the best bus bandwidth this run reached on that link
(what `roofline fleet link-roofs` writes into a measured spec). Pure: a document in, a rich Table or a Figure out.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from rich.table import Table
from rich.text import Text

from roofline.fleet import collectives as cv
from roofline.fleet.links_doc import best_by_scope, peak
from roofline.render.tables.fit import droppable
from roofline.model.units import format_bytes, format_rate, format_time
from roofline.errors import InputError
from roofline.render.charts.roofs import COLORS, FAILED_COLOR, GID, require_matplotlib
from roofline.model.counts import counted


def _where(scope: Mapping[str, Any]) -> str:
    hosts = scope.get("hosts") or []
    where = hosts[0] if len(hosts) == 1 else f"{len(hosts)} nodes"
    n = len(scope.get("ranks") or [])
    return f"{where}, {n} rank{'s' if n != 1 else ''}"


def _group(scope: Mapping[str, Any]) -> str:
    return f"{scope['scope']} ({_where(scope)})"


def links_table(doc: Mapping[str, Any]) -> Any:
    """Every point: scope, collective, nccl-tests' size, time, algbw, busbw; FAILED points with their error."""
    caption = "; ".join([f"skipped {s}" for s in doc.get("skipped", [])]) or None
    table = Table(title=f"Collectives over {doc.get('transport') or doc.get('backend')}, {counted(doc.get('size'), 'rank')} on "
                        f"{counted(doc.get('nodes'), 'node')} (nccl-tests' algbw and busbw)", caption=caption)
    for name in ("group", "collective", "size", "time", "algbw", "busbw", "status"):
        table.add_column(name, justify="left" if name in ("group", "collective", "status") else "right")
    for n, scope in enumerate(doc.get("scopes", [])):
        if n:
            table.add_section()
        label = [scope["scope"], _where(scope)]  # one line each, so a narrow terminal does not wrap them
        for i, p in enumerate(scope.get("points", [])):
            ok = p.get("status") == "OK"
            table.add_row(Text(label[i] if i < len(label) else ""), cv.LABELS[p["collective"]],
                          format_bytes(p["bytes"], binary=True),
                          format_time(p.get("time")) if ok else "–", format_rate(p.get("algbw")) if ok else "–",
                          format_rate(p.get("busbw")) if ok else "–",
                          Text("OK" if ok else f"FAILED: {p.get('error')}"))
    return droppable(table, "algbw", "time", "group")


def summary_lines(doc: Mapping[str, Any]) -> list[str]:
    """One line per scope: its best bus bandwidth and where it was reached."""
    lines = []
    for scope in doc.get("scopes", []):
        best = peak(scope)
        if best is None:
            lines.append(f"{_group(scope)}: no size passed its check")
            continue
        if best["ranks"] < 2:
            copy = (f" (its send/recv to itself, a copy: {format_rate(best['busbw'])} at "
                    f"{format_bytes(best['bytes'], binary=True)})" if best["busbw"] > 0 else "")
            lines.append(f"{_group(scope)}: one rank crosses no link{copy}")
            continue
        link = f" ({scope['link']} roof)" if scope.get("link") and best["ranks"] > 1 else ""
        lines.append(f"{_group(scope)}: best busbw {format_rate(best['busbw'])}{link}, "
                     f"{cv.LABELS[best['collective']]} at {format_bytes(best['bytes'], binary=True)}")
    return lines


def links_figure(doc: Mapping[str, Any], roofs: Sequence[Mapping[str, Any]] = (), title: str | None = None) -> Any:
    """Bus bandwidth (log y) against nccl-tests' size (log2 x), one line per collective and group, one panel per
    scope. `roofs`: {label, link, bandwidth (B/s one direction)} drawn dashed on the panels of their link."""
    require_matplotlib()
    from matplotlib.figure import Figure  # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.ticker import FuncFormatter  # lazy: matplotlib is a start-up cost only this path pays

    scopes = [s for s in doc.get("scopes", []) if s.get("points")]
    if not scopes:
        raise InputError("the fleet links file holds no measured scope ("
                         + ("; ".join(doc.get("skipped", [])) or "nothing measured") + ")")
    kinds = list(dict.fromkeys(s["scope"] for s in scopes))
    measured = best_by_scope(doc)
    fig = Figure(figsize=(7 * len(kinds), 5.5))
    axes = fig.subplots(1, len(kinds), squeeze=False)[0]
    for ax, kind in zip(axes, kinds):
        mine = [s for s in scopes if s["scope"] == kind]
        link = mine[0].get("link")
        highest = []
        for i, collective in enumerate(cv.COLLECTIVES):
            for n, scope in enumerate(mine):
                pts = [p for p in scope["points"] if p["collective"] == collective]
                good = [p for p in pts if p.get("status") == "OK" and p["busbw"] > 0]
                bad = [p for p in pts if p.get("status") != "OK"]
                label = cv.LABELS[collective] if n == 0 else None
                if good:
                    ax.plot([p["bytes"] for p in good], [p["busbw"] for p in good], "o-", color=COLORS[i],
                            markersize=3, linewidth=1.2 if len(mine) == 1 else 0.8,
                            alpha=1.0 if len(mine) == 1 else 0.6, label=label, gid=f"{GID}busbw:{collective}")
                    highest.extend(p["busbw"] for p in good)
                for p in bad:
                    ax.plot([p["bytes"]], [min(highest) if highest else 1.0], "x", color=FAILED_COLOR,
                            markersize=8, gid=f"{GID}failed:{collective}")
        for j, roof in enumerate(r for r in roofs if link and r.get("link") == link):
            ax.axhline(roof["bandwidth"], color="black", linestyle="--", linewidth=1.0, alpha=1.0 - 0.25 * (j % 3),
                       label=f"{roof['label']} (one way)", gid=f"{GID}roof:{roof['label']}")
            highest.append(roof["bandwidth"])
        best = measured.get(kind)
        if best is not None:
            ax.axhline(best["busbw"], color="grey", linestyle=":", linewidth=1.2,
                       label=f"best measured {format_rate(best['busbw'])}", gid=f"{GID}measured:{kind}")
            highest.append(best["busbw"])
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        if highest:
            ax.set_ylim(top=max(highest) * 1.6)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _p: format_bytes(v, binary=True)))
        rate = FuncFormatter(lambda v, _p: format_rate(v))
        ax.yaxis.set_major_formatter(rate)
        ax.yaxis.set_minor_formatter(rate)  # a panel within one decade has only minor ticks
        ax.tick_params(axis="y", which="both", labelsize=7)
        ax.tick_params(axis="x", labelrotation=45, labelsize=7)
        ax.set_xlabel("size S (nccl-tests: all-gather and reduce-scatter count the whole buffer)")
        ax.set_ylabel("bus bandwidth (one direction)")
        groups = f", {len(mine)} groups" if len(mine) > 1 else ""
        ax.set_title(f"{kind}: {mine[0]['points'][0]['ranks']} ranks{groups}"
                     + (f", {link}" if link else ", host memory (MPI)"), fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
    fig.suptitle(title or f"Collectives over {doc.get('transport') or doc.get('backend')}: "
                          f"{counted(doc.get('size'), 'rank')} on {counted(doc.get('nodes'), 'node')}")
    fig.tight_layout()
    return fig
