"""`roofline fleet links` and `fleet link-roofs`: nccl-tests' conventions by hand, the checked-then-timed sweep on
one rank (a local engine, and the NCCL engine over a stand-in for CuPy and NCCL), 2 and 4 MPI ranks on localhost
with the NumPy engine (skipped without mpirun and mpi4py), a corrupted result on one rank, the link roofs written
into a measured spec and analyzed against, and the chart."""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest

from roofline.errors import InputError
from roofline.fleet import collectives as cv
from roofline.fleet.collective_sweep import FAILED, OK, Plan, Solo, corrupt_targets, run_sweep
from roofline.fleet.links_doc import best_by_scope, failures, link_roofs, load_links
from mpi_job import mpirun, run_job

ROOT = Path(__file__).resolve().parent.parent
MEASURED_SPEC = ROOT / "tests" / "data" / "h200" / "measured-2026-11-30.yaml"


# ---- nccl-tests' conventions, by hand ------------------------------------------------------------------------------

def test_bus_factors_are_nccl_tests():
    assert cv.bus_factor(cv.ALL_REDUCE, 8) == 2 * 7 / 8 == 1.75
    assert cv.bus_factor(cv.ALL_GATHER, 8) == cv.bus_factor(cv.REDUCE_SCATTER, 8) == 0.875
    assert cv.bus_factor(cv.SEND_RECV, 8) == 1.0
    assert cv.bus_factor(cv.ALL_REDUCE, 2) == 1.0
    assert cv.bus_factor(cv.ALL_REDUCE, 1) == 0.0  # one rank: a reduction crosses no link
    with pytest.raises(ValueError):
        cv.bus_factor("broadcast", 2)


def test_algbw_and_busbw_by_hand():
    # 1 GiB all-reduce in 5 ms on 8 ranks: algbw 214.7 GB/s, busbw 1.75 x that
    assert cv.algbw(2**30, 5e-3) == pytest.approx(214.748e9, rel=1e-5)
    assert cv.busbw(cv.ALL_REDUCE, 2**30, 5e-3, 8) == pytest.approx(375.809e9, rel=1e-5)
    assert cv.busbw(cv.ALL_GATHER, 2**30, 5e-3, 4) == pytest.approx(2**30 / 5e-3 * 0.75)
    with pytest.raises(ValueError):
        cv.algbw(1024, 0.0)


def test_sizes_double_from_min_to_max():
    assert cv.sizes(1024, 8192) == (1024, 2048, 4096, 8192)
    assert cv.sizes(1024, 12000) == (1024, 2048, 4096, 8192)
    full = cv.sizes()
    assert full[0] == 1024 and full[-1] == 4 * 2**30 and len(full) == 23
    with pytest.raises(InputError, match="below --min-bytes"):
        cv.sizes(4096, 1024)
    with pytest.raises(InputError, match="at least 4 B"):
        cv.sizes(2, 1024)


def test_shapes_follow_nccl_tests_counts():
    s = cv.shape(cv.ALL_GATHER, 1024, 3)  # 1024 B over 3 ranks: 85 floats each, S = 85 x 4 x 3 = 1020 B
    assert (s.send_count, s.recv_count, s.bytes, s.requested) == (85, 255, 1020, 1024)
    s = cv.shape(cv.REDUCE_SCATTER, 1024, 3)
    assert (s.send_count, s.recv_count, s.bytes) == (255, 85, 1020)
    s = cv.shape(cv.ALL_REDUCE, 1026, 3)
    assert (s.send_count, s.recv_count, s.bytes) == (256, 256, 1024)
    assert cv.shape(cv.ALL_GATHER, 8, 4) is None  # less than one float per rank
    assert cv.parse_collectives("all") == cv.COLLECTIVES
    assert cv.parse_collectives("send-recv,all_reduce") == (cv.ALL_REDUCE, cv.SEND_RECV)
    with pytest.raises(InputError, match="unknown collective 'alltoall'"):
        cv.parse_collectives("alltoall")


