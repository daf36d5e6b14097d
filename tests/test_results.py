"""Reading results files: validation messages name the file and the field; helpers for merging and sweeps."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.records.files import (
    RESULTS_SCHEMA, ResultsFile, device_labels, iter_kernels, kernel_key, load_results, params_text, split_file,
    sweep_groups,
)

DATA = Path(__file__).parent / "data" / "results"


def sample() -> dict:
    return json.loads((DATA / "h100.json").read_text())


def write(tmp_path: Path, doc: object, name: str = "r.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return path


def test_fixture_loads():
    doc = load_results(DATA / "h100.json").doc
    assert doc["schema"] == RESULTS_SCHEMA
    assert [k["name"] for k in doc["kernels"]] == ["vector_add", "triad", "sum", "matmul_tiled"]


@pytest.mark.parametrize("name", ["h100.json", "h100_baseline.json", "a100_failed.json", "sweep.json",
                                  "many_h200.json"])
def test_every_fixture_is_valid(name):
    results = load_results(DATA / name)
    doc = results.doc
    assert doc["kernels"] and results.source == str(DATA / name) and results.path == DATA / name
    assert all(k["status"] in ("OK", "FAILED", "SKIPPED", "IMPORTED") for k in doc["kernels"])


@pytest.mark.parametrize("name", ["h100.json", "a100_failed.json", "sweep.json", "many_h200.json"])
def test_a_loaded_document_is_the_file_and_its_typed_form_is_kept(name):
    """Issue 22: where the file came from travels beside the document, not inside it (no `_source` key), and the
    ResultsDocument the check built is handed on rather than thrown away."""
    results = load_results(DATA / name)
    assert results.doc == json.loads((DATA / name).read_text())
    assert not [k for k in results.doc if k.startswith("_")]
    assert [k.name for k in results.typed.kernels] == [k["name"] for k in results.doc["kernels"]]
    assert results.typed.to_json() == results.doc


def test_not_json():
    with pytest.raises(InputError, match=r"not_json\.json: is not valid JSON: line 2"):
        load_results(DATA / "not_json.json")


def test_newer_schema():
    with pytest.raises(InputError, match=r"wrong_schema_v2\.json: schema: is 'roofline/results/v2', newer than this "
                                         r"roofline reads"):
        load_results(DATA / "wrong_schema_v2.json")


def test_older_schema(tmp_path):
    doc = sample()
    doc["schema"] = "roofline/results/v0"
    with pytest.raises(InputError, match="older than this roofline reads"):
        load_results(write(tmp_path, doc))


def test_missing_schema_and_analysis_file(tmp_path):
    doc = sample()
    del doc["schema"]
    with pytest.raises(InputError, match="schema: is missing"):
        load_results(write(tmp_path, doc))
    doc["schema"] = "roofline/analysis/v1"
    with pytest.raises(InputError, match="an analysis, not measured results"):
        load_results(write(tmp_path, doc))


def test_missing_key_names_kernel_and_field(tmp_path):
    doc = sample()
    del doc["kernels"][2]["time_median"]
    with pytest.raises(InputError, match=r"r\.json: kernels\[2\] \(sum\)\.time_median: is missing"):
        load_results(write(tmp_path, doc))


def test_wrong_type(tmp_path):
    doc = sample()
    doc["kernels"][0]["verified"] = "yes"
    with pytest.raises(InputError, match=r"kernels\[0\] \(vector_add\)\.verified: expected boolean or null, got a string"):
        load_results(write(tmp_path, doc))
    doc = sample()
    doc["machine"]["bandwidth"] = "3.35 TB/s"
    with pytest.raises(InputError, match=r"machine\.bandwidth: expected number"):
        load_results(write(tmp_path, doc))


def test_top_level_not_object_empty_missing_folder(tmp_path):
    with pytest.raises(InputError, match="expected a JSON object"):
        load_results(write(tmp_path, "[1, 2]"))
    with pytest.raises(InputError, match="is empty"):
        load_results(write(tmp_path, ""))
    with pytest.raises(InputError, match="no such file"):
        load_results(tmp_path / "absent.json")
    with pytest.raises(InputError, match="is a folder"):
        load_results(tmp_path)


def test_null_times_allowed_for_failed():
    doc = load_results(DATA / "a100_failed.json").doc
    failed = [k for k in doc["kernels"] if k["status"] == "FAILED"]
    assert failed and failed[0]["time_median"] is None and failed[0]["verified"] is False


def test_validate_does_not_need_a_file():
    doc = sample()
    results = ResultsFile.of(copy.deepcopy(doc))
    assert results.doc == doc and results.path is None and results.source is None
    assert results.name == "the results" and len(results.typed.kernels) == len(doc["kernels"])
    with pytest.raises(InputError, match=r"^mem\.json: kernels: is empty"):
        ResultsFile.of({**doc, "kernels": []}, "mem.json")


def test_params_text_and_key():
    assert params_text({"n": 2**28}) == "n=2^28"
    assert params_text({"rows": 8192, "cols": 1000}) == "rows=2^13 cols=1000"
    assert params_text({"alpha": 0.5}) == "alpha=0.5"
    assert kernel_key({"name": "a", "params": {"n": 1, "m": 2}}) == kernel_key({"name": "a", "params": {"m": 2, "n": 1}})


def test_device_labels_and_iteration():
    h100, a100 = load_results(DATA / "h100.json"), load_results(DATA / "a100_failed.json")
    assert device_labels([h100, a100]) == ["NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"]
    base = load_results(DATA / "h100_baseline.json")
    assert device_labels([h100, base]) == ["NVIDIA H100 80GB HBM3 (h100.json)",
                                           "NVIDIA H100 80GB HBM3 (h100_baseline.json)"]
    assert len(list(iter_kernels([h100, a100]))) == 7
    label, results, kernel = next(iter_kernels([h100, a100]))
    assert (label, results, kernel) == ("NVIDIA H100 80GB HBM3", h100, h100.typed.kernels[0])
    assert kernel.name == "vector_add" and kernel.time_median == h100.doc["kernels"][0]["time_median"]
    assert device_labels([ResultsFile.of(h100.doc), ResultsFile.of(h100.doc)]) == [
        "NVIDIA H100 80GB HBM3 (?) #1", "NVIDIA H100 80GB HBM3 (?) #2"]  # in memory: no file name to tell them by


def test_a_several_device_file_splits_into_parts_that_keep_its_path():
    from roofline.records.devices import merge_documents

    parts = []
    for i, name in enumerate(("h100.json", "h100_baseline.json")):
        doc = json.loads((DATA / name).read_text())
        doc["device"]["device_id"] = i
        parts.append(doc)
    merged = ResultsFile.of(merge_documents(parts), "/x/several.json")
    split = split_file(merged)
    assert [p.source for p in split] == ["/x/several.json"] * 2
    assert [p.doc["device"]["name"] for p in split] == ["NVIDIA H100 80GB HBM3 (GPU 0)", "NVIDIA H100 80GB HBM3 (GPU 1)"]
    assert [len(p.typed.kernels) for p in split] == [len(p.doc["kernels"]) for p in split] == [4, 3]
    assert not [k for p in split for k in p.doc if k.startswith("_")] and "host" not in split[0].doc
    single = load_results(DATA / "h100.json")
    assert split_file(single) == [single]


def test_sweep_groups_without_marker():
    doc = load_results(DATA / "sweep.json").doc
    del doc["sweep"]
    groups = sweep_groups(doc)
    assert list(groups) == ["vector_add"]
    sizes = [k["bytes"] for k in groups["vector_add"]]
    assert sizes == sorted(sizes) and len(sizes) == 10
    assert sweep_groups(load_results(DATA / "h100.json").doc) == {}


@pytest.mark.parametrize("status, verified, failed", [
    ("FAILED", False, True), ("FAILED", None, True), ("OK", True, False), ("OK", False, True),
    ("OK", None, True),  # timed but never checked: nothing unverified passes as verified
    ("SKIPPED", False, False), ("SKIPPED", None, False), ("IMPORTED", None, False), ("IMPORTED", False, True),
])
def test_one_rule_decides_whether_a_kernel_failed(status, verified, failed):
    """Issue 22: the gates, the charts and the exit codes all ask records.document whether an entry failed."""
    from roofline.gates.report import evaluate_kernel
    from roofline.gates.config import Thresholds
    from roofline.records.document import KernelResult, entry_failed

    entry = {"name": "k", "params": {}, "dtype": "float32", "roof": "fp32", "flops": 1.0, "bytes": 4.0,
             "intensity": 0.25, "status": status, "verified": verified}
    assert entry_failed(entry) is failed
    assert KernelResult.from_fields(entry).failed is failed
    row = evaluate_kernel(KernelResult.from_fields(entry), Thresholds(), None)
    assert ("verified" in row["failed_gates"]) is failed


def test_the_format_name_and_the_importers_statuses_are_written_once():
    """Issue 22: records.schema owns the results format's name and records.document its statuses; the importers
    (ncu/, kineto/) take them from there instead of keeping copies that could drift."""
    import ast

    from roofline.records.document import Status

    root = Path(__file__).parent.parent / "roofline"
    statuses = {s.value for s in Status}
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Constant):
                continue
            if node.value == RESULTS_SCHEMA and where != "records/schema.py":
                found.append(f"{where}:{node.lineno} {node.value}")
            if node.value in statuses and where.startswith(("ncu/", "kineto/")):
                found.append(f"{where}:{node.lineno} {node.value}")
    assert found == []
