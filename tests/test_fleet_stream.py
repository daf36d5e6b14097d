"""Rank 0's streaming writer: the file it assembles from the spool is byte for byte what the whole merge gives, in
the merge's order (kernels by first appearance, ranks in rank order, whatever order they arrived in); rank 0 holds
slim entries only; the chunked atomic write; the size limit."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path

import pytest

from roofline.fleet.identity import rank_identity
from roofline.fleet.merge import DONE, FAILED, RankOutcome, fleet_document, part
from roofline.fleet.stream import SLIM, Spool, spool_folder
from roofline.load.jsonio import dumps, write_text_atomic


def _entry(name: str, n: int, time: float, **more) -> dict:
    return {"name": name, "params": {"n": n}, "dtype": "float32", "status": "OK", "verified": True,
            "time_median": time, "time_ci": [time * 0.99, time * 1.01], "fraction_of_ceiling": 0.8, "error": None,
            "warnings": [], "phases": {"launch": [1e-6] * 8, "note": "ünïcode \u2028 line"}, "ratio": float("nan"),
            **more}


def _document(rank: int, kernels: list[dict]) -> dict:
    return {"schema": "roofline/results/v1", "created": "2026-12-01T00:00:00+00:00", "tool_version": "0.1.0",
            "backend": "numpy", "device": {"device_id": 0, "name": "host CPU", "kind": "cpu", "cpu": "Xeon",
                                            "spec_id": "h200"},
            "machine": {"name": "h200", "dram": 4.8e12}, "policy": {"min_time": 0.01}, "kernels": kernels}


def _fleet(size: int, seed: int = 5) -> dict[int, RankOutcome]:
    """Ranks with differing kernel sets and orders (new kernels appear late), one failed rank."""
    rng = random.Random(seed)
    outcomes = {}
    for rank in range(size):
        ident = {"name": "host CPU", "cpu": "Xeon", **rank_identity(f"node-{rank // 4}", rank, rank % 4, rank % 4)}
        if rank == 3:
            outcomes[rank] = RankOutcome(rank, ident, FAILED, error="RuntimeError: injected")
            continue
        kernels = [_entry("copy", 1024, 1e-5 * (1 + rng.random())), _entry("triad", 2048, 2e-5)]
        if rank % 5 == 2:
            kernels.insert(0, _entry("scale", 4096, 3e-5, status="FAILED", verified=False, error="wrong"))
        if rank == size - 1:
            kernels.append(_entry("copy", 8192, 4e-5))  # a kernel only the last rank measured
        rng.shuffle(kernels)
        outcomes[rank] = RankOutcome(rank, ident, DONE, _document(rank, kernels))
    return outcomes


def _streamed(outcomes: dict[int, RankOutcome], size: int, full_up_to: int = 0, order_seed: int = 9) -> tuple:
    spool = Spool(None, full_up_to)
    slim = {r: copy.copy(o) for r, o in outcomes.items()}
    arrival = sorted(outcomes)
    random.Random(order_seed).shuffle(arrival)  # ranks report in any order
    for rank in arrival:
        if slim[rank].state == DONE:
            slim[rank].document = spool.add(rank, part(outcomes[rank]), size)
    doc = fleet_document(slim, size, 30.0, {"mode": "node"})
    total, chunks = spool.document(doc)
    return doc, total, b"".join(chunks), spool


@pytest.mark.parametrize("size", [1, 2, 12, 40])
def test_the_streamed_file_is_the_whole_merge_byte_for_byte(size):
    outcomes = _fleet(size)
    if size <= 3:
        outcomes = {r: o for r, o in outcomes.items() if o.state == DONE} or outcomes
    whole = fleet_document(outcomes, size, 30.0, {"mode": "node"})
    doc, _, _, spool = _streamed(outcomes, size)
    doc["created"] = whole["created"]  # the merge stamps its own time
    total, chunks = spool.document(doc)
    text = b"".join(chunks)
    assert text == dumps(whole).encode("utf-8")
    assert total == len(text)
    assert json.loads(text) == json.loads(dumps(whole))


def test_rank_0_holds_slim_entries_and_reads_one_rank_back_in_full():
    outcomes = _fleet(12)
    doc, _, text, spool = _streamed(outcomes, 12)
    identity = {"device", "host", "rank", "local_rank", "device_index", "uuid", "pci_bus_id"}  # the merge adds them
    assert all(set(k) <= set(SLIM) | identity for k in doc["kernels"])
    assert all("phases" not in k and "dtype" not in k for k in doc["kernels"])
    assert doc["fleet"]["done"] == [r for r in range(12) if r != 3] and doc["fleet"]["failed"][0]["rank"] == 3
    full = json.loads(text)["kernels"]
    mine = spool.entries(5)  # in the rank's own order; the file has them in the merge's
    assert sorted(map(json.dumps, mine)) == sorted(json.dumps(k) for k in full if k["rank"] == 5)
    assert all("phases" in k and k["host"] == "node-1" and k["device"] == 5 for k in mine)
    machines = {id(o.document["machine"]) for o in outcomes.values() if o.state == DONE}
    held = {id(o["machine"]) for o in (spool.add(r, part(outcomes[r]), 12) for r in (0, 1, 2))}
    assert len(machines) == 11 and len(held) == 1  # one machine block held, however many ranks


def test_a_small_fleet_keeps_its_full_entries_for_the_table():
    outcomes = _fleet(4)
    doc, *_ = _streamed(outcomes, 4, full_up_to=8)
    assert all("phases" in k for k in doc["kernels"])


def test_an_empty_array_and_chunks_written_atomically(tmp_path):
    spool = Spool(tmp_path)
    total, chunks = spool.document({"devices": [], "kernels": [], "fleet": {}})
    text = b"".join(chunks)
    assert json.loads(text) == {"devices": [], "kernels": [], "fleet": {}} and total == len(text)
    target = tmp_path / "out.json"
    write_text_atomic(target, iter([b'{"a": ', b"1}\n"]))
    assert target.read_text() == '{"a": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # the spool is unnamed, the temp renamed


def test_the_spool_lies_beside_the_output(tmp_path):
    assert spool_folder(tmp_path / "fleet.json") == str(tmp_path)
    assert spool_folder("-") is None and spool_folder(None) is None
    assert spool_folder(tmp_path / "missing" / "fleet.json") is None


def test_a_fleet_file_past_the_read_limit_is_refused_before_writing(tmp_path, monkeypatch):
    import roofline.records.files
    from roofline.cli.fleet import emit_streamed
    from roofline.errors import InputError

    outcomes = _fleet(12)
    doc, total, _, spool = _streamed(outcomes, 12)
    monkeypatch.setattr(roofline.records.files, "MAX_RESULTS_BYTES", total - 1)
    with pytest.raises(InputError, match="more than the .* MiB 'report' and 'plot' read"):
        emit_streamed(doc, spool, tmp_path / "fleet.json", "json", lambda d: None, [])
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setattr(roofline.records.files, "MAX_RESULTS_BYTES", total)
    emit_streamed(doc, spool, tmp_path / "fleet.json", "table", lambda d: "table", [])
    assert Path(tmp_path / "fleet.json").stat().st_size == total


def test_a_sweep_on_nine_ranks_streams_and_shows_rank_0_in_full(mpi, tmp_path):
    """Past 8 ranks rank 0 holds slim entries: the file still has every field, and the one sweep table shown (rank
    0's) is read back from the spool in full."""
    from test_fleet_commands import _mpirun

    result = _mpirun(tmp_path, "sweep", "vector_add", "--backend", "numpy", "--spec", "h200", "--sizes",
                     "2**10..2**11", "--min-time", "0.01", "-o", "sweep.json", ranks=9,
                     env={"ROOFLINE_FLEET_TEST_NODE_SIZE": "3"})
    assert result.returncode == 0, result.stderr
    doc = json.loads((tmp_path / "sweep.json").read_text())
    assert [d["rank"] for d in doc["devices"]] == list(range(9)) and len(doc["kernels"]) == 18
    assert all("phases" in k and "achieved_bandwidth" in k for k in doc["kernels"])  # not the slim copy
    assert [(k["params"]["n"], k["rank"]) for k in doc["kernels"]] == [(n, r) for n in (1024, 2048)
                                                                      for r in range(9)]
    assert "vector_add" in result.stdout and "rank 0 on " in result.stdout  # rank 0's sweep table
    assert "the sweep tables and model lines of the other 8 ranks are in the results" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sweep.json"]

