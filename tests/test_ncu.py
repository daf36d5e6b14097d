"""Nsight Compute support: parsing `ncu --csv --page raw` captures, counter arithmetic, the traffic flag,
`measure --profile ncu` plumbing (with a stand-in ncu), `import ncu`, and the hierarchical roofline.

Fixtures in tests/data/ncu: synthetic_*.csv are written in the exact raw-page layout (noise, ==PROF== lines, units
row, thousands separators); h200_*.csv are real captures from an H200 (benchmarks/h200_ncu_capture.sh) when present.
"""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from roofline import ncu
from roofline.errors import InputError
from roofline.ncu_import import import_csv, short_name
from roofline.profile_ncu import (MARKER, add_profile, attach, finish, find_ncu, make_plan, merge_counters,
                                  ncu_command, split_by_markers, target_command)
from roofline.resultfiles import validate_results

DATA = Path(__file__).parent / "data" / "ncu"
PYTORCH = DATA / "synthetic_pytorch_metrics.csv"
UNITS = DATA / "synthetic_cuda_units.csv"
FULL = DATA / "synthetic_full.csv"
PROFILED = DATA / "synthetic_profiled.csv"
NOPERM = DATA / "synthetic_nvgpuctrperm.csv"
REAL = sorted(DATA.glob("h200_*.csv"))


def minimal_results(kernels: list[dict]) -> dict:
    return {"schema": "roofline/results/v1", "created": "2026-11-30T00:00:00+00:00", "tool_version": "0",
            "backend": "ncu", "device": {"name": "NVIDIA H200"},
            "machine": {"id": "h200-sxm", "name": "H200", "bandwidth": 4.8e12, "latency": 3.3e-7,
                        "bytes_in_flight": 1.6e6, "roofs": {"fp32": 6.69e13}},
            "kernels": kernels}


def null_verified_accepted() -> bool:
    doc, _ = import_csv(PYTORCH)
    try:
        validate_results(json.loads(json.dumps(doc)))
    except InputError:
        return False
    return True


NEEDS_NULL_VERIFIED = pytest.mark.skipif(
    not null_verified_accepted(),
    reason="roofline/results.py does not yet accept verified: null (imported entries); see docs/ncu.md")


# ---- numbers and units ------------------------------------------------------------------------------


@pytest.mark.parametrize("text, value", [
    ("201,342,976", 201342976.0), ("1,024", 1024.0), ("57312", 57312.0), ("2,816.00", 2816.0), ("0.25", 0.25),
    ("1.5e3", 1500.0), ("", None), ("n/a", None), (" 7 ", 7.0),
])
def test_parse_number(text, value):
    assert ncu.parse_number(text) == value


def test_parse_number_refuses_text():
    with pytest.raises(ValueError):
        ncu.parse_number("NVIDIA H200")


@pytest.mark.parametrize("unit, scale", [
    ("byte", 1.0), ("Kbyte", 1e3), ("Mbyte", 1e6), ("Gbyte", 1e9), ("Kibyte", 1024.0), ("nsecond", 1e-9),
    ("usecond", 1e-6), ("msecond", 1e-3), ("second", 1.0), ("inst", 1.0), ("Kinst", 1e3), ("%", 1.0), ("", 1.0),
    ("byte/second", 1.0), ("Gbyte/second", 1e9), ("cycle/nsecond", 1e9), ("inst/cycle", 1.0),
])
def test_unit_scale(unit, scale):
    assert ncu.unit_scale(unit) == pytest.approx(scale)


def test_unknown_unit_keeps_the_value():
    assert ncu.unit_scale("furlong") is None


# ---- the table -------------------------------------------------------------------------------------


