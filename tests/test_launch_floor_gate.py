"""--fail-below judges each group against what its launches can attain: no launch takes less than the launch floor
(the spec's model.launch_floor), so a 1 µs eager op whose bytes take 2 ns at DRAM bandwidth is not failed for the
launch it cannot avoid (issue 39: `--fail-below 0.3` on an eager profile failed every 1-18 µs op)."""

from __future__ import annotations

import json

from conftest import DATA

TRAIN = DATA / "kineto" / "h200-train.json.gz"


def _report(run_cli, tmp_path):
    results = tmp_path / "train.json"
    r = run_cli("import", "torch", TRAIN, "-o", results)
    assert r.code == 0, r.err
    r = run_cli("report", results, "--fail-below", "0.3", "--format", "json")
    assert r.code == 1, r.err
    return {row["name"]: row for row in json.loads(r.out)["rows"]}


def test_ops_at_the_launch_floor_pass_and_say_so(run_cli, tmp_path):
    rows = _report(run_cli, tmp_path)
    # 2 launches in 1.69 µs, 8.5 ns of bytes at DRAM bandwidth: 0.5 % of the roofline, 59 % of two 502 ns launches
    for name in ("aten::arange", "aten::rsqrt", "aten::_foreach_add_"):
        assert rows[name]["verdict"] == "pass", rows[name]
        assert rows[name]["launch_bound"] is True
    # a big op is judged on the roofline as before
    assert "launch_bound" not in rows["aten::mm"]


def test_a_slow_launch_bound_op_still_fails_naming_the_floor(run_cli, tmp_path):
    rows = _report(run_cli, tmp_path)
    nll = rows["aten::nll_loss_forward"]  # 19.2 µs for 34 ns of bytes: 2.6 % of one launch's floor
    assert nll["verdict"] == "fail"
    assert nll["failures"][0].startswith("launch-bound: SOL below the launch floor (502 ns a launch, "
                                         "h200-sxm model.launch_floor); 2.6% of that attainable time")


def test_the_table_marks_a_launch_bound_pass(run_cli, tmp_path, monkeypatch):
    results = tmp_path / "train.json"
    assert run_cli("import", "torch", TRAIN, "-o", results).code == 0
    monkeypatch.setenv("COLUMNS", "250")
    r = run_cli("report", results, "--fail-below", "0.3")
    line = next(x for x in r.out.splitlines() if "aten::arange" in x)
    assert "pass (launch-bound)" in line


def test_attainable_time_counts_each_launch_at_least_the_floor():
    from roofline.gates.groups import attainable_time
    from roofline.records.groups import Group

    block = {"kernels": [1, 2]}
    g = Group("g", "op", 2, 10e-6, 5.01e-6, 0.0, 0.501, block)
    kernels = {1: {"sol_time": 5e-6, "launches": 1}, 2: {"sol_time": 1e-8, "launches": 1}}
    assert abs(attainable_time(g, kernels, 0.5e-6) - 5.5e-6) < 1e-12  # the big launch as is, the tiny one at 0.5 µs
    assert abs(attainable_time(g, {}, 0.5e-6) - 5.01e-6) < 1e-12  # no launch known: the group's totals
