"""Host inputs and references shared by the workers of a several-device `measure` (roofline.measure.hostshare):
each kernel's HostData is made once, by one worker, and the others map the same arrays; what cannot be shared, or
whose producer has stopped, is made locally without waiting."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import roofline.measure.hostshare as hs
from roofline.expr import compile_expr
from roofline.kernels import KernelCatalog
from roofline.measure.harness import prepare_host
from roofline.measure.implementation import load_implementation
from roofline.measure.policy import MeasurePolicy
from roofline.workload import evaluate

NAMES = ("vector_add", "copy", "scale", "triad", "sum", "relu", "softmax_fused")


def _jobs() -> list[tuple[Any, Any, Any]]:
    out = []
    for d in KernelCatalog.load().select(list(NAMES)):
        sizes = {"n": 4099} if "n" in d.params else {"rows": 7, "cols": 33}
        work = evaluate(d, {k: compile_expr(str(v)) for k, v in sizes.items()})
        out.append((d, work, load_implementation(d)))
    return out


@pytest.fixture
def counted(monkeypatch) -> list[tuple[str, str]]:
    """Every real prepare_host call the share makes: (kernel, thread)."""
    calls: list[tuple[str, str]] = []

    def prepare(d, work, impl, policy):  # type: ignore[no-untyped-def]
        calls.append((d.name, threading.current_thread().name))
        return prepare_host(d, work, impl, policy)

    monkeypatch.setattr(hs, "prepare_host", prepare)
    return calls


def _run(share: hs.HostShare, jobs: list, policy: MeasurePolicy, out: dict[int, list]) -> None:
    out[share.device] = [share.prepare(d, work, impl, policy) for d, work, impl in jobs]


def test_each_kernel_is_prepared_once_and_every_worker_gets_the_same_arrays(tmp_path: Path, counted) -> None:
    jobs, policy, got = _jobs(), MeasurePolicy(), {}
    workers = [threading.Thread(target=_run, args=(hs.HostShare(tmp_path, d, [0, 1]), jobs, policy, got),
                                name=f"gpu{d}") for d in (0, 1)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert sorted(name for name, _ in counted) == sorted(NAMES)  # once each, not twice
    assert {t for _, t in counted} == {"gpu0", "gpu1"}  # both workers produced some
    for i, (d, work, impl) in enumerate(jobs):
        direct = prepare_host(d, work, impl, policy)
        for device in (0, 1):
            host = got[device][i]
            assert host.params == direct.params and host.out_specs == direct.out_specs
            for k, v in direct.inputs.items():
                np.testing.assert_array_equal(host.inputs[k], v)
            for k, v in direct.reference.items():
                np.testing.assert_array_equal(host.reference[k], v)
    assert list(tmp_path.iterdir()) == []  # the last consumer removed each folder


def test_a_consumer_may_write_its_copy_without_touching_the_producers(tmp_path: Path, counted) -> None:
    (d, work, impl), policy = _jobs()[0], MeasurePolicy()
    key, producer = hs.HostShare(tmp_path, 0, [0, 1, 2]).key(d.name, dict(work.params))
    made = hs.HostShare(tmp_path, producer, [0, 1, 2]).prepare(d, work, impl, policy)
    consumer = next(x for x in (0, 1, 2) if x != producer)
    mapped = hs.HostShare(tmp_path, consumer, [0, 1, 2]).prepare(d, work, impl, policy)
    name = next(iter(mapped.inputs))
    mapped.inputs[name][0] = 12345.0  # copy-on-write: a private page
    other = next(x for x in (0, 1, 2) if x not in (producer, consumer))
    again = hs.HostShare(tmp_path, other, [0, 1, 2]).prepare(d, work, impl, policy)
    assert again.inputs[name][0] == made.inputs[name][0] != 12345.0
    assert not (tmp_path / key).exists()


def test_a_dead_producer_is_not_waited_for(tmp_path: Path, counted) -> None:
    (d, work, impl), policy = _jobs()[0], MeasurePolicy()
    share = hs.HostShare(tmp_path, 0, [0, 1])
    _, producer = share.key(d.name, dict(work.params))
    consumer = hs.HostShare(tmp_path, 1 - producer, [0, 1])
    hs.mark_dead(tmp_path, producer)
    started = time.perf_counter()
    host = consumer.prepare(d, work, impl, policy)
    assert time.perf_counter() - started < 5 and host.inputs
    assert counted == [(d.name, threading.current_thread().name)]  # made here instead


def test_what_cannot_be_shared_is_made_by_each_worker(tmp_path: Path, monkeypatch) -> None:
    (d, work, impl), policy = _jobs()[0], MeasurePolicy()

    def scalar_reference(d, work, impl, policy):  # type: ignore[no-untyped-def]
        host = prepare_host(d, work, impl, policy)
        return hs.HostData(host.params, host.inputs, host.out_specs, {"total": 3.5}, host.phases)

    monkeypatch.setattr(hs, "prepare_host", scalar_reference)
    key, producer = hs.HostShare(tmp_path, 0, [0, 1]).key(d.name, dict(work.params))
    hs.HostShare(tmp_path, producer, [0, 1]).prepare(d, work, impl, policy)
    assert (tmp_path / f"{key}.local").exists()
    assert hs.HostShare(tmp_path, 1 - producer, [0, 1]).prepare(d, work, impl, policy).reference == {"total": 3.5}


def test_a_failing_producer_lets_the_others_meet_the_error_themselves(tmp_path: Path, monkeypatch) -> None:
    (d, work, impl), policy = _jobs()[0], MeasurePolicy()

    def broken(d, work, impl, policy):  # type: ignore[no-untyped-def]
        raise RuntimeError("reference raised")

    monkeypatch.setattr(hs, "prepare_host", broken)
    key, producer = hs.HostShare(tmp_path, 0, [0, 1]).key(d.name, dict(work.params))
    for device in (producer, 1 - producer):
        with pytest.raises(RuntimeError, match="reference raised"):
            hs.HostShare(tmp_path, device, [0, 1]).prepare(d, work, impl, policy)


def test_one_device_or_no_shm_shares_nothing(monkeypatch, tmp_path: Path) -> None:
    assert hs.share_root([0]) is None
    monkeypatch.setattr(hs, "SHM", tmp_path / "missing")
    assert hs.share_root([0, 1]) is None
    monkeypatch.setattr(hs, "SHM", tmp_path)
    root = hs.share_root([0, 1])
    assert root is not None and root.parent == tmp_path
    hs.remove_root(root)
    assert not root.exists()