def test_pytorch_capture_is_found_among_program_output():
    table = ncu.parse_csv(PYTORCH.read_text())
    assert len(table.launches) == 7
    assert table.noise_lines > 5  # the program's prints and ==PROF== lines
    assert any("Connected to process" in line for line in table.prof_lines)
    first = table.launches[0]
    assert first.id == "0" and first.kernel.startswith("void at::native::vectorized_elementwise_kernel<4")
    assert first.info["Grid Size"] == "(65536, 1, 1)"
    assert first.device == "NVIDIA H200"
    assert first.metrics[ncu.DRAM_READ] == 134_250_112  # "134,250,112"
    assert first.metrics[ncu.TIME] == pytest.approx(57_312e-9)  # nsecond -> s
    assert table.launches[4].metrics[ncu.DRAM_READ] is None  # "n/a"


def test_automatic_units_and_an_older_layout():
    """ncu without --print-units base: Mbyte, usecond, msecond, Kbyte; a "Kernel Time" column; three tables."""
    table = ncu.parse_csv(UNITS.read_text())
    assert [launch.kernel.split("(")[0] for launch in table.launches] == ["stream_triad", "transpose_naive",
                                                                           "tiny_kernel"]
    triad, transpose, tiny = (ncu.counters(launch.metrics) for launch in table.launches)
    assert triad["dram_read"] == pytest.approx(536.91e6)
    assert triad["time"] == pytest.approx(181.25e-6)
    assert transpose["time"] == pytest.approx(1.02e-3)
    assert tiny["dram_bytes"] == pytest.approx(2810.0)
    assert tiny["time"] == pytest.approx(2816e-9)
    assert table.launches[0].device == ""  # no device name in this capture


def test_full_set_is_read_from_a_wide_file():
    table = ncu.parse_csv(FULL.read_text())
    assert len(table.launches) == 2
    assert len(table.columns) > 40
    add = table.launches[0]
    assert add.raw["launch__func_cache_config"] == "CachePreferNone"
    assert add.metrics["launch__grid_size"] == 16384
    c = ncu.counters(add.metrics)
    assert c["flops_source"] == "rates"  # --set full records per-cycle rates, not counts
    assert c["flops_fp32"] == pytest.approx(16_777_216, rel=1e-4)
    assert c["flops_fp64"] == 0.0
    assert c["missing"] == []


def test_no_table_is_an_error_that_names_ncus_complaint():
    with pytest.raises(ncu.NcuParseError, match="ERR_NVGPUCTRPERM"):
        ncu.parse_csv(NOPERM.read_text())
    with pytest.raises(ncu.NcuParseError, match="no 'ncu --csv --page raw' table"):
        ncu.parse_csv("hello\nworld\n")


def test_a_stray_quote_in_program_output_does_not_swallow_the_table():
    text = 'the program says "hello\n' + PROFILED.read_text()
    assert len(ncu.parse_csv(text).launches) == 10


def test_crlf_and_bom():
    text = "\ufeff" + PROFILED.read_text().replace("\n", "\r\n")
    assert len(ncu.parse_csv(text).launches) == 10


@pytest.mark.skipif(not REAL, reason="no real H200 capture committed yet (benchmarks/h200_ncu_capture.sh)")
@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_h200_captures_parse(path):
    table = ncu.parse_csv(path.read_text(encoding="utf-8", errors="replace"))
    assert table.launches
    usable = [c for c in (ncu.counters(launch.metrics) for launch in table.launches)
              if c["dram_bytes"] and c["time"]]
    assert usable
    for c in usable:
        assert 0 < c["time"] < 10  # seconds: units were scaled
        assert c["dram_bytes"] < 1e12


# ---- counter arithmetic --------------------------------------------------------------------------


def _metrics(**values: float) -> dict[str, float]:
    return {ncu.flop_metric(p, op): v for key, v in values.items() for p, op in [key.split("_")]}


