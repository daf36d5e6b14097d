"""`report` of an imported trace carries its step (issue 38 item 6): the timeline `import torch` printed (window,
busy, idle by cause), the largest idle gaps with their causes, and MFU/HFU, in the table, Markdown, JSON and JUnit
(as properties and system-out of the program's testcase). Before, report kept the step line and dropped the rest."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from conftest import DATA
from roofline.kineto.document import import_traces

EAGER = DATA / "kineto" / "h200-train.json.gz"


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    doc, _ = import_traces([EAGER], "h200")
    path = tmp_path_factory.mktemp("step") / "eager.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path, doc


def test_the_table_shows_the_timeline_and_the_largest_gaps(profile, run_cli):
    path, _ = profile
    r = run_cli("report", path, "--wide")
    assert r.code == 0, r.err
    flat = " ".join(r.out.split())
    assert "timeline · GPU busy" in flat and "host-bound" in flat
    assert "largest idle gaps on the GPU: 1.78 ms at 5.78 ms: host-bound in aten::fill_" in flat
    assert "MFU 9.5%" in flat


def test_markdown_has_a_step_section(profile, run_cli):
    path, _ = profile
    r = run_cli("report", path, "--format", "markdown")
    assert r.code == 0, r.err
    text = r.out.replace("\\_", "_")
    assert "#### Step: NVIDIA H200" in text
    assert "| 0 | 0 | 16 ms | 6.52 ms | 59.2% | 9.11 ms |" in text
    assert "- 1.78 ms at 5.78 ms: host-bound in aten::fill_" in text
    assert "MFU 9.5% and HFU 9.5%" in text


def test_json_carries_the_timeline_as_written(profile, run_cli):
    path, doc = profile
    r = run_cli("report", path, "--format", "json")
    program = json.loads(r.out)["programs"][0]
    assert program["timeline"] == doc["timeline"]
    assert program["timeline"]["devices"][0]["gaps"][0]["cause"] == "host-bound"
    assert program["step"]["mfu"] == pytest.approx(doc["timeline"]["step"]["mfu"])


def test_junit_program_case_has_the_step_as_properties_and_system_out(profile, run_cli):
    path, doc = profile
    r = run_cli("report", path, "--format", "junit")
    assert r.code == 0, r.err
    program = next(c for c in ET.fromstring(r.out).iter("testcase") if c.get("name") == "program")
    props = {p.get("name"): p.get("value") for p in program.find("properties")}
    assert float(props["step.mfu"]) == pytest.approx(doc["timeline"]["step"]["mfu"])
    assert float(props["step.idle_share"]) == pytest.approx(doc["timeline"]["step"]["idle_share"])
    out = program.find("system-out").text
    assert "GPU idle 59.2%" in out and "gap: 1.78 ms at 5.78 ms: host-bound" in out
