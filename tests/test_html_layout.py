"""The HTML page at 1400 px (issue 39): its tables fit or scroll inside the page (the page itself never scrolls
sideways, which left the last columns off-screen beside a compiled trace's long Triton names), names wrap after
an underscore, and the timeline strip has a time axis. The browser tests skip without Playwright and a Chromium
(CI installs them); the page's markup is tested without one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import DATA, plot_html
from roofline.render.charts.html import axis_ticks, breakable, time_axis
from test_html_chart import browser  # noqa: F401 - one Chromium fixture for the browser tests

COMPILED = DATA / "kineto" / "compiled" / "llama-train-compiled.json.gz"


@pytest.fixture(scope="module")
def compiled_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from roofline.cli import main

    folder = tmp_path_factory.mktemp("layout")
    results = folder / "llama.json"
    with pytest.raises(SystemExit) as done:
        main(["import", "torch", str(COMPILED), "-o", str(results)])
    assert done.value.code in (0, None)
    return plot_html(json.loads(results.read_text()), folder, "llama")


def test_ticks_step_by_one_two_or_five():
    assert axis_ticks(16e-3) == pytest.approx([i * 2e-3 for i in range(9)])
    assert axis_ticks(0.7e-3) == pytest.approx([i * 0.1e-3 for i in range(8)])
    assert len(axis_ticks(123.4)) <= 9


def test_the_timeline_strip_has_a_time_axis_in_ms(compiled_page: Path):
    page = compiled_page.read_text(encoding="utf-8")
    strip = page.index('class="strip"')
    axis = page.index('class="axis"', strip)
    assert axis < page.index('class="bar"', strip)  # under the strip, above the bar of causes
    assert ">ms</span>" in time_axis(16e-3) and '<span style="left:50.0000%">8</span>' in time_axis(16e-3)


def test_tables_scroll_inside_the_page_and_names_may_wrap(compiled_page: Path):
    page = compiled_page.read_text(encoding="utf-8")
    assert '<div class="scroll"><table id="groups">' in page
    assert "triton_<wbr>red_<wbr>fused__<wbr>" in page
    assert breakable("a<b>_c") == "a&lt;b&gt;_<wbr>c"  # escaped first, then broken




def test_at_1400_px_every_column_is_on_the_page_or_scrolls_in_its_box(compiled_page: Path, browser) -> None:
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
    tab.goto(compiled_page.as_uri())
    assert tab.evaluate("document.documentElement.scrollWidth") <= 1400  # the page never scrolls sideways
    box = tab.evaluate("""() => {
        const s = document.querySelector('div.scroll'), t = document.getElementById('groups');
        const last = t.querySelector('thead th:last-child').getBoundingClientRect();
        return {fits: last.right <= window.innerWidth, scrolls: s.scrollWidth > s.clientWidth,
                box: s.getBoundingClientRect().right};
    }""")
    assert box["box"] <= 1400 and (box["fits"] or box["scrolls"]), box
    ticks = tab.evaluate("Array.from(document.querySelectorAll('.axis span')).map(e => e.textContent)")
    assert ticks[0] == "0" and ticks[-1] == "ms" and len(ticks) >= 4
    tab.close()
