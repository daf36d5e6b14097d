"""The profile chart's side panel (PNG, SVG, the HTML page's figure): every point named, names told apart, and no
reference to a table the image does not have (issue 39: names cut to 25 characters read alike, 12 of 32 named,
'see the table')."""

from __future__ import annotations

from conftest import DATA

from roofline.render.charts.names import middle_cut, short_names
from roofline.render.charts.profile import PANEL_LISTED, chart_points, side_panel

COMPILED = DATA / "kineto" / "compiled" / "llama-train-compiled.json.gz"
A = "triton_poi_fused__to_copy_add_bmm_cat_cos_mul_neg_sin_slice_slice_backward_transpose_unsqueeze"
B = "triton_poi_fused__to_copy_add_bmm_cat_clone_cos_mul_neg_sin_slice_slice_backward_transpose_unsqueeze"


def test_names_are_cut_from_the_middle_and_keep_their_suffix():
    cut = middle_cut("triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_17", 25)
    assert len(cut) == 25 and cut.startswith("triton_") and cut.endswith("rsqrt_17")
    assert middle_cut("aten::mm", 25) == "aten::mm"


def test_names_alike_after_the_cut_show_where_they_differ():
    a, b = short_names([A, B], 25)
    assert a != b and len(a) <= 25 and len(b) <= 25
    assert A[:25] == B[:25]  # what the panel showed before: the same text for two kernels


def _points(tmp_path, run_cli):
    import json

    out = tmp_path / "llama.json"
    r = run_cli("import", "torch", COMPILED, "-o", out)
    assert r.code == 0, r.err
    return chart_points(json.loads(out.read_text()))


def test_every_point_of_a_compiled_trace_is_named_and_told_apart(tmp_path, run_cli):
    points = _points(tmp_path, run_cli)
    lines = side_panel(points)
    numbered = {}
    for line in lines:
        head, _, rest = line.partition(". ")
        if head.rstrip("+").isdigit() and rest:
            numbered.setdefault(int(head.rstrip("+")), rest.removesuffix(" *"))
    assert sorted(numbered) == list(range(1, len(points) + 1))  # every point, by its number on the chart
    full = {i: str(p["name"]) for i, p in enumerate(points, 1)}
    for i in numbered:
        for j in numbered:
            if i < j and full[i] != full[j]:
                assert numbered[i] != numbered[j], (full[i], full[j])
    assert not any("table" in line for line in lines)


def test_a_panel_with_more_points_than_it_names_says_how_to_see_the_rest():
    points = [dict(name=f"triton_poi_fused_add_{i}", plotted=True, mixed=False, bandwidth=1e9, time=1e-6)
              for i in range(PANEL_LISTED + 5)]
    lines = side_panel(points)
    text = "\n".join(lines)
    assert f"points 1-{PANEL_LISTED} of {PANEL_LISTED + 5}" in text
    assert "the other 5: 'roofline report" in text and "table" not in text
    assert f"{PANEL_LISTED}. triton_poi_fused_add_{PANEL_LISTED - 1}" in text