def test_flops_are_add_plus_mul_plus_twice_fma_per_precision():
    m = {ncu.DRAM_READ: 100.0, ncu.DRAM_WRITE: 50.0, ncu.TIME: 1e-6, ncu.L2_BYTES: 300.0, ncu.L1_BYTES: 600.0,
         ncu.TENSOR_INST: 0.0, **_metrics(fp32_add=10, fp32_mul=20, fp32_fma=30, fp64_add=1, fp64_mul=2, fp64_fma=3,
                                         fp16_add=4, fp16_mul=5, fp16_fma=6)}
    c = ncu.counters(m)
    assert c["flops_fp32"] == 10 + 20 + 2 * 30
    assert c["flops_fp64"] == 1 + 2 + 2 * 3
    assert c["flops_fp16"] == 4 + 5 + 2 * 6
    assert c["flops"] == 90 + 9 + 21
    assert c["dram_bytes"] == 150.0
    assert (c["l1_bytes"], c["l2_bytes"]) == (600.0, 300.0)
    assert c["missing"] == []


def test_absent_counters_are_listed_not_zero():
    m = {ncu.DRAM_READ: 100.0, ncu.DRAM_WRITE: 50.0, ncu.TIME: 1e-6, **_metrics(fp32_fma=30)}
    c = ncu.counters(m)
    assert c["flops_fp32"] == 60  # from the counter present ...
    assert ncu.flop_metric("fp32", "add") in c["missing"]  # ... the absent ones named
    assert c["flops_fp64"] is None and ncu.flop_metric("fp64", "fma") in c["missing"]
    assert c["l2_bytes"] is None and ncu.L2_BYTES in c["missing"]
    assert c["tensor_inst"] is None and ncu.TENSOR_INST in c["missing"]
    none = ncu.counters({ncu.DRAM_READ: 1.0, ncu.DRAM_WRITE: 1.0, ncu.TIME: 1.0})
    assert none["flops"] is None and none["flops_source"] is None


def test_summing_launches():
    a = ncu.counters({ncu.DRAM_READ: 100.0, ncu.DRAM_WRITE: 0.0, ncu.TIME: 1e-6, **_metrics(fp32_add=10)})
    b = ncu.counters({ncu.DRAM_READ: 10.0, ncu.DRAM_WRITE: 5.0, ncu.TIME: 2e-6, **_metrics(fp32_add=1)})
    s = ncu.sum_counters([a, b])
    assert s["dram_bytes"] == 115.0 and s["time"] == pytest.approx(3e-6) and s["flops_fp32"] == 11
    assert s["flops_fp64"] is None and s["launches"] == 2


# ---- the flag rule -------------------------------------------------------------------------------


def test_flag_only_above_ten_percent():
    model = 1_000_000.0
    assert ncu.traffic_flag({"dram_bytes": 1_100_000.0, "dram_read": 1_100_000.0, "dram_write": 0.0}, model) is None
    flag = ncu.traffic_flag({"dram_bytes": 2_100_000.0, "dram_read": 2_000_000.0, "dram_write": 100_000.0}, model)
    assert flag is not None and flag.startswith("reads 2.1× the model") and "uncoalesced" in flag
    assert "\n" not in flag
    writes = ncu.traffic_flag({"dram_bytes": 1_500_000.0, "dram_read": 100_000.0, "dram_write": 1_400_000.0}, model)
    assert writes.startswith("writes 1.5× the model")
    assert ncu.traffic_flag({"dram_bytes": 1_110_001.0, "dram_read": 1.0, "dram_write": 1.0}, model) is not None


def test_flag_needs_both_figures():
    assert ncu.traffic_flag({"dram_bytes": None}, 1.0) is None
    assert ncu.traffic_flag({"dram_bytes": 5.0}, None) is None
    assert ncu.traffic_flag({"dram_bytes": 5.0}, 0.0) is None


def test_compare_ratios():
    cmp = ncu.compare({"dram_bytes": 90.0, "flops": 300.0, "dram_read": 90.0, "dram_write": 0.0}, 200.0, 100.0)
    assert cmp == {"measured_bytes_ratio": 0.9, "measured_flops_ratio": 1.5, "flag": None}


