"""The fleet (roofline.fleet): the pure parts (launch detection, identity, merge, outliers) everywhere, and 4 MPI
ranks on localhost with the NumPy backend where Open MPI's mpirun and mpi4py are installed (skipped otherwise)."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mpi_job import ROOT, mpirun
from roofline.errors import InputError
from roofline.fleet.identity import cpu_model, rank_identity, rank_label
from roofline.fleet.launch import injected_fault, launched_size, under_mpi
from roofline.fleet.merge import DONE, FAILED, HUNG, RankOutcome, failure_lines, fleet_document
from roofline.gates.hosts import host_rows, outliers



# ---- launch detection and identity (pure) -------------------------------------------------------------------------

def test_launched_size_reads_each_launcher():
    assert launched_size({}) == 1
    assert launched_size({"OMPI_COMM_WORLD_SIZE": "4"}) == 4
    assert launched_size({"PMI_SIZE": "16"}) == 16
    assert launched_size({"PMIX_RANK": "3", "SLURM_NTASKS": "128"}) == 128
    assert launched_size({"SLURM_NTASKS": "128"}) == 1  # an sbatch shell without srun is not a launch
    assert not under_mpi({"OMPI_COMM_WORLD_SIZE": "1"})
    assert under_mpi({"OMPI_COMM_WORLD_SIZE": "2"})


def test_injected_faults_name_ranks():
    env = {"ROOFLINE_FLEET_TEST_FAIL_RANK": "2", "ROOFLINE_FLEET_TEST_HANG_RANK": "1,3"}
    assert [injected_fault(r, env) for r in range(4)] == [None, "hang", "fail", "hang"]
    assert injected_fault(0, {}) is None


def test_identity_fields_and_label():
    assert cpu_model("processor\t: 0\nmodel name\t: AMD EPYC 9654 96-Core Processor\n") == \
        "AMD EPYC 9654 96-Core Processor"
    ident = rank_identity("node-2", 5, 1, 1, {"uuid": "GPU-1234", "pci_bus_id": "0000:1B:00.0", "name": "H200"})
    assert ident == {"host": "node-2", "rank": 5, "local_rank": 1, "device_index": 1, "uuid": "GPU-1234",
                     "pci_bus_id": "0000:1B:00.0"}
    assert rank_label(ident) == "rank 5 on node-2 (GPU 1)"
    assert rank_label({**ident, "cpu": "Xeon"}) == "rank 5 on node-2"  # the NumPy backend measures no GPU


# ---- merge (pure) -------------------------------------------------------------------------------------------------

def _rank_doc(time: float, ci: float = 0.002) -> dict:
    """A single-device results document of one kernel, as measure_selection returns it (NumPy backend)."""
    kernel = {"name": "vector_add", "params": {"n": 4096}, "dtype": "float32", "roof": "fp32", "flops": 4096.0,
              "bytes": 49152.0, "intensity": 1 / 12, "peak_flops": None, "bandwidth": None, "ridge": None,
              "bound": None, "attainable_flops": None, "sol_time": None, "time_median": time,
              "time_ci": [time * (1 - ci), time * (1 + ci)], "achieved_bandwidth": 49152.0 / time,
              "achieved_flops": 4096.0 / time, "fraction_of_ceiling": None, "verified": True, "status": "OK"}
    return {"schema": "roofline/results/v1", "created": "2026-01-01T00:00:00+00:00", "tool_version": "0",
            "backend": "numpy", "device": {"name": "host CPU", "kind": "cpu", "spec_id": None,
                                           "spec_derived": False, "cpu": "Xeon"},
            "machine": None, "kernels": [kernel]}


def _outcome(rank: int, host: str, time: float | None, state: str = DONE, ci: float = 0.002) -> RankOutcome:
    ident = {"name": "host CPU", "cpu": "Xeon", **rank_identity(host, rank, rank % 2, rank % 2)}
    if state != DONE:
        return RankOutcome(rank, ident, state, error="RuntimeError: boom" if state == FAILED else None,
                           kind="RuntimeError" if state == FAILED else None)
    return RankOutcome(rank, ident, DONE, _rank_doc(time, ci))


def test_fleet_document_names_every_rank_in_every_entry():
    outs = {r: _outcome(r, f"node-{r // 2}", 1e-3 * (1 + r / 100)) for r in range(4)}
    doc = fleet_document(outs, 4)
    assert [d["index"] for d in doc["devices"]] == [0, 1, 2, 3]
    assert [d["host"] for d in doc["devices"]] == ["node-0", "node-0", "node-1", "node-1"]
    assert [(k["rank"], k["host"], k["local_rank"], k["device_index"], k["device"]) for k in doc["kernels"]] == \
        [(0, "node-0", 0, 0, 0), (1, "node-0", 1, 1, 1), (2, "node-1", 0, 0, 2), (3, "node-1", 1, 1, 3)]
    assert all("uuid" in k and "pci_bus_id" in k for k in doc["kernels"])
    assert doc["device"]["kind"] == "cpu" and doc["device"]["count"] == 4
    assert doc["fleet"] == {"engine": "mpi", "size": 4, "timeout": None, "hosts": ["node-0", "node-1"],
                            "done": [0, 1, 2, 3], "failed": [], "hung": []}
    assert "device_errors" not in doc


def test_fleet_document_keeps_the_others_and_names_the_failed_and_hung():
    outs = {0: _outcome(0, "a", 1e-3), 1: _outcome(1, "a", None, HUNG), 2: _outcome(2, "b", None, FAILED),
            3: _outcome(3, "b", 1e-3)}
    doc = fleet_document(outs, 4, timeout=30)
    assert doc["fleet"]["done"] == [0, 3]
    assert doc["fleet"]["failed"] == [{"rank": 2, "host": "b", "error": "RuntimeError: boom"}]
    assert doc["fleet"]["hung"] == [{"rank": 1, "host": "a"}]
    assert [e["index"] for e in doc["device_errors"]] == [1, 2]
    assert failure_lines(outs, 30) == ["rank 1 on a: hung: no result within --timeout 30 s",
                                       "rank 2 on b: RuntimeError: boom"]


def test_fleet_document_with_no_results_raises_the_ranks_error():
    outs = {r: RankOutcome(r, {}, FAILED, error="kernel 'nope' not found", kind="InputError") for r in range(2)}
    with pytest.raises(InputError, match="nope"):
        fleet_document(outs, 2)


# ---- outliers across the fleet (pure) -----------------------------------------------------------------------------

def _devices(times: list[float], ci: float) -> list[dict]:
    return [{"label": f"r{i}", "index": i, "pci_bus_id": None, "where": f"rank {i} on n{i}",
             "kernels": _rank_doc(t, ci)["kernels"]} for i, t in enumerate(times)]


def test_an_outlier_must_also_lie_outside_the_median_interval():
    times = [1.0, 1.0, 1.0, 1.12]  # rank 3 is 11 % slower than the median
    tight = outliers(host_rows(_devices(times, 0.002)), 0.05)
    assert [(o["index"], o["where"]) for o in tight] == [(3, "rank 3 on n3")]
    assert outliers(host_rows(_devices(times, 0.10)), 0.05) == []  # inside the noise: not named
    no_ci = _devices(times, 0.0)
    for dev in no_ci:
        dev["kernels"][0]["time_ci"] = None
    assert [o["index"] for o in outliers(host_rows(no_ci), 0.05)] == [3]  # no intervals: the deviation decides


def test_report_outlier_on_a_fleet_file_names_the_slow_rank(tmp_path, run_cli):
    outs = {r: _outcome(r, f"node-{r // 2}", 1e-3 * (1.2 if r == 2 else 1.0)) for r in range(4)}
    path = tmp_path / "fleet.json"
    path.write_text(json.dumps(fleet_document(outs, 4)))
    result = run_cli("report", path, "--outlier", "5%", "--format", "json")
    assert result.code == 1, result.err
    report = json.loads(result.out)
    assert [(o["index"], o["where"]) for o in report["outliers"]] == [(2, "rank 2 on node-1")]
    failed = [r for r in report["rows"] if r["verdict"] == "fail"]
    assert len(failed) == 1 and "below the fleet median on rank 2 on node-1" in failed[0]["failures"][-1]
    table = run_cli("report", path, "--outlier", "5%")
    assert "rank 2 on node-1" in table.out


def test_timeout_without_mpi_is_refused(run_cli):
    result = run_cli("measure", "--backend", "numpy", "-p", "n=2**10", "vector_add", "--timeout", "5")
    assert result.code == 2 and "--timeout applies to a run under mpirun" in result.err


# ---- ending a job: MPI_Abort with a backstop; a test's hung rank never outlives its launcher ----------------------

_STALLED_ABORT = """
import ctypes, sys, time, types
mpi4py = types.ModuleType("mpi4py"); MPI = types.ModuleType("mpi4py.MPI")
class World:
    def Abort(self, code):
        print("abort asked", code, flush=True)
        if sys.argv[1] == "gil":  # stalled in C holding Python's lock: no Python thread can run
            ctypes.PyDLL(None).sleep(3600)
        time.sleep(3600)  # stalled in the runtime with the lock released (open-mpi/ompi#5528)
