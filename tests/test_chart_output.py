"""Charts that read (issue 23): a per-launch import is grouped past a few dozen points, HTML of a plain `measure`
file speaks of measured kernels (not of GPU-time shares), and HTML is written for model-only charts and for several
results files too. Browser checks run in headless Chromium when Playwright and a Chromium are installed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import DATA, NCU
from test_html_chart import INSTALL_HINT, _chromium

pytest.importorskip("matplotlib")

RESULTS = DATA / "results"


@pytest.fixture(scope="module")
def gpt2_import(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 235-launch GPT-2 capture imported per launch (no --group-by), as a user would."""
    import json

    from roofline.ncu.importer import import_csv

    doc, _ = import_csv(NCU / "h200_gpt2_profile.csv", "h200")
    assert len(doc["kernels"]) == 235 and not doc.get("groups")
    path = tmp_path_factory.mktemp("gpt2") / "gpt2.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_235_launch_import_is_grouped_and_says_so(run_cli, gpt2_import, tmp_path):
    out = tmp_path / "chart.html"
    r = run_cli("plot", "--results", gpt2_import, "-o", out)
    assert r.code == 0, r.err
    assert "235 launches are too many to label one by one: drawn grouped by op" in r.err
    assert "--group-by none" in r.err
    page = out.read_text(encoding="utf-8")
    assert "235 launches grouped by op" in page  # the chart says so too
    rows = re.findall(r'<tr id="row-pt-\d+">', page)
    assert 0 < len(rows) <= 40


def test_group_by_kernel_and_none(run_cli, gpt2_import, tmp_path):
    r = run_cli("plot", "--results", gpt2_import, "--group-by", "kernel", "-o", tmp_path / "k.png")
    assert r.code == 0, r.err
    assert "too many" not in r.err
    r = run_cli("plot", "--results", gpt2_import, "--group-by", "none", "-o", tmp_path / "n.png")
    assert r.code == 0, r.err
    assert "too many to label readably" in r.err and "--group-by op|kernel" in r.err
    r = run_cli("plot", "--results", gpt2_import, "--group-by", "nonsense", "-o", tmp_path / "x.png")
    assert r.code == 2 and "Traceback" not in r.err


def test_a_small_import_is_drawn_per_launch(run_cli, tmp_path):
    import json

    from roofline.ncu.importer import import_csv

    doc, _ = import_csv(NCU / "h200_nvtx_small.csv", "h200")
    assert len(doc["kernels"]) <= 40
    path = tmp_path / "small.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    r = run_cli("plot", "--results", path, "-o", tmp_path / "s.png")
    assert r.code == 0, r.err
    assert "grouped" not in r.err


def test_html_of_a_measure_file_uses_measure_wording(run_cli, tmp_path):
    out = tmp_path / "m.html"
    r = run_cli("plot", "--results", RESULTS / "h100.json", "-o", out)
    assert r.code == 0, r.err
    page = out.read_text(encoding="utf-8")
    assert "GPU time" not in page and "recoverable" not in page.lower()
    assert "measured (achieved)" in page and "vector_add" in page and "88.0%" in page
    assert "<svg" in page


def test_html_of_model_only_chart(run_cli, tmp_path):
    out = tmp_path / "model.html"
    r = run_cli("plot", "vector_add", "sum", "--spec", "h100", "-o", out)
    assert r.code == 0, r.err
    page = out.read_text(encoding="utf-8")
    assert "<svg" in page and "model (attainable)" in page and "vector_add" in page and "sum" in page


def test_html_of_several_results_files(run_cli, tmp_path):
    out = tmp_path / "two.html"
    r = run_cli("plot", "--results", RESULTS / "h100.json", "--results", RESULTS / "a100_failed.json", "-o", out)
    assert r.code == 0, r.err
    page = out.read_text(encoding="utf-8")
    assert "NVIDIA H100" in page and "A100" in page
    assert "FAILED verification" in page  # the a100 file's failed kernel is listed as such


def test_html_page_names_are_escaped(tmp_path):
    from matplotlib.figure import Figure

    from roofline.render.charts.html import figure_html

    page = figure_html(Figure(), "<script>alert(1)</script>\u202e", ("a",), [["<img src=x>", "=1"]], ["<b>n"])
    assert "<script>alert" not in page and "<img src" not in page and "<b>n" not in page and "\u202e" not in page


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    sync_api = pytest.importorskip("playwright.sync_api", reason=INSTALL_HINT)
    exe = _chromium()
    if exe is None:
        pytest.skip(INSTALL_HINT)
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.mark.parametrize("args", [["vector_add", "--spec", "h100"], ["--results", RESULTS / "h100.json"],
                                  ["--results", RESULTS / "h100.json", "--results", RESULTS / "a100_failed.json"]])
def test_pages_open_in_a_browser(browser, run_cli, tmp_path, args):  # type: ignore[no-untyped-def]
    out = tmp_path / "p.html"
    r = run_cli("plot", *args, "-o", out)
    assert r.code == 0, r.err
    tab = browser.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.goto(out.as_uri())
    assert tab.locator("#chart svg").is_visible()
    assert tab.locator("#points tbody tr").count() >= 1
    assert not errors
    tab.close()
