"""`fleet links --timeout`: the verdict on who held the job up (pure), the watch a rank keeps, the one-rank watchdog,
the document of a cut run; then on 2-4 MPI ranks on localhost with the NumPy engine (skipped without mpirun and
mpi4py): a rank hung in Python, a rank frozen holding Python's lock, rank 0 hung or frozen, every rank frozen (the
backstop), a hung rank on one of two pretend nodes, and a bug on one rank. No run may outlive its subprocess
timeout: that is the point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from roofline.fleet import collectives as cv
from roofline.fleet.collective_sweep import Plan, Solo, stall_kind
from roofline.fleet.links import LinksRun
from roofline.fleet.links_doc import failures, load_links
from roofline.fleet.watchdog import SoloWatchdog, Watch, backstop_s, response_s, verdict
from mpi_job import run_job

ROOT = Path(__file__).resolve().parent.parent


def _answer(rank, step="intra-node all-reduce of 4096 B", doing="agreeing with the other ranks on the result",
            waiting=True, seconds=5.0, host="node-0", **more):
    return {"rank": rank, "host": host, "index": 7, "step": step, "doing": doing, "waiting": waiting,
            "seconds": seconds, "finished": False, "size": None, "identity": None, "transport": None, "block": None,
            **more}


# ---- the verdict (pure) ---------------------------------------------------------------------------------------------

def test_the_rank_doing_its_own_work_past_the_deadline_is_named():
    answers = {0: _answer(0), 1: _answer(1, doing="preparing its buffers", waiting=False, seconds=3.2),
               2: _answer(2), 3: _answer(3)}
    v = verdict(answers, answers[2], 3.0)
    assert (v.stuck, v.silent, v.waiting, v.not_reported) == ([1], [], [0, 2, 3], [1])
    assert v.message == ("--timeout 3 s passed in the intra-node all-reduce of 4096 B: rank 1 on node-0 was still "
                         "preparing its buffers after 3.2 s; ranks 0, 2-3 on node-0 were waiting for it")


def test_a_rank_that_does_not_answer_is_named_with_its_host_from_the_roster():
    answers = {0: _answer(0), 1: _answer(1, host="node-1"), 2: None}
    v = verdict(answers, answers[0], 3.0, hosts={0: "node-0", 1: "node-1", 2: "node-2"})
    assert v.silent == [2] and v.not_reported == [2]
    assert "rank 2 on node-2 did not answer (the process does not respond); ranks 0-1 on node-0, node-1 were " \
           "waiting for it" in v.message


def test_when_every_rank_waits_inside_the_collective_none_completed_it():
    answers = {r: _answer(r, doing="in the all-reduce") for r in range(4)}
    v = verdict(answers, answers[3], 3.0)
    assert v.stuck == [] and v.not_reported == [0, 1, 2, 3]
    assert "no rank completed it: ranks 0-3 on node-0 were all waiting inside it (a collective that never " \
           "completes" in v.message


def test_ranks_within_their_deadline_or_finished_are_not_named():
    answers = {0: _answer(0, seconds=0.5, waiting=False, doing="preparing its buffers"),  # a healthy group
               1: _answer(1, finished=True, seconds=9.0, waiting=False),
               2: _answer(2, step="intra-node send/recv of 1024 B", doing="preparing its buffers", waiting=False)}
    v = verdict(answers, answers[2], 3.0)
    assert v.stuck == [2] and v.waiting == [] and "rank 2 on node-0 was still preparing its buffers" in v.message
    assert v.step == "intra-node send/recv of 1024 B"


def test_many_stuck_ranks_are_counted_past_eight():
    answers = {r: _answer(r, waiting=False, doing="preparing its buffers") for r in range(12)}
    v = verdict(answers, answers[0], 1.0)
    assert v.stuck == list(range(12)) and "4 more ranks were still doing their own work" in v.message
    assert v.message.count("was still preparing") == 8


def test_the_response_and_backstop_leave_the_cooperative_path_its_time():
    assert response_s(1) == 2.0 and response_s(10) == 5.0 and response_s(3600) == 30.0
    assert backstop_s(2) == 2 + 4 + 5 and backstop_s(600) == 600 + 60 + 5


def test_stall_hooks_name_a_rank_a_collective_and_a_size():
    env = {"ROOFLINE_FLEET_TEST_LINK_HANG": "1:all_reduce:4096,3", "ROOFLINE_FLEET_TEST_LINK_FREEZE": "2:send_recv"}
    assert stall_kind(1, "all_reduce", 4096, env) == "hang"
    assert stall_kind(1, "all_reduce", 2048, env) is None and stall_kind(1, "send_recv", 4096, env) is None
    assert stall_kind(3, "all_gather", 1024, env) == "hang"
    assert stall_kind(2, "send_recv", 8, env) == "freeze" and stall_kind(0, "send_recv", 8, env) is None
    assert stall_kind(1, "all_reduce", 4096, {}) is None


# ---- the watch and the one-rank watchdog ----------------------------------------------------------------------------

class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_step_is_overdue_past_its_deadline_until_the_run_finishes():
    clock = Clock()
    watch = Watch(2.0, rank=3, host="h", clock=clock)
    watch.step("intra-node all-reduce of 1024 B", {"collective": "all_reduce", "bytes": 1024})
    watch.phase("in the all-reduce", waiting=True)
    clock.now += 1.9
    assert not watch.overdue()
    clock.now += 0.2
    assert watch.overdue()
    snap = watch.snapshot()
    assert (snap["rank"], snap["step"], snap["doing"], snap["waiting"]) == (3, "intra-node all-reduce of 1024 B",
                                                                          "in the all-reduce", True)
    assert snap["seconds"] == pytest.approx(2.1) and snap["size"] == {"collective": "all_reduce", "bytes": 1024}
    watch.step("intra-node all-reduce of 2048 B")  # a new step: a new deadline
    assert not watch.overdue() and watch.snapshot()["size"] is None
    assert watch.finish() and not watch.cut()  # finished first: nothing to cut
    clock.now += 100
    assert not watch.overdue()


def test_once_cut_the_main_thread_may_not_finish():
    watch = Watch(1.0)
    assert watch.cut() and not watch.finish()


def test_a_leaders_points_are_held_for_the_writer():
    watch = Watch(1.0)
    block = {"scope": "intra-node", "ranks": [0, 1], "points": []}
    watch.hold(block=block, identity={"rank": 0})
    watch.add_point({"collective": "all_reduce", "bytes": 1024, "status": "OK"})
    snap = watch.snapshot()
    assert snap["block"]["points"] == [{"collective": "all_reduce", "bytes": 1024, "status": "OK"}]
    assert snap["block"] is not block and snap["identity"] == {"rank": 0}


def test_the_one_rank_watchdog_writes_and_ends_past_the_deadline():
    clock = Clock()
    watch = Watch(5.0, rank=0, host="gpu-0", clock=clock)
    cut, ended = [], threading.Event()
    codes = []

    def end(code):
        codes.append(code)
        ended.set()

    dog = SoloWatchdog(watch, lambda v, answers: cut.append((v, answers)), lambda line: None, end, poll_s=0.005)
    dog.start()
    watch.step("intra-node all-gather of 4096 B", {"collective": "all_gather", "bytes": 4096})
    watch.phase("in the all-gather", waiting=True)
    time.sleep(0.05)
    assert not cut  # within its deadline
    clock.now += 6
    assert ended.wait(5), "the watchdog did not act past the deadline"
    (v, answers), = cut
    assert codes == [1] and list(answers) == [0]
    assert v.not_reported == [0] and "no rank completed it: rank 0 on gpu-0 was waiting inside it" in v.message
    assert not dog.stop()  # the main thread must not write now: it waits for the end


def test_the_one_rank_watchdog_stops_quietly_when_the_run_finishes():
    watch = Watch(0.05)
    cut = []
    dog = SoloWatchdog(watch, lambda v, a: cut.append(v), lambda line: None, lambda code: cut.append(code),
                       poll_s=0.005).start()
    watch.step("a step")
    assert dog.stop() and not dog.thread.is_alive()
    time.sleep(0.1)
    assert cut == []


# ---- the document of a cut run ---------------------------------------------------------------------------------

def _point(collective, size, ranks=4, status="OK"):
    p = {"collective": collective, "bytes": size, "requested_bytes": size, "count": size // 4, "ranks": ranks,
         "status": status}
    if status == "OK":
        p.update(time=1e-5, algbw=size / 1e-5, busbw=cv.busbw(collective, size, 1e-5, ranks), iters=3)
    return p


def test_a_cut_document_keeps_what_was_completed_and_names_what_was_cut():
    run = LinksRun("numpy", Plan((cv.ALL_REDUCE,), (1024, 2048, 4096)), Solo(), Solo(), Watch(3.0))
    run.leaders, run.hosts, run.local = ["n0", "n1"], {0: "n0", 1: "n0", 2: "n1", 3: "n1", 4: "n2"}, {
        0: 0, 1: 1, 2: 0, 3: 1, 4: 0}
    run.scopes = [{"scope": "intra-node", "link": None, "ranks": [0, 1], "hosts": ["n0"],
                   "points": [_point("all_reduce", s, 2) for s in (1024, 2048, 4096)]}]  # node 0: gathered
    size = {k: v for k, v in _point("all_reduce", 4096, 2).items() if k not in ("status",)}
    answers = {
        0: _answer(0, host="n0", identity={"rank": 0, "host": "n0", "local_rank": 0, "name": "host CPU"},
                   transport="MPI (Open MPI v4.1.4), host memory"),
        2: _answer(2, host="n1", size=size, block={"scope": "intra-node", "link": None, "ranks": [2, 3],
                                                   "hosts": ["n1"], "points": [_point("all_reduce", 1024, 2),
                                                                               _point("all_reduce", 2048, 2)]}),
        3: _answer(3, host="n1", doing="preparing its buffers", waiting=False),
        4: None,
    }
    v = verdict(answers, answers[3], 3.0, run.hosts)
    doc = run.partial_document(answers, v)
    assert [s["ranks"] for s in doc["scopes"]] == [[0, 1], [2, 3]]
    cut = doc["scopes"][1]["points"][-1]
    assert (cut["collective"], cut["bytes"], cut["status"]) == ("all_reduce", 4096, "FAILED")
    assert cut["error"].startswith("cut short at --timeout 3 s: rank 3 on n1 was still preparing its buffers")
    assert doc["cut_short"]["sizes"] == [{"scope": "intra-node", "ranks": [2, 3], "collective": "all_reduce",
                                          "bytes": 4096}]
    assert doc["cut_short"]["not_reported"] == [3, 4] and doc["cut_short"]["timeout"] == 3.0
    assert "rank(s) 4 are lost" in doc["cut_short"]["unmeasured"]  # node 2's leader never answered
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3, 4] and doc["ranks"][4] == {
        "rank": 4, "host": "n2", "local_rank": 0}
    assert doc["transport"] == "MPI (Open MPI v4.1.4), host memory"
    assert failures(doc) == [f"intra-node: {cut['error']}"]


# ---- one rank without a launcher, NCCL over the stand-in: --timeout watches and gets out of the way ----------------

def test_a_timeout_that_never_passes_changes_nothing(run_cli, tmp_path, monkeypatch):
    from test_fleet_links import fake_modules

    import roofline.fleet.links
    import roofline.fleet.nccl
    from roofline.fleet.nccl import NcclEngine

    modules = fake_modules()
    monkeypatch.setattr(roofline.fleet.nccl, "pointer", lambda a: a.ctypes.data)
    monkeypatch.setattr(roofline.fleet.links, "_open", lambda backend, control, device: NcclEngine(device, modules))
    out = tmp_path / "one.json"
    r = run_cli("fleet", "links", "--max-bytes", "4KiB", "--iters", "2", "--warmup", "1", "--timeout", "60",
                "-o", out)
    assert r.code == 0, r.err
    doc = load_links(out)
    assert "cut_short" not in doc and all(p["status"] == "OK" for p in doc["scopes"][0]["points"])
    assert not [t for t in threading.enumerate() if t.name == "roofline-watchdog"]  # stopped and joined


def test_timeout_must_be_positive(run_cli):
    r = run_cli("fleet", "links", "--backend", "numpy", "--timeout", "0")
    assert r.code == 2 and "--timeout" in r.err


# ---- 2-4 MPI ranks on localhost, NumPy engine ---------------------------------------------------------------------


LIMIT = 90  # s: a run past this is the deadlock --timeout exists to prevent


def _run(tmp: Path, ranks: int, *args: str, env: dict[str, str] | None = None,
         launcher: bool = True) -> tuple[subprocess.CompletedProcess, float]:
    """`mpirun -n RANKS roofline fleet links --backend numpy ...` (or the tool alone), killed whole (frozen ranks
    included) if it outlives LIMIT; and its wall time."""
    forward = [a for name in (env or {}) for a in ("-x", name)]
    tool = [sys.executable, "-m", "roofline", "fleet", "links", "--backend", "numpy", "--max-bytes", "16KiB",
            "--iters", "3", "--warmup", "1", "--collectives", "all_reduce,send_recv", *args]
    cmd = ["mpirun", "-n", str(ranks), "--oversubscribe", *forward, *tool] if launcher else tool
    started = time.monotonic()
    result = run_job(cmd, tmp, env, limit=LIMIT)
    return result, time.monotonic() - started


def _statuses(doc: dict) -> list[tuple]:
    return [(s["scope"], tuple(s["ranks"]), p["collective"], p["bytes"], p["status"])
            for s in doc["scopes"] for p in s["points"]]


def test_a_rank_hung_in_a_collective_is_named_and_the_completed_sizes_written(mpi, tmp_path):
    result, wall = _run(tmp_path, 4, "--timeout", "2", "-o", "links.json",
                        env={"ROOFLINE_FLEET_TEST_LINK_HANG": "1:all_reduce:4096"})
    assert result.returncode == 1, result.stderr
    assert wall < 2 + response_s(2) + 20
    assert ("error: fleet links: --timeout 2 s passed in the intra-node all-reduce of 4096 B: rank 1 on "
            in result.stderr)
    assert "was still preparing its buffers after" in result.stderr and "ranks 0, 2-3 on " in result.stderr
    doc = load_links(tmp_path / "links.json")
    ranks = (0, 1, 2, 3)
    assert _statuses(doc) == [("intra-node", ranks, "all_reduce", 1024, "OK"),
                              ("intra-node", ranks, "all_reduce", 2048, "OK"),
                              ("intra-node", ranks, "all_reduce", 4096, "FAILED")]
    cut = doc["cut_short"]
    assert cut["timeout"] == 2 and cut["not_reported"] == [1] and cut["step"] == "intra-node all-reduce of 4096 B"
    assert cut["sizes"] == [{"scope": "intra-node", "ranks": [0, 1, 2, 3], "collective": "all_reduce",
                             "bytes": 4096}]
    assert doc["scopes"][0]["points"][-1]["error"].startswith("cut short at --timeout 2 s: rank 1 on ")
    assert [r["rank"] for r in doc["ranks"]] == [0, 1, 2, 3] and all(r["cpu"] for r in doc["ranks"])
    assert [p.name for p in tmp_path.iterdir()] == ["links.json"]  # written whole, no temporary left


def test_a_hung_rank_0_still_writes_through_its_watchdog(mpi, tmp_path):
    result, _ = _run(tmp_path, 3, "--timeout", "2", "-o", "links.json",
                     env={"ROOFLINE_FLEET_TEST_LINK_HANG": "0:send_recv:2048"})
    assert result.returncode == 1, result.stderr
    assert "passed in the intra-node send/recv of 2048 B: rank 0 on " in result.stderr
    doc = load_links(tmp_path / "links.json")
    assert [st for *_, st in _statuses(doc)] == ["OK"] * 6 + ["FAILED"]
    assert doc["cut_short"]["not_reported"] == [0]


def test_a_frozen_rank_is_named_as_not_answering(mpi, tmp_path):
    result, _ = _run(tmp_path, 4, "--timeout", "2", "-o", "links.json",
                     env={"ROOFLINE_FLEET_TEST_LINK_FREEZE": "2:all_reduce:2048"})
    assert result.returncode == 1, result.stderr
    assert "rank 2 on " in result.stderr and "did not answer (the process does not respond)" in result.stderr
    doc = load_links(tmp_path / "links.json")
    assert doc["cut_short"]["not_reported"] == [2]
    assert [(c, b, st) for *_, c, b, st in _statuses(doc)] == [("all_reduce", 1024, "OK"),
                                                               ("all_reduce", 2048, "FAILED")]


def test_a_frozen_rank_0_is_named_by_another_and_nothing_is_written(mpi, tmp_path):
    result, _ = _run(tmp_path, 3, "--timeout", "2", "-o", "links.json",
                     env={"ROOFLINE_FLEET_TEST_LINK_FREEZE": "0:all_reduce:2048"})
    assert result.returncode == 1, result.stderr
    assert "and rank 0 on " in result.stderr and "which writes the file, did not answer" in result.stderr
    assert "no file is written; aborting the job" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_when_every_rank_is_frozen_the_backstop_ends_the_job(mpi, tmp_path):
    result, wall = _run(tmp_path, 2, "--timeout", "1", "-o", "links.json",
                        env={"ROOFLINE_FLEET_TEST_LINK_FREEZE": "0:all_reduce:2048,1:all_reduce:2048"})
    assert result.returncode != 0
    assert wall < backstop_s(1) + 30
    assert "Timeout (" in result.stderr and "in _stall" in result.stderr  # each rank's stacks, where it stood
    assert list(tmp_path.iterdir()) == []


def test_a_hung_rank_on_one_node_keeps_the_other_nodes_results(mpi, tmp_path):
    result, _ = _run(tmp_path, 4, "--timeout", "2", "-o", "links.json",
                     env={"ROOFLINE_FLEET_TEST_NODES": "2", "ROOFLINE_FLEET_TEST_LINK_HANG": "3:send_recv:4096"})
    assert result.returncode == 1, result.stderr
    doc = load_links(tmp_path / "links.json")
    statuses = _statuses(doc)
    node0 = [s for s in statuses if s[1] == (0, 1)]
    node1 = [s for s in statuses if s[1] == (2, 3)]
    assert len(node0) == 10 and all(s[-1] == "OK" for s in node0)  # node 0 finished its sweep
    assert node1[-1][2:] == ("send_recv", 4096, "FAILED") and all(s[-1] == "OK" for s in node1[:-1])
    assert not [s for s in statuses if s[0] == "inter-node"]  # never reached
    assert doc["cut_short"]["not_reported"] == [3]
    assert "scopes after this one, were not measured" in doc["cut_short"]["unmeasured"]


def test_one_rank_without_a_launcher_is_cut_too(mpi, tmp_path):
    result, _ = _run(tmp_path, 1, "--timeout", "1.5", "-o", "links.json", launcher=False,
                     env={"ROOFLINE_FLEET_TEST_LINK_HANG": "0:send_recv"})
    assert result.returncode == 1, result.stderr
    assert "passed in the intra-node send/recv of 1024 B: rank 0 on " in result.stderr
    assert load_links(tmp_path / "links.json")["cut_short"]["not_reported"] == [0]


def test_a_bug_on_one_rank_aborts_the_job_with_its_traceback(mpi, tmp_path):
    result, _ = _run(tmp_path, 3, "-o", "links.json", env={"ROOFLINE_FLEET_TEST_LINK_BUG": "2"})
    assert result.returncode == 101, result.stderr
    assert "RuntimeError: injected bug on rank 2" in result.stderr and "Traceback" in result.stderr
    assert "error: internal error on rank 2; aborting the job" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_with_a_timeout_that_never_passes_four_ranks_finish_as_before(mpi, tmp_path):
    result, _ = _run(tmp_path, 4, "--timeout", "30", "-o", "links.json", "--format", "json")
    assert result.returncode == 0, result.stderr
    doc = load_links(tmp_path / "links.json")
    assert json.loads(result.stdout) == doc and "cut_short" not in doc
    assert len(_statuses(doc)) == 10 and all(s[-1] == "OK" for s in _statuses(doc))


_SOLO_NCCL = """
import sys
sys.path.insert(0, {tests!r})
import roofline.fleet.links, roofline.fleet.nccl
from roofline.fleet.nccl import NcclEngine
from test_fleet_links import fake_modules
modules = fake_modules()
roofline.fleet.nccl.pointer = lambda a: a.ctypes.data
roofline.fleet.links._open = lambda backend, control, device: NcclEngine(device, modules)
from roofline.cli import main
main(sys.argv[1:])
"""


def test_one_gpu_without_a_launcher_writes_the_completed_sizes_and_exits_1(tmp_path):
    """The NCCL path on one rank (no MPI: the one-rank watchdog), over the stand-in for CuPy and NCCL, hung at the
    all-reduce of 4 KiB: what the lead's single-GPU run does on the H200."""
    script = _SOLO_NCCL.format(tests=str(ROOT / "tests"))
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "ROOFLINE_FLEET_TEST_LINK_HANG": "0:all_reduce:4096"}
    for name in [n for n in environ if n.startswith(("OMPI_", "PMI_", "PMIX_"))]:
        environ.pop(name)  # no launcher
    started = time.monotonic()
    result = subprocess.run([sys.executable, "-c", script, "fleet", "links", "--max-bytes", "8KiB", "--iters", "2",
                             "--warmup", "1", "--timeout", "1.5", "-o", "cut.json"], cwd=tmp_path, env=environ,
                            capture_output=True, text=True, timeout=LIMIT)
    assert result.returncode == 1, result.stderr
    assert time.monotonic() - started < LIMIT / 2
    assert ("error: fleet links: --timeout 1.5 s passed in the intra-node all-reduce of 4096 B: rank 0 on "
            in result.stderr) and "was still preparing its buffers" in result.stderr
    doc = load_links(tmp_path / "cut.json")
    assert doc["backend"] == "cupy" and doc["transport"] == "NCCL 2.21.5"
    assert [(c, b, st) for *_, c, b, st in _statuses(doc)] == [("all_reduce", 1024, "OK"), ("all_reduce", 2048, "OK"),
                                                               ("all_reduce", 4096, "FAILED")]
    assert doc["cut_short"]["not_reported"] == [0] and doc["ranks"][0]["pci_bus_id"] == "0000:1B:00.0"
    assert [p.name for p in tmp_path.iterdir()] == ["cut.json"]
