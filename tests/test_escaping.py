"""User text is shown as written everywhere roofline shows it: rich tables (no markup, no emoji codes), Markdown
(cells stay cells), JUnit XML (valid whatever the text), matplotlib (no mathtext) and terminals (no raw escape
sequences). The hostile texts live in descriptors, specs and results files written to tmp_path."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from roofline.render.text import clean, md, md_code, mpl, xml
from conftest import NCU_UNITS

DATA = Path(__file__).resolve().parent / "data"
RESULTS = DATA / "results"

NAME = "t[/]x[bold]b[/bold]:fire:$\\frac{$|z"  # markup, an emoji code, broken mathtext and a Markdown cell border
DESCRIPTION = "m[i] = max_j x[i, j] [/]"
ESC = "\x1b[2J"  # 'clear the screen', as a terminal would obey it


def _descriptor(folder: Path, name: str = NAME, description: str = DESCRIPTION, implementation: str = "") -> Path:
    """A descriptor whose name and description are taken from the arguments (JSON strings are valid YAML)."""
    folder.mkdir(exist_ok=True)
    path = folder / "hostile.yaml"
    path.write_text("\n".join([
        "schema_version: 1", f"name: {json.dumps(name)}", f"description: {json.dumps(description)}",
        "pattern: map", "dtype: float32", "params: {n: 4099}", "flops: n", "bytes: 3 * n * itemsize",
        *([f"implementation: {implementation}"] if implementation else []), "",
    ]), encoding="utf-8")
    return path


def _results(tmp_path: Path, device: str, names: dict[str, str], error: str | None = None) -> Path:
    """a100_failed.json with a hostile device name, kernels renamed, and the FAILED kernel's error replaced."""
    doc = json.loads((RESULTS / "a100_failed.json").read_text(encoding="utf-8"))
    doc["device"]["name"] = device
    for k in doc["kernels"]:
        k["name"] = names.get(k["name"], k["name"])
        if error is not None and k["status"] == "FAILED":
            k["error"] = error
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def _md_cells(line: str) -> list[str]:
    """Split a GFM table row on the pipes that are cell borders (not escaped with a backslash)."""
    cells, cell, escaped = [], "", False
    for ch in line.strip()[1:-1]:
        if escaped:
            cell, escaped = cell + ch, False
        elif ch == "\\":
            cell, escaped = cell + ch, True
        elif ch == "|":
            cells.append(cell)
            cell = ""
        else:
            cell += ch
    return cells + [cell]


# ---- rich tables --------------------------------------------------------------------------------------------


def test_analyze_table_shows_the_name_as_written(run_cli, tmp_path, no_bundled_kernels):
    _descriptor(tmp_path / "k")
    r = run_cli("analyze", "--kernels", tmp_path / "k", "--spec", DATA / "specs" / "toy.yaml")
    assert r.code == 0, r.err
    assert NAME in r.out


def test_analyze_markdown_row_keeps_its_columns(run_cli, tmp_path, no_bundled_kernels):
    _descriptor(tmp_path / "k", name="a|b<i>" + ESC)
    r = run_cli("analyze", "--kernels", tmp_path / "k", "--spec", DATA / "specs" / "toy.yaml", "--format", "markdown")
    assert r.code == 0, r.err
    header, _, row = [line for line in r.out.splitlines() if line.startswith("|")]
    assert len(_md_cells(row)) == len(_md_cells(header))
    assert _md_cells(row)[0].strip() == "a\\|b&lt;i>\\\\x1b\\[2J"  # renders as a|b<i>\\x1b[2J


def test_kernels_list_and_show_keep_brackets_in_names_and_descriptions(run_cli, tmp_path, no_bundled_kernels):
    _descriptor(tmp_path / "k")
    r = run_cli("kernels", "--kernels", tmp_path / "k")
    assert r.code == 0, r.err
    assert NAME in r.out
    r = run_cli("kernels", "--kernels", tmp_path / "k", "show", NAME)
    assert r.code == 0, r.err
    assert DESCRIPTION in r.out and NAME in r.out


