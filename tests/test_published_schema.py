"""The published JSON Schema of the results format (docs/results-v1.schema.json, issue 30): generated from the
field tables roofline checks files against, current, a valid draft 2020-12 schema, and true of every document the
tool writes and ships: what roofline accepts, the schema accepts; the broken documents roofline refuses for their
shape, the schema refuses too."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from conftest import DATA, NCU, results_files
from roofline.kineto.document import import_traces
from roofline.ncu.group import add_groups
from roofline.ncu.importer import import_csv
from roofline.records.document import require_results

ROOT = Path(__file__).parent.parent
PUBLISHED = ROOT / "docs" / "results-v1.schema.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(PUBLISHED.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_published_schema_is_what_the_code_generates() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "schema.py"), "--check"], capture_output=True,
                          text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_results_file_the_repository_ships_meets_both(validator: jsonschema.Draft202012Validator) -> None:
    shipped = results_files()
    assert len(shipped) >= 10  # the fixtures of measure, sweep, several GPUs, ncu-profiled, failed runs
    for path in shipped:
        doc = json.loads(path.read_text(encoding="utf-8"))
        require_results(doc, path)
        errors = [e.message for e in validator.iter_errors(doc)]
        assert not errors, (path.name, errors[:3])


def test_what_the_importers_write_meets_the_schema(validator: jsonschema.Draft202012Validator) -> None:
    """Groups, programs, the timeline and the imported launches' work, as import torch and import ncu write them."""
    docs = [import_traces([DATA / "kineto" / "h200-train.json.gz"], "h200")[0]]
    ncu, _ = import_csv(NCU / "h200_gpt2_profile.csv", "h200")
    add_groups(ncu, "op")
    docs.append(ncu)
    for doc in docs:
        doc = json.loads(json.dumps(doc))  # as the file holds it
        require_results(doc, "<import>")
        assert not [e.message for e in validator.iter_errors(doc)][:3]


@pytest.mark.parametrize("break_it", [
    lambda d: d["kernels"][0].update(flops=-1.0),
    lambda d: d["kernels"][0].update(status="GREAT"),
    lambda d: d["kernels"][0].update(fraction_of_ceiling=50.0),
    lambda d: d["kernels"][0].update(time_median=0),
    lambda d: d["kernels"][0].pop("roof"),
    lambda d: d.update(kernels=[]),
    lambda d: d.update(schema="roofline/results/v2"),
    lambda d: d["machine"].update(roofs={}),
    lambda d: d["machine"].update(bandwidth="3.35 TB/s"),
], ids=["negative-flops", "unknown-status", "fraction-50", "zero-time", "no-roof", "no-kernels", "v2",
        "no-roofs", "bandwidth-text"])
def test_a_broken_document_is_refused_by_both(validator: jsonschema.Draft202012Validator, break_it) -> None:
    doc = json.loads((DATA / "results" / "h100.json").read_text(encoding="utf-8"))
    broken = copy.deepcopy(doc)
    break_it(broken)
    with pytest.raises(Exception) as ours:
        require_results(broken, "broken.json")
    assert "broken.json" in str(ours.value)
    assert list(validator.iter_errors(broken))
