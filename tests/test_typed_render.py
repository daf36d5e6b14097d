"""Issue 30: the renderers of results files take the typed form (roofline.records: ResultsDocument, KernelResult,
MeasuredEnergy, ...). A ResultsFile whose parsed document refuses every access, and typed objects that cannot be
turned back into a dict (to_json refused), prove a renderer reads only attributes; its output equals what the dict
path (a producer's document, taken in its typed form at the renderer's entry) gives."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any, NoReturn

import pytest
from rich.console import Console

from roofline.records.document import KernelResult, ResultsDocument
from roofline.records.files import ResultsFile, load_results
from typed_only import typed_only
from conftest import DATA

RESULTS = DATA / "results"
TWO_GPUS = DATA / "h200" / "measure-all-two-gpus.json"




@pytest.fixture
def no_dicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """The typed objects cannot be turned back into the dict form while a renderer runs."""

    def refuse(*_: Any) -> NoReturn:
        raise AssertionError("a renderer turned the typed form back into a dict")

    monkeypatch.setattr(ResultsDocument, "to_json", refuse)
    monkeypatch.setattr(KernelResult, "to_json", refuse)


def _text(renderable: Any, width: int = 250) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(renderable)
    return out.getvalue()


def _energy_file(tmp_path: Path) -> ResultsFile:
    """h100.json with NVML energy on every kernel, one window short."""
    doc = json.loads((RESULTS / "h100.json").read_text())
    for i, k in enumerate(doc["kernels"]):
        k["energy_measured"] = {"joules_per_run": 1e-3 * (i + 1), "power_mean": 500.0, "flops_per_joule": 1e9,
                                "fraction_of_energy_ceiling": 0.5, "window": 0.5 if i == 0 else 2.0,
                                "uncertainty": 0.2 if i == 0 else 0.05, "short_window": i == 0}
    path = tmp_path / "energy.json"
    path.write_text(json.dumps(doc))
    return load_results(path)


# ---- tables/measure.py --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", [RESULTS / "h100.json", RESULTS / "a100_failed.json", TWO_GPUS])
def test_the_measure_table_reads_only_the_typed_form(path: Path, no_dicts: None) -> None:
    from roofline.render.tables.measure import problems, ran_on, results_table

    results = load_results(path)
    expected = (_text(results_table(results.doc)), problems(results.doc), ran_on(results.doc))
    typed = typed_only(results).typed
    assert (_text(results_table(typed)), problems(typed), ran_on(typed)) == expected
    assert results.typed.kernels[0].name in expected[0]


def test_the_measure_table_reads_measured_energy_typed(tmp_path: Path, no_dicts: None) -> None:
    from roofline.render.tables.measure import problems, results_table

    typed = typed_only(_energy_file(tmp_path)).typed
    text = _text(results_table(typed))
    assert "energy/run" in text and "~1 mJ" in text and "500 W" in text
    assert [line for line in problems(typed) if line.startswith("note ")] == [
        f"note {typed.kernels[0].name}: energy over a 0.5 s window, short for NVML's energy counter (updated every "
        "20-100 ms): up to 20% off; --min-time 1 or more makes it tighter"]


def test_show_prints_a_typed_result_without_its_dict(no_dicts: None, capsys: pytest.CaptureFixture[str]) -> None:
    from roofline.render.tables.measure import show

    kernel = load_results(RESULTS / "h100.json").typed.kernels[0]
    show(kernel)
    assert kernel.name in capsys.readouterr().out


# ---- charts: points.py, plot.py, energy.py ------------------------------------------------------------------------


def _drawn(fig: Any) -> list[tuple[Any, ...]]:
    """Every artist with a gid: its gid and what it shows (text, or its data), in drawing order."""
    out: list[tuple[Any, ...]] = []
    for artist in fig.findobj():
        gid = artist.get_gid()
        if not gid:
            continue
        if hasattr(artist, "get_text"):
            out.append((gid, artist.get_text()))
        elif hasattr(artist, "get_xydata"):
            out.append((gid, artist.get_xydata().tolist()))
        elif hasattr(artist, "get_offsets"):
            out.append((gid, artist.get_offsets().tolist()))
        else:
            out.append((gid,))
    return out


@pytest.mark.parametrize("name", ["h100.json", "a100_failed.json", "many_h200.json"])
def test_the_roofline_chart_and_its_points_read_only_the_typed_form(name: str, no_dicts: None) -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.charts.plot import ran_on, roofline_figure
    from roofline.render.charts.points import collect_points

    results = load_results(RESULTS / name)
    expected = roofline_figure([], [results.doc])
    typed = typed_only(results).typed
    drawn = roofline_figure([], [typed])
    assert _drawn(drawn) == _drawn(expected) and drawn.axes[0].get_title(loc="left") == \
        expected.axes[0].get_title(loc="left")
    points, unplottable = collect_points([], [typed], {})
    assert len(points) + len(unplottable) >= len(typed.kernels) - 1 and points
    assert ran_on([typed]) == []  # measured on a GPU


def test_the_energy_chart_reads_only_the_typed_form(tmp_path: Path, no_dicts: None) -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.charts.energy import energy_figure, energy_points

    results = _energy_file(tmp_path)
    typed = typed_only(results).typed
    points = energy_points([typed], [])
    assert points == energy_points([results.doc], []) and len(points) == len(typed.kernels)
    machine = dict(typed.machine)
    assert _drawn(energy_figure([machine], [], [typed])) == _drawn(energy_figure([machine], [], [results.doc]))


def test_the_sweep_chart_reads_only_the_typed_form(no_dicts: None) -> None:
    pytest.importorskip("matplotlib")
    from roofline.records.files import sweep_groups, sweep_series
    from roofline.render.charts.sweep import sweep_figure

    for path in (RESULTS / "sweep.json", DATA / "h200" / "sweep-vector_add_float4.json"):
        results = load_results(path)
        typed = typed_only(results).typed
        series = sweep_series(typed)
        assert series and {k: [e.key for e in v] for k, v in series.items()} == {
            k: [(e["name"], json.dumps(e["params"], sort_keys=True)) for e in v]
            for k, v in sweep_groups(results.doc).items()}
        assert _drawn(sweep_figure(typed)) == _drawn(sweep_figure(results.doc))


# ---- tables/sweep.py ----------------------------------------------------------------------------------------------


def test_the_sweep_table_reads_only_the_typed_form(no_dicts: None) -> None:
    from roofline.render.tables.sweep import explanation, sweep_table

    results = load_results(DATA / "h200" / "sweep-vector_add_float4.json")
    typed = typed_only(results).typed
    text = _text(sweep_table(typed))
    assert text == _text(sweep_table(results.doc)) and explanation(typed) == explanation(results.doc)
    assert "Sweep of vector_add_float4" in text and any(line.startswith("prediction within") for line in
                                                        explanation(typed))


def test_a_predicted_sweep_table_reads_only_the_typed_form(run_cli, tmp_path: Path) -> None:
    from roofline.render.tables.sweep import explanation, sweep_table

    out = tmp_path / "p.json"
    assert run_cli("sweep", "softmax_fused", "--over", "rows", "-p", "cols=8192", "--sizes", "1..4096:4",
                   "--spec", "h100", "--predict", "-o", out).code == 0
    results = load_results(out)
    typed = typed_only(results).typed
    with pytest.MonkeyPatch.context() as m:
        m.setattr(ResultsDocument, "to_json", lambda *_: pytest.fail("turned back into a dict"))
        m.setattr(KernelResult, "to_json", lambda *_: pytest.fail("turned back into a dict"))
        text, lines = _text(sweep_table(typed)), explanation(typed)
    assert text == _text(sweep_table(results.doc)) and lines == explanation(results.doc)
    assert "sm-bound" in text and "predicted" in text


# ---- tables/grouped.py and tables/imported.py ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def grouped() -> ResultsFile:
    from roofline.ncu.group import add_groups
    from roofline.ncu.importer import import_csv
    from conftest import NCU

    doc, _ = import_csv(NCU / "h200_nvtx_small.csv")
    add_groups(doc, "op")
    return ResultsFile.of(json.loads(json.dumps(doc)), "grouped.json")


def test_the_grouped_tables_read_only_the_typed_form(grouped: ResultsFile, no_dicts: None) -> None:
    from roofline.render.tables.grouped import footer, grouped_markdown, grouped_table

    typed = typed_only(grouped).typed
    text = _text(grouped_table(typed))
    assert text == _text(grouped_table(grouped.doc))
    assert grouped_markdown(typed) == grouped_markdown(grouped.doc) and grouped_markdown(typed, 2) == \
        grouped_markdown(grouped.doc, 2)
    assert footer(typed) == footer(grouped.doc) and footer(typed).startswith("program: GPU time")
    assert "grouped by op" in text and typed.grouped()[0].name in text


def test_the_group_report_tables_read_its_rows_as_typed_groups(grouped: ResultsFile) -> None:
    from roofline.gates.groups import group_report
    from roofline.render.tables.grouped import group_row, report_markdown

    report = group_report([typed_only(grouped)], 0.3, 0.5)
    rows = [group_row(r["rank"], r) for r in report["rows"]]
    assert rows == [group_row(i, g) for i, g in enumerate(grouped.typed.grouped(), 1)]
    assert "program: GPU time" in report_markdown(report)


def test_the_imported_table_reads_only_the_typed_form(no_dicts: None) -> None:
    from roofline.render.tables.imported import imported_table

    results = load_results(RESULTS / "h200_ncu_profiled.json")
    typed = typed_only(results).typed
    text = _text(imported_table(typed))
    assert text == _text(imported_table(results.doc)) and "imported from ncu" in text


# ---- charts/profile.py and charts/html.py -------------------------------------------------------------------------


def _page(text: str) -> str:
    """A page without its SVG's generated ids (matplotlib names clip paths and markers afresh per figure)."""
    import re

    return re.sub(r"\b[pm][0-9a-f]{10}\b", "", text)


