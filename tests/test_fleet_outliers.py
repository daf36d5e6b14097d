"""The fleet's slow GPU and slow node (roofline.gates.nodes), as `report --outlier` gates them and `plot` draws
them, on fleet files written by hand: several hosts, one GPU slowed, one node slowed, intervals that hide a slowdown.
And the pure helpers of the engine's messages (rank ranges, failures said once)."""

from __future__ import annotations

import json

import pytest

from test_fleet import _outcome

from roofline.fleet.merge import FAILED, HUNG, RankOutcome, fleet_document, grouped_failures, rank_ranges
from roofline.gates.nodes import fleet_rows, fleet_summary, node_rows
from roofline.gates.hosts import host_rows, outliers

SLOW_GPU, SLOW_NODE = 5, "node-2"  # rank 5 (on node-1) 15 % slow; every GPU of node-2 8 % slow


def _fleet(slow_gpu: float = 1.15, slow_node: float = 1.08, ci: float = 0.004, hosts: int = 4,
           per_host: int = 4) -> dict:
    """A fleet file of `hosts` × `per_host` CPU ranks timing one kernel, the GPUs spread ±0.5 % around 1 ms."""
    outs = {}
    for r in range(hosts * per_host):
        host = f"node-{r // per_host}"
        t = 1e-3 * (1 + 0.0025 * (r % per_host - 1.5))
        if r == SLOW_GPU:
            t *= slow_gpu
        if host == SLOW_NODE:
            t *= slow_node
        outs[r] = _outcome(r, host, t, ci=ci)
    return fleet_document(outs, hosts * per_host)


