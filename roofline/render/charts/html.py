"""One self-contained HTML page for a profile: the roofline as inline SVG (matplotlib's, the same Figure as the PNG),
a small script for hovering and toggling groups, and the table of groups ranked by recoverable time.

Why matplotlib's SVG and forty lines of script rather than a plotting library: matplotlib is already a dependency,
the page needs no network and no extra package to write or to open, it looks like the PNG the other commands make,
and the few interactions wanted (a tooltip, a legend that hides groups) need no framework. Each point is an SVG
group with id `pt-N`; the hover data sits in a JSON block (every `<` escaped, so no name can end the script), and
the script fills the tooltip with textContent, never HTML. Every text the page shows is html.escape'd.

The document is read typed (roofline.render.charts.profile.Profile: Group, KernelResult, Timeline; issue 30); the
chart points are this module's own rows, and a timeline device's window and gaps are shown as the block holds them.
"""

from __future__ import annotations

import io
import json
import math
import re
from typing import Any, Mapping

from roofline.ncu.halfprec import roof_text
from roofline.model.counts import counted
from roofline.render.charts.profile import Profile, chart_points, profile_figure, roof_colors
from roofline.render.text import clean, html_text
from roofline.model.units import format_bytes, format_count, format_flops, format_fraction, format_rate, format_time
from roofline.render.tables.grouped import COLUMNS, MIXED_ROOF, footer, unmodelled_line, unmodelled_rows
from roofline.records.timeline import Timeline

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
#chart svg{max-width:100%;height:auto}
#chart g[id^="pt-"]{cursor:pointer}
#tooltip{position:fixed;display:none;background:#fff;border:1px solid #888;padding:.4em .6em;font-size:12px;
 white-space:pre;pointer-events:none;box-shadow:2px 2px 6px rgba(0,0,0,.2)}
#legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3em .8em;font-size:13px}
#legend li{cursor:pointer;user-select:none}
#legend li.off{opacity:.35;text-decoration:line-through}
#legend .swatch{display:inline-block;width:.8em;height:.8em;border-radius:50%;margin-right:.3em}
table{border-collapse:collapse;font-size:13px}th,td{padding:.2em .6em;border-bottom:1px solid #ddd}
td.num{text-align:right;white-space:nowrap}tr.off{opacity:.35}
.strip{position:relative;height:1.1em;background:#ccc;margin:.2em 0 .6em;max-width:60em}
.strip span{position:absolute;top:0;height:100%}
.bar{display:flex;height:.7em;max-width:60em}.bar span{height:100%}
.scroll{max-width:100%;overflow-x:auto}
.axis{position:relative;height:1.3em;max-width:60em;border-top:1px solid #666;color:#444}
.axis span{position:absolute;top:0;transform:translateX(-50%);white-space:nowrap;padding-top:3px;font-size:11px}
.axis span::before{content:"";position:absolute;left:50%;top:0;height:3px;border-left:1px solid #666}
"""
_CAUSE_COLORS = {"host-bound": "#d9534f", "launch-bound": "#f0ad4e", "synchronisation": "#5b7fd6", "other": "#999"}

_SCRIPT = """
(function () {
  var data = JSON.parse(document.getElementById('roofline-data').textContent);
  var tip = document.getElementById('tooltip');
  function show(p, ev) {
    tip.textContent = p.tooltip;
    tip.style.display = 'block';
    tip.style.left = (ev.clientX + 14) + 'px';
    tip.style.top = (ev.clientY + 14) + 'px';
  }
  data.points.forEach(function (p) {
    var g = document.getElementById(p.id);
    if (!g) { return; }
    g.addEventListener('mouseenter', function (ev) { show(p, ev); });
    g.addEventListener('mousemove', function (ev) { show(p, ev); });
    g.addEventListener('mouseleave', function () { tip.style.display = 'none'; });
  });
  document.querySelectorAll('#legend li').forEach(function (li) {
    li.addEventListener('click', function () {
      var off = li.classList.toggle('off');
      var g = document.getElementById(li.dataset.point);
      if (g) { g.style.display = off ? 'none' : ''; }
      var row = document.getElementById('row-' + li.dataset.point);
      if (row) { row.classList.toggle('off', off); }
    });
  });
})();
"""


def _tooltip(p: Mapping[str, Any]) -> str:
    lines = [clean(p["name"], newlines=False), f"launches: {p['launches']}",
             f"time: {format_time(p['time'])} ({p['share']:.1%} of GPU time)",
             "intensity: " + ("-" if not p["intensity"] else f"{p['intensity']:.3g} FLOP/B"),
             f"achieved: {format_flops(p['achieved'])}, {format_rate(p['bandwidth'])}",
             "roof: " + clean(roof_text(p["roof"], p.get("dtype")), newlines=False)
             + (" + (work on more than one roof; this one holds most of it)" if p.get("mixed") else ""),
             f"fraction of ceiling: {format_fraction(p['fraction'])}",
             f"recoverable: {format_time(p['recoverable'])}"]
    if p.get("above"):
        lines.append("! " + clean(p["above"], newlines=False))
    if p.get("flag"):
        lines.append("! " + clean(p["flag"], newlines=False))
    return "\n".join(lines)


def _svg(doc: Profile, title: str | None) -> str:
    """The chart as an inline <svg> element (no XML prologue, no fixed pixel size)."""
    return _figure_svg(profile_figure(doc, title))


def _json_for_script(value: Any) -> str:
    """JSON that is safe inside <script>: '<', '>' and '&' as \\u escapes, so '</script>' cannot occur."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    return re.sub(r"[<>&\u2028\u2029]", lambda m: f"\\u{ord(m.group()):04x}", text)


def profile_html(doc: Any, title: str | None = None) -> str:
    """The page (a ResultsDocument, or a producer's dict read once: Profile.of). Points with no FLOPs are in the
    table (marked) but not on the log-log chart."""
    view = Profile.of(doc)
    points = chart_points(view)
    colors = roof_colors(points)
    by = view.groups[0].by if view.groups else None
    heading = title or (f"{view.device_name} · ceilings of {view.machine.get('name') or view.machine['id']}"
                        + (f" · {counted(view.launches, 'launch')} grouped by {by}" if by else ""))
    legend = "".join(
        f'<li data-point="{p["id"]}" title="{html_text(p["roof"])}"><span class="swatch" style="background:'
        f'{colors[p["roof"]]}"></span>{html_text(p["name"])}</li>'
        for p in points if p["plotted"])

    unplotted = [(i, p) for i, p in enumerate(points, 1) if not p["plotted"]]
    missing = ("<p id=\"unplotted\">Not on the chart, 0 FLOPs (no place on a log-log chart): "
               + "; ".join(f"{i}. {html_text(p['name'])} at {format_rate(p['bandwidth'])} for {format_time(p['time'])}"
                           for i, p in unplotted) + ".</p>\n") if unplotted else ""
    mixed = (f"<p id=\"mixed-roof\">{html_text(MIXED_ROOF)}.</p>\n"
             if any(p.get("mixed") for p in points) else "")
    rows = []
    for i, p in enumerate(points, 1):
        cells = [str(i), breakable(p["name"]) + ("" if p["plotted"] else " (0 FLOPs: not drawn)"),
                 str(p["launches"]), format_time(p["time"]), f"{p['share']:.1%}", format_count(p["flops"]),
                 format_bytes(p["bytes"]), "-" if not p["intensity"] else f"{p['intensity']:.3g}",
                 format_flops(p["achieved"]),
                 html_text(roof_text(p["roof"], p.get("dtype")) + (" +" if p.get("mixed") else "")),
                 format_fraction(p["fraction"]),
                 format_time(p["sol_time"]),
                 format_time(p["recoverable"]), html_text(p.get("flag") or "")]
        tds = "".join(f'<td class="num">{c}</td>' if j not in (1, 9, 13) else f"<td>{c}</td>"
                      for j, c in enumerate(cells))
        rows.append(f'<tr id="row-{p["id"]}">{tds}</tr>')
    for j, cells in enumerate(unmodelled_rows(view.unmodelled)):
        # the table's row minus the bandwidth column the page leaves out (as group_row's cells, COLUMNS)
        shown = [html_text(c) for k, c in enumerate(cells) if COLUMNS[k] != "achieved BW"]
        tds = "".join(f'<td class="num">{c}</td>' if k not in (1, 9, 13) else f"<td>{c}</td>"
                      for k, c in enumerate(shown))
        rows.append(f'<tr id="unmodelled-{j}" class="unmodelled">{tds}</tr>')
    unmodelled = unmodelled_line(view.unmodelled)
    missing += f'<p id="unmodelled">{html_text(unmodelled)}.</p>\n' if unmodelled else ""
    head = "".join(f"<th>{h}</th>" for h in ("#", "name", "launches", "time", "share", "FLOPs", "DRAM bytes",
                                              "intensity", "achieved", "roof", "of ceiling", "SOL time",
                                              "recoverable", "flag"))

    data = {"points": [{"id": p["id"], "name": p["name"], "tooltip": _tooltip(p)} for p in points if p["plotted"]]}
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html_text(heading)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1 style=\"font-size:1.2em\">{html_text(heading)}</h1>\n"
        f"<div id=\"chart\">{_svg(view, title)}</div>\n<div id=\"tooltip\" role=\"tooltip\"></div>\n"
        f"<p>Click a name to hide or show its point.</p><ul id=\"legend\">{legend}</ul>\n"
        f"{missing}<p>{html_text(footer(doc))}</p>\n{mixed}{timeline_html(view.timeline)}"
        f"<div class=\"scroll\"><table id=\"groups\"><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
        "</table></div>\n"
        f"<script type=\"application/json\" id=\"roofline-data\">{_json_for_script(data)}</script>\n"
        f"<script>{_SCRIPT}</script>\n</body></html>\n"
    )


def timeline_html(timeline: Timeline | None) -> str:
    """The step beside the roofline (an imported trace's timeline block): per device a strip the width of its window,
    green where the GPU was busy, with its largest idle gaps cut out in place and coloured by cause, and under it
    the idle time split by cause. Empty for a document without a timeline."""
    if timeline is None or not timeline.devices:
        return ""
    parts = ['<h2 style="font-size:1em">Timeline: the GPU over the step\'s window (HTA\'s definition)</h2>',
             '<p style="font-size:13px">' + " ".join(
                 f'<span class="swatch" style="display:inline-block;width:.8em;height:.8em;background:{color}">'
                 f"</span> {html_text(cause)}" for cause, color in _CAUSE_COLORS.items())
             + " · the grey strip is the window with its five largest idle gaps in place; the bar under it is "
             "all of the window, busy in green and every gap's time by cause</p>"]
    for d in timeline.devices:
        window = d["window"]
        if window <= 0:
            continue
        label = (f"rank {d['rank']} device {d['device']}: window {format_time(window)}, busy {format_time(d['busy'])}, "
                 f"idle {format_fraction(d['idle_share'])}")
        gaps = "".join(
            f'<span title="{html_text(_gap_title(g))}" style="left:{100 * g["start"] / window:.4f}%;'
            f'width:{100 * g["duration"] / window:.4f}%;background:{_CAUSE_COLORS.get(g["cause"], "#999")}"></span>'
            for g in d["gaps"])
        bar = "".join(
            f'<span title="{html_text(cause)} {format_time(t)}" style="width:{100 * t / window:.4f}%;'
            f'background:{_CAUSE_COLORS[cause]}"></span>'
            for cause, t in d["idle_by_cause"].items() if cause in _CAUSE_COLORS and t > 0)
        parts.append(f'<div style="font-size:13px">{html_text(label)}</div><div class="strip">{gaps}</div>'
                     f'{time_axis(window)}<div class="bar" style="background:#4c8c4a">{bar}</div>')
    return "\n".join(parts) + "\n"


def breakable(name: object) -> str:
    """A name for a table cell that may wrap after each `_` or `/` (`<wbr>`): a 150-character Triton name takes a
    few lines rather than pushing the table's last columns off a 1400-pixel screen."""
    return re.sub(r"([_/]+)", r"\1<wbr>", html_text(name))


def axis_ticks(window: float, most: int = 8) -> list[float]:
    """Tick times (s) from 0 across a window: a step of 1, 2 or 5 × a power of ten giving at most `most` ticks."""
    if window <= 0:
        return [0.0]
    step = 10.0 ** math.floor(math.log10(window / most))
    for factor in (1, 2, 5, 10):
        if window / (step * factor) <= most:
            step *= factor
            break
    count = int(window / step + 1e-9)
    return [i * step for i in range(count + 1)]


def time_axis(window: float) -> str:
    """The time axis under a timeline strip: ticks from the window's start, in ms (µs for a window under 1 ms)."""
    unit, scale = ("ms", 1e3) if window >= 1e-3 else ("µs", 1e6)
    ticks = axis_ticks(window)
    spans = "".join(f'<span style="left:{100 * t / window:.4f}%">{t * scale:g}</span>' for t in ticks)
    return (f'<div class="axis" title="time from the window\'s start, {unit}">{spans}'
            f'<span style="left:100%;transform:none;padding-left:.4em">{unit}</span></div>')


def _gap_title(g: Mapping[str, Any]) -> str:
    where = f" in {g['host_op']}" if g.get("host_op") else ""
    return (f"{format_time(g['duration'])} idle at {format_time(g['start'])}: {g['cause']}{where}; "
            f"then {clean(str(g.get('next') or ''), newlines=False)[:120]}"
            + (f", launched in {clean(str(g['launch_op']), newlines=False)[:80]}" if g.get("launch_op") else ""))


def _figure_svg(fig: Any) -> str:
    # lazy: matplotlib is a start-up cost only this path pays
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig)
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": "roofline"}, facecolor="white")
    svg = buffer.getvalue()
    return re.sub(r"<metadata>.*?</metadata>\s*", "", svg[svg.index("<svg"):], flags=re.S)


POINT_COLUMNS = ("#", "kernel", "parameters", "point", "intensity", "FLOP/s", "ceiling", "of ceiling")


def point_rows(points: Any) -> list[list[str]]:
    """The numbered points of a roofline chart (roofline.render.charts.points.Point) as table cells: what a model point
    attains, what a measured one achieved, and how much of its ceiling that is. Measure wording: no GPU-time share,
    no recoverable time (kernels timed one by one are not parts of one program's time)."""
    what = {"model": "model (attainable)", "measured": "measured (achieved)", "failed": "FAILED verification"}
    rows = []
    for p in points:
        rows.append([str(p.number), p.name, p.params, what.get(p.kind, p.kind), f"{p.x:.3g} FLOP/B",
                     format_flops(p.y), format_flops(p.ceiling),
                     "–" if p.fraction is None or p.kind != "measured" else format_fraction(p.fraction)])
    return rows


def figure_html(fig: Any, heading: str, columns: Any = (), rows: Any = (), notes: Any = ()) -> str:
    """Any chart as one self-contained page: its SVG, an optional table under it, notes. For charts that are not
    a profile (model points, several results files, sweeps): every cell and note escaped and cleaned here."""
    head = "".join(f"<th>{html_text(h)}</th>" for h in columns)
    body = "".join("<tr>" + "".join(f"<td>{html_text(c)}</td>" for c in row) + "</tr>" for row in rows)
    table = (f"<div class=\"scroll\"><table id=\"points\"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>"
             "</table></div>\n" if rows else "")
    paragraphs = "".join(f"<p>{html_text(n)}</p>\n" for n in notes)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>{html_text(heading)}</title><style>{_STYLE}</style></head><body>\n"
        f"<h1 style=\"font-size:1.2em\">{html_text(heading)}</h1>\n"
        f"<div id=\"chart\">{_figure_svg(fig)}</div>\n{paragraphs}{table}</body></html>\n"
    )
