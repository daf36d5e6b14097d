"""`sweep`, `calibrate` and `doctor` under mpirun, and the two ways results travel to rank 0 (per node, flat).

On this CPU-only machine: `sweep --backend numpy` on 4 ranks split into 2 simulated nodes; calibrate and doctor on
2-4 ranks each failing for want of a GPU, their one error coming back through rank 0 (exit 3 with the fix, no
traceback, no deadlock); bad input said once (exit 2); a hung node leader and a hung rank of another node. Rank 0's
GPU steps (the fleet's calibrated spec, the doctor's row per rank) run on outcomes written by hand."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

from mpi_job import mpirun

from roofline.errors import GateFailed
from roofline.fleet.merge import DONE, FAILED, RankOutcome
from roofline.fleet.mpi import GatherStats

NODES_OF_2 = {"ROOFLINE_FLEET_TEST_NODE_SIZE": "2"}


def _mpirun(tmp: Path, *args: str, env: dict[str, str] | None = None, ranks: int = 4) -> subprocess.CompletedProcess:
    """`mpirun -n RANKS roofline ARGS...` in tmp, the variables of `env` forwarded to every rank."""
    return mpirun(tmp, args, ranks, env)


MEASURE = ("measure", "--backend", "numpy", "-p", "n=2**12", "--min-time", "0.05", "--min-repeats", "3",
           "vector_add", "--format", "json", "-o", "fleet.json")


def test_sweep_on_four_ranks_in_two_nodes(mpi, tmp_path, run_cli):
    result = _mpirun(tmp_path, "sweep", "vector_add", "--backend", "numpy", "--spec", "h200", "--sizes", "2**10..2**11",
                     "--min-time", "0.02", "--format", "json", "-o", "sweep.json", env=NODES_OF_2)
    assert result.returncode == 0, result.stderr
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert json.loads(result.stdout) == doc
    assert [d["rank"] for d in doc["devices"]] == [0, 1, 2, 3]
    assert [d["host"].rsplit("~", 1)[1] for d in doc["devices"]] == ["n0", "n0", "n1", "n1"]
    assert [s["device"] for s in doc["sweeps"]] == [0, 1, 2, 3]  # each rank's own model block
    assert sorted((k["rank"], k["params"]["n"]) for k in doc["kernels"]) == [(r, n) for r in range(4)
                                                                             for n in (1024, 2048)]
    assert doc["fleet"]["gather"]["mode"] == "node" and doc["fleet"]["gather"]["groups"] == 2
    assert "ranks done 4/4" in result.stderr and "fleet: gather (node, 2 groups)" in result.stderr
    report = run_cli("report", tmp_path / "sweep.json", "--outlier", "90%", "--format", "json")
    assert report.code == 0, report.err
    assert len(json.loads(report.out)["nodes"]) == 2  # one row per size, each with the 2 nodes


def test_flat_gather_sends_every_rank_to_rank_0(mpi, tmp_path):
    result = _mpirun(tmp_path, *MEASURE, env={**NODES_OF_2, "ROOFLINE_FLEET_GATHER": "flat"}, ranks=3)
    assert result.returncode == 0, result.stderr
    doc = json.loads((tmp_path / "fleet.json").read_text())
    assert doc["fleet"]["gather"]["mode"] == "flat" and doc["fleet"]["gather"]["groups"] == 1
    assert doc["fleet"]["gather"]["messages"] == 2  # ranks 1 and 2, one message each
    assert [k["rank"] for k in doc["kernels"]] == [0, 1, 2]
    assert "(flat gather)" in result.stderr


@pytest.mark.parametrize("command,ranks", [("calibrate", 2), ("doctor", 4)])
def test_gpu_commands_without_a_gpu_say_so_once_and_exit_3(mpi, tmp_path, command, ranks):
    if importlib.util.find_spec("cupy") is not None:
        pytest.skip("CuPy is installed here: the ranks would find a GPU")
    result = _mpirun(tmp_path, command, ranks=ranks)
    assert result.returncode == 3, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert errors[0].startswith(f"error: ranks 0-{ranks - 1} on ") and f"{command} measures a GPU" in errors[0]
    assert "pip install cupy-cuda12x" in errors[0]  # the fix
    assert "Traceback" not in result.stderr
    assert f"ranks done {ranks}/{ranks}" in result.stderr


def test_bad_input_comes_back_once_through_rank_0(mpi, tmp_path):
    result = _mpirun(tmp_path, "sweep", "no_such_kernel", "--backend", "numpy", "--spec", "h200", ranks=3)
    assert result.returncode == 2, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no_such_kernel" in errors[0], result.stderr
    measure = _mpirun(tmp_path, "measure", "--backend", "numpy", "no_such_kernel", ranks=3)
    assert measure.returncode == 2 and measure.stderr.count("error:") == 1, measure.stderr


@pytest.mark.parametrize("hang,fail,done", [("2", "1", [0, 3]),  # node n1's leader hangs: its member still counts
                                            ("3", "0", [1, 2])])  # a member of n1 hangs; rank 0 itself fails
def test_node_gather_names_a_hung_leader_or_member(mpi, tmp_path, hang, fail, done):
    env = {**NODES_OF_2, "ROOFLINE_FLEET_TEST_HANG_RANK": hang, "ROOFLINE_FLEET_TEST_FAIL_RANK": fail}
    result = _mpirun(tmp_path, *MEASURE, "--timeout", "4", env=env)
    assert result.returncode not in (0, 2, 3), result.stderr
    doc = json.loads((tmp_path / "fleet.json").read_text())
    assert doc["fleet"]["done"] == done
    assert [h["rank"] for h in doc["fleet"]["hung"]] == [int(hang)]
    assert [f["rank"] for f in doc["fleet"]["failed"]] == [int(fail)]
    assert f"rank {hang} on " in result.stderr and "hung: no result within --timeout 4 s" in result.stderr
    assert "injected failure" in result.stderr and "aborting the job" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet.json"]


# ---- rank 0's GPU steps on outcomes written by hand --------------------------------------------------------------

def _stats() -> GatherStats:
    return GatherStats("node", 2, messages=1, results=4, bytes=4000, receive_s=0.001, last_result_s=1.0)


def _calibrated(rank: int, host: str, slow: float = 1.0) -> RankOutcome:
    from test_multi_calibrate import fake_calibrate

    part = fake_calibrate(rank % 2, {"slow": {rank % 2: slow}}, lambda *a: None)
    ident = {"host": host, "rank": rank, "local_rank": rank % 2, "device_index": rank % 2, "uuid": f"GPU-{rank}",
             "pci_bus_id": part["device"]["pci_bus_id"], "name": "NVIDIA H200"}
    return RankOutcome(rank, ident, DONE, part)


def test_the_fleet_calibration_writes_the_median_spec_and_names_the_slow_gpu_and_node(tmp_path, capsys):
    from roofline.cli.fleet_gpu import finish_calibration

    outcomes = {r: _calibrated(r, f"n{r // 2}", 0.9 if r == 1 else (0.88 if r // 2 == 2 else 1.0))
                for r in range(8)}
    outcomes[7] = RankOutcome(7, {"host": "n3", "rank": 7}, FAILED, error="RuntimeError: Xid 79", kind="RuntimeError",
                              detail="Traceback (most recent call last): ...")
    with pytest.raises(GateFailed) as failed:
        finish_calibration(outcomes, 8, _stats(), tmp_path / "fleet.yaml", True, 0.05, "json", None, 0.0)
    message = failed.value.message
    assert "rank 7 on n3: RuntimeError: Xid 79" in message
    assert "rank 1 on n0 (GPU 1): DRAM bandwidth 10.0% below the fleet median" in message
    assert "node n2 is" in message and "node n0" not in message  # n0 has one slow GPU; n2 two
    out = json.loads(capsys.readouterr().out)
    assert [o["where"] for o in out["node_outliers"]][:1] == ["node n2"]
    assert len(out["devices"]) == 7 and out["device_errors"] == ["rank 7 on n3: RuntimeError: Xid 79"]
    spec = (tmp_path / "fleet.yaml").read_text()
    assert "median over 7 GPUs of a fleet of 4 nodes" in spec and "rank 1 3.87e+12" in spec
    assert "7 × NVIDIA H200 on 4 nodes" in spec


def _verdict(status: str) -> dict:
    checks = [{"name": "DRAM bandwidth: copy", "status": status, "figure": "4.3 TB/s", "bound": "≥ 85 %", "note": "",
               "fix": "check the clocks" if status != "PASS" else "", "value": 4.3e12, "limits": [4.08e12, None],
               "group": "bandwidth"},
              {"name": "timers agree", "status": "PASS", "figure": "", "bound": "", "note": "", "fix": "",
               "value": None, "limits": [None, None], "group": "timers"}]
    counts = {s: sum(c["status"] == s for c in checks) for s in ("PASS", "WARN", "FAIL", "SKIP")}
    return {"schema": "roofline/doctor/v1", "status": status, "counts": counts,
            "device": {"name": "NVIDIA H200", "pci_bus_id": "0000:18:00.0"}, "spec": "h200-sxm", "elapsed": 40.0,
            "checks": checks}


def test_the_fleet_doctor_has_a_row_per_rank_and_fails_naming_the_rank(capsys, monkeypatch):
    from roofline.cli.fleet_gpu import finish_doctor
    from roofline.fleet.conclude import DOCTOR_FLEET_SCHEMA

    monkeypatch.setenv("COLUMNS", "200")
    outcomes = {r: RankOutcome(r, {"host": f"n{r // 2}", "rank": r, "device_index": r % 2}, DONE,
                               _verdict("FAIL" if r == 2 else "PASS")) for r in range(4)}
    with pytest.raises(GateFailed, match=r"doctor FAILED on 1 of 4 ranks: rank 2 on n1 \(GPU 0\): "
                                         r"DRAM bandwidth: copy"):
        finish_doctor(outcomes, 4, _stats(), "table", None)
    captured = capsys.readouterr()
    assert "rank 2 on n1 (GPU 0)" in captured.out and "FAIL: DRAM bandwidth: copy" in captured.out
    assert "rank 2 on n1 (GPU 0): fail: DRAM bandwidth: copy" in captured.err
    finish_doctor({r: o for r, o in outcomes.items() if r != 2}, 4, _stats(), "json", None)
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == DOCTOR_FLEET_SCHEMA and doc["status"] == "PASS" and len(doc["ranks"]) == 3


def test_a_fleet_figure_cites_eight_values_then_their_range():
    from roofline.measurement.multi.calibrate import host_figures

    parts = [{**_calibrated(r, f"n{r // 2}", 1.0 - 0.01 * r).document} for r in range(12)]
    for r, part in enumerate(parts):
        part["device"] = {**part["device"], "index": r}
    dram = host_figures(parts, scope="a fleet of 6 node(s)", unit="rank")[0]
    assert dram.method.startswith("median over 12 GPUs of a fleet of 6 node(s) (rank 0 4.3e+12, rank 1 4.257e+12")
    assert "rank 7 " in dram.method and "rank 8 " not in dram.method
    assert "… 4 more; all within 3.827e+12..4.3e+12)" in dram.method
    two = host_figures(parts[:2])[0]  # one host: as before, every GPU listed
    assert two.method.startswith("median over 2 GPUs of one host (GPU 0 4.3e+12, GPU 1 4.257e+12); each: copy")
