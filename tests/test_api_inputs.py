"""The API on input that used to crash it or mislead it (issue 23): each bad argument is one InputError naming it,
NumPy's scalars are numbers, and `inputs=` rotation is sized from the arguments' real bytes, not the model's."""

from __future__ import annotations

import numpy as np
import pytest

import roofline
from roofline.errors import InputError
from roofline.measurement.backend_numpy import HOST_CACHE_BYTES

FAST = {"min_time": 0.0, "min_repeats": 2, "backend": "numpy", "spec": "h100-sxm"}


def _add(n: int = 1024):  # type: ignore[no-untyped-def]
    a = np.ones(n, dtype=np.float32)
    return a, a.copy(), np.empty_like(a)


@pytest.mark.parametrize("flops", [np.int64(1024), np.int32(1024), np.float64(1024.0), np.float32(1024.0),
                                   np.array(1024), np.uint64(1024)])
def test_numpy_numbers_are_counts(flops) -> None:  # type: ignore[no-untyped-def]
    a, b, out = _add()
    r = roofline.measure(lambda: np.add(a, b, out=out), flops=flops, bytes=np.int64(3 * a.nbytes),
                         check=lambda: True, **FAST)
    assert r.flops == 1024.0 and r.bytes == 3 * a.nbytes and type(r.flops) is float


@pytest.mark.parametrize("flops, words", [
    (10**400, r"flops=1000.*too large for a float"),
    (10**5000, r"flops=an integer of \d+ bits"),
    (-np.int64(1), "finite count of 0 or more"),
    (np.float64("inf"), "finite count of 0 or more"),
    ("1e9", r"flops='1e9'.*not str"),
    (np.bool_(True), "not bool"),
    (True, "not bool"),
    (np.ones(3), "not ndarray"),
], ids=["10**400", "10**5000", "-1", "inf", "str", "np.bool_", "bool", "array"])
def test_bad_counts_are_input_errors(flops, words) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError, match=words):
        roofline.measure(lambda: None, flops=flops, bytes=4, **FAST)
    with pytest.raises(InputError, match=words):
        roofline.analyze(flops=flops, bytes=4)


@pytest.mark.parametrize("reference", ["abc", np.array([object()] * 4), [np.ones(4), "x"], {"y": None}])
def test_a_reference_that_is_not_numbers_is_an_input_error(reference) -> None:  # type: ignore[no-untyped-def]
    calls = []
    with pytest.raises(InputError, match=r"reference= item \d"):
        roofline.measure(lambda: calls.append(1) or np.ones(4), flops=4, bytes=16, reference=reference, **FAST)
    assert calls == []  # refused before anything ran


def test_an_output_that_is_not_numbers_fails_the_result() -> None:
    r = roofline.measure(lambda: np.array(["a"] * 4), flops=4, bytes=16, reference=np.ones(4), **FAST)
    assert r.failed and "not numbers" in (r.error or "")


def test_spec_none_is_the_default_and_a_non_name_is_refused() -> None:
    a, b, out = _add()
    r = roofline.measure(lambda: np.add(a, b, out=out), flops=1, bytes=16, check=lambda: True,
                         **{**FAST, "spec": None})
    assert not r.failed
    assert roofline.analyze(flops=1, bytes=4, spec=None).peak_flops > 0  # the default, spec="auto"
    for bad in (5, "", ["h100"]):
        with pytest.raises(InputError, match="spec="):
            roofline.analyze(flops=1, bytes=4, spec=bad)
        with pytest.raises(InputError, match="spec="):
            roofline.measure(lambda: None, flops=1, bytes=4, **{**FAST, "spec": bad})


def test_results_of_something_else_is_an_input_error() -> None:
    with pytest.raises(InputError, match="item 0 is str"):
        roofline.results(["x"])


@pytest.mark.parametrize("declared", [1024, 1 << 20])
def test_rotation_is_sized_from_the_arguments_not_the_declared_bytes(declared: int) -> None:
    """1 MiB arguments declared as 1 KiB used to make 4096 copies (4 GB): the copies are counted from the arrays
    inputs() returns, whatever bytes= says."""
    made = []

    def inputs():  # type: ignore[no-untyped-def]
        a, b, out = _add(1 << 18)  # 3 arrays of 1 MiB
        made.append(1)
        return (a, b), {"out": out}  # nested: a tuple and a dict, as a factory may return

    def fn(pair, extra):  # type: ignore[no-untyped-def]
        np.add(*pair, out=extra["out"])

    r = roofline.measure(fn, flops=1 << 18, bytes=declared, inputs=inputs, check=lambda: True, **FAST)
    expected = -(-4 * HOST_CACHE_BYTES // (3 << 20))  # 4 x the cache over 3 MiB a set
    assert r.extra["buffer_sets"] == len(made) == expected
