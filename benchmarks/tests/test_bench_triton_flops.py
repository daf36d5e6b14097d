"""benchmarks/triton_flops_check.py and triton_ncu_counts.py on the host: the kernels the GPU check compiles are
valid Python, every case names table entries that exist, the whole Inductor kernels read as the model reads them,
and the ncu pairing finds the committed Llama step's bytes within 0.5-2x as tests/test_triton_kernels.py does."""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import json
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
DATA = ROOT / "tests" / "data" / "kineto" / "compiled"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


check = _load("triton_flops_check")
counts = _load("triton_ncu_counts")


def test_every_case_compiles_to_a_uniquely_named_kernel_of_known_table_entries():
    from roofline.model.ops.triton_flops import OPS

    tree = ast.parse(check.module_text(check.CASES))
    names = [f.name for f in tree.body if isinstance(f, ast.FunctionDef)]
    assert len(names) == len(set(names)) == len(check.CASES) + 1 + len(check.CLASSES)
    assert {k for _, keys, _, _ in check.CASES for k in keys} <= set(OPS)
    assert set(OPS) <= {k for _, keys, _, _ in check.CASES for k in keys}  # every entry is checked on the GPU


def test_the_whole_inductor_kernels_read_as_the_model_reads_them():
    from roofline.model.ops.triton import read_source

    got = {}
    for name, (signature, rows, r0, rblock, body) in check.CLASSES.items():
        source = read_source(f"triton_meta={{'signature': {signature}}}\n{body}")
        got[name] = (source.flops_per_point, source.flops_per_row, source.r_block, source.numels["r0_numel"])
    assert got == {"ln_backward": (13, 0, 1024, 768), "rms_norm": (5, 2, 1024, 1024)}


def test_the_counted_triton_launches_pair_with_the_trace(tmp_path):
    with tarfile.open(DATA / "llama-train-compiled-kernels.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    committed = json.loads((DATA / "llama-train-compiled-ncu-triton.json").read_text())["kernels"]
    results = {"kernels": [{"name": k["kernel_name"], "bytes": k["bytes"], "time_median": k["time"]}
                           for k in committed] + [{"name": "nvjet_gemm", "bytes": 1.0}]}
    counted = counts.counted_triton(results)
    assert len(counted) == len(committed) == 42 and all(c["flops"] is None for c in counted)
    from roofline.kineto.document import import_traces

    doc, _ = import_traces([DATA / "llama-train-compiled.json.gz"], "h200", triton_source=[tmp_path])
    share, outside = counts.share_within(doc, counted, "bytes")
    assert share == pytest.approx(0.979, abs=0.01)
    assert counts.share_within(doc, counted, "flops") == (None, [])


def _fake(names, module: str):
    space = SimpleNamespace(**{n: object() for n in names})
    space.__name__ = module
    return space


def test_a_function_this_triton_lacks_is_skipped_with_its_reason_and_the_rest_kept():
    """On Triton 3.6 with CUDA, libdevice.fast_tanhf (ROCm's) is missing from triton.language.extra.cuda.libdevice:
    the whole check died compiling it; now that case alone is reported and skipped, every other one kept."""
    called = {m: set() for m in ("libdevice", "tl", "tl_math", "triton_helpers")}
    for _, _, _, expr in check.CASES:
        for m, f in re.findall(r"\b(libdevice|tl_math|tl|triton_helpers)\.(\w+)\(", expr):
            called[m].add(f)
    modules = {m: _fake(sorted(names), f"fake.{m}") for m, names in called.items()}
    del modules["libdevice"].fast_tanhf
    usable, missing = check.split_cases(check.CASES, modules, "3.6.0")
    assert missing == {"fast_tanhf": "not available in triton 3.6.0: libdevice.fast_tanhf (not in fake.libdevice)"}
    assert [c[0] for c in usable] == [c[0] for c in check.CASES if c[0] != "fast_tanhf"]
    text = check.module_text(usable)
    assert "fast_tanhf" not in text and "def k_libdevice_exp(" in text
    assert "from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math" in text  # as Inductor


def test_the_report_names_what_was_skipped_and_judges_the_rest(tmp_path, monkeypatch):
    """The run as on the H100 with Triton 3.6 (torch, triton and ncu stood in for): fast_tanhf is missing from
    CUDA's libdevice and one case fails to compile in the child; both are reported with their reason, every other
    case is judged against the table, and the report and JSON are written to $OUT."""
    from roofline.model.ops.triton_flops import OPS

    fake_torch = SimpleNamespace(cuda=SimpleNamespace(is_available=lambda: True, get_device_name=lambda: "H100"),
                                 __version__="2.11.0")
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "triton", SimpleNamespace(__version__="3.6.0"))
    called = {m: set() for m in ("libdevice", "tl", "tl_math", "triton_helpers")}
    for _, _, _, expr in check.CASES:
        for m, f in re.findall(r"\b(libdevice|tl_math|tl|triton_helpers)\.(\w+)\(", expr):
            called[m].add(f)
    modules = {m: _fake(sorted(names), f"triton.language.extra.cuda.{m}") for m, names in called.items()}
    del modules["libdevice"].fast_tanhf
    monkeypatch.setattr(check, "backend_modules", lambda: modules)

    def ncu(workdir):
        (workdir / "failed.json").write_text(json.dumps({"libdevice_erf": "CompilationError: no erf"}))
        n, base = check.N, 1.0
        counts = {"k_baseline": base * n}
        for name, keys, _, _ in check.CASES:
            if name not in ("fast_tanhf", "libdevice_erf"):
                table = sum(OPS[k].flops for k in keys) + sum(OPS[k].flops for k in check.EXTRA.get(name, ()))
                counts[f"k_{name}"] = (table + base) * n
        return counts

    monkeypatch.setattr(check, "ncu_counts", ncu)
    monkeypatch.setattr(check, "CLASSES", {})
    monkeypatch.setenv("OUT", str(tmp_path))
    monkeypatch.setattr(sys, "argv", ["triton_flops_check.py"])
    assert check.main() == 0
    text = (tmp_path / "triton_flops_check.txt").read_text()
    assert "[not available in triton 3.6.0: libdevice.fast_tanhf (not in triton.language.extra.cuda.libdevice)]" in text
    assert "[did not compile or run: CompilationError: no erf]" in text
    assert "0 disagreement(s), 2 skipped" in text
    results = json.loads((tmp_path / "triton_flops_check.json").read_text())["results"]
    assert sum(r["ok"] is True for r in results) == len(check.CASES) - 2
