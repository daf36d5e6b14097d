"""Rank 0's progress at thousands of ranks: a counter throttled by time and by share done, failures as they come
(each error once); a line per rank in a small fleet. Fake events and a fake clock; then one mpirun."""

from __future__ import annotations

from roofline.fleet.merge import RankOutcome
from roofline.fleet.progress import FleetProgress, progress_style


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _done(rank: int) -> RankOutcome:
    return RankOutcome(rank, {"host": f"node-{rank // 8}", "device_index": rank % 8}, "done")


def _failed(rank: int, error: str) -> RankOutcome:
    return RankOutcome(rank, {"host": f"node-{rank // 8}", "device_index": rank % 8}, "failed", error=error)


def _feed(progress: FleetProgress, clock: Clock, outcomes: list[RankOutcome], seconds_each: float) -> list[str]:
    lines = []
    for finished, out in enumerate(outcomes, start=1):
        clock.now += seconds_each
        lines += progress.event("identity", out, finished - 1)  # identities print nothing
        lines += progress.event("finished", out, finished)
    return lines


def test_4096_ranks_in_a_burst_give_a_handful_of_lines():
    clock = Clock()
    lines = _feed(FleetProgress(4096, clock=clock), clock, [_done(r) for r in range(4096)], 1 / 1024)
    # 4 s in all: a line a second at most (each more than 5 % on), the last one the end
    assert lines == ["fleet: ranks done 1024/4096 (25%)", "fleet: ranks done 2048/4096 (50%)",
                     "fleet: ranks done 3072/4096 (75%)", "fleet: ranks done 4096/4096 (100%)"]


def test_a_slow_fleet_prints_every_5_percent_not_every_rank():
    clock = Clock()
    lines = _feed(FleetProgress(1000, clock=clock), clock, [_done(r) for r in range(1000)], 0.125)
    assert len(lines) == 20 and lines[0] == "fleet: ranks done 50/1000 (5%)"
    assert lines[-1] == "fleet: ranks done 1000/1000 (100%)"


def test_a_stalled_fleet_still_shows_it_moves_every_30_s():
    clock = Clock()
    progress = FleetProgress(10000, clock=clock)
    lines = _feed(progress, clock, [_done(r) for r in range(10)], 16.0)  # 10 ranks in 160 s: 0.1 %
    assert lines == ["fleet: ranks done 2/10000 (0%)", "fleet: ranks done 4/10000 (0%)",
                     "fleet: ranks done 6/10000 (0%)", "fleet: ranks done 8/10000 (0%)",
                     "fleet: ranks done 10/10000 (0%)"]


def test_failures_come_as_they_happen_each_error_once():
    clock = Clock()
    progress = FleetProgress(100, clock=clock)
    outcomes = [_done(r) for r in range(100)]
    outcomes[3] = _failed(3, "RuntimeError: ECC error")
    outcomes[4] = _failed(4, "RuntimeError: ECC error")
    outcomes[50] = _failed(50, "BackendUnavailable: no GPU")
    lines = _feed(progress, clock, outcomes, 0.001)
    assert lines == [
        "fleet: rank 3 on node-0 (GPU 3) FAILED (RuntimeError: ECC error); ranks done 4/100 (4%, 1 failed)",
        "fleet: rank 50 on node-6 (GPU 2) FAILED (BackendUnavailable: no GPU); ranks done 51/100 (51%, 3 failed)",
        "fleet: ranks done 100/100 (100%, 3 failed)"]


def test_a_small_fleet_gets_a_line_per_rank():
    clock = Clock()
    outcomes = [_done(0), _failed(1, "RuntimeError: x"), _failed(2, "RuntimeError: x"), _done(3)]
    lines = _feed(FleetProgress(4, clock=clock), clock, outcomes, 0.0)
    assert lines == ["fleet: rank 0 on node-0 (GPU 0) done; ranks done 1/4",
                     "fleet: rank 1 on node-0 (GPU 1) FAILED (RuntimeError: x); ranks done 2/4",
                     "fleet: rank 2 on node-0 (GPU 2) FAILED (as rank 1); ranks done 3/4",
                     "fleet: rank 3 on node-0 (GPU 3) done; ranks done 4/4"]
    assert FleetProgress(16).per_rank and not FleetProgress(17).per_rank
    assert not FleetProgress(4, "count").per_rank and FleetProgress(5000, "ranks").per_rank


def test_the_style_variable_is_read_leniently():
    assert progress_style({}) == ("auto", None)
    assert progress_style({"ROOFLINE_FLEET_PROGRESS": " Count "}) == ("count", None)
    style, warning = progress_style({"ROOFLINE_FLEET_PROGRESS": "bars"})
    assert style == "auto" and "ROOFLINE_FLEET_PROGRESS='bars' is not one of auto, ranks, count" in warning



def test_mpirun_prints_the_counter_and_the_failure(mpi, tmp_path):
    from test_fleet import _mpirun

    result = _mpirun(tmp_path, "-o", "fleet.json",
                     env={"ROOFLINE_FLEET_PROGRESS": "count", "ROOFLINE_FLEET_TEST_FAIL_RANK": "2"})
    assert result.returncode == 1, result.stderr
    progress = [line for line in result.stderr.splitlines() if "ranks done" in line]
    failure = [line for line in progress if "FAILED" in line]
    assert len(failure) == 1 and failure[0].startswith("fleet: rank 2 on ")
    assert "injected failure" in failure[0] and "1 failed)" in failure[0]
    assert progress[-1].endswith("ranks done 4/4 (100%, 1 failed)")
    assert not [line for line in progress if ") done; ranks done" in line]  # no line per rank