@pytest.mark.parametrize("text, words", [
    (NOPERM.read_text(), "ERR_NVGPUCTRPERM"),
    ("==ERROR== LibraryNotLoaded: libnvperf_host.so\n", "LibraryNotLoaded"),
    ("==ERROR== Failed to find metric sm__inst_executed_pipe_tensor.sum\n", "does not know one of the metrics"),
    ("==ERROR== Profiling is not supported on this device\n", "does not support profiling this GPU"),
])
def test_diagnose(text, words):
    assert words in ncu.diagnose(text)


def test_diagnose_quiet_when_fine():
    assert ncu.diagnose(PYTORCH.read_text()) is None


# ---- measure --profile ncu -----------------------------------------------------------------------


def _entries(names_params: list[tuple[str, dict]]):
    from roofline.analysis import analyze
    from roofline.expr import compile_expr
    from roofline.kernels import KernelCatalog
    from roofline.specs import SpecCatalog
    from roofline.workload import evaluate

    machine = SpecCatalog.bundled().resolve("h200")
    catalog = KernelCatalog.load()
    descriptors = catalog.select([n for n, _ in names_params])
    entries = []
    for d, (_, params) in zip(descriptors, names_params):
        work = evaluate(d, {k: compile_expr(v) for k, v in params.items()})
        entries.append({**analyze(machine, work).to_dict(), "status": "OK", "verified": True, "warnings": [],
                        "time_median": 6e-5})
    return entries, descriptors


KERNELS = [("vector_add_float4", {"n": 2**24}), ("sum", {"n": 2**24}), ("stencil5_naive", {"n": 2048})]


def test_command_line():
    cmd = ncu_command("/opt/ncu", target_command(Path("p.json"), Path("d.json")))
    joined = " ".join(cmd)
    assert cmd[0] == "/opt/ncu"
    for part in ("--clock-control none", "--csv", "--page raw", "--print-units base", "--profile-from-start off",
                 "-m roofline.profile_ncu --plan p.json"):
        assert part in joined
    metrics = cmd[cmd.index("--metrics") + 1].split(",")
    assert set(ncu.CORE_METRICS) <= set(metrics) and ncu.L2_BYTES in metrics and ncu.L1_BYTES in metrics
    assert all(ncu.flop_metric(p, op) in metrics for p in ("fp32", "fp64", "fp16") for op in ("add", "mul", "fma"))


def test_markers_split_launches_per_kernel():
    table = ncu.parse_csv(PROFILED.read_text())
    groups = split_by_markers(table.launches, 3)
    assert [[launch.kernel for launch in g] for g in groups] == [
        ["add_f32"], ["reduce_sum_f32", "reduce_sum_final"], ["stencil5_naive"]]
    assert all(MARKER not in launch.kernel for g in groups for launch in g)


def test_counters_merge_into_entries():
    entries, descriptors = _entries(KERNELS)
    plan = make_plan(entries, descriptors)
    assert [p["name"] for p in plan] == ["vector_add_float4", "sum", "stencil5_naive"]
    merged, notes = attach(entries, plan, ncu.parse_csv(PROFILED.read_text()))
    add, total, stencil = merged
    assert add["counters"]["dram_bytes"] == 134_247_424 + 62_914_560
    assert add["measured_bytes_ratio"] == pytest.approx((134_247_424 + 62_914_560) / (3 * 4 * 2**24))
    assert add["measured_flops_ratio"] == pytest.approx(1.0)
    assert total["counters"]["launches"] == 2 and total["counters"]["kernels"] == ["reduce_sum_f32", "reduce_sum_final"]
    assert total["counters"]["flops"] == 17_047_552 + 1_056
    assert stencil["counter_flag"] is None  # 56.9 MB against the model's 100.7 MB
    assert "verified" in add and add["status"] == "OK"


