"""Warnings as data: records with a code and a fix; old files' plain strings still read."""

from __future__ import annotations

import pytest

from roofline.records import caveats
def test_records_lines_and_legacy_strings():
    w = caveats.warning("noisy", "noisy: max/min = 1.4 (> 1.2)", "raise --min-time")
    assert caveats.line(w) == "noisy: max/min = 1.4 (> 1.2); raise --min-time"
    assert caveats.record("an old warning") == {"code": "legacy", "text": "an old warning", "fix": None}
    assert caveats.line("an old warning") == "an old warning"
    assert caveats.valid(w) and caveats.valid("text") and not caveats.valid({"text": 1}) and not caveats.valid(3)


def test_an_unknown_code_is_a_programming_error():
    with pytest.raises(ValueError, match="add it to roofline.records.caveats.CODES"):
        caveats.warning("spooky", "text")


def test_the_lines_under_the_measure_table_carry_the_fix_and_read_old_strings():
    from roofline.render.tables.measure import problems

    doc = {"kernels": [{"name": "k", "status": "OK", "warnings": [
        caveats.warning("noisy", "noisy: max/min = 1.4 (> 1.2)", "raise --min-time"), "an old warning"]}]}
    assert problems(doc) == ["warning k: noisy: max/min = 1.4 (> 1.2); raise --min-time", "warning k: an old warning"]

