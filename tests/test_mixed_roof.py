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


def test_the_plus_is_not_explained_under_a_table_that_left_the_roof_out(run_cli, monkeypatch):
    """At a width that drops the roof column, the note explaining its '+' goes with it (the 'Left out' line says the
    column is gone); with the column shown, the note stays."""
    from pathlib import Path

    trace = Path(__file__).parent / "data" / "kineto" / "compiled" / "llama-train-compiled.json.gz"
    monkeypatch.setenv("COLUMNS", "70")
    code, out, err = run_cli("import", "torch", trace)
    assert code == 0, err
    left_out = " ".join(out.split("Left out at 70 columns:")[1].split("(--wide shows them)")[0].split())
    assert "roof +:" not in out and "roof" in left_out.split(", ")
    monkeypatch.setenv("COLUMNS", "250")
    code, out, err = run_cli("import", "torch", trace, "--wide")
    assert code == 0 and "roof +:" in out
