"""Reading `ncu --csv --page raw` captures: numbers and units, the table among program output, impossible values.

Fixtures in tests/data/ncu: synthetic_*.csv are written in the exact raw-page layout (noise, ==PROF== lines, units
row, thousands separators); h200_*.csv are real captures from an H200 (benchmarks/h200_ncu_capture.sh and
benchmarks/h200_ncu_tensor.sh).
"""

from __future__ import annotations


import pytest

from roofline.errors import InputError
from roofline.ncu.counters import counters
from roofline.ncu.importer import import_csv
from roofline.ncu.metrics import DRAM_READ, TIME
from roofline.ncu.table import NcuParseError, diagnose, parse_csv, parse_number, unit_scale
from conftest import NCU, NCU_PYTORCH, NCU_UNITS, NCU_FULL, NCU_PROFILED, NCU_NOPERM

REAL = sorted(NCU.glob("h200_*.csv"))


@pytest.mark.parametrize("text, value", [
    ("201,342,976", 201342976.0), ("1,024", 1024.0), ("57312", 57312.0), ("2,816.00", 2816.0), ("0.25", 0.25),
    ("1.5e3", 1500.0), ("", None), ("n/a", None), (" 7 ", 7.0), ("-5", -5.0),
])
def test_parse_number(text, value):
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["NVIDIA H200", "١٢٣", "1,2,3,4"])
def test_parse_number_refuses_text(text):
    with pytest.raises(ValueError):
        parse_number(text)


@pytest.mark.parametrize("unit, scale", [
    ("byte", 1.0), ("Kbyte", 1e3), ("Mbyte", 1e6), ("Gbyte", 1e9), ("Kibyte", 1024.0), ("nsecond", 1e-9),
    ("usecond", 1e-6), ("msecond", 1e-3), ("second", 1.0), ("inst", 1.0), ("Kinst", 1e3), ("%", 1.0), ("", 1.0),
    ("byte/second", 1.0), ("Gbyte/second", 1e9), ("cycle/nsecond", 1e9), ("inst/cycle", 1.0),
])
def test_unit_scale(unit, scale):
    assert unit_scale(unit) == pytest.approx(scale)


def test_unknown_unit_keeps_the_value():
    assert unit_scale("furlong") is None


def test_pytorch_capture_is_found_among_program_output():
    table = parse_csv(NCU_PYTORCH.read_text())
    assert len(table.launches) == 7
    assert table.noise_lines > 5  # the program's prints and ==PROF== lines
    assert any("Connected to process" in line for line in table.prof_lines)
    first = table.launches[0]
    assert first.id == "0" and first.kernel.startswith("void at::native::vectorized_elementwise_kernel<4")
    assert first.info["Grid Size"] == "(65536, 1, 1)"
    assert first.device == "NVIDIA H200"
    assert first.metrics[DRAM_READ] == 134_250_112  # "134,250,112"
    assert first.metrics[TIME] == pytest.approx(57_312e-9)  # nsecond -> s
    assert table.launches[4].metrics[DRAM_READ] is None  # "n/a"
    assert NCU_PYTORCH.read_text().splitlines()[first.line - 1].startswith('"0","')  # its line, for messages


def test_automatic_units_and_an_older_layout():
    """ncu without --print-units base: Mbyte, usecond, msecond, Kbyte; a "Kernel Time" column; three tables."""
    table = parse_csv(NCU_UNITS.read_text())
    assert [launch.kernel.split("(")[0] for launch in table.launches] == ["stream_triad", "transpose_naive",
                                                                           "tiny_kernel"]
    triad, transpose, tiny = (counters(launch.metrics) for launch in table.launches)
    assert triad["dram_read"] == pytest.approx(536.91e6)
    assert triad["time"] == pytest.approx(181.25e-6)
    assert transpose["time"] == pytest.approx(1.02e-3)
    assert tiny["dram_bytes"] == pytest.approx(2810.0)
    assert tiny["time"] == pytest.approx(2816e-9)
    assert table.launches[0].device == ""  # no device name in this capture


def test_full_set_is_read_from_a_wide_file():
    table = parse_csv(NCU_FULL.read_text())
    assert len(table.launches) == 2
    assert len(table.columns) > 40
    add = table.launches[0]
    assert add.raw["launch__func_cache_config"] == "CachePreferNone"
    assert add.metrics["launch__grid_size"] == 16384
    c = counters(add.metrics)
    assert c["flops_source"] == "rates"  # --set full records per-cycle rates, not counts
    assert c["flops_fp32"] == pytest.approx(16_777_216, rel=1e-4)
    assert c["flops_fp64"] == 0.0
    assert not [m for m in c["missing"] if "sass" in m]  # every CUDA-core FLOP counter, from its rate


