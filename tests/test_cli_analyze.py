"""`roofline analyze` (and the CLI as a whole) through roofline.cli.main, as the console script calls it."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import click
import pytest

from conftest import KERNELS, TESTS, TOY_SPEC
from roofline import __version__

pytestmark = pytest.mark.usefixtures("no_bundled_kernels")

TOP_KEYS = {"schema", "machine", "kernels"}
MACHINE_KEYS = {"id", "name", "bandwidth", "latency", "bytes_in_flight", "resident_threads", "roofs", "caches", "power_limit"}
KERNEL_KEYS = {
    "name", "params", "dtype", "roof", "launches", "stages", "flops", "bytes", "intensity", "peak_flops", "bandwidth",
    "ridge", "bound", "attainable_flops", "memory_time", "compute_time", "sol_time", "access_bytes", "threads_needed",
    "latency_bound", "traffic", "links",
}
STAGE_KEYS = {"name", "flops", "bytes", "sol_time"}
SELECTED = ("t_vadd", "t_fma", "t_pipeline")


def analyze_args(*extra: object) -> list[object]:
    return ["analyze", *SELECTED, "--kernels", KERNELS, *extra]


# ---- JSON -----------------------------------------------------------------------------------------------


def _check_document(doc: dict) -> None:
    assert set(doc) == TOP_KEYS
    assert doc["schema"] == "roofline/analysis/v1"
    assert set(doc["machine"]) == MACHINE_KEYS
    for k in doc["kernels"]:
        assert set(k) == KERNEL_KEYS
        for s in k["stages"]:
            assert set(s) == STAGE_KEYS


def test_json_has_exactly_the_documented_keys(run_cli) -> None:
    r = run_cli(*analyze_args("--spec", TOY_SPEC, "--format", "json"))
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    _check_document(doc)
    assert doc["machine"]["id"] == "toy"
    assert doc["machine"]["bytes_in_flight"] == pytest.approx(1e6)
    assert [k["name"] for k in doc["kernels"]] == list(SELECTED)
    vadd, fma, pipeline = doc["kernels"]
    assert vadd["intensity"] == pytest.approx(1 / 12)
    assert vadd["bound"] == "memory" and fma["bound"] == "compute"
    assert vadd["ridge"] == pytest.approx(10)
    assert vadd["params"] == {"n": 2**20}
    assert vadd["latency_bound"] is False
    assert pipeline["launches"] == 3 and len(pipeline["stages"]) == 3
    assert vadd["stages"] == []


def test_json_with_overrides(run_cli) -> None:
    r = run_cli("analyze", "t_vadd", "--kernels", KERNELS, "--spec", "t4", "--format", "json", "-p", "n=1000")
    assert r.code == 0, r.err
    (k,) = json.loads(r.out)["kernels"]
    assert k["params"] == {"n": 1000}
    assert k["bytes"] == 12_000
    assert k["latency_bound"] is True
    assert k["threads_needed"] == pytest.approx(32_000)


def test_repeated_spec_gives_a_list_one_document_per_machine(run_cli) -> None:
    r = run_cli(*analyze_args("--spec", TOY_SPEC, "--spec", "t4", "--spec", "h100", "--format", "json"))
    assert r.code == 0, r.err
    docs = json.loads(r.out)
    assert isinstance(docs, list)
    assert [d["machine"]["id"] for d in docs] == ["toy", "t4", "h100-sxm"]
    for doc in docs:
        _check_document(doc)
        assert [k["name"] for k in doc["kernels"]] == list(SELECTED)


def test_same_machine_twice_is_one_document(run_cli) -> None:
    r = run_cli(*analyze_args("--spec", "t4", "--spec", "t4", "--format", "json"))
    assert r.code == 0, r.err
    assert json.loads(r.out)["machine"]["id"] == "t4"  # a single document, not a list


def test_skipped_kernel_is_noted_on_stderr(run_cli) -> None:
    r = run_cli("analyze", "t_vadd", "t_dgemv", "--kernels", KERNELS, "--spec", TOY_SPEC, "--format", "json")
    assert r.code == 0, r.err
    assert [k["name"] for k in json.loads(r.out)["kernels"]] == ["t_vadd"]
    assert "t_dgemv skipped on toy" in r.err and "fp64" in r.err


# ---- CSV, Markdown, table ------------------------------------------------------------------------------


def test_csv_one_row_per_kernel_and_machine(run_cli) -> None:
    r = run_cli(*analyze_args("--spec", TOY_SPEC, "--spec", "t4", "--format", "csv"))
    assert r.code == 0, r.err
    rows = list(csv.DictReader(io.StringIO(r.out)))
    assert len(rows) == len(SELECTED) * 2
    assert [(row["machine"], row["name"]) for row in rows] == [(m, k) for m in ("toy", "t4") for k in SELECTED]
    first = rows[0]
    assert float(first["intensity"]) == pytest.approx(1 / 12)
    assert float(first["ridge"]) == pytest.approx(10)
    assert first["params"] == f"n={2**20}"
    assert first["latency_bound"] == "false"
    assert {"flops", "bytes", "sol_time", "threads_needed", "bound"} <= set(first)


def test_markdown(run_cli) -> None:
    r = run_cli(*analyze_args("--spec", TOY_SPEC, "--spec", "t4", "--format", "markdown"))
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    headings = [line for line in lines if line.startswith("### ")]
    assert len(headings) == 2 and "(toy)" in headings[0] and "(t4)" in headings[1]
    rows = [line for line in lines if line.startswith("| t\\_")]  # '_' escaped: Markdown shows it as written
    assert len(rows) == len(SELECTED) * 2
    assert "0.0833" in rows[0] and "memory" in rows[0]


def test_table(run_cli) -> None:
    r = run_cli(*analyze_args("--spec", TOY_SPEC))
    assert r.code == 0, r.err
    for name in SELECTED:
        assert name in r.out
    assert "Toy GPU" in r.out and "1 TB/s" in r.out and "1 MB in flight" in r.out


@pytest.mark.parametrize("fmt", ["table", "json", "csv", "markdown"])
def test_output_file(run_cli, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"analysis.{fmt}"
    r = run_cli(*analyze_args("--spec", TOY_SPEC, "--format", fmt, "-o", out))
    assert r.code == 0, r.err
    assert r.out == ""
    assert f"wrote {out}" in r.err
    text = out.read_text(encoding="utf-8")
    shown = [name.replace("_", "\\_") for name in SELECTED] if fmt == "markdown" else SELECTED
    assert all(name in text for name in shown)
    if fmt == "json":
        _check_document(json.loads(text))
    assert sorted(p.name for p in tmp_path.iterdir()) == [out.name]  # no temporary file left behind


def test_output_to_a_missing_folder_is_an_input_error(run_cli, tmp_path: Path) -> None:
    r = run_cli(*analyze_args("--spec", TOY_SPEC, "--format", "json", "-o", tmp_path / "no" / "such" / "x.json"))
    assert r.code == 2
    assert "cannot write" in r.err and "Traceback" not in r.err


def test_bad_format_is_a_usage_error(run_cli) -> None:
    r = run_cli(*analyze_args("--spec", TOY_SPEC, "--format", "xml"))
    assert r.code == 2
    assert "xml" in r.err


# ---- version, help, imports ----------------------------------------------------------------------------


def test_version(run_cli) -> None:
    r = run_cli("--version")
    assert r.code == 0
    assert __version__ in r.out and "roofline" in r.out


def _command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = []
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        paths.append((*prefix, name))
        if isinstance(command, click.Group):
            paths += _command_paths(command, (*prefix, name))
    return paths


def test_registered_commands_include_the_core_ones() -> None:
    from roofline.cli import cli

    paths = _command_paths(cli)
    for expected in [("analyze",), ("specs",), ("specs", "show"), ("kernels",), ("kernels", "show")]:
        assert expected in paths


def _all_command_paths() -> list[tuple[str, ...]]:
    from roofline.cli import cli

    return [(), *_command_paths(cli)]


@pytest.mark.parametrize("path", _all_command_paths(), ids=lambda p: " ".join(p) or "roofline")
def test_every_help_has_an_example(run_cli, path: tuple[str, ...]) -> None:
    r = run_cli(*path, "--help")
    assert r.code == 0, r.err
    assert "Usage:" in r.out
    assert "Example" in r.out


def test_analyze_imports_neither_matplotlib_nor_cupy(tmp_path: Path) -> None:
    script = f"""
