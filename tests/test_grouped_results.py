"""A grouped results file (roofline profile, import ncu --group-by) is read back against its own launches (issue 23):
`report` gated on `program` and `groups` as written, so a hand-edited program.fraction_of_ceiling passed
--fail-below-program, and a missing or mistyped group field crashed the renderers (exit 101). Also the kernel blocks
renderers read (counters, gpu_state) and a time_ci that does not hold its median."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from roofline.errors import InputError
from roofline.ncu.group import add_groups
from roofline.ncu.importer import import_csv
from roofline.records.document import ResultsDocument
from roofline.records.groups import group_figures, program_totals
from conftest import DATA, NCU

SMALL = NCU / "h200_nvtx_small.csv"  # six launches of a real PyTorch capture, with NVTX ranges


@pytest.fixture(scope="module")
def grouped() -> dict:
    doc, _ = import_csv(SMALL)
    add_groups(doc, "op")
    return json.loads(json.dumps(doc))  # as a file holds it


def edited(doc: dict, where: str, value: Any = None, delete: bool = False) -> dict:
    """A copy of doc with the dotted field `where` ('groups.2.time') set to value, or deleted."""
    out = copy.deepcopy(doc)
    *path, last = [int(p) if p.isdigit() else p for p in where.split(".")]
    parent = out
    for key in path:
        parent = parent[key]
    if delete:
        del parent[last]
    else:
        parent[last] = value
    return out


def save(tmp_path: Path, doc: dict, name: str = "grouped.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_written_grouped_file_reads_back(run_cli, grouped: dict, tmp_path: Path) -> None:
    ResultsDocument.from_json(grouped, "grouped.json")
    code, _, err = run_cli("report", save(tmp_path, grouped), "--fail-below-program", "10%")
    assert code in (0, None), err


def test_an_edited_program_fraction_does_not_pass_the_gate(run_cli, grouped: dict, tmp_path: Path) -> None:
    """The program is at 14.5 % of its ceiling; written as 90 %, it passed --fail-below-program 50 % (exit 0)."""
    code, _, err = run_cli("report", save(tmp_path, grouped), "--fail-below-program", "50%")
    assert code == 1 and "program at 14.5% of ceiling" in err
    path = save(tmp_path, edited(grouped, "program.fraction_of_ceiling", 0.9), "edited.json")
    code, _, err = run_cli("report", path, "--fail-below-program", "50%")
    assert code == 2 and "Traceback" not in err, err
    assert "edited.json: program.fraction_of_ceiling: is 0.9 but the groups give 0.144986" in err


@pytest.mark.parametrize(("field", "value"), [
    ("groups.0.fraction_of_ceiling", 0.95), ("groups.0.time", 1.0), ("groups.1.sol_time", 6e-6),
    ("groups.2.recoverable_time", 0.0), ("groups.3.share", 0.5), ("groups.2.flops", 1.0), ("groups.2.bytes", 1.0),
    ("groups.0.achieved_flops", 1e15), ("groups.0.achieved_bandwidth", 1.0), ("groups.0.intensity", 1.0),
    ("groups.2.roof", "fp32"), ("groups.2.roofs", ["fp32"]), ("groups.0.launches", 2),
    ("groups.2.flops_ratio", 2.0), ("groups.2.bytes_ratio", 0.1), ("program.time", 1.0),
    ("program.sol_time", 1e-9), ("program.recoverable_time", 0.0), ("program.top_share_of_recoverable", 1.0),
    ("program.groups", 2),
])
def test_a_figure_that_disagrees_with_the_launches_is_refused(grouped: dict, field: str, value: Any) -> None:
    label = ".".join(f"[{p}]" if p.isdigit() else p for p in field.split(".")).replace(".[", "[")
    with pytest.raises(InputError, match=rf"^g.json: {re.escape(label)}: is .* give .*edited or is corrupt"):
        ResultsDocument.from_json(edited(grouped, field, value), "g.json")


GROUP_FIELDS = ["name", "by", "launches", "time", "share", "flops", "bytes", "roof", "fraction_of_ceiling",
                "sol_time", "recoverable_time", "achieved_flops", "achieved_bandwidth", "kernels"]


@pytest.mark.parametrize("fmt", ["table", "markdown", "junit", "github-benchmark", "json"])
@pytest.mark.parametrize(("field", "value", "delete"), [
    *((f, None, True) for f in GROUP_FIELDS),
    ("time", "1 ms", False), ("launches", "one", False), ("roofs", "fp32", False), ("roofs", [1], False),
    ("achieved_flops", None, False), ("intensity", "x", False), ("flops_ratio", "2x", False), ("flag", 3, False),
    ("name", ["a"], False), ("kernels", "0", False), ("kernels", [True], False), ("dtype", 16, False),
    ("by", "range:0", False), ("by", "kernel", False),
], ids=lambda v: str(v)[:12])
def test_a_missing_or_mistyped_group_field_is_refused_not_a_crash(run_cli, grouped: dict, tmp_path: Path, fmt: str,
                                                                 field: str, value: Any, delete: bool) -> None:
    path = save(tmp_path, edited(grouped, f"groups.2.{field}", value, delete))
    code, _, err = run_cli("report", path, "--format", fmt)
    assert code == 2 and "Traceback" not in err and "groups[2]" in err, err


@pytest.mark.parametrize(("out", "extra"), [("chart.html", ()), ("chart.png", ())])
def test_plot_refuses_a_broken_group_too(run_cli, grouped: dict, tmp_path: Path, out: str, extra: tuple) -> None:
    path = save(tmp_path, edited(grouped, "groups.0.achieved_bandwidth", None, delete=True))
    code, _, err = run_cli("plot", "--results", path, "-o", tmp_path / out, *extra)
    assert code == 2 and "groups[0].achieved_bandwidth: is missing" in err and not (tmp_path / out).exists(), err


def test_each_launch_is_in_exactly_one_group(grouped: dict) -> None:
    first = grouped["groups"][0]["kernels"][0]
    twice = edited(grouped, "groups.1.kernels", [*grouped["groups"][1]["kernels"], first])
    with pytest.raises(InputError, match=rf"groups\[1\].kernels\[1\]: launch {first} is in groups\[0\] too"):
        ResultsDocument.from_json(twice, "g.json")
    lost = edited(grouped, "groups", grouped["groups"][:-1])
    with pytest.raises(InputError, match=r"kernels\[\d\]: launch \d is in no group \(1 launch is not\)"):
        ResultsDocument.from_json(lost, "g.json")
    unknown = edited(grouped, "groups.0.kernels", [999])
    with pytest.raises(InputError, match=r"groups\[0\].kernels\[0\]: is 999; expected the params.launch"):
        ResultsDocument.from_json(unknown, "g.json")
    no_launch = edited(grouped, "kernels.0.params", {})
    with pytest.raises(InputError, match=r"kernels\[0\].params.launch: expected the launch number"):
        ResultsDocument.from_json(no_launch, "g.json")


def test_a_program_block_without_groups_is_refused(grouped: dict) -> None:
    with pytest.raises(InputError, match=r"program: is present but the file has no groups"):
        ResultsDocument.from_json(edited(grouped, "groups", None, delete=True), "g.json")
    with pytest.raises(InputError, match=r"program.time: is missing"):
        ResultsDocument.from_json(edited(grouped, "program.time", None, delete=True), "g.json")
    with pytest.raises(InputError, match=r"program: expected a mapping"):
        ResultsDocument.from_json(edited(grouped, "program", [1]), "g.json")


def test_the_figures_have_one_definition(grouped: dict) -> None:
    """What add_groups writes is what the check recomputes, so a file the tool writes always reads back."""
    by_launch = {k["params"]["launch"]: k for k in grouped["kernels"]}
    total = sum(k["time_median"] for k in grouped["kernels"])
    for g in grouped["groups"]:
        assert group_figures([by_launch[i] for i in g["kernels"]], total).items() <= g.items()
    assert program_totals(grouped["groups"]) == grouped["program"]


# ---- the kernel blocks renderers read --------------------------------------------------------------------------

RESULTS = json.loads((DATA / "results" / "h100.json").read_text(encoding="utf-8"))


def test_a_time_interval_that_does_not_hold_its_median_is_refused(run_cli, tmp_path: Path) -> None:
    median = RESULTS["kernels"][0]["time_median"]
    fine = edited(RESULTS, "kernels.0.time_ci", [median * 0.9, median * 1.1])
    ResultsDocument.from_json(fine, "r.json")
    code, _, err = run_cli("report", save(tmp_path, edited(RESULTS, "kernels.0.time_ci", [median * 1.5, median * 2])))
    assert code == 2 and "grouped.json: kernels[0] (vector_add).time_ci: is [" in err, err
    assert "which does not contain time_median" in err


@pytest.mark.parametrize(("block", "field", "value"), [
    ("gpu_state", "sm_clock_end", "fast"), ("gpu_state", "power_capped", 2.0), ("gpu_state", "reasons_end", "sw"),
    ("gpu_state", "power_mean", -1.0), ("gpu_state", "thermal_capped", [0.5]),
    ("counters", "dram_bytes", "x"), ("counters", "l2_bytes", -5.0), ("counters", "flops", [1]),
    ("counters", "time", {"s": 1}),
])
def test_mistyped_counters_and_gpu_state_are_refused(run_cli, tmp_path: Path, block: str, field: str,
                                                     value: Any) -> None:
    state = {"window": 0.5, "sm_clock_start": 1.98e9, "sm_clock_end": 1.5e9, "sm_clock_max": 1.98e9,
             "power_mean": 690.0, "power_limit": 700.0, "power_capped": 0.6, "thermal_capped": 0.0,
             "reasons_end": ["sw_power_cap"]}
    counters = {"dram_read": 1e6, "dram_write": 1e6, "dram_bytes": 2e6, "l2_bytes": 3e6, "l1_bytes": 4e6,
                "time": 1e-5, "flops": 1e6}
    doc = edited(edited(RESULTS, "kernels.0.gpu_state", state), "kernels.0.counters", counters)
    ResultsDocument.from_json(doc, "r.json")  # the well-formed blocks read
    path = save(tmp_path, edited(doc, f"kernels.0.{block}.{field}", value))
    code, _, err = run_cli("report", path)
    assert code == 2 and "Traceback" not in err and f"kernels[0] (vector_add).{block}.{field}" in err, err
    code, _, err = run_cli("plot", "--results", path, "--hierarchy", "-o", tmp_path / "h.png")
    assert code == 2 and "Traceback" not in err, err