def test_excess_traffic_is_flagged_in_the_entry():
    entries, _ = _entries([("vector_add_float4", {"n": 2**22})])  # model: 48 MiB; the launch moved 197 MB
    table = ncu.parse_csv(PROFILED.read_text())
    flagged = merge_counters(entries[0], [table.launches[1]])
    assert flagged["counter_flag"].startswith("reads 3.9× the model")
    assert flagged["warnings"][-1] == flagged["counter_flag"]


def test_missing_ncu_is_a_plain_note(monkeypatch):
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr("roofline.profile_ncu._CUDA_NCU", ())
    entries, descriptors = _entries(KERNELS[:1])
    out, notes = add_profile(entries, descriptors, {}, None)
    assert out == entries
    assert len(notes) == 1 and "not on PATH" in notes[0] and "no counters" in notes[0]
    path, why = find_ncu("/nonexistent/ncu")
    assert path is None and "/nonexistent/ncu" in why


def test_counter_permission_is_a_plain_note():
    entries, descriptors = _entries(KERNELS[:1])
    plan = make_plan(entries, descriptors)
    out, notes = finish(entries, plan, NOPERM.read_text(), "", 1, None)
    assert out == entries
    assert "ERR_NVGPUCTRPERM" in notes[0] and "no counters" in notes[0]


def _fake_ncu(tmp_path: Path, csv_path: Path, rc: int = 0) -> Path:
    script = tmp_path / "ncu"
    script.write_text(f"#!/bin/sh\ncat '{csv_path}'\nexit {rc}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for ncu")
def test_add_profile_end_to_end_with_a_stand_in_ncu(tmp_path):
    entries, descriptors = _entries(KERNELS)
    saved = tmp_path / "saved.csv"
    out, notes = add_profile(entries, descriptors, {}, str(_fake_ncu(tmp_path, PROFILED)), save_csv=saved)
    assert all("counters" in e for e in out)
    assert notes[-1] == "note: --profile ncu: counters for 3 of 3 kernel(s)"
    assert saved.read_text() == PROFILED.read_text()
    json.dumps(out)  # serialisable


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for ncu")
def test_add_profile_when_ncu_fails(tmp_path):
    entries, descriptors = _entries(KERNELS[:1])
    out, notes = add_profile(entries, descriptors, {}, str(_fake_ncu(tmp_path, NOPERM, rc=1)))
    assert out == entries and "ERR_NVGPUCTRPERM" in notes[0]


def test_failed_kernels_are_not_profiled():
    entries, descriptors = _entries(KERNELS[:2])
    entries[0]["status"] = "FAILED"
    assert [p["name"] for p in make_plan(entries, descriptors)] == ["sum"]


# ---- import ncu ---------------------------------------------------------------------------------------


def test_import_pytorch_capture():
    doc, notes = import_csv(PYTORCH)
    assert doc["backend"] == "ncu" and doc["machine"]["id"] == "h200-sxm"  # matched by the CSV's device name
    assert doc["device"]["name"] == "NVIDIA H200"
    kernels = doc["kernels"]
    assert [k["params"]["launch"] for k in kernels] == [0, 1, 2, 3, 5, 6]  # launch 4 has no DRAM read bytes
    assert len(notes) == 1 and "launch 4" in notes[0] and "dram__bytes_read.sum" in notes[0]
    assert doc["source"]["skipped"][0]["id"] == "4"
    add = kernels[0]
    assert add["name"] == "at::native::vectorized_elementwise_kernel"
    assert add["kernel_name"].startswith("void at::native::vectorized_elementwise_kernel<4")
    assert add["status"] == "IMPORTED" and add["verified"] is None
    assert add["bytes"] == 134_250_112 + 58_720_384
    assert add["flops"] == 16_777_216
    assert add["time_median"] == pytest.approx(57_312e-9)
    assert add["achieved_bandwidth"] == pytest.approx(add["bytes"] / add["time_median"])
    assert add["intensity"] == pytest.approx(add["flops"] / add["bytes"])
    assert add["sol_time"] == pytest.approx(add["bytes"] / 4.8e12)
    assert add["fraction_of_ceiling"] == pytest.approx(add["sol_time"] / add["time_median"])
    assert add["roof"] == "fp32" and add["bound"] == "memory"
    sgemm = kernels[2]
    assert sgemm["flops"] == 1_048_576 + 2 * 1_073_741_824 and sgemm["bound"] == "compute"
    double = kernels[-1]
    assert double["roof"] == "fp64" and double["dtype"] == "float64"
    tensor = kernels[4]
    assert any("tensor-pipe" in w for w in tensor["warnings"])


