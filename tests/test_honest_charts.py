"""Charts that neither lose nor misstate (issue 31, "Honest output"): every roof labelled with its value, no two roof
labels on top of each other (checked by their real extents, matplotlib Agg), 0-FLOP groups listed rather than
dropped, a CPU run never titled as the GPU whose ceilings it is drawn against, and the '+' of a mixed roof explained.
The HTML page of a profile is checked the same way in a headless Chromium (tests/test_html_chart.py's browser)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from conftest import h200_profile  # noqa: E402
from roofline.model.analysis import analysis_document, machine_summary  # noqa: E402
from roofline.load.selection import analyze_selection, load_selection, resolve_specs  # noqa: E402
from roofline.render.charts.plot import roofline_figure  # noqa: E402
from roofline.render.charts.profile import profile_figure  # noqa: E402

MEASURED_SPEC = Path(__file__).parent / "data" / "h200" / "measured-2026-11-30.yaml"


def _texts(fig, *gids: str) -> list:
    wanted = {f"roofline:{g}" for g in gids}
    return [t for ax in fig.axes for t in ax.texts if t.get_gid() in wanted] + [
        t for t in fig.texts if t.get_gid() in wanted]


def _boxes(fig, texts) -> list:
    """Each label's text extent in display pixels (an annotation's connector line left out: it may pass by)."""
    from matplotlib.text import Text

    renderer = fig.canvas.get_renderer()
    return [(t.get_text(), Text.get_window_extent(t, renderer)) for t in texts]


def _assert_apart(boxes) -> None:
    for (a, box_a), (b, box_b) in itertools.combinations(boxes, 2):
        assert not box_a.overlaps(box_b), f"{a!r} overlaps {b!r}"


def _analysis(names: list[str], spec: str) -> dict:
    machine = resolve_specs([spec])[0]
    selected, overrides = load_selection(names, [], [])
    kernels, _ = analyze_selection(machine, selected, overrides)
    return analysis_document(machine, kernels)


@pytest.mark.parametrize("names", [["vector_add", "matmul_tiled"], ["copy"], ["vector_add", "sum", "fma_peak"]])
def test_measured_and_datasheet_roof_labels_never_overlap(names):
    """The measured H200 spec's memory roof (4.37 TB/s) runs beside the datasheet's (4.8 TB/s): both labels used
    to be put at the same place on the slope, one over the other."""
    measured = [machine_summary(m) for m in resolve_specs([str(MEASURED_SPEC)])]
    fig = roofline_figure([_analysis(names, "h200")], [], measured)
    labels = _texts(fig, "roof-label", "memory-label")
    memory = [t.get_text() for t in _texts(fig, "memory-label")]
    assert any("measured" in m for m in memory) and any("measured" not in m for m in memory)
    _assert_apart(_boxes(fig, labels))


def test_three_memory_roofs_keep_their_labels_apart():
    """H100 and H200 datasheets and the H200's measured spec: three near-parallel slopes, three labels apart."""
    measured = [machine_summary(m) for m in resolve_specs([str(MEASURED_SPEC)])]
    fig = roofline_figure([_analysis(["vector_add", "matmul_tiled"], "h100"),
                           _analysis(["vector_add", "matmul_tiled"], "h200")], [], measured)
    memory = _texts(fig, "memory-label")
    assert len(memory) == 3
    _assert_apart(_boxes(fig, memory + _texts(fig, "roof-label")))


@pytest.fixture(scope="module")
def resnet() -> dict:
    return h200_profile("h200_resnet50_profile.csv")


@pytest.fixture(scope="module")
def gpt2() -> dict:
    return h200_profile("h200_gpt2_profile.csv")


