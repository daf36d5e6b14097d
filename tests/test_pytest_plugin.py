"""The pytest plugin through pytester: a user's test suite that calls roofline_check passes, fails in one line, is
skipped without a GPU, and writes a results file that `roofline report` and `roofline plot` read."""

from __future__ import annotations

import json

import pytest

pytest_plugins = ["pytester"]

USER_TESTS = """
import numpy as np

a = np.random.default_rng(0).random(1 << 14, dtype=np.float32)
b = np.random.default_rng(1).random(1 << 14, dtype=np.float32)
out = np.empty_like(a)

def test_add_is_right(roofline_check):
    r = roofline_check(lambda: np.add(a, b, out=out), name="np_add", flops=a.size, bytes=3 * a.nbytes,
                       check=lambda: np.allclose(out, a + b))
    assert r.verified

def test_mul_is_right(roofline_check):
    roofline_check(lambda: np.multiply(a, b, out=out), name="np_mul", flops=a.size, bytes=3 * a.nbytes,
                   check=lambda: np.allclose(out, a * b))
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


def test_the_fixture_measures_and_writes_one_results_file(pytester, run_cli):
    pytester.makepyfile(test_user=USER_TESTS)
    out = pytester.path / "roofline.json"
    result = _run(pytester, "--roofline-backend", "numpy", "--roofline-spec", "h100", f"--roofline-json={out}")
    result.assert_outcomes(passed=2)
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert sorted(k["name"] for k in doc["kernels"]) == ["np_add", "np_mul"]
    assert all(k["verified"] for k in doc["kernels"])
    assert run_cli("report", str(out)).code == 0
    assert run_cli("plot", "--results", str(out), "-o", str(pytester.path / "chart.png")).code == 0


def test_a_wrong_result_and_a_missed_target_fail_in_one_line(pytester):
    pytester.makepyfile(test_user="""
import numpy as np

a = np.ones(1024, dtype=np.float32)
out = np.empty_like(a)

def test_wrong(roofline_check):
    roofline_check(lambda: np.add(a, a, out=out), name="wrong_add", flops=1024, bytes=12288,
                   check=lambda: np.allclose(out, 3 * a))

def test_short_of_its_ceiling(roofline_check):
    roofline_check(lambda: np.add(a, a, out=out), name="slow_add", flops=1024, bytes=12288,
                   check=lambda: True, at_least=0.99)
""")
    result = _run(pytester, "--roofline-backend", "numpy", "--roofline-spec", "h100")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*wrong_add FAILED: check() returned False*",
                                 "*slow_add reached *% of its 3.35 TB/s ceiling; needs 99.0%*"])
    assert "Traceback" not in result.stdout.str()


def test_without_a_gpu_the_test_is_skipped_with_the_reason(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    pytester.makeconftest("import sys\nsys.modules['cupy'] = None  # as on a machine without CuPy\n")
    result = _run(pytester, "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*roofline: CuPy is not installed*"])


UNNAMED_TESTS = """
import numpy as np

a = np.ones(4096, dtype=np.float32)
out = np.empty_like(a)

def test_add(roofline_check):
    roofline_check(lambda: np.add(a, a, out=out), flops=a.size, bytes=3 * a.nbytes,
                   check=lambda: bool((out == 2).all()))

def test_mul(roofline_check):
    roofline_check(lambda: np.multiply(a, a, out=out), flops=a.size, bytes=3 * a.nbytes,
                   check=lambda: bool((out == 1).all()))
    roofline_check(lambda: np.multiply(a, a, out=out), flops=a.size, bytes=3 * a.nbytes,
                   check=lambda: bool((out == 1).all()))

def test_named_alike(roofline_check):
    roofline_check(lambda: np.add(a, a, out=out), name="same", flops=1, bytes=4, check=lambda: True)

def test_named_alike_too(roofline_check):
    roofline_check(lambda: np.add(a, a, out=out), name="same", flops=1, bytes=4, check=lambda: True)
