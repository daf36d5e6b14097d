"""`roofline plot`: files of each format, the right roofs and points (counted from the figure's artists)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

from roofline.model.analysis import analysis_document, machine_summary  # noqa: E402
from roofline.cli import main  # noqa: E402
from roofline.load.selection import analyze_selection, load_selection, resolve_specs  # noqa: E402
from roofline.render.charts.plot import figure_bytes, roofline_figure  # noqa: E402
from roofline.render.charts.roofs import roof_label  # noqa: E402
from roofline.render.charts.sweep import sweep_figure  # noqa: E402
from roofline.records.files import load_results  # noqa: E402

DATA = Path(__file__).parent / "data" / "results"




def artists(fig, gid: str) -> list:
    ax = fig.axes[0]
    found = [a for a in [*ax.lines, *ax.texts, *ax.patches] if a.get_gid() == f"roofline:{gid}"]
    return found + [t for t in fig.texts if t.get_gid() == f"roofline:{gid}"]


def analysis(names: list[str], spec: str = "h100-sxm") -> dict:
    machine = resolve_specs([spec])[0]
    selected, overrides = load_selection(names, [], [])
    kernels, _ = analyze_selection(machine, selected, overrides)
    return analysis_document(machine, kernels)


def test_roofs_and_model_points():
    doc = analysis(["vector_add", "sum", "matmul_tiled"])
    fig = roofline_figure([doc])
    roofs = doc["machine"]["roofs"]
    assert len(artists(fig, "compute-roof")) == len(set(roofs.values()))  # equal peaks share one line
    assert len(artists(fig, "ridge")) == len(set(roofs.values()))
    assert len(artists(fig, "memory-roof")) == 1
    assert len(artists(fig, "point-model")) == 3
    assert not artists(fig, "point-measured")
    labels = [t.get_text() for t in artists(fig, "roof-label")]
    assert any(label.startswith("FP32 66.9 TFLOP/s") for label in labels)
    assert any(label.startswith("FP16 / BF16 tensor 989 TFLOP/s") for label in labels)
    assert [t.get_text() for t in artists(fig, "memory-label")] == ["memory 3.35 TB/s"]
    assert len(artists(fig, "table-row")) == 3


def test_measured_points_gap_lines_and_failed_drawn_distinctly():
    doc = load_results(DATA / "a100_failed.json").doc
    fig = roofline_figure([], [doc])
    assert len(artists(fig, "point-measured")) == 2
    assert len(artists(fig, "gap")) == 2
    failed = artists(fig, "point-failed")
    assert len(failed) == 1
    assert failed[0].get_marker() == "X" and failed[0].get_color() != artists(fig, "point-measured")[0].get_color()
    rows = [t.get_text() for t in artists(fig, "table-row")]
    assert any("FAILED" in r and "softmax_fused" in r for r in rows)


def test_measured_spec_is_dashed():
    h100 = resolve_specs(["h100-sxm"])[0]
    measured = dict(machine_summary(h100), id="h100-sxm-measured", name="H100 measured", bandwidth=3.0e12,
                    roofs={"fp32": 60e12})
    fig = roofline_figure([analysis(["vector_add"])], [], [measured])
    styles = [line.get_linestyle() for line in artists(fig, "compute-roof")]
    assert styles.count("--") == 1 and "-" in styles
    assert [line.get_linestyle() for line in artists(fig, "memory-roof")] == ["-", "--"]
    assert any("measured" in t.get_text() for t in artists(fig, "memory-label"))


def test_two_machines_and_thirty_kernels_have_numbered_labels():
    doc = load_results(DATA / "many_h200.json").doc
    fig = roofline_figure([], [doc])
    drawn = len(artists(fig, "point-measured")) + len(artists(fig, "point-failed"))
    assert drawn == len(doc["kernels"]) - 1  # copy does no FLOPs: listed, not drawn
    numbers = sorted(int(t.get_text()) for t in artists(fig, "point-label"))
    assert numbers == list(range(1, drawn + 1))
    fig = roofline_figure([analysis(["vector_add"]), analysis(["vector_add"], "a100-sxm4-80gb")])
    assert len(artists(fig, "memory-roof")) == 2


@pytest.mark.parametrize("fmt, magic", [("png", b"\x89PNG"), ("svg", b"<?xml"), ("pdf", b"%PDF")])
def test_each_format_is_written(run_cli, tmp_path, fmt, magic):
    out = tmp_path / f"chart.{fmt}"
    code, _, err = run_cli("plot", "vector_add", "sum", "-o", str(out), "--dpi", "60", "--title", "T")
    assert code == 0, err
    data = out.read_bytes()
    assert data.startswith(magic) and len(data) > 10_000
    assert f"wrote {out}" in err


def test_default_output_is_roofline_png(run_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("plot", "--results", str(DATA / "h100.json"), "--dpi", "50")
    assert code == 0 and (tmp_path / "roofline.png").stat().st_size > 5_000
    assert "wrote roofline.png" in err


def test_sweep_chart(run_cli, tmp_path):
    doc = load_results(DATA / "sweep.json").doc
    fig = sweep_figure(doc)
    assert len(artists(fig, "sweep-line")) == 1
    assert len(artists(fig, "sweep-line")[0].get_xdata()) == 10
    assert len(artists(fig, "bandwidth-roof")) == 1 and len(artists(fig, "littles-law")) == 1
    assert "Little's Law: 1.59 MB in flight" in artists(fig, "littles-law-label")[0].get_text()
    out = tmp_path / "sweep.png"
    assert run_cli("plot", "--sweep", str(DATA / "sweep.json"), "-o", str(out), "--dpi", "50")[0] == 0
    assert out.read_bytes().startswith(b"\x89PNG")


def test_bad_input_exit_2(run_cli, tmp_path):
    code, _, err = run_cli("plot", "-o", str(tmp_path / "x.jpg"))
    assert code == 2 and "unknown image format '.jpg'; use .png, .svg" in err
    code, _, err = run_cli("plot", "--results", str(DATA / "wrong_schema_v2.json"), "-o", str(tmp_path / "x.png"))
    assert code == 2 and "newer than this roofline reads" in err
    code, _, err = run_cli("plot", "--sweep", str(DATA / "h100.json"), "-o", str(tmp_path / "x.png"))
    assert code == 2 and "no kernel measured at several sizes" in err


def test_figure_bytes_and_labels():
    fig = roofline_figure([analysis(["vector_add"])])
    assert figure_bytes(fig, "svg", 72).startswith(b"<?xml")
    assert roof_label("bf16_tensor") == "BF16 tensor" and roof_label("fp32") == "FP32"


def test_help(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["plot", "--help"])
    out = capsys.readouterr().out
    assert exc.value.code == 0 and "Examples:" in out and "--calibrated" in out and "--sweep" in out


def test_a_multi_spec_chart_draws_only_the_used_roofs_and_the_best_tensor_roof():
    docs = [analysis(["vector_add", "sum", "matmul_tiled"], spec) for spec in ("t4", "a100-sxm4-80gb", "h100-sxm")]
    fig = roofline_figure(docs)
    labels = sorted(t.get_text().split(" · ")[0] for t in artists(fig, "roof-label"))
    # every kernel here uses fp32; the best tensor roof of each machine is drawn too, nothing else
    assert labels == ["FP16 tensor 312 TFLOP/s", "FP16 tensor 65 TFLOP/s", "FP32 19.5 TFLOP/s", "FP32 66.9 TFLOP/s",
                      "FP32 8.1 TFLOP/s", "FP8 tensor 1.98 PFLOP/s"]
    assert len(artists(fig, "compute-roof")) == len(artists(fig, "ridge")) == 6
    assert len(artists(fig, "memory-roof")) == 3
    everything = roofline_figure(docs, roofs="all")
    assert len(artists(everything, "roof-label")) == sum(len(set(d["machine"]["roofs"].values())) for d in docs)
    used = roofline_figure(docs[:1], roofs="used")  # one machine, asked for: the same rule
    assert sorted(t.get_text().split(" · ")[0] for t in artists(used, "roof-label")) == [
        "FP16 tensor 65 TFLOP/s", "FP32 8.1 TFLOP/s"]


def test_a_roof_a_kernel_uses_is_drawn_bold_and_the_best_tensor_roof_faint():
    docs = [analysis(["fma_peak_fp64", "matmul_library_fp16"], spec) for spec in ("a100-sxm4-80gb", "h100-sxm")]
    labels = {t.get_text().split(" · ")[0]: t.get_fontweight() for t in artists(roofline_figure(docs), "roof-label")}
    assert labels == {"FP64 9.7 TFLOP/s": "bold", "FP16 tensor 312 TFLOP/s": "bold",  # A100: fp16 is also its best
                      "FP64 33.5 TFLOP/s": "bold", "FP16 tensor 989 TFLOP/s": "bold", "FP8 tensor 1.98 PFLOP/s": "normal"}


def test_the_side_table_names_its_columns():
    measured = roofline_figure([], [load_results(DATA / "h100.json").doc])
    assert [t.get_text() for t in artists(measured, "table-header")] == [" # of ceiling kernel (parameters)"]
    rows = [t.get_text() for t in artists(measured, "table-row")]
    header = artists(measured, "table-header")[0].get_text()
    for row in rows:
        if "%" in row:  # the fraction ends where the column's name ends
            assert row.index("%") + 1 == header.index("of ceiling") + len("of ceiling")
    model = roofline_figure([analysis(["vector_add"])])
    assert [t.get_text() for t in artists(model, "table-header")] == [" # kernel (parameters)"]


def test_roofs_option(run_cli, tmp_path):
    out = tmp_path / "chart.svg"
    code, _, err = run_cli("plot", "sum", "--spec", "t4", "--spec", "h100", "--roofs", "all", "-o", out)
    assert code == 0, err
    assert out.read_text().count("INT4 tensor") == 1  # T4's INT4 roof, drawn only when all are asked for
    code, _, err = run_cli("plot", "sum", "--spec", "t4", "--spec", "h100", "-o", out)
    assert code == 0 and "INT4 tensor" not in out.read_text()
    code, _, err = run_cli("plot", "--sweep", str(DATA / "sweep.json"), "--roofs", "all", "-o", tmp_path / "s.png")
    assert code == 2 and "--roofs picks the compute roofs of the roofline chart" in err
    code, _, err = run_cli("plot", "sum", "--roofs", "some", "-o", out)
    assert code == 2 and "'some' is not one of 'used', 'all'" in err
