"""`roofline import ncu` and `profile` on captures that broke them (issue 23): what they write must read back in
`report` and `plot`, nothing is written when it would not, and a launch row is never lost without a word.

The captures are built here, small, in ncu's raw-page layout (quoted cells, a units row after the header)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.ncu.importer import import_csv
from roofline.ncu.readback import check_import
from roofline.ncu.table import parse_csv

HEADER = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC", "device__attribute_display_name", "dram__bytes_read.sum",
          "dram__bytes_write.sum", "gpu__time_duration.sum", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"]
UNITS = [""] * 12 + ["byte", "byte", "nsecond", "inst"]


def quoted(cells: list[object]) -> str:
    return ",".join('"' + str(c).replace('"', '""') + '"' for c in cells)


def row(launch: object, name: str = "add_f32", read: str = "1,000,000", write: str = "500,000",
        time: str = "1,000", ffma: str = "1,000") -> str:
    return quoted([launch, "1", "a.out", "host", name, "1", "7", "(128, 1, 1)", "(64, 1, 1)", "0", "9.0",
                   "NVIDIA H200", read, write, time, ffma])


def capture(*rows: str) -> str:
    return "\n".join([quoted(HEADER), quoted(UNITS), *rows]) + "\n"


def write(tmp_path: Path, text: str, name: str = "capture.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---- what is written reads back --------------------------------------------------------------------------------


def test_concatenated_captures_are_numbered_apart_and_read_back(run_cli, tmp_path: Path) -> None:
    """Two captures in one file repeat IDs 0 and 1: they wrote a file report refused ('repeats kernels[0]')."""
    one = capture(row(0, "k0"), row(1, "k1"))
    csv, out = write(tmp_path, one + "==PROF== Disconnected from process 1\n" + one), tmp_path / "both.json"
    code, _, err = run_cli("import", "ncu", csv, "-o", out)
    assert code in (0, None), err
    assert "launch IDs start again 1 time" in err and "imported 4 of 4 launches" in err
    doc = json.loads(out.read_text())
    assert [k["params"]["launch"] for k in doc["kernels"]] == [0, 1, 2, 3]  # the second capture numbered on
    assert [(k["ncu"]["id"], k["ncu"]["capture"]) for k in doc["kernels"]] == [("0", 1), ("1", 1), ("0", 2), ("1", 2)]
    assert doc["source"]["captures"] == 2
    code, _, err = run_cli("report", out)
    assert code in (0, None), err
    grouped = tmp_path / "grouped.json"
    code, _, err = run_cli("import", "ncu", csv, "--group-by", "kernel", "-o", grouped)
    assert code in (0, None), err
    assert json.loads(grouped.read_text())["groups"][0]["kernels"] == [0, 2]  # k0 of both captures
    code, _, err = run_cli("report", grouped, "--fail-below-program", "1%")
    assert code in (0, None), err


def test_a_wrong_spec_is_refused_before_anything_is_written(run_cli, tmp_path: Path) -> None:
    """4 TB/s of DRAM traffic measured on an H200, compared with a T4's 320 GB/s: 1250 % of the ceiling, a file
    report refused (fraction over 10)."""
    csv, out = write(tmp_path, capture(row(0, "copy", "3,000,000,000", "1,000,000,000", "1,000,000"))), \
        tmp_path / "t4.json"
    code, stdout, err = run_cli("import", "ncu", csv, "--spec", "t4", "-o", out)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "above 10× their ceiling on t4" in err and "1250%" in err and "NVIDIA H200" in err
    assert "nothing was written" in err and not out.exists() and stdout == ""
    code, _, err = run_cli("import", "ncu", csv, "--spec", "t4", "--format", "json")
    assert code == 2 and "nothing was written" in err


def test_counts_no_gpu_reaches_are_not_blamed_on_the_spec(run_cli, tmp_path: Path) -> None:
    csv, out = write(tmp_path, capture(row(0, "k0", "1e300", "1", "1,000,000,000"))), tmp_path / "o.json"
    code, _, err = run_cli("import", "ncu", csv, "-o", out)
    assert code == 2 and "at 2.08e+287× (1e+300 B/s against 4.8 TB/s" in err, err
    assert "no GPU comes near that, so these counts are not ones ncu writes" in err and "--spec" not in err
    assert not out.exists()


def test_a_spec_below_what_the_launch_reached_is_named(run_cli, tmp_path: Path) -> None:
    csv = write(tmp_path, capture(row(0, "copy", "3,000,000,000", "1,000,000,000", "1,000,000")))
    code, _, err = run_cli("import", "ncu", csv, "--spec", "a100-sxm4-80gb")
    assert code in (0, None), err
    assert "1 launch above their ceiling on a100-sxm4-80gb, up to 196%" in err and "is --spec the GPU" in err


@pytest.mark.parametrize(("cells", "fragment"), [
    ({"read": "1e308", "write": "1e308"}, "line 3 (launch 0): its bytes comes out as inf"),
    ({"ffma": "1e308"}, "line 3 (launch 0): its flops comes out as inf"),
    ({"time": "1e-300"}, "line 3 (launch 0): its achieved_bandwidth comes out as inf"),
], ids=["bytes", "flops", "time"])
def test_counts_that_overflow_are_refused_not_written_as_null(run_cli, tmp_path: Path, cells: dict,
                                                              fragment: str) -> None:
    csv, out = write(tmp_path, capture(row(0, "k0", **cells), row(1, "k1"))), tmp_path / "o.json"
    code, _, err = run_cli("import", "ncu", csv, "-o", out)
    assert code == 2 and fragment in err and not out.exists(), err


def test_group_sums_that_overflow_are_refused(run_cli, tmp_path: Path) -> None:
    """Each launch's bytes (1.6e308) are finite; their group's sum is not (found by tests/test_fuzz.py)."""
    big = {"read": "8e307", "write": "8e307", "time": "3.4e303"}  # each launch at 9.8x its ceiling: not refused
    csv, out = write(tmp_path, capture(row(0, "k", **big), row(1, "k", **big))), tmp_path / "o.json"
    code, _, err = run_cli("import", "ncu", csv, "--group-by", "kernel", "-o", out)
    assert code == 2 and "group 'k': its bytes adds up to inf" in err and not out.exists(), err


def test_a_count_that_overflows_once_scaled_is_refused(tmp_path: Path) -> None:
    text = capture(row(0, "k0", read="1e300")).replace('"byte","byte"', '"Pbyte","byte"')
    with pytest.raises(InputError, match=r"line 3, column 13 \(dram__bytes_read.sum\).*overflows"):
        import_csv(write(tmp_path, text))


def test_check_import_refuses_what_report_would_refuse(tmp_path: Path) -> None:
    """The last line of defence: whatever else report would refuse stops the import, with report's words."""
    doc, _ = import_csv(write(tmp_path, capture(row(0, "k0"), row(1, "k1"))))
    doc["kernels"][1]["time_ci"] = [1.0, 2.0]
    with pytest.raises(InputError, match=r"^capture.csv \(as imported\): kernels\[1\] \(k1\).time_ci: ") as exc:
        check_import(doc, "capture.csv")
    assert str(exc.value).endswith("nothing was written: 'roofline report' and 'plot' would refuse these results")