@pytest.mark.parametrize("which", ["grouped", "launches"])
def test_the_profile_chart_and_page_read_only_the_typed_form(which: str, grouped: ResultsFile,
                                                              no_dicts: None) -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.charts.html import profile_html
    from roofline.render.charts.profile import chart_points, profile_figure

    results = grouped if which == "grouped" else load_results(RESULTS / "h200_ncu_profiled.json")
    typed = typed_only(results).typed
    points = chart_points(typed)
    assert points and points == chart_points(results.doc)
    assert _drawn(profile_figure(typed)) == _drawn(profile_figure(results.doc))
    page = profile_html(typed)
    assert _page(page) == _page(profile_html(results.doc)) and points[0]["id"] in page
    assert ("grouped by op" in page) == (which == "grouped")


# ---- charts/hierarchy.py ------------------------------------------------------------------------------------------


def test_the_hierarchical_roofline_reads_only_the_typed_form(no_dicts: None) -> None:
    pytest.importorskip("matplotlib")
    from roofline.render.charts.hierarchy import cache_bandwidths, hierarchy_figure, hierarchy_points, model_points

    results = load_results(RESULTS / "h200_ncu_profiled.json")
    typed = typed_only(results).typed
    points, skipped = hierarchy_points([typed])
    assert points and (points, skipped) == hierarchy_points([results.doc])
    assert model_points([typed], points) == model_points([results.doc], points)
    assert cache_bandwidths(typed) == cache_bandwidths(results.doc)
    bandwidths = {"l1": 30e12, "l2": 10e12}
    assert _drawn(hierarchy_figure([typed], bandwidths)) == _drawn(hierarchy_figure([results.doc], bandwidths))
    assert {p.level for p in points} == {"l1", "l2", "dram"}


# ---- tables/trace.py ----------------------------------------------------------------------------------------------


def test_the_launch_table_of_a_torch_import_reads_only_the_typed_form(tmp_path: Path, run_cli,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from roofline.kineto import document
    from roofline.render.tables.trace import launch_table
    from test_kineto_import import DATA as KINETO, fake_model

    monkeypatch.setattr(document, "_default_model", lambda: (fake_model, SimpleNamespace))
    out = tmp_path / "step.json"
    assert run_cli("import", "torch", KINETO / "step.json", "--group-by", "none", "-o", out).code == 0
    results = load_results(out)
    typed = typed_only(results).typed
    monkeypatch.setattr(ResultsDocument, "to_json", lambda *_: pytest.fail("turned back into a dict"))
    monkeypatch.setattr(KernelResult, "to_json", lambda *_: pytest.fail("turned back into a dict"))
    text = _text(launch_table(typed))
    assert text == _text(launch_table(results.doc)) and "imported from PyTorch" in text
    assert str(typed.kernels[0].op) in text
