"""The measurement protocol without a GPU: timing statistics and the stop rule, buffer rotation, output checks,
poisoned outputs, and FAILED kernels, through the library (roofline.measure) with the NumPy backend.

The test kernels live in tests/data/measure (m_add records what its run function receives)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from roofline.load.kernels import load_descriptor
from roofline.measurement import verify
from roofline.measurement.backend_numpy import NumpyBackend
from roofline.measurement.harness import measure_kernel
from roofline.measurement.implementation import load_implementation
from roofline.measurement.policy import MeasurePolicy, buffer_sets, done
from roofline.measurement.stats import SPREAD_WARNING, summarize
from roofline.measurement.verify import check_outputs
from roofline.errors import InputError

MEASURE = Path(__file__).resolve().parent / "data" / "measure"
BROKEN = MEASURE / "broken"
QUICK = MeasurePolicy(min_time=0.0, min_repeats=3, warmup_time=0.0, max_time=1.0)


def _kernel(name: str, folder: Path = MEASURE, **params: int):
    """(descriptor, workload, implementation) of a test kernel, parameters overridden."""
    from roofline.model.expr import compile_expr
    from roofline.model.workload import evaluate

    d = load_descriptor(folder / f"{name}.yaml")
    work = evaluate(d, {k: compile_expr(str(v)) for k, v in params.items()})
    return d, work, load_implementation(d)


def _small_cache_backend(cache_bytes: int, clock=None) -> NumpyBackend:
    backend = NumpyBackend() if clock is None else NumpyBackend(clock=clock)
    backend.cache_bytes = cache_bytes  # instance attribute: a tiny "cache" so rotation needs only a few sets
    return backend


# ---- timing statistics ------------------------------------------------------------------------------


def test_summarize_odd_count_median_min_max():
    s = summarize([9e-3, 1e-3, 2e-3])  # the median, not the mean (4 ms): one slow outlier does not move it
    assert (s.median, s.minimum, s.maximum, s.samples) == (2e-3, 1e-3, 9e-3, 3)
    assert s.spread == pytest.approx(9.0)
    assert s.noisy


def test_summarize_even_count_median_is_the_mean_of_the_middle_two():
    s = summarize([10.0, 1.0, 2.0, 3.0])
    assert s.median == 2.5
    assert (s.minimum, s.maximum) == (1.0, 10.0)


def test_summarize_spread_threshold_is_strict():
    assert not summarize([1.0, SPREAD_WARNING]).noisy  # exactly at the threshold: not noisy
    assert summarize([1.0, SPREAD_WARNING * 1.001]).noisy
    assert not summarize([5e-6] * 7).noisy
    assert summarize([5e-6] * 7).spread == 1.0


def test_summarize_zero_minimum_is_infinitely_noisy():
    s = summarize([0.0, 1.0])
    assert math.isinf(s.spread) and s.noisy


def test_summarize_refuses_no_samples():
    with pytest.raises(ValueError):
        summarize([])


@pytest.mark.parametrize(
    "repeats, total, expected",
    [
        (9, 2.0, False),   # enough time, too few runs (under max_time)
        (10, 0.49, False),  # enough runs, too little time
        (10, 0.5, True),   # both reached exactly
        (500, 0.6, True),
        (1, 3.0, True),    # the max_time cap stops a slow kernel before min_repeats
        (0, 2.99, False),
    ],
)
def test_done_needs_min_repeats_and_min_time_or_the_time_cap(repeats, total, expected):
    policy = MeasurePolicy(min_time=0.5, min_repeats=10, max_time=3.0)
    assert done(repeats, total, policy) is expected


class FakeTime:
    """A clock that only moves when the (fake) kernel runs: each run takes the next scripted duration."""

    def __init__(self, durations):
        self.now = 0.0
        self.durations = list(durations)
        self.runs = []

    def clock(self) -> float:
        return self.now

    def run(self, **arrays) -> None:
        self.runs.append(arrays)
        self.now += self.durations.pop(0)


def _time(durations, policy, sets=None):
    fake = FakeTime(durations)
    sets = sets if sets is not None else [{"x": 0}]
    timing = NumpyBackend(clock=fake.clock).time_runs(fake.run, sets, policy)
    return timing, fake


def test_time_runs_stops_once_min_repeats_and_min_time_hold():
    policy = MeasurePolicy(min_time=1.0, min_repeats=3, max_time=100.0, warmup_time=0.0)
    timing, fake = _time([0.5, 0.25, 0.5, 0.25, 8.0], policy)
    assert timing.samples == [0.5, 0.25, 0.5]  # 3 runs and 1.25 s: stop
    assert timing.repeats == 3 and timing.mode == "wall"
    assert fake.durations == [0.25, 8.0]  # nothing run beyond the rule


def test_time_runs_keeps_going_until_min_time():
    policy = MeasurePolicy(min_time=1.0, min_repeats=2, max_time=100.0, warmup_time=0.0)
    timing, _ = _time([0.25] * 6, policy)
    assert timing.samples == [0.25] * 4


def test_time_runs_keeps_going_until_min_repeats():
    policy = MeasurePolicy(min_time=0.1, min_repeats=5, max_time=100.0, warmup_time=0.0)
    timing, _ = _time([2.0] * 7, policy)
    assert timing.samples == [2.0] * 5


def test_time_runs_max_time_caps_a_slow_kernel():
    policy = MeasurePolicy(min_time=0.5, min_repeats=10, max_time=5.0, warmup_time=0.0)
    timing, _ = _time([2.0] * 10, policy)
    assert timing.samples == [2.0, 2.0, 2.0]  # 6 s ≥ max_time after 3 runs, though min_repeats is 10


def test_time_runs_max_samples_caps_a_fast_kernel():
    policy = MeasurePolicy(min_time=100.0, min_repeats=1, max_time=1000.0, warmup_time=0.0, max_samples=4)
    timing, _ = _time([0.001] * 10, policy)
    assert timing.repeats == 4


def test_time_runs_warmup_is_not_sampled():
    policy = MeasurePolicy(min_time=0.0, min_repeats=2, max_time=100.0, warmup_time=0.3)
    timing, fake = _time([0.25, 0.25, 1.0, 2.0, 4.0], policy)
    assert timing.samples == [1.0, 2.0]  # two warm-up runs (0.5 s ≥ 0.3 s), then the timed ones
    assert len(fake.runs) == 4


def test_time_runs_rotates_through_the_buffer_sets():
    policy = MeasurePolicy(min_time=0.0, min_repeats=7, max_time=100.0, warmup_time=0.0)
    sets = [{"x": i} for i in range(3)]
    _, fake = _time([0.25] * 7, policy, sets)
    assert [r["x"] for r in fake.runs] == [0, 1, 2, 0, 1, 2, 0]


def test_measure_kernel_figures_come_from_the_timed_samples():
    # Clock readings: start and warm-up check, then (t0, t1) per timed run → samples 1 ms, 9 ms, 2 ms.
    readings = iter([0.0, 0.0, 0.0, 1e-3, 1.0, 1.009, 2.0, 2.002])
    d, work, impl = _kernel("m_add", n=1000)
    backend = _small_cache_backend(1 << 30, clock=lambda: next(readings))
    entry = measure_kernel(d, work, None, impl, backend, QUICK)
    assert entry["status"] == "OK" and entry["verified"] is True and entry["error"] is None
    assert entry["repeats"] == 3
    assert entry["time_median"] == pytest.approx(2e-3)
    assert entry["time_min"] == pytest.approx(1e-3)
    assert entry["time_max"] == pytest.approx(9e-3)
    assert entry["achieved_bandwidth"] == pytest.approx(3 * 1000 * 4 / 2e-3)
    assert entry["achieved_flops"] == pytest.approx(1000 / 2e-3)
    assert entry["fraction_of_ceiling"] is None  # no machine: the ceiling is unknown
    assert entry["timing"] == "wall"
    assert any(w["code"] == "noisy" and w["text"].startswith("noisy: max/min = 9.00") and "--min-time" in w["fix"]
               for w in entry["warnings"])


def test_measure_kernel_with_a_machine_reports_the_fraction_of_ceiling(bundled_specs):
    from roofline.model.analysis import analyze

    readings = iter([0.0, 0.0, 0.0, 1e-3, 1.0, 1.001, 2.0, 2.001])
    d, work, impl = _kernel("m_add", n=1000)
    analysis = analyze(bundled_specs.resolve("h100"), work)
    entry = measure_kernel(d, work, analysis, impl, _small_cache_backend(1 << 30, lambda: next(readings)), QUICK)
    assert entry["status"] == "OK"
    assert entry["fraction_of_ceiling"] == pytest.approx(analysis.sol_time / 1e-3)
    assert entry["warnings"] == []  # steady samples, far below the ceiling


# ---- buffer rotation --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "working_set, cache, expected",
    [
        (400, 100, 1),  # exactly 4× the cache: no rotation
        (10_000, 100, 1),
        (100, 100, 4),  # ceil(4 × 100 / 100)
        (30, 100, 14),  # ceil(400 / 30)
        (399, 100, 2),
        (1, 100, 64),  # capped at max_buffer_sets
        (0, 100, 1),
        (100, 0, 1),
    ],
)
def test_buffer_sets(working_set, cache, expected):
    policy = MeasurePolicy(max_buffer_sets=64)
    assert buffer_sets(working_set, cache, policy) == expected


def test_buffer_sets_default_cap():
    assert buffer_sets(1, 1 << 30, MeasurePolicy()) == MeasurePolicy().max_buffer_sets == 4096


def test_small_kernel_rotates_distinct_arrays_across_repeats():
    d, work, impl = _kernel("m_add", n=1000)  # working set 12 000 B
    impl.module.CALLS.clear()
    backend = _small_cache_backend(16_000)  # 4 × 16 000 / 12 000 → 6 sets
    policy = MeasurePolicy(min_time=0.0, min_repeats=12, warmup_time=0.0, max_time=5.0)
    entry = measure_kernel(d, work, None, impl, backend, policy)
    assert entry["status"] == "OK", entry["error"]
    assert entry["buffer_sets"] == 6
    calls = impl.module.CALLS
    assert len(calls) == 1 + 12  # the checked run, then the timed runs
    timed = calls[1:]
    for name in ("a", "b", "c"):
        ids = [id(call[name]) for call in timed]
        assert len(set(ids)) == 6, name  # every set used ...
        assert all(x != y for x, y in zip(ids, ids[1:])), name  # ... and never the same arrays twice in a row
    # the sets are separate copies, not views of one array
    assert not any(np.shares_memory(timed[0]["a"], call["a"]) for call in timed[1:6])


def test_large_working_set_uses_one_buffer_set():
    d, work, impl = _kernel("m_add", n=1000)
    impl.module.CALLS.clear()
    entry = measure_kernel(d, work, None, impl, _small_cache_backend(1000), QUICK)
    assert entry["status"] == "OK" and entry["buffer_sets"] == 1
    assert len({id(call["c"]) for call in impl.module.CALLS}) == 1


# ---- poisoned outputs -------------------------------------------------------------------------------


def test_checked_run_receives_nan_poisoned_outputs():
    d, work, impl = _kernel("m_add", n=1000)
    impl.module.CALLS.clear()
    backend = _small_cache_backend(16_000)  # 6 buffer sets
    policy = MeasurePolicy(min_time=0.0, min_repeats=8, warmup_time=0.0, max_time=5.0)
    measure_kernel(d, work, None, impl, backend, policy)
    first = impl.module.CALLS[0]
    assert first["c_all_nan"] is True
    assert first["c"].dtype == np.float32 and first["c"].shape == (1000,)
    # and every other buffer set starts poisoned too: its first use sees NaN
    seen: set[int] = set()
    for call in impl.module.CALLS:
        if id(call["c"]) not in seen:
            seen.add(id(call["c"]))
            assert call["c_all_nan"], "a buffer set's output was not poisoned before its first run"
    assert len(seen) == 6


def test_integer_outputs_are_poisoned_with_a_sentinel():
    backend = NumpyBackend()
    out = backend.poisoned((5,), np.dtype("int32"))
    assert (out == np.iinfo(np.int32).max).all()
    assert np.isnan(backend.poisoned((2, 3), np.dtype("float16"))).all()


# ---- verification -----------------------------------------------------------------------------------


def _ref(n=1000, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, n).astype(np.float32)


def test_check_accepts_a_correct_output():
    ref = _ref()
    assert check_outputs({"c": ref.copy()}, {"c": ref.astype(np.float64)}, {}) is None


def test_check_catches_an_unwritten_element():
    ref = _ref()
    got = ref.copy()
    got[-1] = np.nan
    message = check_outputs({"c": got}, {"c": ref}, {})
    assert message == "c: 1 of 1000 elements not written (still poisoned), first at index (999,)"


def test_check_reports_the_first_of_several_unwritten_elements():
    ref = _ref().reshape(20, 50)
    got = ref.copy()
    got[3, 7] = got[10, 1] = got[19, 49] = np.nan
    message = check_outputs({"c": got}, {"c": ref}, {})
    assert message.startswith("c: 3 of 1000 elements not written")
    assert message.endswith("first at index (3, 7)")


def test_check_nan_where_the_reference_is_nan_is_fine():
    ref = _ref()
    ref[5] = np.nan
    got = ref.copy()
    assert check_outputs({"c": got}, {"c": ref}, {}) is None


def test_check_catches_an_element_outside_tolerance_with_index_got_expected():
    ref = _ref().astype(np.float64)
    got = ref.astype(np.float32)
    got[42] = np.float32(ref[42] + 0.5)
    got[43] = np.float32(ref[43] + 0.01)  # also wrong, but less: the worst one is reported
    message = check_outputs({"c": got}, {"c": ref}, {})
    assert message.startswith("c: 2 of 1000 elements outside tolerance (rtol 1e-05, atol 1e-06); worst at (42,)")
    assert f"got {float(got[42])!r}" in message
    assert f"expected {float(ref[42])!r}" in message


def test_check_catches_inf_against_a_finite_reference():
    ref = _ref()
    got = ref.copy()
    got[3] = np.inf
    assert "worst at (3,)" in check_outputs({"c": got}, {"c": ref}, {})


def test_check_honours_tolerance():
    ref = np.ones(100)
    got = ref.astype(np.float32)
    got[9] = 1.001  # relative error 1e-3
    assert "worst at (9,)" in check_outputs({"c": got}, {"c": ref}, {})  # float32 default rtol 1e-5
    assert check_outputs({"c": got}, {"c": ref}, {"rtol": 2e-3}) is None
    assert check_outputs({"c": got}, {"c": ref}, {"atol": 2e-3}) is None
    message = check_outputs({"c": got}, {"c": ref}, {"rtol": 1e-4})
    assert "rtol 0.0001" in message and "worst at (9,)" in message


def test_check_default_tolerance_depends_on_the_dtype():
    ref = np.ones(10)
    got16 = ref.astype(np.float16)
    got16[0] = np.float16(1.004)  # fine for float16 (rtol 1e-2) ...
    assert check_outputs({"c": got16}, {"c": ref}, {}) is None
    got64 = ref.copy()
    got64[0] = 1 + 1e-9  # ... while float64 allows 1e-12
    assert "worst at (0,)" in check_outputs({"c": got64}, {"c": ref}, {})


def test_check_shape_mismatch():
    ref = _ref(12)
    message = check_outputs({"c": np.zeros((3, 5), np.float32)}, {"c": ref}, {})
    assert message == "c: shape (3, 5), reference shape (12,)"


def test_check_missing_output():
    ref = _ref(4)
    message = check_outputs({"c": ref}, {"c": ref, "d": ref}, {})
    assert message is not None and "d" in message and "does not write" in message


def test_check_integer_sentinel_means_unwritten():
    ref = np.arange(10, dtype=np.int32)
    got = ref.copy()
    got[6] = np.iinfo(np.int32).max
    assert check_outputs({"c": got}, {"c": ref}, {}) == (
        "c: 1 of 10 elements not written (still poisoned), first at index (6,)"
    )
    got[6] = 7  # written, but wrong: integers get no tolerance
    assert "worst at (6,): got 7, expected 6" in check_outputs({"c": got}, {"c": ref}, {})


def test_check_integer_sentinel_that_the_reference_also_has_is_fine():
    ref = np.full(4, np.iinfo(np.int32).max, dtype=np.int32)
    assert check_outputs({"c": ref.copy()}, {"c": ref}, {}) is None


def test_check_chunked_reports_the_global_index_of_an_unwritten_element():
    n = verify.CHUNK + 1000  # > 2^22 elements: two chunks checked in parallel
    ref = np.ones(n, dtype=np.float32)
    got = ref.copy()
    got[verify.CHUNK + 123] = np.nan
    message = check_outputs({"c": got}, {"c": ref}, {})
    assert message == f"c: 1 of {n} elements not written (still poisoned), first at index ({verify.CHUNK + 123},)"


def test_check_chunked_reports_the_global_index_of_the_worst_element():
    n = verify.CHUNK + 1000
    ref = np.ones(n, dtype=np.float32)
    got = ref.copy()
    got[10] = 1.5  # first chunk, smaller error
    got[verify.CHUNK + 500] = 3.0  # second chunk, the worst
    message = check_outputs({"c": got}, {"c": ref}, {})
    assert message.startswith(f"c: 2 of {n} elements outside tolerance")
    assert f"worst at ({verify.CHUNK + 500},): got 3.0, expected 1.0" in message


def test_check_many_chunks_in_two_dimensions(monkeypatch):
    monkeypatch.setattr(verify, "CHUNK", 64)  # 1000 elements in 16 chunks
    ref = _ref().reshape(25, 40)
    got = ref.copy()
    got[24, 39] = np.nan
    got[20, 1] = np.nan
    assert check_outputs({"c": got}, {"c": ref}, {}).endswith("2 of 1000 elements not written (still poisoned), "
                                                               "first at index (20, 1)")
    got = ref.copy()
    got[17, 3] += 2
    got[2, 2] += 1
    assert "worst at (17, 3)" in check_outputs({"c": got}, {"c": ref}, {})


# ---- FAILED kernels ---------------------------------------------------------------------------------


def _assert_failed(entry):
    assert entry["status"] == "FAILED"
    assert entry["verified"] is False
    for key in ("time_median", "time_min", "time_max", "achieved_bandwidth", "achieved_flops",
                "fraction_of_ceiling"):
        assert entry[key] is None, key
    assert entry["repeats"] == 0
    assert entry["error"]


def test_kernel_that_leaves_the_last_element_unwritten_is_failed_and_not_timed(bundled_specs):
    from roofline.model.analysis import analyze

    d, work, impl = _kernel("m_unwritten", n=1000)
    clock_calls = []

    def clock():
        clock_calls.append(1)
        return 0.0

    analysis = analyze(bundled_specs.resolve("h100"), work)
    entry = measure_kernel(d, work, analysis, impl, _small_cache_backend(1 << 30, clock), QUICK)
    _assert_failed(entry)
    assert entry["error"] == "wrong result: c: 1 of 1000 elements not written (still poisoned), first at index (999,)"
    assert clock_calls == []  # never timed
    assert entry["sol_time"] == pytest.approx(analysis.sol_time)  # the analysis is still reported


def test_kernel_with_a_wrong_value_is_failed_with_index_got_expected():
    d, work, impl = _kernel("m_wrong_value", n=1000)
    entry = measure_kernel(d, work, None, impl, _small_cache_backend(1 << 30), QUICK)
    _assert_failed(entry)
    assert entry["error"].startswith("wrong result: c: 1 of 1000 elements outside tolerance")
    assert "worst at (7,): got " in entry["error"] and ", expected " in entry["error"]


def test_kernel_whose_inputs_raise_is_failed_with_the_reason():
    d, work, impl = _kernel("m_inputs_raise", n=1000)
    entry = measure_kernel(d, work, None, impl, NumpyBackend(), QUICK)
    _assert_failed(entry)
    assert "inputs/outputs/reference raised ValueError: cannot make inputs for this test kernel" in entry["error"]
    assert "m_inputs_raise.py:" in entry["error"]  # where it raised


def test_kernel_whose_run_raises_is_failed_with_the_reason(tmp_path):
    (tmp_path / "boom.yaml").write_text(
        "schema_version: 1\nname: boom\ndescription: run raises\npattern: map\ndtype: float32\n"
        "params: {n: 10}\nflops: n\nbytes: 2 * n * itemsize\nimplementation: boom.py\n"
    )
    (tmp_path / "boom.py").write_text(
        "INTERFACE = 1\n"
        "def inputs(p, dtype, rng):\n    return {'a': rng.uniform(1, 2, p['n']).astype(dtype)}\n"
        "def outputs(p, dtype):\n    return {'c': ((p['n'],), dtype)}\n"
        "def reference(p, a):\n    return {'c': a}\n"
        "def numpy(p, ctx):\n    def run(a, c):\n        raise RuntimeError('launch failed')\n    return run\n"
    )
    d = load_descriptor(tmp_path / "boom.yaml")
    from roofline.model.workload import evaluate

    entry = measure_kernel(d, evaluate(d), None, load_implementation(d), NumpyBackend(), QUICK)
    _assert_failed(entry)
    assert entry["error"].startswith("RuntimeError: launch failed (boom.py:")


def test_without_numpy_fn_the_reference_is_the_host_kernel(tmp_path):
    (tmp_path / "plain.yaml").write_text(
        "schema_version: 1\nname: plain\ndescription: reference only\npattern: map\ndtype: float32\n"
        "params: {n: 10}\nflops: n\nbytes: 2 * n * itemsize\nimplementation: plain.py\n"
    )
    (tmp_path / "plain.py").write_text(
        "INTERFACE = 1\n"
        "def inputs(p, dtype, rng):\n    return {'a': rng.uniform(1, 2, p['n']).astype(dtype)}\n"
        "def outputs(p, dtype):\n    return {'c': ((p['n'],), dtype)}\n"
        "def reference(p, a):\n    return {'c': 2.0 * a}\n"
    )
    d = load_descriptor(tmp_path / "plain.yaml")
    from roofline.model.workload import evaluate

    entry = measure_kernel(d, evaluate(d), None, load_implementation(d), NumpyBackend(), QUICK)
    assert entry["status"] == "OK", entry["error"]
    assert entry["verified"] is True and entry["time_median"] > 0 and entry["repeats"] >= 3


@pytest.mark.parametrize(
    "name, words",
    [("m_bad_interface", "INTERFACE: expected INTERFACE = 1"), ("m_no_reference", "reference: the implementation")],
)
def test_bad_implementation_is_an_input_error_naming_the_file(name, words):
    d = load_descriptor(BROKEN / f"{name}.yaml")
    with pytest.raises(InputError) as exc_info:
        load_implementation(d)
    assert str(BROKEN / f"{name}.py") in exc_info.value.message
    assert words in exc_info.value.message


class _StreamRecording(NumpyBackend):
    """A backend with current(), as CupyBackend has: build, the checked run and timing must happen inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.active = False
        self.seen: list[str] = []

    def current(self):  # type: ignore[no-untyped-def]
        import contextlib

        @contextlib.contextmanager
        def entered():  # type: ignore[no-untyped-def]
            self.active = True
            try:
                yield
            finally:
                self.active = False

        return entered()

    def build(self, impl, params, ctx, outputs):  # type: ignore[no-untyped-def]
        self.seen.append(f"build {self.active}")
        return super().build(impl, params, ctx, outputs)

    def synchronize(self) -> None:
        self.seen.append(f"synchronize {self.active}")

    def time_runs(self, run, sets, policy):  # type: ignore[no-untyped-def]
        self.seen.append(f"time {self.active}")
        return super().time_runs(run, sets, policy)


def test_the_backends_stream_is_current_while_a_kernel_is_built_checked_and_timed():
    d, work, impl = _kernel("m_add", n=1000)
    backend = _StreamRecording()
    entry = measure_kernel(d, work, None, impl, backend, QUICK)
    assert entry["status"] == "OK"
    assert backend.seen == ["build True", "synchronize True", "time True"] and backend.active is False
