"""benchmarks/multitensor_check.py on the host: the 2-layer Llama step of 2026-12-01 (its fused AdamW's 21
parameters recorded by the profiler) beside ncu's counters of the same launches. Each full launch of 320 blocks
reads 320 x 65,536 bfloat16 elements of four lists (167.8 MB; ncu counted 165-168 MB) and writes three (125.8 MB;
ncu counted 99-101 MB: the rest was still in the L2 when the kernel ended)."""

from __future__ import annotations

import gzip
import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
DATA = ROOT / "tests" / "data" / "kineto"
spec = importlib.util.spec_from_file_location("multitensor_check", BENCHMARKS / "multitensor_check.py")
mc = importlib.util.module_from_spec(spec)
sys.modules["multitensor_check"] = mc
spec.loader.exec_module(mc)


def test_the_llama_steps_adamw_launches_against_ncu(tmp_path) -> None:
    csv = tmp_path / "train.ncu.csv"
    with gzip.open(DATA / "h200-train.ncu.csv.gz", "rb") as src, open(csv, "wb") as dst:
        shutil.copyfileobj(src, dst)
    trace, ncu = mc.trace_launches(DATA / "h200-train.json.gz", "h200"), mc.ncu_launches(csv)
    assert [t["grid"] for t in trace] == [21, 320, 320, 320, 320, 117]
    assert len(ncu) == len(trace)
    for t, n in list(zip(trace, ncu))[1:]:
        assert t["which"] == "shape" and t["dtype"] == "bfloat16"
        assert t["grid_model"] == 7 * 2 * 65536 * t["grid"]  # 4 lists read, 3 written, 2 B each
        assert t["model"] / n["bytes"] == pytest.approx(1.1, abs=0.25)  # the document's share, by blocks
        assert t["grid_model"] / n["bytes"] == pytest.approx(1.1, abs=0.25)
    assert trace[0]["which"] == "shape" and trace[0]["model"] == 21 * 2 * 4  # the step counter
    assert mc.main([str(DATA / "h200-train.json.gz"), str(csv), "--markdown", str(tmp_path / "t.md")]) == 0
    assert "| all |" in (tmp_path / "t.md").read_text()
