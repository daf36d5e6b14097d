"""benchmarks/h200_sweep_predict.py's plumbing on the host: --backend numpy --dry end to end, the time budget, and
--recheck of the real H200 sweep, all with the committed H200 spec and sweep of tests/data (never the record under
docs/measurements/, which each GPU run replaces)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "h200_sweep_predict.py"


def _script(*args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    """The script with the committed H200 spec of tests/data (tests read nothing under docs/)."""
    if "--calibrated" not in args:
        args = (*args, "--calibrated", str(ROOT / "tests" / "data" / "h200" / "measured-2026-11-30.yaml"))
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)


def test_the_h200_script_runs_end_to_end_on_the_host(tmp_path):
    out = tmp_path / "out"
    run = _script("--backend", "numpy", "--dry", "--only", "sum,softmax_fused", "--out", str(out),
                  tmp_path=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "sum: OK" in run.stdout and "softmax_fused: OK" in run.stdout and "elapsed:" in run.stdout
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert [r["status"] for r in summary["runs"]] == ["OK", "OK"]
    assert len(summary["rows"]) == 6  # 3 sizes each
    assert {r["kernel"] for r in summary["rows"]} == {"sum", "softmax_fused"}
    assert all(r["measured"] and r["predicted"] > 0 for r in summary["rows"])
    assert "verdict: first-principles within 25 % at" in (out / "summary.txt").read_text(encoding="utf-8")
    import tarfile

    with tarfile.open(out / "sweeps.tgz") as tar:  # packed: a device call returns at most 8 files
        names = set(tar.getnames())
        assert {"sweeps/sum.json", "sweeps/sum.log", "sweeps/softmax_fused.json"} <= names
        assert b"--model first-principles" in tar.extractfile("sweeps/sum.log").read()
    assert sorted(p.name for p in out.iterdir()) == ["summary.json", "summary.txt", "sweeps.tgz"]


def test_the_h200_script_stops_starting_kernels_when_out_of_time(tmp_path):
    run = _script("--backend", "numpy", "--dry", "--only", "sum,copy", "--budget", "1", "--out",
                  str(tmp_path / "o"), tmp_path=tmp_path)
    assert run.returncode == 1
    runs = json.loads((tmp_path / "o" / "summary.json").read_text(encoding="utf-8"))["runs"]
    assert [r["status"] for r in runs] == ["skipped: out of time"] * 2


def test_the_h200_script_rechecks_the_recorded_sweep_without_a_device(tmp_path):
    run = _script("--recheck", str(ROOT / "tests" / "data" / "h200" / "sweep-vector_add_float4.json"),
                  "--calibrated", str(ROOT / "tests" / "data" / "h200" / "measured-2026-11-30.yaml"), tmp_path=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "verdict: first-principles within 25 % at 17 of 17 sizes (0 FAILED); worst -20.8%; PASS" in run.stdout