@pytest.mark.parametrize("which", ["resnet", "gpt2"])
def test_a_profile_chart_labels_each_roof_with_its_value_apart(which, request):
    doc = request.getfixturevalue(which)
    fig = profile_figure(doc)
    roofs = _texts(fig, "roof-label")
    used = {g["roof"] for g in doc["groups"] if g["flops"]}
    assert len(roofs) == len(used)
    for t in roofs:
        assert "FLOP/s" in t.get_text(), t.get_text()  # 'BF16 tensor 989 TFLOP/s', not just 'BF16 tensor'
    assert any("989 TFLOP/s" in t.get_text() and "BF16 tensor" in t.get_text() for t in roofs)
    memory = _texts(fig, "memory-label")
    assert [t.get_text() for t in memory] == ["memory 4.8 TB/s"]
    side = _texts(fig, "side-panel")
    _assert_apart(_boxes(fig, roofs + memory + side))


def test_two_roofs_of_one_value_get_two_labels_apart():
    """FP16 and BF16 tensor roofs of the same peak: the labels are stacked, not printed over each other."""
    from roofline.render.charts.profile import profile_figure

    doc = json.loads(json.dumps(_profile_like()))
    fig = profile_figure(doc)
    roofs = _texts(fig, "roof-label")
    assert len(roofs) == 2
    _assert_apart(_boxes(fig, roofs))


def _profile_like() -> dict:
    machine = machine_summary(resolve_specs(["h200"])[0])
    group = dict(by="op", launches=1, time=1e-3, share=0.5, bytes=1e9, intensity=100.0, achieved_flops=1e14,
                 achieved_bandwidth=1e12, fraction_of_ceiling=0.1, sol_time=1e-4, recoverable_time=9e-4)
    return {"device": {"name": "NVIDIA H200"}, "machine": machine, "kernels": [{}, {}],
            "groups": [dict(group, name="a", flops=1e11, roof="fp16_tensor"),
                       dict(group, name="b", flops=1e11, roof="bf16_tensor")]}


def test_zero_flop_groups_are_listed_not_dropped(resnet):
    zero = [g for g in resnet["groups"] if not g["flops"]]
    assert zero, "the fixture has copies / clamps with no FLOPs"
    fig = profile_figure(resnet)
    side = "\n".join(t.get_text() for t in _texts(fig, "side-panel"))
    assert "not drawn, 0 FLOPs" in side
    from roofline.model.units import format_rate

    for g in zero:
        assert g["name"][:28] in side and format_rate(g["achieved_bandwidth"]) in side, g["name"]


def test_the_plus_of_a_mixed_group_is_in_the_legend(resnet, gpt2):
    fig = profile_figure(resnet)
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert any(t.startswith("N+: work on more than one roof") for t in legend)
    assert any(t.get_text().endswith("+") for t in fig.axes[0].texts)  # the point's number says it
    fig = profile_figure(gpt2)  # nothing mixed: nothing to explain
    assert not any("N+" in t.get_text() for t in fig.axes[0].get_legend().get_texts())


def test_a_cpu_measurement_is_not_titled_as_the_gpu(run_cli, tmp_path):
    """`measure --backend numpy --spec h200` ran on the host CPU; its chart says so before naming the ceilings."""
    out = tmp_path / "cpu.json"
    r = run_cli("measure", "--backend", "numpy", "vector_add", "-p", "n=2**12", "--spec", "h200", "--min-time", "0",
                "--min-repeats", "2", "-o", out)
    assert r.code in (0, 1), r.err
    doc = json.loads(out.read_text())
    fig = roofline_figure([], [doc])
    title = fig.axes[0].get_title(loc="left")
    assert title.startswith("Roofline: measured on host CPU") and "numpy" in title, title
    assert "ceilings of NVIDIA H200" in title
    page = tmp_path / "cpu.html"
    assert run_cli("plot", "--results", out, "-o", page).code == 0
    heading = page.read_text().split("<h1", 1)[1].split("</h1>", 1)[0]
    assert "measured on host CPU" in heading and "numpy" in heading


def test_a_gpu_measurement_keeps_its_title():
    from roofline.records.files import load_results

    doc = load_results(Path(__file__).parent / "data" / "results" / "h100.json").doc
    fig = roofline_figure([], [doc])
    assert fig.axes[0].get_title(loc="left") == "Roofline: NVIDIA H100 SXM5 80GB"
