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

from roofline.cli import main
from roofline.ncu.group import add_groups
from roofline.ncu.importer import import_csv
from roofline.render.charts.html import profile_html
from conftest import NCU

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
    doc, _ = import_csv(NCU / "h200_gpt2_profile.csv", "h200")
    add_groups(doc, "op")
    return doc


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory, gpt2_doc: dict) -> Path:
    out = tmp_path_factory.mktemp("html") / "gpt2.json"
    out.write_text(json.dumps(gpt2_doc), encoding="utf-8")
    html_path = out.with_suffix(".html")
    with pytest.raises(SystemExit) as exit_info:
        main(["plot", "--results", str(out), "-o", str(html_path)])
    assert exit_info.value.code in (0, None)
    return html_path


@pytest.fixture(scope="module")
def browser_page(page: Path):  # type: ignore[no-untyped-def]
    sync_api = pytest.importorskip("playwright.sync_api", reason=INSTALL_HINT)
    exe = _chromium()
    if exe is None:
        pytest.skip(INSTALL_HINT)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox"])
        tab = browser.new_page(viewport={"width": 1400, "height": 1000})
        requests: list[str] = []
        tab.on("request", lambda r: requests.append(r.url))
        tab.goto(page.as_uri())
        yield tab, requests
        browser.close()


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
