"""A roof shown as 'bf16_tensor +' says what the '+' means, wherever it is shown (issue 31, "Honest output")."""

from __future__ import annotations

import pytest

from conftest import NCU

MIXED = NCU / "h200_resnet50_profile.csv"  # batch norm and convolutions: work on more than one roof
SINGLE = NCU / "h200_gpt2_profile.csv"


@pytest.mark.parametrize("group", [[], ["--group-by", "op"]])
def test_the_plus_in_the_roof_column_is_explained(group, run_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    r = run_cli("import", "ncu", MIXED, "--spec", "h200", *group)
    assert r.code == 0, r.err
    assert " + " in r.out  # a mixed row is there ...
    assert "roof +: work on more than one roof" in r.out  # ... and so is what it means
    r = run_cli("import", "ncu", SINGLE, "--spec", "h200", *group)
    assert r.code == 0, r.err
    assert " + " not in r.out and "roof +:" not in r.out  # no '+', no legend for it


def test_the_markdown_of_groups_explains_it_too(run_cli, tmp_path):
    import json

    from roofline.render.tables.grouped import grouped_markdown

    out = tmp_path / "r.json"
    assert run_cli("import", "ncu", MIXED, "--spec", "h200", "--group-by", "op", "-o", out).code == 0
    text = grouped_markdown(json.loads(out.read_text()))
    assert "fp32 +" in text and "roof +: work on more than one roof" in text