MPI.COMM_WORLD = World(); mpi4py.MPI = MPI
sys.modules.update({"mpi4py": mpi4py, "mpi4py.MPI": MPI})
from roofline.fleet.abort import abort
abort(7, grace_s=0.5)
"""


@pytest.mark.parametrize("how,code", [("released", 7), ("gil", -signal.SIGALRM)])
def test_an_abort_that_stalls_still_ends_the_process(how, code):
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", _STALLED_ABORT, how], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == code, result.stderr
    assert result.stdout == "abort asked 7\n"
    assert time.monotonic() - started < 30


_ORPHAN = """
import os, subprocess, sys
child = subprocess.Popen([sys.executable, "-c", "from roofline.fleet.launch import hang_for_test; print(flush=True); "
                          "hang_for_test()"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
child.stdout.readline()  # the rank has started, under this launcher
print(child.pid, flush=True)
os._exit(0)  # the launcher goes (a test killed it): its hung rank must follow
"""


def test_a_hung_test_rank_leaves_when_its_launcher_is_gone():
    result = subprocess.run([sys.executable, "-c", _ORPHAN], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    pid = int(result.stdout)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    os.kill(pid, 9)
    pytest.fail("the hung rank outlived its launcher by 20 s")


# ---- 4 ranks on localhost --------------------------------------------------------------------------------------

MEASURE = ("measure", "--backend", "numpy", "-p", "n=2**12", "--min-time", "0.05", "--min-repeats", "3", "vector_add",
           "--format", "json")


def _mpirun(tmp: Path, *args: str, env: dict[str, str] | None = None, ranks: int = 4) -> subprocess.CompletedProcess:
    """`mpirun -n 4 roofline measure --backend numpy ...` in tmp, as root if need be, 4 ranks on any core count."""
    return mpirun(tmp, MEASURE + args, ranks, env)


def test_four_ranks_write_one_file_from_rank_0(mpi, tmp_path, run_cli):
    result = _mpirun(tmp_path, "-o", "fleet.json")
    assert result.returncode == 0, result.stderr
    doc = json.loads((tmp_path / "fleet.json").read_text())
    assert json.loads(result.stdout) == doc  # only rank 0 printed, once
    assert [d["rank"] for d in doc["devices"]] == [0, 1, 2, 3]
    assert sorted(d["local_rank"] for d in doc["devices"]) == [0, 1, 2, 3]  # one host: local rank = rank
    assert all(d["host"] and d["cpu"] and d["kind"] == "cpu" for d in doc["devices"])
    assert [(k["rank"], k["status"]) for k in doc["kernels"]] == [(r, "OK") for r in range(4)]
    assert doc["fleet"]["done"] == [0, 1, 2, 3]
    assert "ranks done 4/4" in result.stderr
    report = run_cli("report", tmp_path / "fleet.json", "--outlier", "50%", "--format", "json")
    assert report.code == 0, report.err
    assert len(json.loads(report.out)["hosts"][0]["devices"]) == 4


def test_a_failing_rank_is_named_and_the_others_written(mpi, tmp_path):
    result = _mpirun(tmp_path, "-o", "fleet.json", env={"ROOFLINE_FLEET_TEST_FAIL_RANK": "2"})
    assert result.returncode == 1, result.stderr
    assert "1 of 4 ranks failed or hung" in result.stderr and "rank 2 on " in result.stderr
    assert "injected failure" in result.stderr
    doc = json.loads((tmp_path / "fleet.json").read_text())
    assert doc["fleet"]["done"] == [0, 1, 3] and doc["fleet"]["failed"][0]["rank"] == 2
    assert sorted({k["rank"] for k in doc["kernels"]}) == [0, 1, 3]


def test_a_hung_rank_is_timed_out_named_and_the_job_aborted(mpi, tmp_path):
    result = _mpirun(tmp_path, "-o", "fleet.json", "--timeout", "5", env={"ROOFLINE_FLEET_TEST_HANG_RANK": "1"})
    assert result.returncode != 0, result.stderr
    assert "rank 1 on " in result.stderr and "hung: no result within --timeout 5 s" in result.stderr
    doc = json.loads((tmp_path / "fleet.json").read_text())
    assert doc["fleet"]["hung"][0]["rank"] == 1 and doc["fleet"]["done"] == [0, 2, 3]
    assert [p.name for p in tmp_path.iterdir()] == ["fleet.json"]  # written whole, no temporary left behind


def test_copy_is_not_shared():  # the merge must not alter the ranks' own documents
    out = _outcome(0, "a", 1e-3)
    before = copy.deepcopy(out.document)
    fleet_document({0: out, 1: _outcome(1, "a", 1e-3)}, 2)
    assert out.document == before