def test_import_lists_absent_flop_counters():
    doc, _ = import_csv(UNITS, "h200")
    triad = doc["kernels"][0]
    assert triad["flops"] == 0.0
    assert ncu.flop_metric("fp32", "fma") in triad["counters"]["missing"]
    assert any("no FLOP counters" in w for w in triad["warnings"])
    assert doc["device"]["spec_id"] == "h200-sxm"


def test_import_needs_a_spec_when_the_csv_names_no_gpu():
    with pytest.raises(InputError, match="--spec"):
        import_csv(UNITS)


def test_import_full_set():
    doc, notes = import_csv(FULL)
    assert [k["name"] for k in doc["kernels"]] == ["add_f32", "reduce_sum_f32"]
    assert doc["kernels"][0]["counters"]["flops_source"] == "rates"
    assert doc["machine"]["caches"]["l2"]["size"] == 60 * 2**20


def test_import_without_counters_says_why():
    with pytest.raises(InputError, match="ERR_NVGPUCTRPERM"):
        import_csv(NOPERM)
    with pytest.raises(InputError, match="no such file"):
        import_csv(DATA / "absent.csv")


def test_import_profiled_capture_skips_markers_with_no_traffic():
    doc, notes = import_csv(PROFILED, "h200")
    assert MARKER not in {k["name"] for k in doc["kernels"]}
    assert sum("no DRAM traffic" in n for n in notes) == 6


def test_short_names():
    assert short_name("void foo<int, 4>(float*, int)") == "foo"
    assert short_name("ampere_sgemm_128x64_nn") == "ampere_sgemm_128x64_nn"
    assert short_name("void a::(anonymous namespace)::k<1>(int)") == "a::k"
    assert len(short_name("x" * 200)) == 80




def test_cli_import_writes_results(run_cli, tmp_path):
    out = tmp_path / "model.json"
    code, stdout, stderr = run_cli("import", "ncu", str(PYTORCH), "-o", str(out))
    assert code == 0, stderr
    assert "imported 6 of 7 launch(es) on h200-sxm" in stderr
    assert "launch 4" in stderr and "cunn_SoftMaxForward" in stdout
    doc = json.loads(out.read_text())
    assert doc["schema"] == "roofline/results/v1" and len(doc["kernels"]) == 6


def test_cli_import_errors(run_cli, tmp_path):
    code, _, err = run_cli("import", "ncu", str(UNITS))
    assert code == 2 and "--spec" in err
    code, out, _ = run_cli("import", "ncu", str(UNITS), "--spec", "h200", "--format", "json")
    assert code == 0 and json.loads(out)["backend"] == "ncu"


@NEEDS_NULL_VERIFIED
def test_imported_results_go_through_report_and_plot(run_cli, tmp_path):
    results = tmp_path / "model.json"
    assert run_cli("import", "ncu", str(PYTORCH), "-o", str(results))[0] == 0
    code, out, err = run_cli("report", str(results), "--format", "markdown")
    assert code == 0, out + err
    assert "IMPORTED" in out
    png = tmp_path / "model.png"
    code, _, err = run_cli("plot", "--results", str(results), "-o", str(png))
    assert code == 0, err
    assert png.read_bytes()[:4] == b"\x89PNG"


