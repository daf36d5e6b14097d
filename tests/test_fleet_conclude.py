"""roofline.fleet.conclude for measure, sweep, calibrate and doctor under mpirun: what rank 0 concludes from the ranks'
outcomes (the merged document, a sweep's per-rank model blocks and shown ranks, the tracebacks worth printing) and
each verdict, on outcomes written by hand (no MPI, no GPU). The commands that render them are in
tests/test_fleet_commands.py."""

from __future__ import annotations

import copy

import pytest

from roofline.errors import GateFailed
from roofline.fleet.conclude import (TRACEBACKS, doctor_fleet_document, doctor_verdict, fleet_calibration,
                                     fleet_results, fleet_sweep, rank_checks, rank_tracebacks)
from roofline.fleet.merge import DONE, FAILED, HUNG, RankOutcome, part
from roofline.fleet.stream import Spool
from roofline.gates.doctor import Check

from test_fleet_commands import _calibrated, _verdict
from test_fleet_stream import _document, _entry, _fleet

GATHER = {"mode": "node"}


def _swept(size: int) -> dict[int, RankOutcome]:
    """Every rank's sweep of copy at two sizes, each with its own model block."""
    outcomes = {}
    for rank in range(size):
        doc = _document(rank, [_entry("copy", 1024, 1e-5 * (1 + rank / 10)), _entry("copy", 2048, 2e-5)])
        doc["sweep"] = {"kernel": "copy", "param": "n", "overheads": {"launch": 2e-6 + rank * 1e-9}}
        outcomes[rank] = RankOutcome(rank, {"host": f"n{rank // 2}", "rank": rank, "local_rank": rank % 2,
                                            "device_index": rank % 2}, DONE, doc)
    return outcomes


def test_the_measure_verdict_names_the_failed_rank_before_the_kernels() -> None:
    fleet = fleet_results(_fleet(6), 6, None, GATHER)
    assert [d["rank"] for d in fleet.doc["devices"]] == [0, 1, 2, 4, 5] and fleet.doc["fleet"]["gather"] == GATHER
    with pytest.raises(GateFailed, match=r"^1 of 6 ranks failed or hung; the others' results were kept: "):
        fleet.verdict()


def test_the_measure_verdict_names_the_kernels_that_failed_verification() -> None:
    outcomes = {r: o for r, o in _fleet(6).items() if o.state == DONE}
    with pytest.raises(GateFailed, match=r"^1 kernel FAILED verification: scale$"):
        fleet_results(outcomes, 5, None, GATHER).verdict()
    clean = {r: o for r, o in outcomes.items() if r % 5 != 2}
    fleet_results(clean, len(clean), None, GATHER).verdict()


def test_the_fleet_sweep_keeps_each_ranks_model_block_and_shows_every_rank_of_a_small_fleet() -> None:
    fleet = fleet_sweep(_swept(4), 4, None, GATHER, shown_up_to=8)
    assert [s["device"] for s in fleet.doc["sweeps"]] == [0, 1, 2, 3]
    assert fleet.doc["sweeps"][3]["overheads"] == {"launch": 2e-6 + 3e-9}
    assert [p["device"]["index"] for p in fleet.shown] == [0, 1, 2, 3] and fleet.hidden == 0
    assert [p["sweep"]["overheads"] for p in fleet.shown] == [s["overheads"] for s in fleet.doc["sweeps"]]
    assert {line["kernel"] for line in fleet.summary} >= {"copy"}
    fleet.verdict()