"""


def test_unnamed_callables_are_named_after_their_test_and_none_is_dropped(pytester):
    pytester.makepyfile(test_user=UNNAMED_TESTS)
    out = pytester.path / "roofline.json"
    result = _run(pytester, "--roofline-backend", "numpy", "--roofline-spec", "h100", f"--roofline-json={out}")
    result.assert_outcomes(passed=4)
    names = sorted(k["name"] for k in json.loads(out.read_text(encoding="utf-8"))["kernels"])
    assert names == ["same [test_user.py::test_named_alike]", "same [test_user.py::test_named_alike_too]",
                     "test_user.py::test_add", "test_user.py::test_mul", "test_user.py::test_mul #2"]


def test_results_of_xdist_workers_are_merged_into_one_file(pytester):
    pytest.importorskip("xdist", reason="needs pytest-xdist")
    pytester.makepyfile(test_user="""
import pytest

@pytest.mark.parametrize("i", range(8))
def test_each(roofline_check, i):
    roofline_check(lambda: None, name=f"k{i}", flops=1, bytes=4, check=lambda: True)
""")
    out = pytester.path / "roofline.json"
    result = _run(pytester, "-n", "2", "--roofline-backend", "numpy", "--roofline-spec", "h100",
                  f"--roofline-json={out}")
    result.assert_outcomes(passed=8)
    doc = json.loads(out.read_text(encoding="utf-8"))  # both workers' results, not the last worker's
    assert [k["name"] for k in doc["kernels"]] == [f"k{i}" for i in range(8)]
    assert doc["backend"] == "numpy" and doc["machine"]["id"] == "h100-sxm"


def test_a_check_that_returns_no_true_boolean_fails_the_test_in_one_line(pytester):
    pytester.makepyfile(test_user="""
import numpy as np
import pytest

@pytest.mark.parametrize("value", [np.False_, np.array(False), None, 0], ids=["np.False_", "0-d", "None", "zero"])
def test_wrong(roofline_check, value):
    roofline_check(lambda: None, name="wrong", flops=1, bytes=4, check=lambda: value)

def test_ambiguous(roofline_check):
    roofline_check(lambda: None, name="amb", flops=1, bytes=4, check=lambda: np.array([True, False]))
""")
    result = _run(pytester, "--roofline-backend", "numpy")
    result.assert_outcomes(failed=5)
    assert sum(line.startswith("wrong FAILED: check() returned") for line in result.stdout.lines) == 4
    result.stdout.fnmatch_lines(["*roofline: check() returned an array of shape (2,), whose truth is ambiguous*"])
    assert "Traceback" not in result.stdout.str()


def test_without_a_spec_only_at_least_needs_the_ceiling_and_the_header_says_so(pytester):
    pytester.makepyfile(test_user="""
def test_verified(roofline_check):
    roofline_check(lambda: None, name="plain", flops=1, bytes=4, check=lambda: True)

def test_share_asked(roofline_check):
    roofline_check(lambda: None, name="share", flops=1, bytes=4, check=lambda: True, at_least=0.5)
""")
    result = _run(pytester, "--roofline-backend", "numpy")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["roofline: --roofline-backend numpy without --roofline-spec*",
                                 "*share: the ceiling is unknown (no spec), so at_least= cannot hold*"])


@pytest.mark.parametrize("where, words", [("folder", "it is a folder"), ("no/such/r.json", "does not exist")])
def test_a_results_path_that_cannot_be_written_stops_the_run_before_it_starts(pytester, where, words):
    pytester.makepyfile(test_user=USER_TESTS)
    (pytester.path / "folder").mkdir()
    result = _run(pytester, "--roofline-backend", "numpy", f"--roofline-json={pytester.path / where}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--roofline-json *: cannot write: *{words}*"])
    assert "passed" not in result.stdout.str()