# ---- rows are never dropped silently ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["k" * 140_000, "k\u2028x\x0by\x1cz\x85w", "multi\nline\nname"],
                         ids=["cell-over-131072", "line-separators", "newlines-in-quotes"])
def test_rows_with_long_or_odd_names_are_imported(tmp_path: Path, name: str) -> None:
    doc, notes = import_csv(write(tmp_path, capture(row(0, name), row(1, "k1"))))
    assert [k["kernel_name"] for k in doc["kernels"]] == [name, "k1"] and not notes
    assert doc["source"]["launches"] == 2


@pytest.mark.parametrize(("bad", "why"), [
    (row("", "k0"), "a row with an empty ID: line 3"),
    (row(0, "k0")[:-8], "a row with too few cells: line 3 (ID 0) (15 of 16)"),
    (row(0, "k0") + ',"extra"', "a row with too many cells: line 3 (ID 0) (17 of 16)"),
    (row("9" * 5000, "k0"), "a row with an ID too long to be a launch number: line 3 (ID 999999999999999999999999…)"
                            " (5000 digits)"),
    (row("x7", "k0"), "a row with an ID that is not a launch number: line 3 (ID x7)"),
], ids=["empty-id", "short-row", "long-row", "5000-digit-id", "text-id"])
def test_rows_that_cannot_be_launches_are_counted_and_named(run_cli, tmp_path: Path, bad: str, why: str) -> None:
    csv, out = write(tmp_path, capture(bad, row(1, "k1"))), tmp_path / "o.json"
    code, _, err = run_cli("import", "ncu", csv, "-o", out)
    assert code in (0, None) and "Traceback" not in err, err
    assert f"note: 1 launch row not imported, {why}" in err
    assert "imported 1 of 2 launches on h200-sxm (1 not imported: see the notes above)" in err
    doc = json.loads(out.read_text())
    assert doc["source"]["dropped_rows"] == 1 and doc["source"]["dropped"][0]["line"] == 3