def test_past_the_limit_the_first_rank_is_shown_with_its_entries_read_back_from_the_spool() -> None:
    outcomes = _swept(6)
    spool = Spool(None, 0)
    slim = {r: copy.copy(o) for r, o in outcomes.items()}
    for rank in sorted(outcomes):
        slim[rank].document = spool.add(rank, part(outcomes[rank]), 6)
    fleet = fleet_sweep(slim, 6, None, GATHER, shown_up_to=4, spool=spool)
    assert fleet.hidden == 5 and [p["device"]["index"] for p in fleet.shown] == [0]
    assert all("phases" not in k for k in fleet.doc["kernels"])  # slim in the merge
    assert fleet.shown[0]["kernels"] == spool.entries(0) and all("phases" in k for k in fleet.shown[0]["kernels"])
    without = fleet_sweep(slim, 6, None, GATHER, shown_up_to=4)
    assert without.shown[0]["kernels"] == [k for k in fleet.doc["kernels"] if k["device"] == 0]


def test_a_rank_that_hung_fails_the_sweep() -> None:
    outcomes = _swept(3)
    outcomes[2] = RankOutcome(2, {"host": "n1", "rank": 2}, HUNG)
    fleet = fleet_sweep(outcomes, 3, 30.0, GATHER, shown_up_to=8)
    assert [s["device"] for s in fleet.doc["sweeps"]] == [0, 1]
    with pytest.raises(GateFailed, match=r"1 of 3 ranks failed or hung"):
        fleet.verdict()


def test_tracebacks_of_bugs_only_a_few_then_counted() -> None:
    outcomes = {r: RankOutcome(r, {"host": "n0", "rank": r}, FAILED, error="RuntimeError: Xid", kind="RuntimeError",
                               detail=f"Traceback {r}") for r in range(TRACEBACKS + 2)}
    outcomes[0] = RankOutcome(0, {"host": "n0", "rank": 0}, FAILED, error="no spec", kind="InputError",
                              detail="Traceback 0")
    lines, more = rank_tracebacks(outcomes)
    assert [line.rsplit(" ", 1)[1] for line in lines] == ["1", "2", "3"] and more == 1
    assert lines[0].startswith("rank 1 on n0")
    assert rank_tracebacks({}) == ([], 0)


def test_the_fleet_calibration_verdict_lists_every_problem() -> None:
    outcomes = {r: _calibrated(r, f"n{r // 2}", 0.9 if r == 1 else 1.0) for r in range(4)}
    fleet_calibration(outcomes, None, None).verdict(4)  # no --outlier: nothing too slow
    with pytest.raises(GateFailed, match=r"^3 problems across 4 ranks: rank 1 on n0 \(GPU 1\): DRAM bandwidth "
                                         r"10.0% below the fleet median \(limit 5%\); "):
        fleet_calibration(outcomes, None, 0.05).verdict(4)


def test_the_doctor_verdict_and_each_ranks_checks() -> None:
    outcomes = {r: RankOutcome(r, {"host": f"n{r // 2}", "rank": r, "device_index": r % 2}, DONE,
                               _verdict("FAIL" if r in (1, 2) else "WARN" if r == 3 else "PASS")) for r in range(4)}
    doc = doctor_fleet_document(outcomes, 4, None, GATHER)
    checks = rank_checks(doc["ranks"])
    assert [where for where, _ in checks] == [r["where"] for r in doc["ranks"]]
    assert all(isinstance(c, Check) and isinstance(c.limits, tuple) for _, cs in checks for c in cs)
    with pytest.raises(GateFailed, match=r"^doctor FAILED on 2 of 4 ranks: rank 1 on n0 \(GPU 1\): DRAM bandwidth: "
                                         r"copy; rank 2 on n1 \(GPU 0\): DRAM bandwidth: copy$"):
        doctor_verdict(doc, outcomes, 4, None)
    passed = {r: o for r, o in outcomes.items() if r in (0, 3)}
    doctor_verdict(doctor_fleet_document(passed, 2, None, GATHER), passed, 2, None)


def test_the_doctor_names_five_failed_ranks_then_counts() -> None:
    outcomes = {r: RankOutcome(r, {"host": "n0", "rank": r, "device_index": r}, DONE, _verdict("FAIL"))
                for r in range(7)}
    with pytest.raises(GateFailed, match=r"; and 2 more$"):
        doctor_verdict(doctor_fleet_document(outcomes, 7, None, GATHER), outcomes, 7, None)