import sys
import roofline.load.kernels
empty = {str(tmp_path)!r}
real = roofline.load.kernels.bundled_dir
roofline.load.kernels.bundled_dir = lambda kind: __import__('pathlib').Path(empty) if kind == 'kernels' else real(kind)
from roofline.cli import main
code = None
try:
    main(['analyze', '--kernels', {str(KERNELS / 't_vadd.yaml')!r}, '--spec', 't4', '--format', 'json'])
except SystemExit as exc:
    code = exc.code
print('RESULT', code, 'matplotlib' in sys.modules, 'cupy' in sys.modules, file=sys.stderr)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=TESTS.parent)
    assert "RESULT 0 False False" in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["kernels"][0]["name"] == "t_vadd"


# ---- unexpected errors ----------------------------------------------------------------------------------


def test_unexpected_exception_exits_101_with_a_traceback(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    import roofline.load.selection

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("kaboom inside analyze")

    monkeypatch.setattr(roofline.load.selection, "analyze_selection", boom)
    r = run_cli(*analyze_args("--spec", TOY_SPEC, "--format", "json"))
    assert r.code == 101
    assert "Traceback" in r.err
    assert "RuntimeError: kaboom inside analyze" in r.err
    assert "internal error" in r.err
    assert r.out == ""


def test_input_errors_exit_2_without_a_traceback(run_cli) -> None:
    r = run_cli("analyze", "no_such_kernel", "--kernels", KERNELS, "--spec", TOY_SPEC)
    assert r.code == 2
    assert r.err.startswith("error: no kernel named 'no_such_kernel'")
    assert "Traceback" not in r.err


def test_unknown_command_is_a_usage_error(run_cli) -> None:
    r = run_cli("analyse")
    assert r.code == 2
    assert "analyse" in r.err
