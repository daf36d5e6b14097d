"""Issue 30: the gates take typed results (roofline.records: KernelResult, ResultsDocument, Group, Program, Timeline,
HostDevice). A ResultsFile whose parsed document cannot be read proves a gate reads only the typed form; the typed
readers give what the dict readers gave."""

from __future__ import annotations

import json

import pytest

from roofline.gates.config import GateConfig, Thresholds
from roofline.gates.devices import host_report
from roofline.gates.groups import group_report
from roofline.gates.hosts import host_rows
from roofline.gates.report import build_report
from roofline.ncu.group import add_groups
from roofline.ncu.importer import import_csv
from roofline.records.devices import HostDevice, Timing, split_devices
from roofline.records.document import KernelResult
from roofline.records.energy import MeasuredEnergy
from roofline.records.files import ResultsFile, ceiling_of, kernel_key, load_results, split_file
from roofline.records.groups import Group, Program, program_totals
from typed_only import typed_only
from conftest import DATA, NCU

RESULTS = DATA / "results"
TWO_GPUS = DATA / "h200" / "measure-all-two-gpus.json"




@pytest.fixture(scope="module")
def grouped() -> ResultsFile:
    doc, _ = import_csv(NCU / "h200_nvtx_small.csv")
    add_groups(doc, "op")
    return ResultsFile.of(json.loads(json.dumps(doc)), "grouped.json")


def test_build_report_reads_only_the_typed_form() -> None:
    h100, base = load_results(RESULTS / "h100.json"), load_results(RESULTS / "h100_baseline.json")
    config = GateConfig(Thresholds(fail_below=0.6, max_regression=0.05))
    expected = build_report([h100], config, [base])
    assert build_report([typed_only(h100)], config, [typed_only(base)]) == expected
    assert expected["summary"]["baseline"]["compared"] == 3  # the baseline was matched, not ignored


def test_host_report_of_a_single_device_file_reads_only_the_typed_form() -> None:
    h100 = load_results(RESULTS / "h100.json")
    assert host_report([typed_only(h100)], [], GateConfig(), None) == host_report([h100], [], GateConfig(), None)


def test_group_report_reads_only_the_typed_form(grouped: ResultsFile) -> None:
    expected = group_report([grouped], 0.3, 0.5)
    assert group_report([typed_only(grouped)], 0.3, 0.5) == expected
    assert expected["programs"][0]["verdict"] == "fail"  # 14.5 % of the ceiling, below the 50 % gate


def test_typed_groups_and_program_are_the_written_ones(grouped: ResultsFile) -> None:
    doc = grouped.doc
    groups = grouped.typed.grouped()
    assert [g.shown() for g in groups] == [{k: v for k, v in g.items() if k != "kernels"} for g in doc["groups"]]
    assert [g.fraction_of_ceiling for g in groups] == [g["fraction_of_ceiling"] for g in doc["groups"]]
    top = doc["program"]["top"]
    assert grouped.typed.program().totals() == program_totals(doc["groups"], top) == {
        k: v for k, v in doc["program"].items() if k in program_totals(doc["groups"], top)}
    assert Program.of(groups[:1], {"top": 1, "gpu_time": 2.0}).shown_extra == {"gpu_time": 2.0}
    assert Group.all_of(None) == ()


def test_typed_kernel_readers_match_the_dict_readers() -> None:
    doc = load_results(RESULTS / "h100.json")
    for entry, kernel in zip(doc.doc["kernels"], doc.typed.kernels):
        assert kernel.key == kernel_key(entry)
        assert kernel.ceiling == ceiling_of(entry)
        assert Timing.of_result(kernel) == Timing.of_entry(entry)
    assert {k.ceiling[1] for k in doc.typed.kernels} == {"B/s", "FLOP/s"}  # both roofs met
    assert doc.typed.machine_id == doc.doc["machine"]["id"] and doc.typed.device_name == doc.doc["device"]["name"]


def test_measured_energy_is_none_without_a_block_and_reads_one() -> None:
    assert MeasuredEnergy.of(None) is None and MeasuredEnergy.of({}) is None
    e = MeasuredEnergy.of({"fraction_of_energy_ceiling": 0.5, "window": 0.5, "uncertainty": 0.2, "short_window": True})
    assert e is not None and (e.fraction_of_energy_ceiling, e.window, e.short_window) == (0.5, 0.5, True)
    kernel = load_results(RESULTS / "h100.json").typed.kernels[0]
    assert kernel.energy_measured is None
    with_energy = KernelResult.from_fields({**kernel.to_json(), "energy_measured": {"joules_per_run": 1e-3}})
    assert with_energy.energy_measured == MeasuredEnergy(joules_per_run=1e-3)


def test_host_rows_from_typed_parts_match_the_dict_form() -> None:
    both = load_results(TWO_GPUS)
    typed, dicts = [], []
    for part, results in zip(split_devices(both.doc), split_file(both)):
        label = results.typed.device_name
        typed.append(HostDevice.of_results(label, results.typed))
        dicts.append({"label": label, "index": part["device"].get("index"), "kernels": part["kernels"],
                      "pci_bus_id": part["device"].get("pci_bus_id"), "where": part["device"].get("label"),
                      "host": part["device"].get("host")})
    rows = host_rows(typed)
    assert len(typed) == 2 and rows and rows == host_rows(dicts)
    assert all(d["ci"] is None or isinstance(d["ci"], list) for r in rows for d in r["devices"])  # as the file had