def _simulate(s: cv.Shape) -> list[np.ndarray]:
    """What each rank receives, computed the obvious way from every rank's input (float64, then compared)."""
    sends = [cv.send_buffer(np, s, r).astype(np.float64) for r in range(s.ranks)]
    if s.collective == cv.ALL_REDUCE:
        return [sum(sends)] * s.ranks
    if s.collective == cv.ALL_GATHER:
        return [np.concatenate(sends)] * s.ranks
    if s.collective == cv.REDUCE_SCATTER:
        total = sum(sends)
        return [total[r * s.recv_count:(r + 1) * s.recv_count] for r in range(s.ranks)]
    return [sends[(r - 1) % s.ranks] for r in range(s.ranks)]


@pytest.mark.parametrize("ranks", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("collective", cv.COLLECTIVES)
def test_expected_is_what_the_collective_computes(collective, ranks):
    s = cv.shape(collective, 4096 + 12, ranks)
    for rank, got in enumerate(_simulate(s)):
        want = cv.expected(np, s, rank)
        assert want.dtype == np.float32 and want.shape == (s.recv_count,)
        assert np.array_equal(got, want.astype(np.float64))
        assert cv.mismatch(np, got.astype(np.float32), want) is None


def test_reduced_sums_stay_exact_on_many_ranks():
    ranks = 4003
    s = cv.shape(cv.REDUCE_SCATTER, 4 * ranks * 7, ranks)
    brute = sum(cv.send_buffer(np, s, r).astype(np.int64) for r in range(ranks))
    for rank in (0, 1, ranks - 1):
        part = brute[rank * s.recv_count:(rank + 1) * s.recv_count]
        assert np.array_equal(cv.expected(np, s, rank), part.astype(np.float32))
    assert brute.max() < 2**24  # float32 holds every sum exactly


def test_mismatch_names_the_first_wrong_element():
    want = np.arange(8, dtype=np.float32)
    got = want.copy()
    got[5] = 9
    assert cv.mismatch(np, got, want) == "1 of 8 elements wrong (first at 5: got 9.0, expected 5.0)"
    got = np.full(8, np.nan, dtype=np.float32)  # never written: the poison never matches
    assert cv.mismatch(np, got, want).startswith("8 of 8 elements wrong")
    assert "where 8 were expected" in cv.mismatch(np, want[:4], want)


def test_corrupt_targets_read_the_test_hook():
    env = {"ROOFLINE_FLEET_TEST_CORRUPT_RANK": "1:all_gather,2"}
    assert corrupt_targets(1, env) == {"all_gather"}
    assert corrupt_targets(2, env) == set(cv.COLLECTIVES)
    assert corrupt_targets(0, env) == set() and corrupt_targets(0, {}) == set()


# ---- the sweep on one rank: checked before timed ------------------------------------------------------------------

class LocalEngine:
    """One rank's collectives done in NumPy (a copy: what every collective is on one rank), counting timings."""

    name = "numpy"
    xp = np

    def __init__(self, fail_prepare_at: int | None = None, wrong: bool = False):
        self.timed_runs, self.fail_prepare_at, self.wrong = 0, fail_prepare_at, wrong

    def prepare(self, s, rank):
        if s.bytes == self.fail_prepare_at:
            raise MemoryError("out of memory allocating 8 GiB")
        self.s, self.send, self.recv = s, cv.send_buffer(np, s, rank), np.full(s.recv_count, np.nan, np.float32)

    def launch(self):
        self.recv[:] = self.send if self.s.collective != cv.REDUCE_SCATTER else self.send[:self.s.recv_count]
        if self.wrong:
            self.recv[-1] = -1

    def sync(self):
        pass

    def output(self):
        return self.recv

    def timed(self, iters, warmup):
        self.timed_runs += 1
        return [3e-6, 1e-6, 2e-6][:iters]

    def release(self):
        pass


def test_a_checked_size_is_timed_with_the_median_and_nccl_tests_figures():
    engine = LocalEngine()
    points = run_sweep(engine, Solo(), Plan((cv.SEND_RECV, cv.ALL_REDUCE), (1024, 2048), iters=3), "rank 0 on h")
    assert [(p["collective"], p["bytes"], p["status"]) for p in points] == [
        ("send_recv", 1024, OK), ("send_recv", 2048, OK), ("all_reduce", 1024, OK), ("all_reduce", 2048, OK)]
    p = points[0]
    assert p["time"] == 2e-6 and p["iters"] == 3 and p["ranks"] == 1 and p["count"] == 256
    assert p["algbw"] == pytest.approx(1024 / 2e-6) and p["busbw"] == p["algbw"]  # send/recv: factor 1
    assert points[2]["busbw"] == 0.0  # all-reduce on one rank crosses no link


def test_a_wrong_result_is_never_timed():
    engine = LocalEngine(wrong=True)
    points = run_sweep(engine, Solo(), Plan((cv.ALL_REDUCE,), (1024,)), "rank 0 on h")
    assert engine.timed_runs == 0
    assert points[0]["status"] == FAILED and "time" not in points[0] and "busbw" not in points[0]
    assert points[0]["error"].startswith("rank 0 on h: all-reduce of 1024 B wrong on its first run: 1 of 256")
    engine = LocalEngine()
    points = run_sweep(engine, Solo(), Plan((cv.ALL_GATHER,), (1024,)), "rank 0 on h", corrupt={cv.ALL_GATHER})
    assert engine.timed_runs == 0 and points[0]["status"] == FAILED


def test_a_rank_that_cannot_prepare_fails_that_size_only():
    points = run_sweep(LocalEngine(fail_prepare_at=2048), Solo(), Plan((cv.ALL_REDUCE,), (1024, 2048, 4096)), "r0")
    assert [p["status"] for p in points] == [OK, FAILED, OK]
    assert points[1]["error"] == "r0: preparing the all-reduce of 2048 B: MemoryError: out of memory allocating 8 GiB"


class AgreeingControl(Solo):
    """A control whose other rank reported a failure: this rank must fail the size too, and never time it."""

    def __init__(self, others: str | None):
        self.others, self.size = others, 1

    def allgather(self, value):
        return [value, self.others]


def test_a_failure_on_another_rank_fails_the_size_here():
    engine = LocalEngine()
    points = run_sweep(engine, AgreeingControl("rank 1 on h2: all-reduce of 1024 B wrong on its first run: x"),
                       Plan((cv.ALL_REDUCE,), (1024,)), "rank 0 on h")
    assert engine.timed_runs == 0
    assert points[0]["status"] == FAILED and points[0]["error"].startswith("rank 1 on h2: all-reduce")


# ---- the NCCL engine, one rank, over a stand-in for CuPy and NCCL ----------------------------------------------------

class FakeNccl:
    """cupy.cuda.nccl's calls as CuPy's binding spells them (cupy_backends/cuda/libs/nccl.pyx), for one rank: every
    collective is then a copy, done with memmove between the arrays' addresses."""

    NCCL_FLOAT32, NCCL_SUM = 7, 0
    available = True

    def __init__(self):
        self.calls, self.group = [], None

    def get_unique_id(self):
        return tuple(range(128))

    def get_version(self):
        return 22105

    def groupStart(self):
        self.group = []

    def groupEnd(self):
        (kind_a, ptr_a, n_a, peer_a), (kind_b, ptr_b, n_b, peer_b) = self.group
        assert (kind_a, kind_b, peer_a, peer_b, n_a) == ("send", "recv", 0, 0, n_b)
        ctypes.memmove(ptr_b, ptr_a, n_a * 4)
        self.group = None
        _Context.ops += 1

    def NcclCommunicator(self, ndev, uid, rank):
        assert (ndev, rank, len(uid)) == (1, 0, 128)
        return FakeComm(self)


class FakeComm:
    def __init__(self, nccl):
        self.nccl = nccl

    def allReduce(self, send, recv, count, dtype, op, stream):
        _Context.ops += 1
        self.nccl.calls.append("allReduce")
        ctypes.memmove(recv, send, count * 4)

    def allGather(self, send, recv, count, dtype, stream):
        _Context.ops += 1
        self.nccl.calls.append("allGather")
        ctypes.memmove(recv, send, count * 4)

    def reduceScatter(self, send, recv, recvcount, dtype, op, stream):
        _Context.ops += 1
        self.nccl.calls.append("reduceScatter")
        ctypes.memmove(recv, send, recvcount * 4)

    def send(self, buf, count, dtype, peer, stream):
        assert self.nccl.group is not None, "send outside a group would wait for its recv forever"
        self.nccl.group.append(("send", buf, count, peer))

    def recv(self, buf, count, dtype, peer, stream):
        self.nccl.group.append(("recv", buf, count, peer))

    def check_async_error(self):
        pass

    def destroy(self):
        self.nccl.calls.append("destroy")


class _Context:
    """A device, stream or event: an event records how many collectives the stand-in NCCL had run by then."""

    ops = 0  # collectives run so far (FakeComm counts them)

    def __init__(self, *_a, **_k):
        self.ptr, self.at = 1, None

    def __enter__(self):
        return self

    def __exit__(self, *_a):
        return False

    def synchronize(self):
        pass

    def use(self):
        pass

    def record(self, _stream=None):
        self.at = _Context.ops


RUN_MS = 0.002  # each stand-in collective takes 2 us of "GPU time"


def fake_modules():
    cuda = SimpleNamespace(Device=_Context, Stream=_Context, Event=_Context,
                           get_elapsed_time=lambda a, b: (b.at - a.at) * RUN_MS,
                           runtime=SimpleNamespace(deviceGetPCIBusId=lambda d: "0000:1B:00.0",
                                                   getDeviceProperties=lambda d: {"uuid": bytes(range(16))}))
    cp = SimpleNamespace(cuda=cuda, get_default_memory_pool=lambda: SimpleNamespace(free_all_blocks=lambda: None),
                         **{k: getattr(np, k) for k in ("arange", "full", "nan", "float32", "int32", "int64",
                                                        "concatenate", "asarray", "argmax")})
    backend = SimpleNamespace(cp=cp, device_id=0, device_info=lambda: {"name": "NVIDIA H200"})
    return cp, FakeNccl(), backend


@pytest.fixture
def fake_nccl(monkeypatch):
    import roofline.fleet.links
    import roofline.fleet.nccl
    from roofline.fleet.nccl import NcclEngine

    modules = fake_modules()
    monkeypatch.setattr(roofline.fleet.nccl, "pointer", lambda a: a.ctypes.data)
    monkeypatch.setattr(roofline.fleet.links, "_open", lambda backend, control, device: NcclEngine(device, modules))
    return modules[1]


def test_one_rank_of_nccl_runs_every_collective_checked(fake_nccl, run_cli, tmp_path):
    out = tmp_path / "one.json"
    r = run_cli("fleet", "links", "--max-bytes", "8KiB", "--iters", "3", "--warmup", "1", "-o", out,
                "--format", "json")
    assert r.code == 0, r.err
    doc = json.loads(out.read_text())
    assert json.loads(r.out) == doc
    assert doc["schema"] == "roofline/fleet-links/v1" and doc["backend"] == "cupy"
    assert doc["transport"] == "NCCL 2.21.5" and doc["size"] == 1 and doc["nodes"] == 1
    assert doc["ranks"][0]["name"] == "NVIDIA H200" and doc["ranks"][0]["pci_bus_id"] == "0000:1B:00.0"
    assert doc["ranks"][0]["uuid"].startswith("GPU-00010203")
    (scope,) = doc["scopes"]
    assert scope["scope"] == "intra-node" and scope["link"] == "nvlink" and scope["ranks"] == [0]
    assert len(scope["points"]) == 4 * 4 and all(p["status"] == "OK" for p in scope["points"])
    # 2 us a run: 50 runs a sample (100 us), and the time per run is the events' milliseconds / 50, in seconds
    assert all(p["time"] == pytest.approx(2e-6) for p in scope["points"])
    sendrecv = [p for p in scope["points"] if p["collective"] == "send_recv"]
    assert sendrecv[0]["busbw"] == pytest.approx(1024 / 2e-6)
    per_size = 1 + 1 + 3 * 50  # the checked run, the warm-up, 3 samples of 50
    assert fake_nccl.calls.count("allReduce") == 4 * per_size
    assert {"allGather", "reduceScatter", "destroy"} <= set(fake_nccl.calls)
    assert len(doc["skipped"]) == 1 and doc["skipped"][0].startswith("inter-node: every rank is on one node")
    assert link_roofs(doc) == {}  # one rank crossed no link: nothing for a spec
    r = run_cli("fleet", "link-roofs", out, "--into", MEASURED_SPEC)
    assert r.code == 2 and "no link was crossed" in r.err


def test_batch_size_fills_a_sample():
    from roofline.fleet.nccl import batch_size

    assert batch_size(2e-6) == 50 and batch_size(3e-6) == 34  # ceil(100 / 3)
    assert batch_size(1e-3) == 1 and batch_size(1e-9) == 64 and batch_size(0.0) == 64


def test_without_cupy_or_nccl_it_exits_3_with_the_fix(run_cli, monkeypatch):
    if not _has_cupy():  # the CPU-only CI: no CuPy at all
        r = run_cli("fleet", "links")
        assert r.code == 3 and "CuPy is not installed" in r.err and "Traceback" not in r.err
    import roofline.measurement.backend_cupy

    cupy, cuda = ModuleType("cupy"), ModuleType("cupy.cuda")
    cuda.nccl = SimpleNamespace(available=False)
    cupy.cuda = cuda
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setattr(roofline.measurement.backend_cupy, "import_cupy", lambda: cupy)
    r = run_cli("fleet", "links")
    assert r.code == 3, r.err
    assert "CuPy found no NCCL library" in r.err and "pip install nvidia-nccl-cu12" in r.err


def _has_cupy() -> bool:
    import importlib.util

    return importlib.util.find_spec("cupy") is not None


# ---- 2 and 4 MPI ranks on localhost, NumPy engine -----------------------------------------------------------------


def _links(tmp: Path, ranks: int, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return mpirun(tmp, ("fleet", "links", "--backend", "numpy", "--max-bytes", "16KiB", "--iters", "3", "--warmup", "1",
                        *args), ranks, env)


def _check_figures(point: dict) -> None:
    assert point["status"] == "OK", point
    assert point["algbw"] == pytest.approx(point["bytes"] / point["time"])
    assert point["busbw"] == pytest.approx(point["algbw"] * cv.bus_factor(point["collective"], point["ranks"]))


@pytest.mark.parametrize("ranks", [2, 4])
def test_ranks_on_localhost_write_one_file(mpi, tmp_path, ranks):
    result = _links(tmp_path, ranks, "-o", "links.json", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = load_links(tmp_path / "links.json")
    assert json.loads(result.stdout) == doc  # rank 0 alone printed, once
    assert doc["size"] == ranks and doc["nodes"] == 1 and doc["backend"] == "numpy"
    assert doc["transport"].startswith("MPI (") and doc["transport"].endswith("host memory")
    assert [r["rank"] for r in doc["ranks"]] == list(range(ranks))
    assert all(r["cpu"] and r["host"] for r in doc["ranks"])
    (scope,) = doc["scopes"]
    assert scope["scope"] == "intra-node" and scope["link"] is None and scope["ranks"] == list(range(ranks))
    assert {p["collective"] for p in scope["points"]} == set(cv.COLLECTIVES)
    assert len(scope["points"]) == 4 * 5  # 1, 2, 4, 8, 16 KiB
    for p in scope["points"]:
        _check_figures(p)
    assert doc["skipped"] == [f"inter-node: every rank is on one node ({doc['hosts'][0]}), so the network was "
                              "not crossed"]
    assert link_roofs(doc) == {}  # host memory is no GPU link
    assert best_by_scope(doc)["intra-node"]["ranks"] == ranks
    assert [p.name for p in tmp_path.iterdir()] == ["links.json"]


def test_two_pretend_nodes_give_intra_and_inter_node_scopes(mpi, tmp_path):
    result = _links(tmp_path, 4, "-o", "links.json", "--collectives", "all_reduce,send_recv",
                    env={"ROOFLINE_FLEET_TEST_NODES": "2"})
    assert result.returncode == 0, result.stderr
    doc = load_links(tmp_path / "links.json")
    assert doc["nodes"] == 2 and len(doc["hosts"]) == 2 and doc["skipped"] == []
    assert [(s["scope"], s["ranks"]) for s in doc["scopes"]] == [
        ("intra-node", [0, 1]), ("intra-node", [2, 3]), ("inter-node", [0, 1, 2, 3])]
    assert [r["local_rank"] for r in doc["ranks"]] == [0, 1, 0, 1]
    for scope in doc["scopes"]:
        for p in scope["points"]:
            _check_figures(p)
    assert best_by_scope(doc)["intra-node"]["groups"] == 2
    assert "inter-node (2 nodes, 4 ranks): best busbw" in result.stderr


def test_a_corrupted_result_on_one_rank_fails_that_collective_on_all(mpi, tmp_path):
    result = _links(tmp_path, 4, "-o", "links.json", "--collectives", "all_reduce,all_gather",
                    env={"ROOFLINE_FLEET_TEST_CORRUPT_RANK": "2:all_gather"})
    assert result.returncode == 1, result.stderr
    doc = load_links(tmp_path / "links.json")
    points = doc["scopes"][0]["points"]
    assert all(p["status"] == "OK" for p in points if p["collective"] == "all_reduce")
    gathered = [p for p in points if p["collective"] == "all_gather"]
    assert gathered and all(p["status"] == "FAILED" and "busbw" not in p for p in gathered)
    assert all(p["error"].startswith("rank 2 on ") and "wrong on its first run" in p["error"] for p in gathered)
    assert "FAILED their check" in result.stderr and "rank 2 on " in result.stderr
    assert len(failures(doc)) == len(gathered)
    assert [p.name for p in tmp_path.iterdir()] == ["links.json"]  # written whole


def test_one_rank_without_a_launcher_uses_mpi_alone(mpi, tmp_path):
    cmd = [sys.executable, "-m", "roofline", "fleet", "links", "--backend", "numpy", "--max-bytes", "4KiB",
           "--collectives", "all_reduce,send_recv", "--iters", "3", "--format", "json"]
    result = run_job(cmd, tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["size"] == 1 and [s["ranks"] for s in doc["scopes"]] == [[0]]
    assert all(p["status"] == "OK" for p in doc["scopes"][0]["points"])
    assert "1 rank): one rank crosses no link" in result.stderr
    table = run_job(cmd[:-2] + ["-o", "-"], tmp_path)  # -o -: standard output is the JSON, once; the table on stderr
    assert table.returncode == 0 and json.loads(table.stdout)["size"] == 1 and "Collectives over" in table.stderr


def test_every_rank_without_its_backend_stops_together(mpi, tmp_path):
    if _has_cupy():
        pytest.skip("CuPy is installed: the ranks would measure")
    result = mpirun(tmp_path, ("fleet", "links", "-o", "x.json"), ranks=2)
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("error: ") == 1  # rank 0 speaks for the job
    assert "2 of 2 ranks could not set up: rank 0 on " in result.stderr and "CuPy is not installed" in result.stderr
    assert not (tmp_path / "x.json").exists()


# ---- link roofs into a measured spec, and analyze against them ---------------------------------------------------

def _point(collective: str, size: int, busbw: float, ranks: int) -> dict:
    time = size / (busbw / cv.bus_factor(collective, ranks))
    return {"collective": collective, "bytes": size, "requested_bytes": size, "count": size // 4, "ranks": ranks,
            "status": "OK", "time": time, "algbw": size / time, "busbw": busbw, "iters": 20}


def nccl_doc(intra: tuple[float, ...] = (360e9, 380e9, 370e9), inter: float | None = 45e9) -> dict:
    """An NCCL run of 3 nodes x 8 GPUs, by hand: each node's intra-node peak, and the network's."""
    scopes = [{"scope": "intra-node", "link": "nvlink", "ranks": list(range(8 * i, 8 * i + 8)),
               "hosts": [f"node-{i}"], "points": [_point("all_reduce", 2**20, peak / 4, 8),
                                                  _point("all_reduce", 2**30, peak, 8),
                                                  _point("all_gather", 2**30, peak * 0.9, 8)]}
              for i, peak in enumerate(intra)]
    if inter is None:
        return _doc(scopes)
    scopes.append({"scope": "inter-node", "link": "network", "ranks": list(range(24)), "hosts": ["node-0", "node-1",
                                                                                                 "node-2"],
                   "points": [_point("all_reduce", 2**30, inter, 24), _point("send_recv", 2**30, inter * 0.8, 24),
                              {**_point("all_gather", 2**31, 1.0, 24), "status": "FAILED", "error": "rank 5 on x: y"}]})
    for s in scopes[-1]["points"]:
        if s["status"] == "FAILED":
            for key in ("time", "algbw", "busbw"):
                s.pop(key)
    return _doc(scopes)


def _doc(scopes: list) -> dict:
    return {"schema": "roofline/fleet-links/v1", "created": "2026-12-01T00:00:00+00:00", "tool_version": "0.1.0",
            "backend": "cupy", "transport": "NCCL 2.21.5", "size": 24, "nodes": 3,
            "hosts": ["node-0", "node-1", "node-2"], "ranks": [], "scopes": scopes, "skipped": []}


def test_link_roofs_take_the_median_of_node_peaks_and_the_network():
    roofs = link_roofs(nccl_doc())
    assert roofs["nvlink"]["busbw"] == 370e9 and roofs["nvlink"]["groups"] == 3
    assert roofs["nvlink"]["collective"] == "all_reduce" and roofs["nvlink"]["bytes"] == 2**30
    assert roofs["network"]["busbw"] == 45e9 and roofs["network"]["ranks"] == 24
    assert set(link_roofs(nccl_doc(), "pcie")) == {"pcie", "network"}


def test_link_roofs_go_into_the_measured_spec_and_analyze_uses_them(tmp_path, run_cli):
    links = tmp_path / "links.json"
    links.write_text(json.dumps(nccl_doc()))
    out = tmp_path / "h200-links.yaml"
    r = run_cli("fleet", "link-roofs", links, "--into", MEASURED_SPEC, "-o", out)
    assert r.code == 0, r.err
    from roofline.load.specs import load_spec

    spec = load_spec(out)
    assert spec.measured and spec.memory_clock is None
    assert spec.interconnect["nvlink"].per_direction == pytest.approx(370e9, rel=1e-3)  # 740 GB/s both ways
    assert spec.interconnect["network"].per_direction == pytest.approx(45e9, rel=1e-3)
    assert spec.roofs == load_spec(MEASURED_SPEC).roofs  # the rest of the spec is untouched
    import yaml

    cites = {tuple(s["for"]): s["cite"] for s in yaml.safe_load(out.read_text())["sources"]}
    assert "median over 3 nodes' peaks" in cites[("interconnect.nvlink.bandwidth",)]
    assert "all-reduce of 1 GiB on 24 ranks" in cites[("interconnect.network.bandwidth",)]
    r = run_cli("analyze", "allreduce_ring", "--spec", out, "--format", "json")
    assert r.code == 0, r.err
    nvlink = json.loads(r.out)["kernels"][0]["links"]["nvlink"]
    assert nvlink["bandwidth"] == pytest.approx(370e9, rel=1e-3)
    kernel = tmp_path / "halo.yaml"
    kernel.write_text("schema_version: 1\nname: halo\nparams: {n: 2**28}\nflops: n\nbytes: 8 * n\n"
                      "interconnect: {network: 4 * n}\n")
    r = run_cli("analyze", "--kernels", kernel, "halo", "--spec", out, "--format", "json")
    assert r.code == 0, r.err
    k = json.loads(r.out)["kernels"][0]
    assert k["links"]["network"]["bandwidth"] == pytest.approx(45e9, rel=1e-3)
    assert k["bound"] == "interconnect (network)"
    assert k["links"]["network"]["time"] == pytest.approx(4 * 2**28 / 45e9, rel=1e-3)


def test_an_existing_link_is_replaced_and_its_old_citation_dropped(tmp_path, run_cli):
    import yaml

    base = yaml.safe_load(MEASURED_SPEC.read_text())
    base["interconnect"] = {"nvlink": {"bandwidth": "780 GB/s"}}
    base["sources"].append({"for": ["interconnect.nvlink.bandwidth"], "cite": "peer copies both ways"})
    spec = tmp_path / "base.yaml"
    spec.write_text(yaml.safe_dump(base, sort_keys=False))
    links = tmp_path / "links.json"
    links.write_text(json.dumps(nccl_doc(inter=None)))  # no network figure: nvlink only
    r = run_cli("fleet", "link-roofs", links, "--into", spec, "-o", spec)
    assert r.code == 0, r.err
    assert "interconnect.nvlink: 780 GB/s replaced by NCCL's 740 GB/s" in r.err
    written = yaml.safe_load(spec.read_text())
    assert written["interconnect"] == {"nvlink": {"bandwidth": "740 GB/s"}}
    assert "peer copies both ways" not in spec.read_text()
    assert list(written).index("interconnect") < list(written).index("notes")
    before = links.read_bytes()  # --into is updated in place on purpose; the links file is an input all the same
    r = run_cli("fleet", "link-roofs", links, "--into", spec, "-o", links)
    assert r.code == 2 and "is the input LINKS.json" in r.err and links.read_bytes() == before


def test_link_roofs_refuse_what_cannot_be_a_roof(tmp_path, run_cli):
    links = tmp_path / "links.json"
    links.write_text(json.dumps(nccl_doc()))
    r = run_cli("fleet", "link-roofs", links, "--into", ROOT / "specs" / "h200-sxm.yaml")
    assert r.code == 2 and "measured: is not true" in r.err
    links.write_text(json.dumps({**nccl_doc(), "backend": "numpy"}))
    r = run_cli("fleet", "link-roofs", links, "--into", MEASURED_SPEC)
    assert r.code == 2 and f"{links}: backend: is 'numpy'" in r.err
    bad = nccl_doc()
    bad["scopes"][0]["points"][1]["busbw"] = "fast"
    links.write_text(json.dumps(bad))
    r = run_cli("fleet", "link-roofs", links, "--into", MEASURED_SPEC)
    assert r.code == 2 and "scopes[0].points[1].busbw: expected a non-negative number" in r.err
    links.write_text(json.dumps({"schema": "roofline/interconnect/v1"}))
    r = run_cli("fleet", "link-roofs", links, "--into", MEASURED_SPEC)
    assert r.code == 2 and "plot --interconnect" in r.err and "Traceback" not in r.err


# ---- the chart and the table ----------------------------------------------------------------------------------------

def test_plot_draws_busbw_under_the_link_roofs(tmp_path, run_cli):
    pytest.importorskip("matplotlib")
    from roofline.render.charts.fleet_links import links_figure
    from roofline.render.charts.roofs import GID

    doc = nccl_doc()
    fig = links_figure(doc, [{"label": "h200-sxm nvlink", "link": "nvlink", "bandwidth": 450e9}])
    intra, inter = fig.axes
    gids = lambda ax: [a.get_gid() for a in ax.get_lines()]  # noqa: E731
    assert f"{GID}roof:h200-sxm nvlink" in gids(intra) and f"{GID}roof:h200-sxm nvlink" not in gids(inter)
    assert f"{GID}measured:intra-node" in gids(intra) and f"{GID}measured:inter-node" in gids(inter)
    assert f"{GID}failed:all_gather" in gids(inter)
    roof = [a for a in intra.get_lines() if a.get_gid() == f"{GID}roof:h200-sxm nvlink"][0]
    assert roof.get_ydata()[0] == 450e9
    busbw = [a for a in intra.get_lines() if a.get_gid() == f"{GID}busbw:all_reduce"]
    assert len(busbw) == 3 and list(busbw[0].get_ydata()) == [360e9 / 4, 360e9]
    links = tmp_path / "links.json"
    links.write_text(json.dumps(doc))
    r = run_cli("plot", "--links", links, "--spec", "h200", "-o", tmp_path / "links.png")
    assert r.code == 0, r.err
    assert (tmp_path / "links.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = run_cli("plot", "--links", links, "--results", links, "-o", tmp_path / "x.png")
    assert r.code == 2 and "--links draws one fleet links file" in r.err


def test_the_table_lists_every_point_and_failures_by_rank():
    from rich.console import Console

    from roofline.render.charts.fleet_links import links_table, summary_lines

    console = Console(width=200, record=True)
    console.print(links_table(nccl_doc()))
    text = console.export_text()
    assert "node-0, 8 ranks" in text and "3 nodes, 24 ranks" in text and "inter-node" in text
    assert "FAILED: rank 5 on x: y" in text and "370 GB/s" in text
    assert summary_lines(nccl_doc())[-1] == ("inter-node (3 nodes, 24 ranks): best busbw 45 GB/s (network roof), "
                                             "all-reduce at 1 GiB")


def test_one_rank_names_its_copy_only_when_send_recv_was_measured():
    """A one-rank run cut short before send/recv (fleet links --timeout) has only reductions, busbw 0: no '0 B/s copy'."""
    from roofline.render.charts.fleet_links import summary_lines

    def one_rank(points: list) -> dict:
        return _doc([{"scope": "intra-node", "link": "nvlink", "ranks": [0], "hosts": ["h"], "points": points}])

    reduction = {**_point("send_recv", 2**10, 2e8, 1), "collective": "all_reduce", "busbw": 0.0}  # factor 0 at n=1
    cut = one_rank([reduction])
    assert summary_lines(cut) == ["intra-node (h, 1 rank): one rank crosses no link"]
    full = one_rank([reduction, _point("send_recv", 2**30, 1.9e12, 1)])
    assert summary_lines(full) == ["intra-node (h, 1 rank): one rank crosses no link (its send/recv to itself, a copy: "
                                   "1.9 TB/s at 1 GiB)"]
