"""`roofline plot`: a log-log roofline chart (model and/or measured points), or a bandwidth-vs-size sweep chart."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from roofline.cli.common import (MODULE_IN_NCU, FilePath, Fraction, OutputPath, force_option, group_by_option,
                                 is_stdout, kernel_options, note, old_spelling, say_auto_spec, spec_option,
                                 takes_old_spelling, write_output)
from roofline.errors import InputError
from roofline.render.charts import plot as render
from roofline.render.charts.points import collect_points
from roofline.render.charts.sweep import sweep_figure
from roofline.records.files import load_results
from roofline.fleet.links_doc import load_links
from roofline.render.charts.fleet_links import links_figure
from roofline.load.selection import resolve_specs, analysis_documents, load_selection
from roofline.render.charts.interconnect import interconnect_chart
from roofline.render.charts.hierarchy import hierarchy_figure
from roofline.render.charts.html import POINT_COLUMNS, figure_html, point_rows, profile_html
from roofline.model.analysis import machine_summary
from roofline.load.autospec import AUTO
from roofline.ncu.group import add_groups
from roofline.render.charts.plot import figure_bytes
from roofline.render.charts.profile import profile_figure
from roofline.render.charts.fleet import fleet_figure, slow_table
from roofline.render.charts.energy import energy_figure

if TYPE_CHECKING:
    from roofline.records.document import ResultsDocument
    from roofline.records.files import ResultsFile


AUTO_GROUP_POINTS = 40  # more points than this cannot be labelled readably on one chart
FLEET_OUTLIER = 0.05  # the fleet chart's default outlier limit, as `report --outlier 5%` is commonly run


@click.command()
@kernel_options
@spec_option(multiple=True, default=None, help_extra=(
    " Gives the roofs and the hollow model points. Default: the results' spec with --results, else auto."))
@click.option("--results", "results_paths", multiple=True, type=FilePath(dir_okay=True), metavar="FILE",
              help="Results from 'roofline measure': filled points at achieved FLOP/s with a line to their "
                   "ceiling; their machine block gives the roofs. Repeatable.")
@click.option("--calibrated", "measured_specs", multiple=True, metavar="SPEC",
              callback=takes_old_spelling("measured_specs"),
              help="A measured spec ('roofline calibrate -o FILE') drawn dashed beside the datasheet roofs. "
                   "Repeatable.")
@old_spelling("--measured-spec", "--calibrated SPEC", "measured_specs", multiple=True, metavar="SPEC")
@click.option("--sweep", "sweep_path", type=FilePath(dir_okay=True), default=None, metavar="FILE",
              help="Draw the sweep chart instead: achieved bandwidth against bytes moved for a kernel measured at "
                   "several sizes, with the bandwidth roof and Little's Law bytes in flight. KERNEL names pick "
                   "which swept kernels to draw.")
@click.option("--hierarchy", is_flag=True,
              help="With --results measured with '--profile ncu' (or imported from ncu): each kernel at its L1, L2 "
                   "and DRAM intensity, linked, against the L1, L2 and DRAM bandwidth roofs (cache bandwidths from "
                   "the spec's caches, or from a --calibrated written by 'roofline calibrate').")
@click.option("--interconnect", "interconnect_path", type=FilePath(dir_okay=True), default=None, metavar="FILE",
              help="Draw the links measured by 'roofline interconnect' instead: each copy against its NVLink or "
                   "PCIe roof, and all-reduce bus bandwidth against message size.")
@click.option("--links", "links_path", type=FilePath(dir_okay=True), default=None, metavar="FILE",
              help="Draw the collectives measured by 'roofline fleet links' instead: bus bandwidth against size per "
                   "scope, under the link roofs of --spec and --calibrated (one direction) and the best measured.")
@click.option("--energy", is_flag=True,
              help="Draw the energy roofline instead: FLOP per joule against intensity for each roof the spec has "
                   "energy figures for (its 'energy' block), and power against intensity, with measured points from "
                   "--results measured with NVML energy (docs/energy.md).")
@force_option
@click.option("-o", "--output", type=OutputPath(), default=None,
              help="Image file; the extension picks the format: .png, .svg, .pdf, or .html (one self-contained "
                   "page with the chart and its table; for a profile, hover a point and click a legend name to hide "
                   "it) ('-': PNG on standard output). "
                   "[default: roofline.png, or roofline-sweep.png with --sweep]")
@click.option("--roofs", "roof_choice", type=click.Choice(["used", "all"]), default=None,
              help="Which compute roofs of each machine to draw: 'used' (those the plotted kernels use, plus the best "
                   "tensor roof) or 'all'. [default: used when the chart shows several machines, all for one]")
@click.option("--title", default=None, help="Chart title (default: the machine names).")
@click.option("--dpi", type=click.IntRange(50, 1200), default=150, show_default=True, help="Resolution of a PNG.")
@group_by_option("auto", auto=True, refused={"module": MODULE_IN_NCU},
                 help=f"For one --results file imported from ncu: draw one point per group. auto groups (by op with "
                      f"NVTX ranges, else by kernel) past {AUTO_GROUP_POINTS} launches, which could not be labelled "
                      "one by one; none draws every launch.")
@click.option("--outlier", type=Fraction(), default=None,
              help=f"For one --results file from mpirun (a fleet): the limit below the median at which a GPU or a "
                   f"node is drawn and named as slow, as 'report --outlier' judges it. [default: "
                   f"{FLEET_OUTLIER:.0%}]")
def plot(names: tuple[str, ...], kernel_paths: tuple[Path, ...], params: tuple[str, ...],
         spec_names: tuple[str, ...], results_paths: tuple[Path, ...], measured_specs: tuple[str, ...],
         sweep_path: Path | None, hierarchy: bool, output: Path | None, title: str | None, dpi: int,
         interconnect_path: Path | None = None, roof_choice: str | None = None, group_by: str = "auto",
         links_path: Path | None = None, outlier: float | None = None, energy: bool = False) -> None:
    """Draw a roofline chart: compute and memory roofs, ridge points, and kernels as points.

    Hollow points are the model's attainable performance (the same selection as 'roofline analyze');
    filled points are measured achieved performance from --results, with a dotted line up to their ceiling;
    a red X marks a kernel that FAILED verification (drawn at its ceiling). Points are numbered; the table
    beside the chart names them.

    Which model points are drawn: with no --results, the selected KERNELs (all when none are named) on --spec
    (auto by default: the GPU's own spec, or h100-sxm without one). With --results, only measured points, unless KERNEL names, --kernels or --spec are
    given too; then those are drawn hollow beside them (on the results' spec when no --spec is given).

    \b
    Examples:
      roofline plot                                   # every bundled kernel, --spec auto -> roofline.png
      roofline plot vector_add sum matmul_tiled --spec h200 -o h200.svg
      roofline plot sum matmul_tiled --spec t4 --spec a100 --spec h100 --roofs all
      roofline plot --results results.json -o measured.png
      roofline plot --results h200.json --calibrated h200-measured.yaml --title "H200, measured roofs"
      roofline plot --sweep sweep.json -o sweep.pdf
      roofline plot --hierarchy --results profiled.json -o hierarchy.png
      roofline plot --links links.json --spec h200 --calibrated h200-measured.yaml -o links.png
      roofline plot --results fleet.json -o fleet.png  # mpirun's file: each GPU and node against the median
      roofline plot --energy --results h200.json -o energy.png  # FLOP/J and power against intensity
    """
    if output is None:
        output = Path("roofline-sweep.png" if sweep_path is not None else "roofline.png")
    fmt = "png" if is_stdout(output) else output.suffix.lower().lstrip(".")  # -o -: PNG on standard output
    if fmt not in (*render.FORMATS, "html"):
        raise InputError(f"-o {output}: unknown image format '{output.suffix or '(none)'}'; use .png, .svg, .pdf "
                         "or .html")
    if energy:
        if sweep_path is not None or hierarchy or interconnect_path is not None or links_path is not None:
            raise InputError("--energy draws the energy roofline; leave out --sweep, --hierarchy, --interconnect "
                             "and --links")
        return _energy_chart(names, kernel_paths, params, spec_names, results_paths, output, fmt, title, dpi)
    alone = not any((names, kernel_paths, params, spec_names, sweep_path, hierarchy, interconnect_path, links_path))
    profile = _profile_doc(results_paths, group_by) if alone and len(results_paths) == 1 else None
    if profile is not None:
        return _profile_chart(profile, results_paths[0], output, fmt, title, dpi)  # roofline/render/charts/html.py
    fleet = _fleet_doc(results_paths) if alone and len(results_paths) == 1 else None
    if fleet is not None:
        return _fleet_chart(fleet, output, fmt, title, dpi, FLEET_OUTLIER if outlier is None else outlier)
    if outlier is not None:
        raise InputError("--outlier names the slow GPUs and nodes of a fleet: give one --results file written under "
                         "mpirun/srun (it has a 'fleet' block), and no other drawing options")
    measured = _machines(measured_specs)
    if roof_choice is not None and (hierarchy or sweep_path is not None or interconnect_path is not None
                                    or links_path is not None):
        raise InputError("--roofs picks the compute roofs of the roofline chart; leave it out with --sweep, "
                         "--hierarchy, --interconnect and --links")

    if links_path is not None:
        if results_paths or sweep_path is not None or hierarchy or interconnect_path is not None or names:
            raise InputError("--links draws one fleet links file; give only --spec and --calibrated beside it")

        roofs = [{"label": f"{m.id} {link}", "link": link, "bandwidth": roof.per_direction}
                 for m in resolve_specs(spec_names + measured_specs) for link, roof in m.interconnect.items()]
        fig = links_figure(load_links(links_path), roofs, title)
    elif interconnect_path is not None:
        fig = interconnect_chart(interconnect_path, title)
    elif hierarchy:
        if not results_paths or sweep_path is not None:
            raise InputError("--hierarchy draws --results files that carry ncu counters; give --results and no --sweep")

        bandwidths = _cache_bandwidths(measured_specs)
        curve, l2_size = _l2_curve(measured_specs)
        fig = hierarchy_figure([r.typed for r in _drawable(results_paths)], bandwidths, title, curve, l2_size)
    elif sweep_path is not None:
        if results_paths or spec_names:
            raise InputError("--sweep draws one results file on its own; leave out --results and --spec")
        sweep = load_results(sweep_path)
        fig = sweep_figure(sweep.typed, names, measured, title, source=sweep.name)
    else:
        results_docs = [r.typed for r in _drawable(results_paths)]
        analysis_docs = _analysis(names, kernel_paths, params, spec_names, results_docs)
        fig = render.roofline_figure(analysis_docs, results_docs, measured, title, roof_choice)
        points, unplottable = collect_points(analysis_docs, results_docs, {})
        for name in unplottable:
            note(f"note: {name} does no floating-point work (0 FLOP/s), so it has no place on a log-log roofline")
        if results_docs and len(points) > AUTO_GROUP_POINTS:
            note(f"note: {len(points)} points are too many to label readably; name the kernels to draw "
                 "(roofline plot KERNEL... --results FILE), or for an ncu import plot it with --group-by op|kernel")
        if fmt == "html":
            heading = title or " · ".join(dict.fromkeys(
                [d["machine"].get("name") or d["machine"]["id"] for d in analysis_docs]
                + [d.machine.get("name") or d.machine_id for d in results_docs]))
            ran = render.ran_on(results_docs)
            heading = heading if title or not ran else f"measured on {'; '.join(ran)} · ceilings of {heading}"
            notes = [f"{name}: no floating-point work (0 FLOP/s), so it has no place on a log-log roofline"
                     for name in unplottable]
            return _write(output, figure_html(fig, heading, POINT_COLUMNS, point_rows(points), notes), fmt)

    if fmt == "html":
        return _write(output, figure_html(fig, title or "roofline chart"), fmt)
    _write(output, render.figure_bytes(fig, fmt, dpi), fmt)


def _energy_chart(names: tuple[str, ...], kernel_paths: tuple[Path, ...], params: tuple[str, ...],
                  spec_names: tuple[str, ...], results_paths: tuple[Path, ...], output: Path, fmt: str,
                  title: str | None, dpi: int) -> None:
    """plot --energy: the energy roofline of the specs (or the results' machine) with measured and model points."""
    results_docs = [r.typed for r in _drawable(results_paths)]
    analysis_docs = _analysis(names, kernel_paths, params, spec_names, results_docs)
    machines = [d["machine"] for d in analysis_docs] + [d.machine for d in results_docs if d.machine]
    machines = list({m["id"]: m for m in machines}.values())
    fig = energy_figure(machines, analysis_docs, results_docs, title)
    if fmt == "html":
        return _write(output, figure_html(fig, title or "energy roofline"), fmt)
    _write(output, figure_bytes(fig, fmt, dpi), fmt)


def _write(output: Path, data: str | bytes, fmt: str) -> None:
    write_output(output, data, f"figure:{fmt}")
    if not is_stdout(output):
        note(f"wrote {output}")


def _machines(spec_names: tuple[str, ...]) -> list[dict]:
    if not spec_names:
        return []

    return [machine_summary(m) for m in resolve_specs(spec_names)]


def _analysis(names: tuple[str, ...], kernel_paths: tuple[Path, ...], params: tuple[str, ...],
              spec_names: tuple[str, ...], results_docs: list[ResultsDocument]) -> list[dict]:
    """The model documents to draw hollow; none when only --results were asked for."""
    if results_docs and not (names or kernel_paths or spec_names or params):
        return []

    if not spec_names:
        ids = [d.spec_id or d.machine_id for d in results_docs]
        spec_names = tuple(dict.fromkeys(ids)) or (AUTO,)
    say_auto_spec(spec_names)
    selected, overrides = load_selection(names, kernel_paths, params)
    docs, skipped = analysis_documents(resolve_specs(spec_names), selected, overrides)
    for s in skipped:
        note(f"note: {s}")
    return docs


def _profile_doc(results_paths: tuple[Path, ...], group_by: str) -> dict | None:
    """The one results file drawn as a profile (by share of GPU time), or None for a roofline of its kernels.

    A profile is a file with groups, or an ncu import: grouped here by --group-by, and automatically past
    AUTO_GROUP_POINTS launches (by op with NVTX ranges, else by kernel), saying so on standard error and in the
    chart's title. A plain `measure` file is not a profile: its kernels were timed one by one."""
    doc = load_results(results_paths[0]).doc
    if doc.get("groups"):
        return doc
    if doc.get("backend") != "ncu" or group_by == "none":
        return None
    if group_by == "auto":
        if len(doc["kernels"]) <= AUTO_GROUP_POINTS:
            return None
        group_by = "op" if any(k.get("nvtx") for k in doc["kernels"]) else "kernel"
        note(f"note: {len(doc['kernels'])} launches are too many to label one by one: drawn grouped by "
             f"{group_by} (--group-by none draws every launch; --group-by op|kernel|range:N picks the grouping)")

    for line in add_groups(doc, group_by):
        note(line)
    return doc


def _profile_chart(doc: dict, path: Path, output: Path, fmt: str, title: str | None, dpi: int) -> None:
    """A profile (groups, or an ncu import) as the interactive page (-o NAME.html) or as PNG/SVG/PDF."""
    if doc.get("machine") is None:
        raise InputError(f"{path}: machine: is null (measured without a spec): no ceiling to draw")
    if fmt == "html":
        data: str | bytes = profile_html(doc, title)
    else:
        data = figure_bytes(profile_figure(doc, title), fmt, dpi)
    _write(output, data, fmt)


def _fleet_doc(results_paths: tuple[Path, ...]) -> ResultsFile | None:
    """The one results file drawn as a fleet (each GPU a point per kernel), or None when it is not from mpirun."""
    results = load_results(results_paths[0])
    return results if results.doc.get("fleet") and results.doc.get("devices") else None


def _fleet_chart(results: ResultsFile, output: Path, fmt: str, title: str | None, dpi: int, limit: float) -> None:
    """A fleet as PNG/SVG/PDF, or as the HTML page with the slow GPUs and nodes in a table under the chart."""
    doc = results.doc
    fig = fleet_figure(doc, limit, title, source=results.name)
    if fmt == "html":
        columns, rows = slow_table(doc, limit)
        notes = [] if rows else [f"no GPU or node is more than {limit:.0%} below its median outside the noise"]
        return _write(output, figure_html(fig, title or "fleet", columns, rows, notes), fmt)

    _write(output, figure_bytes(fig, fmt, dpi), fmt)




def _drawable(paths: tuple[Path, ...]) -> list[ResultsFile]:
    """The results files a chart draws over their roofs: one measured without a spec (no ceiling) is named."""
    loaded = [load_results(p) for p in paths]
    for results in loaded:
        results.machine_to_draw()
    return loaded


def _cache_bandwidths(spec_names: tuple[str, ...]) -> dict[str, float | None] | None:
    """L1/L2/DRAM bandwidths from the first --calibrated that gives a cache bandwidth; None keeps the results'."""
    if not spec_names:
        return None

    for spec in resolve_specs(spec_names):
        found = {level: spec.caches[level].bandwidth if level in spec.caches else None for level in ("l1", "l2")}
        if any(found.values()):
            return {**found, "dram": spec.bandwidth}
    return None


def _l2_curve(spec_names: tuple[str, ...]) -> tuple[tuple[tuple[float, float], ...], float | None]:
    """The first --calibrated's L2 curve (calibrate's working-set sweep) and L2 size, for the hierarchy panel."""
    if not spec_names:
        return (), None

    for spec in resolve_specs(spec_names):
        l2 = spec.caches.get("l2")
        if l2 is not None and l2.curve:
            return l2.curve, l2.size
    return (), None
