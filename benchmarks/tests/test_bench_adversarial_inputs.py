"""The cheap cases of benchmarks/adversarial_inputs.py (issue 39's hostile inputs and output files), each run as a
user runs the CLI: a subprocess under a 2 GiB address-space limit and a 30 s timeout, ending in exit 2 with one
message naming the file or field, or in a flagged correct answer; never a traceback, a hang or a lost file. The
1 GB inflate cases run in the script itself (`python benchmarks/adversarial_inputs.py`)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "adversarial_inputs.py"


def _sweep():
    spec = importlib.util.spec_from_file_location("adversarial_inputs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


SWEEP = _sweep()
FAST = [c for c in SWEEP.CASES if c.fast]


@pytest.mark.parametrize("case", FAST, ids=[c.name for c in FAST])
def test_a_hostile_case_ends_as_a_user_needs(case, tmp_path):
    outcome, why = SWEEP.run_case(case, tmp_path)
    assert why is None, f"{case.name}: {why}"


def test_the_sweep_covers_every_class_and_the_slow_cases_exist():
    kinds = {c.kind for c in SWEEP.CASES}
    assert kinds == {"input", "output", "figure", "trace-model", "report"}
    assert {"gz-inflates-past-cap", "gz-inflates-to-1gb"} <= {c.name for c in SWEEP.CASES if not c.fast}


def test_the_sweep_fails_on_a_case_that_ends_badly(tmp_path):
    """The judge is not a rubber stamp: a traceback, a wrong status or a missing name fails the case."""
    case = SWEEP.Case("probe", "input", lambda d: [], 2, ("x.json",))
    assert "traceback" in SWEEP.judge(case, SWEEP.Outcome(101, "Traceback (most recent call last):\n", 0.1), tmp_path)
    assert "exit 0" in SWEEP.judge(case, SWEEP.Outcome(0, "", 0.1), tmp_path)
    assert "lacks" in SWEEP.judge(case, SWEEP.Outcome(2, "error: y.json: bad\n", 0.1), tmp_path)
    assert SWEEP.judge(case, SWEEP.Outcome(2, "error: x.json: bad\n", 0.1), tmp_path) is None