@NEEDS_NULL_VERIFIED
def test_imported_results_validate():
    doc, _ = import_csv(PYTORCH)
    validate_results(json.loads(json.dumps(doc)))


def test_imported_entries_have_every_field_report_reads():
    """Apart from verified (null: roofline did not verify them), every required results field is there."""
    from roofline import resultfiles as results

    doc, _ = import_csv(PYTORCH)
    for k in doc["kernels"]:
        missing = set(results._KERNEL) - set(k)
        assert not missing
        for key, expected in results._KERNEL.items():
            if key != "verified":
                assert results._fits(k[key], expected), key


# ---- hierarchical roofline -------------------------------------------------------------------------


def _profiled_doc():
    entries, descriptors = _entries(KERNELS)
    merged, _ = attach(entries, make_plan(entries, descriptors), ncu.parse_csv(PROFILED.read_text()))
    doc = minimal_results(merged)
    doc["device"]["spec_id"] = "h200-sxm"
    return doc


def _gids(fig) -> list[str]:
    return [a.get_gid() for ax in fig.axes for a in ax.get_children() if a.get_gid()] + \
           [t.get_gid() for t in fig.texts if t.get_gid()]


def test_hierarchy_three_linked_points_per_kernel():
    from roofline.render.hierarchy import hierarchy_figure, hierarchy_points

    doc = _profiled_doc()
    points, skipped = hierarchy_points([doc])
    assert skipped == []
    assert len(points) == 9
    add = [p for p in points if p.name == "vector_add_float4"]
    by_level = {p.level: p for p in add}
    assert by_level["dram"].x == pytest.approx(16_777_216 / (134_247_424 + 62_914_560))
    assert by_level["l2"].x == pytest.approx(16_777_216 / 268_435_456)
    assert len({p.y for p in add}) == 1  # one performance, three intensities
    fig = hierarchy_figure([doc], {"l1": 30e12, "l2": 10e12})
    gids = _gids(fig)
    assert sum(g.startswith("roofline:hier-point:") for g in gids) == 9
    assert sum(g.startswith("roofline:hier-link:") for g in gids) == 3
    assert {g for g in gids if g.startswith("roofline:hier-roof:")} == {
        "roofline:hier-roof:l1", "roofline:hier-roof:l2", "roofline:hier-roof:dram"}
    from roofline.render.plot import figure_bytes

    assert figure_bytes(fig, "png", 60)[:4] == b"\x89PNG"


def test_hierarchy_without_cache_bandwidths_says_so():
    from roofline.render.hierarchy import hierarchy_figure

    fig = hierarchy_figure([_profiled_doc()])  # the bundled H200 spec gives cache sizes, not bandwidths
    gids = _gids(fig)
    assert "roofline:hier-roof:dram" in gids and "roofline:hier-roof:l2" not in gids
    table = next(t for t in fig.texts if t.get_gid() == "roofline:hier-table").get_text()
    assert "No roof drawn for L1 and L2" in table


def test_hierarchy_needs_counters():
    from roofline.render.hierarchy import hierarchy_figure

    entries, _ = _entries(KERNELS[:1])
    with pytest.raises(InputError, match="counters"):
        hierarchy_figure([minimal_results(entries)])


def test_hierarchy_of_imported_full_capture():
    from roofline.render.hierarchy import hierarchy_points

    doc, _ = import_csv(FULL)
    points, _ = hierarchy_points([doc])
    assert {p.level for p in points} == {"l1", "l2", "dram"}


def test_cli_lists_the_metrics_for_ncu(run_cli):
    code, out, _ = run_cli("import", "ncu", "--list-metrics")
    assert code == 0
    metrics = out.strip().split(",")
    assert metrics == list(ncu.IMPORT_METRICS) and " " not in out.strip()
    assert ncu.DEVICE_NAME in metrics and ncu.TIME in metrics