def test_control_characters_are_escaped_in_tables_and_errors(run_cli, tmp_path, no_bundled_kernels):
    _descriptor(tmp_path / "k", name="bell\x07x", description=f"clears{ESC}the\rscreen")
    r = run_cli("kernels", "--kernels", tmp_path / "k", "show", "bell\x07x")
    assert r.code == 0, r.err
    assert "\x1b" not in r.out and "\x07" not in r.out and "\r" not in r.out
    assert "clears\\x1b[2Jthe\\x0dscreen" in r.out and "bell\\x07x" in r.out
    r = run_cli("analyze", "--kernels", tmp_path / "k", f"no{ESC}such")
    assert r.code == 2 and "\x1b" not in r.err and "no\\x1b[2Jsuch" in r.err


def test_specs_show_and_analyze_title_keep_a_hostile_spec_name(run_cli, tmp_path, no_bundled_kernels):
    spec = tmp_path / "gpu.yaml"
    text = (DATA / "specs" / "toy.yaml").read_text(encoding="utf-8")
    spec.write_text(text.replace("name: Toy GPU (round numbers)", 'name: "GPU [/] [red]x $y$"'), encoding="utf-8")
    r = run_cli("specs", "show", spec)
    assert r.code == 0, r.err
    assert "GPU [/] [red]x $y$ (toy)" in r.out
    r = run_cli("analyze", "--kernels", DATA / "kernels", "t_vadd", "--spec", spec)
    assert r.code == 0, r.err
    assert "GPU [/] [red]x $y$ (toy)" in r.out


def test_measure_table_shows_the_name_as_written(run_cli, tmp_path, no_bundled_kernels):
    folder = tmp_path / "k"
    _descriptor(folder, implementation="m_add.py")
    shutil.copy(DATA / "measure" / "m_add.py", folder / "m_add.py")
    r = run_cli("measure", "--backend", "numpy", "--spec", DATA / "specs" / "toy.yaml", "--kernels", folder, NAME,
                "-p", "n=1000", "--min-time", "0", "--min-repeats", "2")
    assert r.code == 0, r.err
    assert NAME in r.out


def test_import_ncu_table_shows_a_kernel_name_with_brackets(run_cli, tmp_path):
    text = NCU_UNITS.read_text(encoding="utf-8")
    csv = tmp_path / "hostile.csv"
    csv.write_text(text.replace("stream_triad(float*,", "triad[/]x[bold](float*,"), encoding="utf-8")
    r = run_cli("import", "ncu", csv, "--spec", "h200")
    assert r.code == 0, r.err
    assert "triad[/]x[bold]" in r.out


# ---- report: table, Markdown, JUnit -------------------------------------------------------------------------


DEVICE = "A100 [/] $x$ | <b>" + ESC + "\x00"
ERROR = "got \x00\x1b[31m <tag> & ]]> | [/] \ud800 end\nsecond line"
HOSTILE = {"vector_add": "v[/]a|dd", "softmax_fused": "soft`max`[/]", "sum": "$\\frac{$"}


def test_report_table_shows_device_kernel_and_error_as_written(run_cli, tmp_path):
    path = _results(tmp_path, DEVICE, HOSTILE, ERROR)
    r = run_cli("report", path)
    assert r.code == 1, r.err  # the FAILED kernel fails its gate
    assert "Traceback" not in r.err
    assert "\x1b" not in r.out and "\x00" not in r.out
    for name in HOSTILE.values():
        assert name in r.out
    assert "got \\x00\\x1b[31m <tag> & ]]> | [/] \\ud800 end" in r.out


