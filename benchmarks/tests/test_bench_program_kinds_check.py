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


def test_the_per_kernel_table_shows_the_instruction_types_ncu_counted(tmp_path, machine):
    """benchmarks/triton_flops_per_kernel.py: each Triton kernel's model against ncu, with the thread instructions
    by type; the fp16 -> fp32 copy runs one hadd (HADD2.F32) per element and nothing else, as modelled."""
    pspec = importlib.util.spec_from_file_location("triton_flops_per_kernel",
                                                   BENCHMARKS / "triton_flops_per_kernel.py")
    pk2 = importlib.util.module_from_spec(pspec)
    sys.modules["triton_flops_per_kernel"] = pk2  # its dataclasses look their module up
    pspec.loader.exec_module(pk2)
    root = _capture(tmp_path, True)
    check = pk.trace_check.check_program(root / "mix", "mix", machine, machine.name, [root / "mix" / "kernels"])
    kernels = {k.name: k for k in pk2.per_kernel(check, pk2.instruction_rows(root / "mix" / "mix.ncu.csv"))}
    copy = kernels["triton_poi_fused__to_copy_5"]
    assert copy.launches == 12
    assert copy.counts["hadd"] == copy.ncu == copy.model == 12 * 2752512
    assert copy.counts["fadd"] == copy.counts["ffma"] == 0
    assert all(k.ratio is None or 0.5 <= k.ratio <= 2.0 for k in kernels.values())
    assert "| triton_poi_fused__to_copy_5 | 12 |" in pk2.table(list(kernels.values()))
