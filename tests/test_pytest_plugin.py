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
                                 "*slow_add reached *% of its 3.35 TB/s ceiling; needs 99%*"])
    assert "Traceback" not in result.stdout.str()


def test_without_a_gpu_the_test_is_skipped_with_the_reason(pytester):
    pytester.makepyfile(test_user=USER_TESTS)
    pytester.makeconftest("import sys\nsys.modules['cupy'] = None  # as on a machine without CuPy\n")
    result = _run(pytester, "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*roofline: CuPy is not installed*"])
