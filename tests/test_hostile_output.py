"""Hostile names in Markdown, CSV and HTML output (issue 23): shown as written, never an image, a formula or a
reversed string."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest

from conftest import NCU
from test_escaping import _descriptor, _md_cells, _results

IMAGE = "![x](https://example.com/i.png)"
EMPHASIS = "*b* _c_ `d` ~~e~~ [l](u)"


def _unescaped(text: str, char: str) -> list[int]:
    """Positions of `char` in Markdown text not preceded by a backslash (counting runs of backslashes)."""
    found = []
    for m in re.finditer(re.escape(char), text):
        slashes = len(text[:m.start()]) - len(text[:m.start()].rstrip("\\"))
        if slashes % 2 == 0:
            found.append(m.start())
    return found


def test_md_escapes_every_character_markdown_reads():
    from roofline.render.text import md

    s = md(IMAGE + EMPHASIS + "|<b>&amp;\\")
    for char in "![]*_`~|":
        assert not _unescaped(s, char), (char, s)
    assert "<b>" not in s and "&amp;amp;" in s


def test_report_markdown_shows_names_as_written(run_cli, tmp_path):
    path = _results(tmp_path, "GPU", {"vector_add": IMAGE, "sum": EMPHASIS})
    r = run_cli("report", path, "--format", "markdown")
    assert r.code == 1, r.err
    rows = [line for line in r.out.splitlines() if line.startswith("| GPU")]
    assert len(rows) == 3
    body = "\n".join("|".join(_md_cells(row)[:-1]) for row in rows)  # the gate cell is bold on purpose
    for char in "![]*_`~":
        assert not _unescaped(body, char), (char, body)
    assert all(len(_md_cells(row)) == len(_md_cells(rows[0])) for row in rows)


def test_grouped_markdown_group_name_is_not_an_image(run_cli, tmp_path):
    from roofline.render.tables.grouped import grouped_markdown

    out = tmp_path / "g.json"
    r = run_cli("import", "ncu", NCU / "h200_gpt2_profile.csv", "--spec", "h200", "--group-by", "kernel", "-o", out,
                "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    doc["groups"][0]["name"] = IMAGE
    text = grouped_markdown(doc)
    line = next(line for line in text.splitlines() if "example.com" in line)
    assert not _unescaped(line, "!") and not _unescaped(line, "[")


@pytest.mark.parametrize("name", ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)"])
def test_csv_names_never_start_a_formula(run_cli, tmp_path, no_bundled_kernels, name):
    _descriptor(tmp_path / "k", name=name)
    r = run_cli("analyze", "--kernels", tmp_path / "k", "--spec", "h100", "--format", "csv")
    if r.code == 2:  # the loader refuses the name itself: nothing reaches a spreadsheet
        assert "name" in r.err
        return
    assert r.code == 0, r.err
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert rows[0]["name"] == "'" + name
    assert float(rows[0]["flops"]) > 0  # numbers stay numbers


def test_csv_cell_leaves_numbers_and_plain_text():
    from roofline.render.text import csv_cell

    assert csv_cell(-1.5) == -1.5 and csv_cell("vector_add") == "vector_add" and csv_cell("-x") == "'-x"
    assert csv_cell("\tx") == "'\tx"


def test_html_roof_strings_get_the_control_clean_up(run_cli, tmp_path):
    pytest.importorskip("matplotlib")
    from roofline.render.charts.html import profile_html

    out = tmp_path / "g.json"
    r = run_cli("import", "ncu", NCU / "h200_gpt2_profile.csv", "--spec", "h200", "--group-by", "op", "-o", out,
                "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(out.read_text(encoding="utf-8"))
    for g in doc["groups"]:
        g["roof"] = g["roof"] + "\u202eevil\x1b[2J"
    page = profile_html(doc)
    assert "\u202e" not in page and "\x1b" not in page
    assert "\\u202e" in page
