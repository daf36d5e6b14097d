"""benchmarks/h200_model_check.py on the host: matmul_tiled's per-wave DRAM prediction by hand, the verdict of each
row (within ±10 %, the tool's own warning, the known reason) and the table from a real saved `measure --profile
ncu` of the H200."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"  # the scripts under test; their fixtures are committed under tests/data
spec = importlib.util.spec_from_file_location("h200_model_check", BENCHMARKS / "h200_model_check.py")
check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(check)


def test_tiled_prediction_by_hand():
    # N = 4096: 32² = 1024 blocks, 264 resident (2 per SM × 132): 4 waves (the last partial, still every column);
    # a wave streams B (64 MiB) + 9 block rows of A (18 MiB) + 264 C tiles (16.5 MiB) > 60 MiB, so B is read 4
    # times: A + C + 4 B = 6 N² words against 3 N², 2.00× (ncu on the H200: 1.98×)
    assert check.tiled_prediction(4096) == pytest.approx(2.0)
    # N = 3072: 576 blocks, 3 waves; B 36 MiB + 11 rows of A 16.5 MiB + C 16.5 MiB = 69 MiB > 60: (2 + 3) / 3
    assert check.tiled_prediction(3072) == pytest.approx(5 / 3)
    assert check.tiled_prediction(2048) == 1.0  # 256 blocks: one wave
    assert check.tiled_prediction(3072, l2=80 * 2**20) == 1.0  # a larger L2 keeps B between waves


def entry(name, params, model, read, write, flag=None):
    return {"name": name, "params": params, "bytes": model, "status": "OK",
            "counters": {"dram_read": read, "dram_write": write}, "counter_flag": flag}


def test_verdicts():
    cells, ok = check.row(entry("copy", {"n": 2**28}, 2.147e9, 1.07e9, 1.07e9))
    assert cells[4] == "1.00" and cells[5] == "ok" and ok
    flag = "reads 2.0× the model (...): re-reads or uncoalesced access?"
    cells, ok = check.row(entry("matmul_tiled", {"n": 4096}, 201.3e6, 380e6, 16e6, flag))
    assert cells[5].startswith("WARN " + flag + "; the kernel, not the model: B (64 MiB), a wave's") and ok
    assert "each of the 4 waves of resident blocks reads B again (predicted 2.00×" in cells[5]
    cells, ok = check.row(entry("softmax_fused", {"rows": 4096}, 33.6e6, 16.8e6, 0.5e6))
    assert "16 MiB short, within the L2's 60 MiB" in cells[5] and ok
    cells, ok = check.row(entry("mystery", {}, 1e9, 3e9, 0, "reads 3.0× the model"))
    assert cells[5] == "WARN reads 3.0× the model; no known reason" and not ok
    cells, ok = check.row({"name": "x", "params": {}, "bytes": 1e9, "status": "FAILED"})
    assert cells[5].startswith("NO COUNTERS") and not ok


def test_table_from_a_saved_h200_profile(tmp_path):
    (tmp_path / "groups").mkdir()
    shutil.copy(ROOT / "tests" / "data" / "results" / "h200_ncu_profiled.json", tmp_path / "groups" / "g00.json")
    text, ok = check.table(check.load([tmp_path]), [("copy", "NOT RUN (deadline)")])
    lines = text.splitlines()
    assert [c.strip() for c in lines[0].split(" | ")[:5]] == ["kernel", "params", "model DRAM", "ncu DRAM", "ncu/model"]
    by = {line.split(" | ")[0].strip(): line for line in lines[1:-1]}
    assert by["sum"].endswith("| ok") and "| 1.04" in by["sum"]
    assert "| 0.18" in by["stencil5_naive"] and "no known reason" in by["stencil5_naive"]
    assert by["copy"].endswith("NOT RUN (deadline)")
    assert not ok and lines[-1].startswith("1 of 6 within ±10%")
