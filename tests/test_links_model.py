"""A communication-bound kernel against the interconnect roof: the descriptor's `interconnect:` bytes, the link time
and the bound, computed by hand; bad link names and specs without the link are input errors or skips, never
tracebacks."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.model.analysis import analyze
from roofline.load.kernels import KernelCatalog, load_descriptor
from roofline.load.specs import SpecCatalog
from roofline.model.workload import evaluate


def test_allreduce_ring_is_bound_by_nvlink_by_hand() -> None:
    d = KernelCatalog.load().select(["allreduce_ring"])[0]
    h200 = SpecCatalog.bundled().resolve("h200")
    a = analyze(h200, evaluate(d))
    n, r = 2**28, 8
    link_bytes = 2 * (r - 1) / r * n * 4  # 1.75 GiB each GPU sends
    assert a.links["nvlink"].bytes == link_bytes
    assert a.links["nvlink"].bandwidth == 450e9  # 900 GB/s both ways: 450 each way
    assert a.links["nvlink"].time == pytest.approx(link_bytes / 450e9)
    assert a.bytes == 2 * n * 4 + link_bytes
    assert a.bound == "interconnect (nvlink)"
    assert a.sol_time == pytest.approx(4.1757e-3, rel=1e-4)
    assert a.attainable_flops == pytest.approx((r - 1) / r * n / a.sol_time)
    assert a.links["nvlink"].intensity == pytest.approx(1 / 8)  # 7/8 n adds over 7/4 n floats of 4 B


def test_a_small_message_on_few_ranks_is_still_link_bound_and_the_json_carries_links(run_cli) -> None:
    import json

    result = run_cli("analyze", "allreduce_ring", "-p", "ranks=2", "-p", "n=2**20", "--spec", "h200",
                     "--format", "json")
    assert result.code == 0, result.err
    k = json.loads(result.out)["kernels"][0]
    assert k["links"]["nvlink"]["bytes"] == 2**20 * 4  # 2(2-1)/2 n itemsize
    assert k["sol_time"] == pytest.approx(max(k["memory_time"], k["compute_time"], k["links"]["nvlink"]["time"]))


def test_a_spec_without_the_link_skips_the_kernel_with_a_note(run_cli) -> None:
    result = run_cli("analyze", "--spec", "t4")
    assert result.code == 0
    assert "allreduce_ring skipped on t4: it needs interconnect.nvlink" in result.err
    result = run_cli("analyze", "allreduce_ring", "--spec", "t4")
    assert result.code == 2 and "interconnect.nvlink" in result.err and "Traceback" not in result.err


def test_an_unknown_link_names_the_file_and_field(tmp_path: Path, run_cli) -> None:
    path = tmp_path / "k.yaml"
    path.write_text("schema_version: 1\nname: k\nflops: 1\nbytes: 8\ninterconnect: {nvlinc: 8}\n")
    result = run_cli("analyze", "--kernels", path, "k")
    assert result.code == 2 and "interconnect.nvlinc" in result.err and "nvlink" in result.err
    assert str(path) in result.err


def test_link_bytes_are_a_formula_over_the_params(tmp_path: Path) -> None:
    path = tmp_path / "k.yaml"
    path.write_text("schema_version: 1\nname: k\nparams: {n: 10}\nflops: n\nbytes: 8 * n\n"
                    "interconnect: {pcie: 4 * n}\n")
    work = evaluate(load_descriptor(path))
    assert work.interconnect == {"pcie": 40.0}


def test_measure_skips_a_kernel_whose_link_the_spec_lacks(tmp_path: Path, run_cli) -> None:
    import shutil

    data = Path(__file__).parent / "data" / "measure"
    shutil.copy(data / "m_add.py", tmp_path / "m_add.py")
    text = (data / "m_add.yaml").read_text().replace("name: m_add", "name: m_link")
    (tmp_path / "m_link.yaml").write_text(text + "interconnect: {nvlink: n * itemsize}\n")
    shutil.copy(data / "m_add.yaml", tmp_path / "m_add.yaml")
    result = run_cli("measure", "--backend", "numpy", "--spec", "t4", "--kernels", tmp_path, "m_link", "m_add",
                     "--min-time", "0.001")
    assert result.code == 2 and "kernel 'm_link' needs interconnect.nvlink, which t4 does not give" in result.err
    result = run_cli("measure", "--backend", "numpy", "--spec", "h200", "--kernels", tmp_path, "m_link",
                     "--min-time", "0.001", "--format", "json")
    assert result.code == 0, result.err
