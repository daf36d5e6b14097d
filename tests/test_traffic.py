"""Traffic at the cache levels (`traffic: {l1, l2}`), the minimal descriptor, and the bundled catalogue's counting
rules: `bytes` is DRAM traffic, so the naive kernels move what their reuse variants move."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from conftest import TOY_SPEC
from roofline.model.analysis import analyze
from roofline.load.bundled import bundled_dir
from roofline.errors import InputError
from roofline.load.kernels import KernelCatalog, load_descriptor, parse_overrides
from roofline.model.types import MachineSpec
from roofline.model.workload import evaluate

TRAFFIC = """\
schema_version: 1
name: t_naive
description: a made-up kernel that requests every operand from L1 four times
pattern: stencil
dtype: float32
params: {n: 1000}
flops: 8 * n
bytes: 2 * n * itemsize
traffic:
  l1: 8 * n * itemsize
  l2: 4 * n * itemsize
roof: fp32
"""
MINIMAL = "name: t_min\nflops: 2e9\nbytes: 1e9\n"


def _write(tmp_path: Path, text: str, name: str = "k.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---- traffic: arithmetic --------------------------------------------------------------------------------


def test_traffic_levels_evaluate_at_defaults_and_overrides(tmp_path: Path) -> None:
    d = load_descriptor(_write(tmp_path, TRAFFIC))
    assert list(d.traffic) == ["l1", "l2"]
    w = evaluate(d)
    assert w.bytes == 8000 and w.traffic == {"l1": 32_000, "l2": 16_000}
    w = evaluate(d, parse_overrides(["n=10"], [d]))
    assert w.traffic == {"l1": 320, "l2": 160}


def test_analysis_gives_bytes_and_intensity_per_level(tmp_path: Path, toy_spec: MachineSpec) -> None:
    a = analyze(toy_spec, evaluate(load_descriptor(_write(tmp_path, TRAFFIC))))
    # DRAM is unchanged: 8000 FLOP / 8000 B = 1 FLOP/B, memory-bound under the toy's ridge of 10
    assert a.bytes == 8000 and a.intensity == pytest.approx(1.0) and a.bound == "memory"
    assert a.attainable_flops == pytest.approx(1e12)  # 1 FLOP/B x 1 TB/s: the cache levels do not move the ceiling
    assert a.traffic["l1"].bytes == 32_000 and a.traffic["l1"].intensity == pytest.approx(0.25)
    assert a.traffic["l2"].bytes == 16_000 and a.traffic["l2"].intensity == pytest.approx(0.5)
    assert a.to_dict()["traffic"] == {"l1": {"bytes": 32_000, "intensity": 0.25},
                                      "l2": {"bytes": 16_000, "intensity": 0.5}}


def test_a_level_with_no_bytes_has_no_intensity(tmp_path: Path, toy_spec: MachineSpec) -> None:
    text = TRAFFIC.replace("l1: 8 * n * itemsize", "l1: 0")
    a = analyze(toy_spec, evaluate(load_descriptor(_write(tmp_path, text))))
    assert a.to_dict()["traffic"]["l1"] == {"bytes": 0.0, "intensity": None}  # JSON has no infinity


def test_no_traffic_is_an_empty_mapping(tmp_path: Path, toy_spec: MachineSpec) -> None:
    text = TRAFFIC.split("traffic:")[0] + "roof: fp32\n"
    a = analyze(toy_spec, evaluate(load_descriptor(_write(tmp_path, text))))
    assert a.traffic == {} and a.to_dict()["traffic"] == {}


# ---- traffic: the documents -----------------------------------------------------------------------------


def test_json_csv_markdown_carry_the_levels(tmp_path: Path, run_cli, no_bundled_kernels: Path) -> None:
    _write(tmp_path, TRAFFIC, "t_naive.yaml")
    _write(tmp_path, MINIMAL, "t_min.yaml")
    base = ("analyze", "t_naive", "t_min", "--kernels", tmp_path, "--spec", TOY_SPEC, "--format")
    r = run_cli(*base, "json")
    assert r.code == 0, r.err
    naive, minimal = json.loads(r.out)["kernels"]
    assert naive["traffic"] == {"l1": {"bytes": 32_000, "intensity": 0.25}, "l2": {"bytes": 16_000, "intensity": 0.5}}
    assert naive["bytes"] == 8000 and minimal["traffic"] == {}

    r = run_cli(*base, "csv")
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert (float(rows[0]["l1_bytes"]), float(rows[0]["l1_intensity"])) == (32_000, 0.25)
    assert float(rows[0]["l2_intensity"]) == 0.5
    assert rows[1]["l1_bytes"] == rows[1]["l1_intensity"] == ""  # not given: empty, never 0

    r = run_cli(*base, "markdown")
    header, _, naive_row, minimal_row = [line for line in r.out.splitlines() if line.startswith("|")]
    cells = [c.strip() for c in header.strip("|").split("|")]
    assert cells[3:7] == ["DRAM bytes", "AI (FLOP/B)", "L1 AI", "L2 AI"]
    assert [c.strip() for c in naive_row.strip("|").split("|")][5:7] == ["0.25", "0.5"]
    assert [c.strip() for c in minimal_row.strip("|").split("|")][5:7] == ["–", "–"]


def test_table_has_no_level_columns_when_no_kernel_gives_traffic(tmp_path: Path, run_cli,
                                                                 no_bundled_kernels: Path) -> None:
    _write(tmp_path, MINIMAL, "t_min.yaml")
    r = run_cli("analyze", "--kernels", tmp_path, "--spec", TOY_SPEC, "--format", "markdown")
    assert r.code == 0, r.err
    assert "L1 AI" not in r.out and "DRAM bytes" in r.out


# ---- traffic: refusals, naming the file and the field ---------------------------------------------------

REFUSED = [
    ("traffic:\n  l1: 8 * n * itemsize\n  l2: 4 * n * itemsize\n", "traffic:\n  dram: 2 * n\n",
     "traffic.dram", "DRAM traffic is the descriptor's 'bytes'"),
    ("  l2: 4 * n * itemsize\n", "  l3: 4 * n * itemsize\n", "traffic.l3", "unknown level 'l3'"),
    ("  l2: 4 * n * itemsize\n", "  L1: 4 * n * itemsize\n", "traffic.L1", "(did you mean 'l1'?)"),
    ("traffic:\n  l1: 8 * n * itemsize\n  l2: 4 * n * itemsize\n", "traffic: 8 * n\n", "traffic",
     "expected a mapping"),
    ("l1: 8 * n * itemsize", "l1: 8 * m", "traffic.l1", "unknown name 'm'"),
    ("l1: 8 * n * itemsize", "l1: 8 * n +", "traffic.l1", "syntax error"),
    ("l1: 8 * n * itemsize", "l1: 8 - n", "traffic.l1", "must be ≥ 0"),
    ("traffic:\n", "trafic:\n", "trafic", "unknown key (did you mean 'traffic'?)"),
]


@pytest.mark.parametrize(("old", "new", "field", "fragment"), REFUSED, ids=[r[2] + ":" + r[3][:12] for r in REFUSED])
def test_bad_traffic_is_refused_naming_file_and_field(tmp_path: Path, old: str, new: str, field: str,
                                                      fragment: str) -> None:
    assert old in TRAFFIC
    path = _write(tmp_path, TRAFFIC.replace(old, new))
    with pytest.raises(InputError) as exc_info:
        load_descriptor(path)
    assert exc_info.value.message.startswith(f"{path}: {field}: ")
    assert fragment in exc_info.value.message


def test_cli_refuses_bad_traffic_with_exit_2(tmp_path: Path, run_cli, no_bundled_kernels: Path) -> None:
    path = _write(tmp_path, TRAFFIC.replace("  l2: 4", "  l3: 4"))
    r = run_cli("analyze", "--kernels", path, "--spec", TOY_SPEC, "--format", "json")
    assert r.code == 2 and r.out == ""
    assert r.err.startswith(f"error: {path}: traffic.l3: unknown level 'l3'") and "Traceback" not in r.err


# ---- the minimal descriptor --------------------------------------------------------------------------------


def test_minimal_descriptor_is_name_flops_bytes(tmp_path: Path, toy_spec: MachineSpec) -> None:
    d = load_descriptor(_write(tmp_path, MINIMAL))
    assert (d.name, d.pattern, d.description, d.roof, d.dtype, d.itemsize) == ("t_min", "custom", "", "fp32",
                                                                               "unspecified", None)
    a = analyze(toy_spec, evaluate(d))
    assert a.intensity == pytest.approx(2.0) and a.sol_time == pytest.approx(1e-3)  # 1 GB at 1 TB/s
    assert a.access_bytes == 4  # one 32-bit load per thread for Little's Law, as nothing says otherwise


def test_minimal_descriptor_through_the_cli(tmp_path: Path, run_cli, no_bundled_kernels: Path) -> None:
    path = _write(tmp_path, MINIMAL)
    r = run_cli("analyze", "--kernels", path, "--spec", TOY_SPEC, "--format", "json")
    assert r.code == 0, r.err
    (k,) = json.loads(r.out)["kernels"]
    assert (k["name"], k["dtype"], k["flops"], k["bytes"]) == ("t_min", "unspecified", 2e9, 1e9)
    r = run_cli("kernels", "--kernels", path)
    assert r.code == 0 and "custom" in r.out


@pytest.mark.parametrize(("text", "field", "fragment"), [
    ("name: t\nflops: n\nbytes: 4 * n * itemsize\nparams: {n: 10}\n", "bytes", "uses itemsize"),
    ("name: t\nflops: 1\nbytes: 4\ntraffic: {l1: 8 * itemsize}\n", "traffic.l1", "add a dtype"),
    ("name: t\nflops: 1\nbytes: 4\nparams: {n: itemsize}\n", "params.n", "uses itemsize"),
    ("name: t\nflops: 1\nbytes: 4\nimplementation: t.py\n", "dtype", "is required when the kernel has an "
                                                                      "implementation"),
    ("name: t\nbytes: 4\n", "flops", "is required"),
    ("name: t\nflops: 4\n", "bytes", "is required"),
    ("flops: 1\nbytes: 4\n", "name", "is required"),
])
def test_minimal_descriptor_still_refuses_what_it_needs(tmp_path: Path, text: str, field: str, fragment: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(InputError) as exc_info:
        load_descriptor(path)
    assert exc_info.value.message.startswith(f"{path}: {field}: ")
    assert fragment in exc_info.value.message


# ---- the bundled catalogue -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bundled() -> dict[str, object]:
    return {d.name: d for d in KernelCatalog.load().descriptors}


def test_every_bundled_descriptor_has_a_description_and_a_pattern(bundled) -> None:
    from roofline.load.yamlio import read_yaml_mapping

    files = sorted(p for p in bundled_dir("kernels").glob("*.yaml") if not p.name.startswith("_"))
    assert len(files) == len(bundled) >= 30
    for path in files:
        raw = read_yaml_mapping(path)
        assert isinstance(raw.get("description"), str) and len(raw["description"]) > 80, path.name
        assert raw.get("pattern") not in (None, "custom"), path.name
        assert raw.get("dtype"), path.name


@pytest.mark.parametrize(("naive", "reuse"), [
    ("matmul_naive", "matmul_tiled"), ("matmul_naive", "matmul_library"),
    ("stencil5_naive", "stencil5_reuse"), ("conv3x3_naive", "conv3x3_reuse"),
])
@pytest.mark.parametrize("n", [None, 1000, 517])
def test_naive_kernels_move_the_dram_bytes_of_their_reuse_variants(bundled, naive: str, reuse: str,
                                                                   n: int | None) -> None:
    a, b = bundled[naive], bundled[reuse]
    over = [] if n is None else [f"n={n}"]
    wa, wb = evaluate(a, parse_overrides(over, [a])), evaluate(b, parse_overrides(over, [b]))
    assert wa.bytes == wb.bytes and wa.flops == wb.flops
    # the naive design's re-reading shows at L1, several times its DRAM traffic and more than the reuse variant's
    assert wa.traffic["l1"] >= 2.5 * wa.bytes
    assert wa.traffic["l1"] > wb.traffic.get("l1", wb.bytes)


def test_naive_formulas_by_hand(bundled) -> None:
    n, item = 4096, 4
    mm = evaluate(bundled["matmul_naive"])
    assert mm.bytes == 3 * n**2 * item and mm.traffic == {"l1": (2 * n**3 + n**2) * item}
    tiled = evaluate(bundled["matmul_tiled"])
    assert tiled.traffic == {"l1": (n**3 / 64 + n**2) * item, "l2": (n**3 / 64 + n**2) * item}
    n = 16384
    assert evaluate(bundled["stencil5_naive"]).traffic == {"l1": 6 * n * n * item}
    conv = evaluate(bundled["conv3x3_naive"])
    assert conv.bytes == (2 * n * n + 9) * item and conv.traffic == {"l1": 19 * n * n * item}


def test_every_bundled_cache_level_carries_at_least_the_dram_traffic(bundled) -> None:
    """What reaches DRAM passed through the caches first: a level below `bytes` is a counting slip."""
    with_traffic = [d for d in bundled.values() if d.traffic]
    assert {d.name for d in with_traffic} >= {"matmul_naive", "stencil5_naive", "conv3x3_naive", "matmul_tiled"}
    for d in with_traffic:
        w = evaluate(d)
        for level, nbytes in w.traffic.items():
            assert nbytes >= w.bytes, (d.name, level)


def test_readme_minimal_descriptor_analyses(tmp_path: Path, run_cli, no_bundled_kernels: Path) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    after = readme.split("A descriptor needs only", 1)[1]
    block = after.split("```yaml\n", 1)[1].split("```", 1)[0]
    path = _write(tmp_path, block)
    r = run_cli("analyze", "--kernels", path, "--spec", TOY_SPEC, "--format", "json")
    assert r.code == 0, r.err
    (k,) = json.loads(r.out)["kernels"]
    assert k["bytes"] == 3 * 2**26 * 4 and k["traffic"] == {}


def test_a_pipeline_gives_its_traffic_once_as_the_total(tmp_path: Path, toy_spec: MachineSpec) -> None:
    text = ("name: t_pipe\ndtype: float32\nparams: {n: 100}\nstages:\n"
            "  - {name: a, flops: n, bytes: 2 * n * itemsize}\n  - {name: b, flops: n, bytes: 2 * n * itemsize}\n"
            "traffic: {l2: 5 * n * itemsize}\n")
    a = analyze(toy_spec, evaluate(load_descriptor(_write(tmp_path, text))))
    assert a.launches == 2 and a.bytes == 1600
    assert a.traffic["l2"].bytes == 2000 and a.traffic["l2"].intensity == pytest.approx(0.1)


def test_kernels_show_lists_each_level(run_cli) -> None:
    r = run_cli("kernels", "show", "stencil5_naive", "-p", "n=1000")
    assert r.code == 0, r.err
    assert "traffic.l1" in r.out and "6 * n * n * itemsize" in r.out and "24 MB, 0.25 FLOP/B" in r.out