def _write(tmp_path, doc: dict, name: str = "fleet.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


# ---- node rows (pure) ---------------------------------------------------------------------------------------------

def test_the_slow_node_is_found_and_one_slow_gpu_does_not_flag_its_node():
    rows, nodes = fleet_rows(_fleet())
    assert [(o["index"], o["where"]) for o in outliers(rows, 0.05)][0] == (SLOW_GPU, "rank 5 on node-1")
    found = outliers(nodes, 0.05)
    assert [(o["index"], o["where"]) for o in found] == [(SLOW_NODE, "node node-2")]
    assert -0.09 < found[0]["deviation"] < -0.065  # node-2's median against the median of the 4 node medians
    by_node = {d["index"]: d for d in nodes[0]["devices"]}
    assert abs(by_node["node-1"]["deviation"]) < 0.01  # rank 5 alone does not move node-1's median


def test_a_node_inside_the_noise_is_not_named():
    _, nodes = fleet_rows(_fleet(slow_node=1.08, ci=0.10))  # ±10 % intervals: 8 % is inside the noise
    assert nodes and outliers(nodes, 0.05) == []
    _, tight = fleet_rows(_fleet(slow_node=1.08, ci=0.001))
    assert [o["index"] for o in outliers(tight, 0.05)] == [SLOW_NODE]


def test_one_host_has_no_node_rows():
    rows = host_rows([{"label": f"r{i}", "index": i, "pci_bus_id": None, "where": f"rank {i}", "host": "only",
                       "kernels": _outcome(i, "only", 1e-3).document["kernels"]} for i in range(3)])
    assert rows and node_rows(rows) == []


def test_fleet_summary_names_slow_gpus_and_nodes_worst_first():
    rows, nodes = fleet_rows(_fleet())
    (line,) = fleet_summary(rows, nodes, 0.05)
    assert line["gpus"] == 16 and line["nodes"] == 4
    assert line["slowest_gpu"]["where"] == "rank 5 on node-1"
    assert [s["where"] for s in line["slow_gpus"]][0] == "rank 5 on node-1"
    assert {s["where"] for s in line["slow_gpus"][1:]} == {f"rank {r} on node-2" for r in range(8, 12)}
    assert [s["where"] for s in line["slow_nodes"]] == ["node node-2"]
    assert fleet_summary(rows, nodes, None)[0]["slow_gpus"] == []  # no limit, nothing named


# ---- report --outlier on a fleet file -------------------------------------------------------------------------------

def test_report_outlier_fails_the_slow_gpu_and_the_slow_node(tmp_path, run_cli):
    path = _write(tmp_path, _fleet())
    result = run_cli("report", path, "--outlier", "5%", "--format", "json")
    assert result.code == 1, result.err
    report = json.loads(result.out)
    assert report["outliers"][0]["where"] == "rank 5 on node-1"
    assert [o["index"] for o in report["node_outliers"]] == [SLOW_NODE]
    node2 = [r for r in report["rows"] if "node-2" in r["device"]]
    assert len(node2) == 4 and all("node_outlier" in r["failed_gates"] for r in node2)
    assert all("node node-2 is" in r["failures"][-1] and "median of the fleet's node medians" in r["failures"][-1]
               for r in node2)
    node1 = [r for r in report["rows"] if "node-1" in r["device"]]
    assert all("node_outlier" not in r["failed_gates"] for r in node1)  # node-1 has one slow GPU, not a slow node
    assert "slow node(s): node-2 (vector_add" in result.err
    assert report["fleet_summary"][0]["slow_nodes"][0]["where"] == "node node-2"


def test_report_table_and_markdown_name_slow_gpus_and_nodes(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    path = _write(tmp_path, _fleet())
    table = run_cli("report", path, "--outlier", "5%")
    assert table.code == 1
    assert "Across the fleet" in table.out and "node node-2" in table.out and "rank 5 on node-1" in table.out
    assert "slow node" in table.out  # the gate cell of node-2's rows
    md = run_cli("report", path, "--outlier", "5%", "--format", "markdown")
    assert "### Across the fleet" in md.out and "node node-2 -" in md.out


def test_a_healthy_fleet_passes_and_a_device_all_file_gets_no_node_view(tmp_path, run_cli):
    healthy = _write(tmp_path, _fleet(slow_gpu=1.0, slow_node=1.0))
    result = run_cli("report", healthy, "--outlier", "5%", "--format", "json")
    assert result.code == 0, result.err
    report = json.loads(result.out)
    assert report["node_outliers"] == [] and report["outliers"] == [] and len(report["nodes"]) == 1
    one_host = _fleet(slow_gpu=1.0, slow_node=1.0)
    del one_host["fleet"]  # the same devices as `measure --device all` writes them: no fleet, no node view
    plain = json.loads(run_cli("report", _write(tmp_path, one_host, "host.json"), "--outlier", "5%",
                               "--format", "json").out)
    assert "nodes" not in plain and "fleet_summary" not in plain and "node_outliers" not in plain


# ---- the fleet chart ----------------------------------------------------------------------------------------------

def _texts(fig) -> str:
    texts = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        texts += [t.get_text() for t in ax.texts] + [ax.get_title()]
    return "\n".join(texts)


def test_the_fleet_chart_draws_every_gpu_and_names_the_slow_gpu_and_node():
    pytest.importorskip("matplotlib")
    from roofline.render.charts.fleet import fleet_figure

    fig = fleet_figure(_fleet(), 0.05)
    text = _texts(fig)
    assert "rank 5 on node-1" in text and "node node-2" in text
    assert "16 ranks on 4 nodes" in text
    gpu_axes, node_axes = fig.axes[:2]
    assert sum(len(c.get_offsets()) for c in gpu_axes.collections) == 16  # every GPU a point
    assert sum(len(c.get_offsets()) for c in node_axes.collections) == 4  # every node a point
    healthy = _texts(fleet_figure(_fleet(slow_gpu=1.0, slow_node=1.0), 0.05))
    assert "slow GPUs (more than 5% below" in healthy and "none" in healthy and "node node-2" not in healthy


def test_plot_writes_the_fleet_chart_as_png_and_html(tmp_path, run_cli):
    pytest.importorskip("matplotlib")
    path = _write(tmp_path, _fleet())
    png = run_cli("plot", "--results", path, "-o", tmp_path / "fleet.png")
    assert png.code == 0, png.err
    assert (tmp_path / "fleet.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = run_cli("plot", "--results", path, "-o", tmp_path / "fleet.html", "--outlier", "10%")
    assert page.code == 0, page.err
    html = (tmp_path / "fleet.html").read_text()
    assert "<td>rank 5 on node-1</td>" in html and "node node-2" not in html.split("<table")[1]  # 8 % < 10 %


def test_plot_outlier_without_a_fleet_file_is_refused(run_cli):
    result = run_cli("plot", "vector_add", "--spec", "h200", "--outlier", "5%", "-o", "x.png")
    assert result.code == 2 and "--outlier names the slow GPUs and nodes of a fleet" in result.err


# ---- the engine's messages (pure) ---------------------------------------------------------------------------------

def test_rank_ranges():
    assert rank_ranges([0, 1, 2, 3, 7, 9, 10]) == "0-3, 7, 9-10"
    assert rank_ranges([5]) == "5" and rank_ranges([]) == ""


def test_ranks_failing_the_same_way_are_named_in_one_line():
    outs = {r: RankOutcome(r, {"host": f"n{r // 4}", "rank": r}, FAILED, error="calibrate measures a GPU: no CuPy",
                           kind="BackendUnavailable") for r in range(12)}
    outs[12] = RankOutcome(12, {"host": "n3", "rank": 12}, HUNG)
    outs[13] = RankOutcome(13, {"host": "n3", "rank": 13}, FAILED, error="RuntimeError: Xid 79", kind="RuntimeError")
    assert grouped_failures(outs, 30, hosts=2) == [
        "ranks 0-11 on n0, n1 and 1 more: calibrate measures a GPU: no CuPy",
        "rank 12 on n3: hung: no result within --timeout 30 s",
        "rank 13 on n3: RuntimeError: Xid 79"]


def test_measure_under_mpirun_prints_a_line_per_kernel_past_eight_ranks():
    import io

    from rich.console import Console

    from roofline.cli.fleet import _measure_table
    from roofline.render.tables.measure import results_table

    big = _fleet()  # 16 ranks: a row per rank and kernel would be 16 rows of one kernel
    console = Console(width=250, record=True, file=io.StringIO())
    console.print(_measure_table(big)(big))
    text = console.export_text()
    assert "Across the fleet" in text and "rank 5 on node-1" in text and "node node-2" in text
    small = _fleet(hosts=2, per_host=4)
    assert _measure_table(small) is results_table


# ---- the same rank twice (issue 31) -------------------------------------------------------------------------------


def test_a_fleet_file_with_the_same_rank_twice_is_refused(tmp_path, run_cli):
    """Two runs pasted together gave 5 'GPUs' in a 4-rank fleet, judged and drawn without a word; now exit 2 names
    the file, the entry and the rank."""
    import copy

    doc = _fleet(hosts=2, per_host=2)
    again = copy.deepcopy(doc)
    rank3 = copy.deepcopy(again["devices"][3])
    again["devices"].append({**rank3, "index": 4})
    again["kernels"].append({**copy.deepcopy(next(k for k in again["kernels"] if k["device"] == 3)), "device": 4})
    path = _write(tmp_path, again)
    for argv in (["report", path], ["report", path, "--outlier", "5%"], ["report", path, "--format", "json"]):
        code, out, err = run_cli(*argv)
        assert code == 2
        assert err.strip() == (f"error: {path}: devices[4].rank: rank 3 appears twice (also devices[3]); a fleet file "
                               "holds one result per rank, so one of them is from another run: remove it")
        assert out == ""
    assert run_cli("report", _write(tmp_path, doc, "ok.json"))[0] == 0  # each rank once is fine


def test_a_results_file_with_the_same_device_twice_is_refused(tmp_path, run_cli):
    doc = _fleet(hosts=2, per_host=2)
    doc["devices"].append(dict(doc["devices"][1]))
    path = _write(tmp_path, doc)
    code, _, err = run_cli("report", path)
    assert code == 2
    assert f"{path}: devices[4].index: device 1 appears twice (also devices[1])" in err
