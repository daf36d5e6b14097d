"""The interactive HTML chart (`roofline plot --results FILE -o NAME.html`), opened in a real headless Chromium
through Playwright: hovering a point shows its tooltip, clicking a legend name hides the point. Without
Playwright or a Chromium the browser tests skip with the install hint; the page's structure and escaping are
tested without a browser."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from roofline.render.charts.html import profile_html
from conftest import h200_profile, plot_html

INSTALL_HINT = ("needs Playwright and a Chromium: apt-get install -y chromium && pip install playwright "
                "(or pip install -e '.[browser]'); no 'playwright install' download is needed")


def _chromium() -> str | None:
    for candidate in (os.environ.get("ROOFLINE_CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                      shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture(scope="module")
def gpt2_doc() -> dict:
    return h200_profile("h200_gpt2_profile.csv")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, gpt2_doc: dict) -> Path:
    return plot_html(gpt2_doc, tmp_path_factory.mktemp("html"), "gpt2")


@pytest.fixture(scope="module")
def browser():  # type: ignore[no-untyped-def]
    """One Chromium for the module: Playwright's sync API allows one running instance per thread."""
    sync_api = pytest.importorskip("playwright.sync_api", reason=INSTALL_HINT)
    exe = _chromium()
    if exe is None:
        pytest.skip(INSTALL_HINT)
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def browser_page(page: Path, browser):  # type: ignore[no-untyped-def]
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
    requests: list[str] = []
    tab.on("request", lambda r: requests.append(r.url))
    tab.goto(page.as_uri())
    yield tab, requests
    tab.close()


def test_page_is_self_contained_and_lists_groups(page: Path, gpt2_doc: dict) -> None:
    text = page.read_text(encoding="utf-8")
    assert "<svg" in text and "http://" not in text.replace("http://www.w3.org", "")
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", text)  # nothing fetched from elsewhere
    for i, group in enumerate(gpt2_doc["groups"]):
        if group["flops"]:
            assert f'id="pt-{i}"' in text, group["name"]
    rows = re.findall(r'<tr id="row-pt-(\d+)">', text)
    assert [int(r) for r in rows] == list(range(len(gpt2_doc["groups"])))  # ranked as the groups are


def test_hostile_names_are_escaped(gpt2_doc: dict) -> None:
    doc = json.loads(json.dumps(gpt2_doc))
    doc["groups"][0]["name"] = "</script><script>alert(1)</script>&<b>x"
    doc["device"]["name"] = "<img src=x onerror=alert(1)>"
    text = profile_html(doc)
    assert "<script>alert(1)" not in text and "<img src=x" not in text and "<b>x" not in text
    assert html.escape("<img src=x onerror=alert(1)>") in text
    data = re.search(r'<script type="application/json" id="roofline-data">(.*?)</script>', text, re.S)
    assert data is not None
    assert json.loads(data.group(1))["points"][0]["name"] == doc["groups"][0]["name"]


def test_hover_shows_the_tooltip(browser_page) -> None:  # type: ignore[no-untyped-def]
    tab, requests = browser_page
    tooltip = tab.locator("#tooltip")
    assert not tooltip.is_visible()
    tab.locator("#pt-0").hover()
    tooltip.wait_for(state="visible", timeout=5000)
    text = tooltip.inner_text()
    assert text.startswith("aten::mm")
    for field in ("launches: 1", "of GPU time", "intensity:", "achieved:", "roof: bf16_tensor",
                  "fraction of ceiling:", "recoverable:"):
        assert field in text, field
    tab.mouse.move(5, 5)
    tooltip.wait_for(state="hidden", timeout=5000)
    assert all(url.startswith(("file:", "data:", "about:")) for url in requests), requests


def test_legend_toggles_a_group(browser_page) -> None:  # type: ignore[no-untyped-def]
    tab, _ = browser_page
    point, item = tab.locator("#pt-2"), tab.locator('#legend li[data-point="pt-2"]')
    assert item.inner_text().strip() == "aten::addmm"
    assert point.is_visible()
    item.click()
    assert point.is_hidden()
    assert "off" in (tab.locator("#row-pt-2").get_attribute("class") or "")
    assert tab.locator("#pt-0").is_visible()  # the others stay
    item.click()
    assert point.is_visible()


# ---- issue 31: roof labels with values, apart; 0-FLOP groups and the mixed-roof '+' said on the page ----------


@pytest.fixture(scope="module")
def resnet_page(tmp_path_factory: pytest.TempPathFactory, browser):  # type: ignore[no-untyped-def]
    """The ResNet-50 profile: two groups with no FLOPs (clamp_min_, copy_) and two on more than one roof."""
    doc = h200_profile("h200_resnet50_profile.csv")
    html_path = plot_html(doc, tmp_path_factory.mktemp("html"), "resnet")
    tab = browser.new_page(viewport={"width": 1400, "height": 1000})
    tab.goto(html_path.as_uri())
    yield tab, doc
    tab.close()


def _apart(a: dict, b: dict) -> bool:
    return (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
            or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


def test_the_page_draws_a_label_per_roof_and_none_overlap(resnet_page) -> None:  # type: ignore[no-untyped-def]
    tab, doc = resnet_page
    roofs = tab.locator('[id="roofline:roof-label"]')
    drawn = {g["roof"] for g in doc["groups"] if g["flops"]}
    assert roofs.count() == len(drawn)
    memory = tab.locator('[id="roofline:memory-label"]')
    assert memory.count() == 1 and memory.is_visible()
    boxes = [roofs.nth(i).bounding_box() for i in range(roofs.count())]
    boxes += [memory.bounding_box(), tab.locator('[id="roofline:side-panel"]').bounding_box()]
    assert all(b and b["width"] > 0 and b["height"] > 0 for b in boxes)
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert _apart(a, b), (a, b)


def test_the_page_lists_the_groups_with_no_flops(resnet_page) -> None:  # type: ignore[no-untyped-def]
    tab, doc = resnet_page
    note = tab.locator("#unplotted")
    assert note.is_visible()
    text = note.inner_text()
    zero = [g["name"] for g in doc["groups"] if not g["flops"]]
    assert zero and text.startswith("Not on the chart, 0 FLOPs")
    for name in zero:
        assert name in text
        assert tab.locator(f'#legend li:text-is("{name}")').count() == 0  # not a toggle for a point not drawn


def test_the_page_explains_the_plus_of_a_mixed_roof(resnet_page) -> None:  # type: ignore[no-untyped-def]
    tab, doc = resnet_page
    assert tab.locator("#mixed-roof").inner_text().startswith("roof +: work on more than one roof")
    mixed = [i for i, g in enumerate(doc["groups"]) if len(g.get("roofs") or []) > 1]
    assert mixed
    row = tab.locator(f"#row-pt-{mixed[0]}")
    assert " +" in row.inner_text()
    tab.locator(f"#pt-{mixed[0]}").hover()
    tooltip = tab.locator("#tooltip")
    tooltip.wait_for(state="visible", timeout=5000)
    assert "work on more than one roof" in tooltip.inner_text()
    tab.mouse.move(5, 5)


def test_a_page_without_zero_flop_or_mixed_groups_says_nothing_of_them(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert 'id="mixed-roof"' not in text
    assert 'id="unplotted"' in text  # gpt2 has aten::gather and aten::arange with no FLOPs