def test_many_dropped_rows_make_one_line_per_reason(tmp_path: Path) -> None:
    rows = [row("", f"k{i}") for i in range(7)] + [row(0, "k")[:-8]] * 2 + [row(1, "kept")]
    doc, notes = import_csv(write(tmp_path, capture(*rows)))
    assert notes == ["note: 7 launch rows not imported, a row with an empty ID: line 3, line 4, line 5, line 6, "
                     "line 7 and 2 more",
                     "note: 2 launch rows not imported, a row with too few cells: line 10 (ID 0) (15 of 16), "
                     "line 11 (ID 0) (15 of 16)"]
    assert doc["source"]["launches"] == 10 and len(doc["kernels"]) == 1


def test_program_output_around_the_table_is_not_a_dropped_row(tmp_path: Path) -> None:
    text = "step 0\n" + capture(row(0, "k0")) + "loss = 0.69, 1.2\n==PROF== Disconnected from process 1\n42\n"
    table = parse_csv(text)
    assert len(table.launches) == 1 and table.dropped == []


def test_a_header_with_only_broken_rows_names_them(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"header but no kernel launches \(1 launch row not imported, a row "
                                         r"with an empty ID: line 3\)"):
        import_csv(write(tmp_path, capture(row("", "k0"))), "h200")


# ---- profile writes through the same check ---------------------------------------------------------------------


def test_profile_refuses_a_wrong_spec_before_writing(run_cli, monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    import os
    import sys

    from conftest import NCU

    spec = tmp_path / "slow.yaml"
    spec.write_text("schema_version: 1\nid: slow\nname: A slow GPU\nmemory: {bandwidth: 10 GB/s, latency: 1 us}\n"
                    "compute: {fp32: 1 TFLOP/s}\nsm_count: 4\nmax_threads_per_sm: 1024\n"
                    "sources: [{for: [memory.bandwidth], cite: test}]\n", encoding="utf-8")
    monkeypatch.setenv("PATH", f"{NCU / 'fake'}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NCU_ARGS", str(tmp_path / "args.jsonl"))
    monkeypatch.setenv("FAKE_NCU_CSV", str(NCU / "h200_gpt2_profile.csv"))
    out = tmp_path / "gpt2.json"
    code, _, err = run_cli("profile", "--spec", spec, "-o", out, "--", sys.executable, "-c", "pass")
    assert code == 2 and "the profile:" in err and "on slow" in err and "nothing was written" in err, err
    assert not out.exists()
