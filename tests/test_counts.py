"""Counts read as English: '1 launch', '2 launches', never '1 launches' or 'launch(es)' (issue 39)."""

from __future__ import annotations

import re
from pathlib import Path

from roofline.model.counts import counted, plural

ROOT = Path(__file__).resolve().parents[1] / "roofline"


def test_one_is_singular_and_the_rest_plural() -> None:
    assert counted(1, "launch") == "1 launch"
    assert counted(0, "launch") == "0 launches"
    assert counted(38000, "GPU event") == "38,000 GPU events"
    assert counted(2, "entry") == "2 entries" and counted(2, "key") == "2 keys"
    assert counted(1, "time") == "1 time" and counted(3, "time") == "3 times"
    assert plural("kernel launch") == "kernel launches"


def test_a_one_launch_profile_is_titled_in_the_singular() -> None:
    from conftest import NCU
    from roofline.ncu.group import add_groups
    from roofline.ncu.importer import import_csv
    from roofline.render.tables.grouped import grouped_table

    doc, _ = import_csv(NCU / "h200_nvtx_small.csv")
    doc["kernels"] = doc["kernels"][:1]
    add_groups(doc, "op")
    title = grouped_table(doc).title.plain
    assert "1 launch grouped by" in title and "launches" not in title


def test_no_message_counts_with_a_parenthesised_plural() -> None:
    """Every f-string that puts a count before a noun goes through counted(): none writes `{n} kernel(s)`."""
    pattern = re.compile(r"\{[^{}]*\}[ A-Za-z-]*\((?:s|es)\)")
    found = [f"{p.relative_to(ROOT.parent)}:{i}" for p in ROOT.rglob("*.py")
             for i, line in enumerate(p.read_text().splitlines(), 1)
             if pattern.search(line) and ('f"' in line or "f'" in line)]
    assert found == []
