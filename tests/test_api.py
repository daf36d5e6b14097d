"""The Python API on the NumPy backend (host callables timed by wall clock), so CI exercises it without a GPU:
the model inline or by descriptor, verification before timing, and results that `report` and `plot` read."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest

import roofline
from roofline.errors import InputError
from roofline.records.document import ResultsDocument, Status

FAST = {"min_time": 0.0, "min_repeats": 3, "backend": "numpy"}


@pytest.fixture
def no_cupy(monkeypatch):
    """Make `import cupy` fail, as on a machine without CuPy (whatever this machine has)."""
    monkeypatch.setitem(sys.modules, "cupy", None)


def _add_case(n: int = 4096):
    rng = np.random.default_rng(1)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    out = np.empty_like(a)
    return a, b, out


def test_import_roofline_stays_light():
    code = "import sys, roofline; print(sorted(m for m in ('numpy', 'rich', 'yaml', 'matplotlib') if m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_measure_a_verified_callable_inline_model_with_a_spec():
    a, b, out = _add_case()
    r = roofline.measure(lambda: np.add(a, b, out=out), name="np.add", flops=a.size, bytes=3 * a.nbytes,
                         spec="h100", check=lambda: np.allclose(out, a + b), **FAST)
    assert r.status is Status.OK and r.verified is True and r.name == "np.add"
    assert r.time_median > 0 and r.repeats >= 3
    assert r.achieved_bandwidth == pytest.approx(3 * a.nbytes / r.time_median)
    assert r.fraction_of_ceiling == pytest.approx(r.sol_time / r.time_median)
    from roofline.load.specs import SpecCatalog

    assert r.bandwidth == SpecCatalog.bundled().resolve("h100").bandwidth


def test_reference_is_compared_with_what_the_callable_returns():
    a, b, _ = _add_case()
    r = roofline.measure(lambda: a + b, flops=a.size, bytes=3 * a.nbytes, reference=a + b, **FAST)
    assert r.status is Status.OK and r.verified is True
    r = roofline.measure(lambda: a - b, flops=a.size, bytes=3 * a.nbytes, reference=a + b, **FAST)
    assert r.status is Status.FAILED and r.time_median is None  # a wrong result is never timed
    assert "elements outside tolerance" in r.error


def test_a_failing_check_or_a_raising_callable_is_failed_not_timed():
    a, b, out = _add_case()
    r = roofline.measure(lambda: None, flops=1, bytes=1, check=lambda: False, **FAST)
    assert r.status is Status.FAILED and r.error == "check() returned False"

    def boom():
        raise ValueError("shape mismatch")

    r = roofline.measure(boom, flops=1, bytes=1, check=lambda: True, **FAST)
    assert r.status is Status.FAILED and "ValueError: shape mismatch" in r.error


class _Tensor0d:
    """A 0-d boolean device tensor as CuPy and PyTorch give it (shape (), a dtype naming bool, item()), without them."""

    def __init__(self, value: bool):
        self.shape, self.dtype, self._value = (), "torch.bool", value

    def __repr__(self) -> str:  # a stable test id (pytest-xdist workers must collect the same names)
        return f"tensor({self._value})"

    def item(self) -> bool:
        return self._value

    def __bool__(self) -> bool:
        raise AssertionError("the verdict is read with item(), once")


@pytest.mark.parametrize("value", [False, np.False_, np.array(False), np.array([False]), _Tensor0d(False), None, 0,
                                   0.0, 1, 0.25, "yes", np.array(1)], ids=repr)
def test_a_check_passes_only_on_a_true_boolean(value):
    r = roofline.measure(lambda: None, flops=1, bytes=4, check=lambda: value, **FAST)
    assert r.status is Status.FAILED and r.verified is False and r.time_median is None, r.error
    assert r.error.startswith("check() returned")


@pytest.mark.parametrize("value", [True, np.True_, np.array(True), np.array([[True]]), _Tensor0d(True)], ids=repr)
def test_a_check_that_returns_a_true_boolean_passes(value):
    r = roofline.measure(lambda: None, flops=1, bytes=4, check=lambda: value, **FAST)
    assert r.status is Status.OK and r.verified is True


def test_a_check_of_several_elements_is_an_error_not_a_verdict():
    with pytest.raises(InputError, match=r"shape \(2,\), whose truth is ambiguous"):
        roofline.measure(lambda: None, flops=1, bytes=4, check=lambda: np.array([True, False]), **FAST)


def test_without_a_check_the_result_is_unverified_and_says_why():
    a, b, out = _add_case()
    r = roofline.measure(lambda: np.add(a, b, out=out), flops=a.size, bytes=3 * a.nbytes, **FAST)
    assert r.verified is False and r.failed  # report fails unverified results
    codes = {w["code"]: w for w in r.warnings}
    assert "check=" in codes["unverified"]["fix"]
    assert "inputs=" in codes["cache-resident"]["fix"]  # no inputs= factory: repeats may hit the cache


def test_inputs_factory_rotates_fresh_argument_sets():
    made = []

    def inputs():
        a, b, out = _add_case(1024)
        made.append(out)
        return {"a": a, "b": b, "out": out}

    r = roofline.measure(lambda a, b, out: np.add(a, b, out=out), flops=1024, bytes=3 * 4096, inputs=inputs,
                         check=lambda: True, **FAST)
    assert r.extra["buffer_sets"] == len(made) > 1


def test_the_model_from_a_bundled_descriptor():
    n = 2**12
    a, b, out = _add_case(n)
    r = roofline.measure(lambda: np.add(a, b, out=out), descriptor="vector_add", params={"n": n}, spec="h200",
                         check=lambda: np.allclose(out, a + b), **FAST)
    assert (r.name, r.params, r.bytes, r.flops) == ("vector_add", {"n": n}, 3 * 4 * n, n)


def test_analyze_gives_the_analysis_without_running():
    r = roofline.analyze(descriptor="vector_add", params={"n": 2**20}, spec="h200")
    assert r.intensity == pytest.approx(1 / 12) and r.bound == "memory" and r.status is Status.SKIPPED


@pytest.mark.parametrize("kwargs, words", [
    ({}, "needs flops= and bytes="),
    ({"flops": 1, "bytes": 0}, "moves at least one byte"),
    ({"flops": float("nan"), "bytes": 4}, "finite count"),
    ({"flops": 1, "bytes": 4, "descriptor": "vector_add"}, "not both"),
    ({"flops": 1, "bytes": 4, "roof": "fp7", "spec": "h100"}, "no such roof"),
    ({"descriptor": "no_such_kernel"}, "no_such_kernel"),
])
def test_bad_models_are_input_errors(kwargs, words):
    with pytest.raises(InputError, match=words):
        roofline.measure(lambda: None, **{**FAST, **kwargs})


def test_results_write_a_file_report_and_plot_read(tmp_path, run_cli):
    a, b, out = _add_case()
    r1 = roofline.measure(lambda: np.add(a, b, out=out), name="add", flops=a.size, bytes=3 * a.nbytes,
                          spec="h100", check=lambda: True, **FAST)
    r2 = roofline.measure(lambda: np.multiply(a, b, out=out), name="mul", flops=a.size, bytes=3 * a.nbytes,
                          spec="h100", check=lambda: True, **FAST)
    path = tmp_path / "api.json"
    roofline.results([r1, r2], backend="numpy", spec="h100").write(path)
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert [k["name"] for k in doc["kernels"]] == ["add", "mul"] and doc["machine"]["id"] == "h100-sxm"
    assert ResultsDocument.from_json(doc).to_json() == doc
    report = run_cli("report", str(path), "--format", "json")
    assert report.code == 0, report.err
    assert run_cli("plot", "--results", str(path), "-o", str(tmp_path / "api.png")).code == 0


def test_results_take_the_backend_and_spec_the_results_were_measured_with(tmp_path, no_cupy):
    r = roofline.measure(lambda: None, name="noop", flops=1, bytes=4, spec="h100", check=lambda: True, **FAST)
    path = tmp_path / "r.json"
    roofline.results([r]).write(path)  # no backend=: not the GPU's (no CuPy here), the one r was measured on
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert doc["backend"] == "numpy" and doc["machine"]["id"] == "h100-sxm"
    assert "measured_with" not in doc["kernels"][0]  # said once, at the top
    assert roofline.results([r], spec="h100-sxm").machine["id"] == "h100-sxm"  # the same spec, named otherwise


@pytest.mark.parametrize("kwargs, words", [
    ({"spec": "h200"}, "spec='h200', but the results were measured against h100-sxm"),
    ({"backend": "cupy"}, "backend='cupy', but the results were measured with backend 'numpy'"),
])
def test_results_refuse_arguments_that_contradict_the_results(kwargs, words):
    r = roofline.measure(lambda: None, flops=1, bytes=4, spec="h100", check=lambda: True, **FAST)
    with pytest.raises(InputError, match=re.escape(words)):
        roofline.results([r], **kwargs)


def test_results_measured_against_different_specs_are_refused():
    with_spec = roofline.measure(lambda: None, flops=1, bytes=4, spec="h100", check=lambda: True, **FAST)
    without = roofline.measure(lambda: None, flops=1, bytes=4, check=lambda: True, **FAST)
    with pytest.raises(InputError, match="measured against different specs"):
        roofline.results([with_spec, without], backend="numpy")


def test_results_of_two_unnamed_callables_keep_both():
    first = roofline.measure(lambda: None, flops=1, bytes=4, check=lambda: True, **FAST)
    second = roofline.measure(lambda: None, flops=2, bytes=8, check=lambda: True, **FAST)
    doc = roofline.results([first, second, first], backend="numpy")
    assert [k.name for k in doc.kernels] == ["callable", "callable #2", "callable #3"]
    assert [k.flops for k in doc.kernels] == [1, 2, 1]


def test_results_of_something_else_is_an_input_error():
    with pytest.raises(InputError, match="item 0 is str: expected the KernelResult"):
        roofline.results(["x"], backend="numpy")


def test_show_prints_the_row(capsys):
    r = roofline.measure(lambda: 1, flops=1, bytes=4, check=lambda: True, **FAST)
    r.show()
    assert "callable" in capsys.readouterr().out  # a lambda is named 'callable'


def test_backend_name_is_the_deprecated_spelling_of_backend():
    """Issue 22: the API says backend= as the CLI says --backend; backend_name= still works, for one release."""
    fast = {k: v for k, v in FAST.items() if k != "backend"}
    with pytest.warns(DeprecationWarning, match="backend_name= is deprecated.*use backend="):
        r = roofline.measure(lambda: 1, flops=1, bytes=4, check=lambda: True, backend_name="numpy", **fast)
    assert r.extra["measured_with"]["backend"] == "numpy"
    with pytest.warns(DeprecationWarning, match="use backend="):
        doc = roofline.results([r], backend_name="numpy")
    assert doc.kernels[0].name == "callable"
    with pytest.raises(InputError, match="disagree"), pytest.warns(DeprecationWarning):
        roofline.measure(lambda: 1, flops=1, bytes=4, backend="cupy", backend_name="numpy", **fast)


def test_show_is_printing_at_the_api_not_in_the_result_type():
    """Issue 22: the typed result imports no renderer; what the API returns prints itself."""
    from roofline.api import Result
    from roofline.records.document import KernelResult

    r = roofline.measure(lambda: 1, flops=1, bytes=4, check=lambda: True, **FAST)
    assert isinstance(r, Result) and isinstance(r, KernelResult)
    assert isinstance(roofline.analyze(flops=1, bytes=4), Result)
    assert not hasattr(KernelResult, "show")
