"""The typed results core: every results file in the repository round-trips through ResultsDocument unchanged, and
documents that parse but cannot be right are refused with the file and field named."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from conftest import results_files
from roofline.errors import InputError
from roofline.records.document import KernelResult, ResultsDocument, Status

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "results"


FILES = results_files()


def test_the_repository_holds_results_files_to_round_trip():
    assert len(FILES) >= 8  # tests/data: if this drops, the round trip tests less


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_results_file_round_trips_unchanged(path):
    raw = json.loads(path.read_text(encoding="utf-8"))
    doc = ResultsDocument.from_json(copy.deepcopy(raw), path)
    assert doc.to_json() == raw
    assert all(isinstance(k.status, Status) for k in doc.kernels)


def _sample() -> dict:
    return json.loads((DATA / "h100.json").read_text(encoding="utf-8"))


def test_typed_fields_and_verdicts():
    failed = ResultsDocument.from_json(json.loads((DATA / "a100_failed.json").read_text()), "a100_failed.json")
    statuses = {k.status for k in failed.kernels}
    assert Status.FAILED in statuses
    bad = next(k for k in failed.kernels if k.status is Status.FAILED)
    assert bad.failed and not bad.model_error and bad.time_median is None


def test_model_error_is_a_verified_kernel_beyond_102_percent():
    kernel = ResultsDocument.from_json(_sample()).kernels[0]
    from dataclasses import replace

    assert not replace(kernel, fraction_of_ceiling=1.02).model_error
    assert replace(kernel, fraction_of_ceiling=1.03).model_error
    assert not replace(kernel, fraction_of_ceiling=1.5, verified=False).model_error


def test_failure_is_the_one_failed_entry():
    kernel = ResultsDocument.from_json(_sample()).kernels[0].to_json()
    entry = KernelResult.failure(kernel, "wrong result", phases={}).to_json()
    assert entry["status"] == "FAILED" and entry["verified"] is False and entry["error"] == "wrong result"
    assert entry["time_median"] is None and entry["time_min"] is None and entry["phases"] == {}


def _broken(mutate) -> dict:
    doc = _sample()
    mutate(doc)
    return doc


@pytest.mark.parametrize("mutate, field, words", [
    (lambda d: d["kernels"].clear(), "kernels", "at least one kernel"),
    (lambda d: d["kernels"][1].update(time_median=-1e-3), "kernels[1] (triad).time_median", "positive"),
    (lambda d: d["kernels"][1].update(time_min=0), "kernels[1] (triad).time_min", "positive"),
    (lambda d: d["kernels"][0].update(fraction_of_ceiling=-0.5), "fraction_of_ceiling", "from 0 to 10"),
    (lambda d: d["kernels"][0].update(fraction_of_ceiling=1e6), "fraction_of_ceiling", "from 0 to 10"),
    (lambda d: d["kernels"][0].update(bytes=-4), "kernels[0] (vector_add).bytes", "cannot be negative"),
    (lambda d: d["kernels"][0].update(status="GREAT"), "kernels[0] (vector_add).status", "one of OK"),
    (lambda d: d["kernels"].append(copy.deepcopy(d["kernels"][0])), "kernels[4] (vector_add)", "appear twice"),
    (lambda d: d["kernels"][0].update(time_median=None), "time_median", "status is OK"),
    (lambda d: d["machine"].update(latency=0), "machine.latency", "positive"),
])
def test_semantic_problems_are_refused_naming_the_field(mutate, field, words):
    with pytest.raises(InputError) as caught:
        ResultsDocument.from_json(_broken(mutate), "r.json")
    message = str(caught.value)
    assert message.startswith("r.json: ") and field in message and words in message, message


def test_report_on_a_semantically_broken_file_exits_2_with_one_line(run_cli, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(_broken(lambda d: d["kernels"][2].update(time_median=-1.0))), encoding="utf-8")
    r = run_cli("report", str(path))
    assert r.code == 2 and "Traceback" not in r.err
    assert r.err.strip().splitlines() == [f"error: {path}: kernels[2] (sum).time_median: is -1.0; a time must be "
                                          "positive"]