def test_no_table_is_an_error_that_names_ncus_complaint():
    with pytest.raises(NcuParseError, match="ERR_NVGPUCTRPERM"):
        parse_csv(NCU_NOPERM.read_text())
    with pytest.raises(NcuParseError, match="no 'ncu --csv --page raw' table"):
        parse_csv("hello\nworld\n")


def test_a_stray_quote_in_program_output_does_not_swallow_the_table():
    text = 'the program says "hello\n' + NCU_PROFILED.read_text()
    assert len(parse_csv(text).launches) == 10


def test_crlf_and_bom():
    text = "\ufeff" + NCU_PROFILED.read_text().replace("\n", "\r\n")
    assert len(parse_csv(text).launches) == 10


@pytest.mark.parametrize("path", REAL, ids=[p.name for p in REAL])
def test_real_h200_captures_parse(path):
    table = parse_csv(path.read_text(encoding="utf-8"))
    usable = [c for c in (counters(launch.metrics) for launch in table.launches) if c["dram_bytes"] and c["time"]]
    assert usable
    for c in usable:
        assert 0 < c["time"] < 10  # seconds: units were scaled
        assert c["dram_bytes"] < 1e12


# ---- values ncu cannot have written (issue 15) ----------------------------------------------------------------


def _with_cell(text: str, launch_id: str, column: str, value: str) -> tuple[str, int, int]:
    """The capture with one cell replaced; (text, its line, its column), both 1-based."""
    lines = text.splitlines()
    header_at = next(i for i, ln in enumerate(lines) if ln.startswith('"ID"'))
    header = [c.strip('"') for c in lines[header_at].split('","')]
    col = header.index(column)
    row_at = next(i for i, ln in enumerate(lines) if i > header_at and ln.startswith(f'"{launch_id}"'))
    cells = lines[row_at].split('","')
    cells[col] = value if 0 < col < len(cells) - 1 else cells[col]
    lines[row_at] = '","'.join(cells)
    return "\n".join(lines) + "\n", row_at + 1, col + 1


@pytest.mark.parametrize("metric, value", [
    ("dram__bytes_read.sum", "-134,250,112"), ("gpu__time_duration.sum", "-1"),
    ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "inf"), ("dram__bytes_write.sum", "9" * 400),
])
def test_impossible_counts_are_refused_with_line_and_column(tmp_path, run_cli, metric, value):
    text, line, column = _with_cell(NCU_PYTORCH.read_text(), "2", metric, value)
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    with pytest.raises(NcuParseError, match=rf"line {line}, column {column} \({metric}\)"):
        parse_csv(text)
    code, out, err = run_cli("import", "ncu", str(bad))
    assert code == 2 and out == ""
    assert f"{bad}: line {line}, column {column} ({metric})" in err and "impossible" in err
    assert "Traceback" not in err


def test_a_negative_value_of_a_metric_roofline_does_not_read_is_kept():
    text, _, _ = _with_cell(NCU_PYTORCH.read_text(), "2", "device__attribute_display_name", "-3")
    assert parse_csv(text).launches[2].metrics["device__attribute_display_name"] == -3.0


def test_import_refuses_what_is_not_a_csv_file(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        import_csv(tmp_path / "absent.csv")
    with pytest.raises(InputError, match="is a folder"):
        import_csv(tmp_path)
    latin = tmp_path / "latin.csv"
    latin.write_bytes(NCU_PYTORCH.read_bytes() + b"\xff\n")
    with pytest.raises(InputError, match="UTF-8"):
        import_csv(latin)


@pytest.mark.parametrize("text, words", [
    (NCU_NOPERM.read_text(), "ERR_NVGPUCTRPERM"),
    ("==ERROR== LibraryNotLoaded: libnvperf_host.so\n", "LibraryNotLoaded"),
    ("==ERROR== Failed to find metric sm__inst_executed_pipe_tensor.sum\n", "does not know one of the metrics"),
    ("==ERROR== Profiling is not supported on this device\n", "does not support profiling this GPU"),
])
def test_diagnose(text, words):
    assert words in diagnose(text)


def test_diagnose_quiet_when_fine():
    assert diagnose(NCU_PYTORCH.read_text()) is None
    assert diagnose((NCU / "h200_tensor_capture.csv").read_text()) is None  # its clock note is no error
