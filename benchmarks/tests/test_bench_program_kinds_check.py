"""benchmarks/program_kinds_check.py on the host, on the H100 capture of `program_kinds.py --kind mix` (2026-12-06:
its trace, ncu's CSV trimmed with benchmarks/trim_ncu_csv.py, and Inductor's kernels as the capture copied them
into mix/kernels): the Triton FLOPs figure is taken with the captured sources and, beside it, without them."""

from __future__ import annotations

import gzip
import importlib.util
import shutil
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
DATA = ROOT / "tests" / "data" / "kineto"
sys.path.insert(0, str(BENCHMARKS))
spec = importlib.util.spec_from_file_location("program_kinds_check", BENCHMARKS / "program_kinds_check.py")
pk = importlib.util.module_from_spec(spec)
sys.modules["program_kinds_check"] = pk
spec.loader.exec_module(pk)


def _capture(root: Path, with_kernels: bool) -> Path:
    d = root / "mix"
    d.mkdir(parents=True)
    shutil.copy(DATA / "compiled" / "mix-h100.json.gz", d / "mix.trace.json.gz")
    (d / "mix.ncu.csv").write_bytes(gzip.decompress((DATA / "h100-mix.ncu.csv.gz").read_bytes()))
    if with_kernels:
        with tarfile.open(DATA / "compiled" / "mix-h100-kernels.tar.gz") as tar:
            tar.extractall(d / "kernels", filter="data")
    return root


@pytest.fixture(scope="module")
def machine():
    from roofline.load.specs import SpecCatalog

    return SpecCatalog.bundled().resolve("h100-sxm")


def test_the_captured_kernels_are_read_and_both_triton_figures_reported(tmp_path, machine):
    f = pk.figures(_capture(tmp_path, True), "mix", machine, machine.name)
    assert f.matched == f.ncu_launches == 263
    assert f.triton_in_band >= 0.95  # with the sources: 90.4 % before the fp16 -> fp32 store rule
    assert f.triton_in_band_names >= 0.85  # from the names: 61.8 % before the fp16 input conversions
    assert f.bytes_in_band >= 0.95
    assert pk.verdicts(f) == []
    assert "| without sources |" in pk.table([f])


def test_without_a_kernels_folder_only_the_names_figure_exists(tmp_path, machine):
    f = pk.figures(_capture(tmp_path, False), "mix", machine, machine.name)
    assert f.triton_in_band_names is None
    assert f.triton_in_band >= 0.85