def test_report_markdown_cells_stay_cells(run_cli, tmp_path):
    path = _results(tmp_path, DEVICE, HOSTILE, ERROR)
    r = run_cli("report", path, "--format", "markdown")
    assert r.code == 1, r.err
    lines = r.out.splitlines()
    header = next(line for line in lines if line.startswith("| device"))
    rows = [line for line in lines if line.startswith("| ") and line is not header]
    width = len(_md_cells(header))
    assert len(rows) == 3 + 1  # the separator row starts with '|' too, not '| '; three kernels + header
    for row in rows:
        assert len(_md_cells(row)) == width, row
    assert "v\\[/\\]a\\|dd" in r.out and "&lt;b>" in r.out and "<b>" not in r.out
    assert "\x1b" not in r.out and "\x00" not in r.out
    failed = next(line for line in lines if line.startswith("- ") and "soft" in line)
    assert "``soft`max`[/]``" in failed and "second line" in failed  # one list item, one line


def test_report_junit_is_valid_xml_whatever_the_text(run_cli, tmp_path):
    path = _results(tmp_path, DEVICE, HOSTILE, ERROR)
    out = tmp_path / "junit.xml"
    r = run_cli("report", path, "--format", "junit", "-o", out)
    assert r.code == 1, r.err
    root = ET.fromstring(out.read_bytes())  # raises on invalid XML
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "A100 [/] $x$ | <b>\\x1b[2J\\x00"
    cases = [case.get("name") for case in root.iter("testcase")]
    assert len(cases) == 3
    assert all(any(case.startswith(name) for name in HOSTILE.values()) for case in cases), cases
    failure = root.find(".//failure")
    assert failure is not None and "got \\x00\\x1b[31m <tag> & ]]> | [/] \\ud800 end" in failure.get("message")


# ---- matplotlib ---------------------------------------------------------------------------------------------


def test_plot_draws_names_with_dollars_literally(run_cli, tmp_path):
    path = _results(tmp_path, "GPU $\\frac{$", {"sum": "$\\frac{$", "vector_add": "$x$"})
    out = tmp_path / "chart.png"
    r = run_cli("plot", "--results", path, "-o", out, "--title", "cost $\\sqrt{$")
    assert r.code == 0, r.err
    assert out.read_bytes().startswith(b"\x89PNG")


def test_chart_texts_are_never_mathtext():
    from matplotlib import cbook

    from roofline.render.charts.plot import roofline_figure
    from roofline.records.files import load_results

    doc = load_results(RESULTS / "a100_failed.json").doc
    for k in doc["kernels"]:
        k["name"] = "$x^2$"
    doc["machine"] = {**doc["machine"], "name": "$y$"}
    fig = roofline_figure([], [doc])
    texts = [t.get_text() for t in fig.texts] + [t.get_text() for t in fig.axes[0].texts]
    texts.append(fig.axes[0].get_title(loc="left"))
    rows = [t for t in texts if "x^2" in t]
    assert rows and all("\\$x^2\\$" in t for t in rows)
    assert not any(cbook.is_math_text(t) for t in texts)


def test_sweep_chart_with_a_hostile_device_name(run_cli, tmp_path):
    doc = json.loads((RESULTS / "sweep.json").read_text(encoding="utf-8"))
    doc["device"]["name"] = "GPU $\\frac{$ [/]"
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    r = run_cli("plot", "--sweep", path, "-o", tmp_path / "sweep.png")
    assert r.code == 0, r.err


# ---- the helpers themselves ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["plain", NAME, ERROR, DEVICE, "\t\r\n\x7f\x85\u202e\ufffe", "`", "a\\|b", ""])
def test_helpers_on_hostile_text(text):
    from matplotlib import cbook

    one_line = clean(text, newlines=False)
    assert "\n" not in one_line and "\x1b" not in one_line and "\x00" not in one_line
    assert "\n" not in md(text) and len(_md_cells(f"| {md(text)} |")) == 1
    assert not cbook.is_math_text(mpl(text))
    element = ET.Element("e", name=xml(text))
    element.text = xml(text)
    ET.fromstring(ET.tostring(element, encoding="unicode"))
    span = md_code(text)
    assert span.startswith("`") and span.endswith("`")
