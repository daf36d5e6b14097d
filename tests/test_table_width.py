"""Every table reads at 80 and 120 columns: no line wider than the terminal, no number or id cut to `…`, the least
important columns left out (and said so), all of them with --wide (issue 23, "Output that reads")."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from conftest import DATA, NCU

RESULTS = DATA / "results"
GPT2 = NCU / "h200_gpt2_profile.csv"

COMMANDS = {
    "analyze": ["analyze"],
    "analyze-two-specs": ["analyze", "--spec", "h100", "--spec", "a100-sxm4-80gb"],
    "specs": ["specs"],
    "specs-show": ["specs", "show", "h200"],
    "kernels": ["kernels"],
    "kernels-show": ["kernels", "--kernels", DATA / "kernels", "show", "t_dgemv"],
    "report": ["report", RESULTS / "h100.json"],
    "report-many": ["report", RESULTS / "many_h200.json"],
    "report-grouped": ["report", RESULTS / "h200_ncu_profiled.json"],
    "report-sweep": ["report", RESULTS / "sweep.json"],
    "import": ["import", "ncu", GPT2, "--spec", "h200"],
    "import-grouped": ["import", "ncu", GPT2, "--spec", "h200", "--group-by", "op"],
    "report-host": ["report", Path(__file__).resolve().parent.parent / "tests" / "data" / "h200"
                    / "measure-all-two-gpus.json"],
    "report-baseline": ["report", RESULTS / "h100.json", "--baseline", RESULTS / "h100_baseline.json"],
    "import-torch": ["import", "torch", DATA / "kineto" / "h200-gpt2.json.gz"],
    "diff": ["diff", DATA / "kineto" / "h200-train.json.gz", DATA / "kineto" / "compiled" / "llama-train-compiled.json.gz"],
    "sweep": ["sweep", "vector_add", "--backend", "numpy", "--spec", "h100", "--sizes", "2**12..2**13",
              "--min-time", "0", "--min-repeats", "2"],
    "measure": ["measure", "--backend", "numpy", "--kernels", DATA / "measure" / "m_add.yaml", "m_add", "-p", "n=4096",
                "--min-time", "0", "--min-repeats", "2", "--spec", "h100"],
}


# The columns each command's (first) table keeps at 80 columns and wider: what the table is for.
KEY_COLUMNS = {
    "analyze": ("kernel", "roof", "FLOPs", "DRAM bytes", "bound", "SOL time"),
    "analyze-two-specs": ("kernel", "roof", "FLOPs", "DRAM bytes", "bound", "SOL time"),
    "specs": ("id", "bandwidth", "FP32"),
    "kernels": ("name", "roof"),
    "report": ("kernel", "status", "time (median)", "of ceiling", "gate"),
    "report-many": ("kernel", "status", "time (median)", "of ceiling", "gate"),
    "report-grouped": ("kernel", "status", "time (median)", "of ceiling", "gate"),
    "report-sweep": ("kernel", "status", "time (median)", "of ceiling", "gate"),
    "report-host": ("device", "kernel", "status", "time (median)", "of ceiling", "gate"),
    "import": ("group", "time", "of ceiling", "recoverable"),
    "import-torch": ("group", "time", "of ceiling", "recoverable"),
    "diff": ("program", "A", "B", "change"),
    "report-baseline": ("kernel", "status", "time (median)", "of ceiling", "vs baseline", "gate"),
    "import-grouped": ("group", "time", "of ceiling", "recoverable"),
    "sweep": ("size", "bytes", "measured", "predicted", "error"),
    "measure": ("kernel", "status", "time (median)", "of ceiling"),
}


def _cells_of(tables, width):
    """Render each table fitted to `width` as the CLI does; return the text and every unbreakable cell's text."""
    from rich.console import Console

    from roofline.render.tables.fit import fit

    out = io.StringIO()
    console = Console(file=out, width=width, color_system=None, markup=False, emoji=False)
    whole = []
    for t in tables:
        fit(t, width)
        for column in t.columns:
            if column.no_wrap:
                whole += [getattr(c, "plain", str(c)) for c in column._cells]
        console.print(t)
    return out.getvalue(), whole


@pytest.mark.parametrize("width", [60, 80, 100, 120])
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_table_fits_and_keeps_its_numbers(name, width, run_cli, monkeypatch):
    import roofline.cli.common as common

    seen = []
    original = common.print_tables

    def spy(tables, output, stderr=False):
        seen.extend(tables)
        return original(tables, output, stderr)

    monkeypatch.setattr(common, "print_tables", spy)
    for module in ("analyze", "catalog", "report", "calibrate", "doctor", "diff"):
        mod = __import__(f"roofline.cli.{module}", fromlist=["x"])
        if hasattr(mod, "print_tables"):
            monkeypatch.setattr(mod, "print_tables", spy)
    monkeypatch.setenv("COLUMNS", str(width))
    r = run_cli(*COMMANDS[name])
    assert r.code in (0, 1), r.err
    assert "Traceback" not in r.err
    lines = r.out.splitlines()
    assert lines and max(len(line) for line in lines) <= width, max(lines, key=len)
    assert seen, "the command printed no table through print_tables"
    if width >= 80 and name in KEY_COLUMNS:  # what the table is for survives an 80-column terminal
        from roofline.render.tables.fit import _header

        kept = [_header(c) for c in seen[0].columns]
        assert set(KEY_COLUMNS[name]) <= set(kept), (KEY_COLUMNS[name], kept)
    # the same tables fitted again render every number and id whole, on one line
    text, whole = _cells_of(seen, width)
    for cell in whole:
        if cell:
            assert any(cell in line for line in text.splitlines()), (cell, text)
    # the cells the CLI printed, too: no number was cut to an ellipsis
    for cell in whole:
        if len(cell) > 1 and "…" not in cell:
            assert f"{cell[:-1]}…" not in r.out


@pytest.mark.parametrize("width", [80, 100])
def test_analyze_at_80_keeps_roof_flops_bytes_bound_and_sol_time(width, run_cli, monkeypatch):
    """What the model was given (roof, FLOPs, bytes) and what it concluded (bound, SOL time) stay at 80 columns;
    what follows from them (attainable, AI) and the rest go first, and the note under the table names them."""
    monkeypatch.setenv("COLUMNS", str(width))
    r = run_cli("analyze")
    assert r.code == 0, r.err
    flat = " ".join(r.out.split())
    assert max(len(line) for line in r.out.splitlines()) <= width
    assert f"Left out at {width} columns: threads for BW" in flat and "--wide shows them" in flat
    assert "…" not in r.out
    header = " ".join(line for line in r.out.splitlines()[:6])
    for column in ("kernel", "roof", "FLOPs", "bytes", "bound", "SOL", "time"):
        assert column in header, (column, r.out)
    # every kernel's row, whole, with its figures (from --format json: nothing rounded differently)
    import json

    doc = json.loads(run_cli("analyze", "--format", "json").out)
    from roofline.model.units import format_bytes, format_count, format_time

    rows = {line.split()[0]: line for line in r.out.splitlines() if line.split()}
    for k in (doc[0] if isinstance(doc, list) else doc)["kernels"]:
        row = rows[k["name"]]  # the name you type back is kept whole
        for cell in (k["roof"], format_count(k["flops"]), format_bytes(k["bytes"]), format_time(k["sol_time"])):
            assert cell in row, (cell, row)
    assert "nvlink" in rows["allreduce_ring"]  # the link that bounds it, as narrow as 'memory'


def test_wide_prints_every_column(run_cli, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    r = run_cli("analyze", "--wide")
    assert r.code == 0, r.err
    assert "threads for BW" in r.out and "latency-bound" in r.out and "Left out" not in r.out
    assert max(len(line) for line in r.out.splitlines()) > 120


def test_specs_ids_are_never_cut(run_cli, monkeypatch):
    from roofline.load.specs import SpecCatalog

    monkeypatch.setenv("COLUMNS", "80")
    r = run_cli("specs")
    assert r.code == 0, r.err
    for spec in SpecCatalog.bundled().specs:
        assert spec.id in r.out, spec.id


def test_a_hostile_long_name_wraps_and_the_numbers_stay():
    """A 200-character kernel name cannot be kept whole at 80 columns: it wraps; the numbers beside it stay whole."""
    from roofline.render.tables.measure import kernel_table

    k = {"name": "k" * 200, "status": "OK", "time_median": 1.234e-3, "time_min": 1.2e-3, "time_max": 1.3e-3,
         "achieved_bandwidth": 1.5e12, "achieved_flops": 2.5e11, "bound": "memory", "bandwidth": 3.35e12,
         "fraction_of_ceiling": 0.4477, "timing": "cuda-events", "warnings": []}
    text, _ = _cells_of([kernel_table([k], "t")], 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "1.23 ms" in text and "44.8%" in text and "…" not in text
    assert text.count("k") >= 200  # wrapped, not cut


def test_the_api_show_fits_the_terminal(monkeypatch, capsys):
    import roofline

    monkeypatch.setenv("COLUMNS", "80")
    import numpy as np

    a, out = np.ones(4099, dtype=np.float32), np.empty(4099, dtype=np.float32)
    r = roofline.measure(lambda: np.add(a, 1.0, out=out), name="add_one", flops=4099, bytes=2 * a.nbytes,
                         backend="numpy", spec="h100", min_time=0, min_repeats=2,
                         check=lambda: bool((out == 2.0).all()))
    capsys.readouterr()
    r.show()
    out = capsys.readouterr().out
    assert out and max(len(line) for line in out.splitlines()) <= 80
    assert "add_one" in out and "…" not in out


@pytest.mark.parametrize("width", [80, 120])
def test_the_calibrate_table_fits(width):
    from roofline.measurement.calibrate.figures import comparison_rows
    from roofline.render.tables.calibrate import comparison_table
    from roofline.load.specs import SpecCatalog
    from test_calibrate import H200_DEVICE, figures

    h200 = SpecCatalog.bundled().resolve("h200")
    table = comparison_table(comparison_rows(figures(), h200), h200, H200_DEVICE, 31.2, False, 0.10)
    text, whole = _cells_of([table], width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "4.21 TB/s" in text and "341 ns" in text and "…" not in text
    for cell in whole:
        assert any(cell in line for line in text.splitlines()), cell


def test_a_table_written_with_o_holds_every_column_whatever_the_terminal(run_cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "a.txt"
    r = run_cli("analyze", "-o", out)
    assert r.code == 0, r.err
    written = out.read_text(encoding="utf-8")
    assert "Left out" not in written and "…" not in written
    r = run_cli("analyze", "--wide", "-o", out)
    assert r.code == 0, r.err
    assert out.read_text(encoding="utf-8") == written


COMPILED = DATA / "kineto" / "compiled" / "llama-train-compiled.json.gz"


def test_piped_output_keeps_every_column_of_a_compiled_trace(run_cli):
    """`roofline import torch TRACE | cat`: not a terminal, no COLUMNS; every column is there (it was laid out at
    200 columns, which left FLOPs, the roof, SOL time and share out beside the long Triton names)."""
    r = run_cli("import", "torch", COMPILED)
    assert r.code == 0, r.err
    header = r.out.splitlines()[1] + r.out.splitlines()[2]
    for column in ("share", "FLOPs", "roof", "SOL time", "launches", "recoverable"):
        assert column in header, column
    assert "Left out" not in r.out


def test_triton_names_wrap_between_their_parts(monkeypatch, run_cli):
    """At 80 columns a long `triton_..._fused_...` name wraps after an underscore, never inside a part: each line of
    the name ends at a `_`, and the lines put together are the name."""
    monkeypatch.setenv("COLUMNS", "80")
    r = run_cli("import", "torch", COMPILED)
    assert r.code == 0, r.err
    name = "triton_red_fused__log_softmax__to_copy__unsafe_view_prepare_softmax_online_view"
    lines = r.out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("triton_red_fused__log_")
                 and lines[i + 1].startswith("softmax__to_copy__unsafe_"))
    pieces, i = [], start
    while True:
        first = lines[i].split("  ")[0].strip()
        pieces.append(first)
        if "".join(pieces) == name or i - start > 8:
            break
        assert first.endswith("_"), (first, lines[start:i + 1])
        i += 1
    assert "".join(pieces) == name
    assert max(len(line) for line in lines) <= 80


def test_fit_breaks_a_long_identifier_only_after_an_underscore():
    from rich.table import Table
    from rich.text import Text

    from roofline.render.tables.fit import fit

    name = "triton_per_fused__to_copy_add_div_embedding_dense_backward_expand_mul_pow_sum_view_7"
    t = Table()
    t.add_column("group")
    t.add_column("time", justify="right")
    t.add_row(Text(name, style="bold"), "22 µs")
    t.add_row("aten::mm", "1.94 ms")
    fit(t, 40)
    text = _render(t, 40)
    firsts = [line.split("  ")[0].strip(" │┃") for line in text.splitlines()]
    joined = "".join(f for f in firsts if f.startswith(("triton", "to_", "add_", "div_", "embedding", "dense", "backward",
                                                           "expand", "mul_", "pow_", "sum_", "view_", "fused", "per_")))
    assert name in joined.replace(" ", "") and "view_7" in text and "22 µs" in text


def _render(table, width):
    from rich.console import Console

    out = io.StringIO()
    Console(file=out, width=width, color_system=None, markup=False, emoji=False).print(table)
    return out.getvalue()


def _table(rows=3):
    from rich.table import Table

    from roofline.render.tables.fit import droppable

    t = Table(title="t")
    for name, justify in (("kernel", "left"), ("DRAM bytes", "right"), ("AI (FLOP/B)", "right"), ("note", "left"),
                          ("launches", "right")):
        t.add_column(name, justify=justify)
    for i in range(rows):
        t.add_row(f"kernel_{i}", "67.1 MB", "0.0583", "reads twice what the model counts", str(i))
    return droppable(t, "launches", "note", whole=("kernel",))


def test_a_table_that_fits_prints_as_rich_prints_it():
    from roofline.render.tables.fit import fit

    assert fit(_table(), 200) == []
    assert _render(_table(), 200) == _render(_fit(_table(), 200), 200)


def _fit(table, width):
    from roofline.render.tables.fit import fit

    fit(table, width)
    return table


@pytest.mark.parametrize("width", [30, 40, 50, 60, 70])
def test_headers_wrap_then_text_then_the_box_goes_before_a_column_does(width):
    """Each step gives up only what it must; a number is never narrower than itself at any width."""
    from roofline.render.tables.fit import fit

    table = _table()
    dropped = fit(table, width)
    text = _render(table, width)
    assert max(len(line) for line in text.splitlines()) <= width, text
    assert "…" not in text
    for row in range(3):
        assert f"kernel_{row}" in text
    kept = [c.header.plain if hasattr(c.header, "plain") else c.header for c in table.columns]
    if "DRAM bytes" in kept:
        assert "67.1 MB" in text
    if width >= 50:
        assert dropped in ([], ["launches"]), dropped  # 'note' wraps rather than going
    if width >= 60:
        assert "AI (FLOP/B)" in kept and "0.0583" in text


def test_fit_measures_once_not_per_trial(monkeypatch):
    """The layout comes from one pass over the cells: rich's measuring is not called per column dropped (it was,
    twice per trial, and made an 80-column analyze spend most of its time measuring)."""
    from rich.console import Console

    from roofline.render.tables.fit import fit

    calls = []
    original = Console.measure
    monkeypatch.setattr(Console, "measure", lambda self, *a, **k: calls.append(1) or original(self, *a, **k))
    fit(_table(rows=200), 30)
    assert calls == []


@pytest.mark.parametrize("spec", ["h100", "h200"])
def test_wide_output_is_rich_s_own_layout(spec, run_cli):
    """With --wide, fit gives rich the widths it would have found itself (so that it need not measure every cell
    again): the text is the same as rich's layout of the same table untouched."""
    import json

    from roofline.render.tables.analysis import rich_tables
    from roofline.render.tables.fit import fit, natural_width

    docs = [json.loads(run_cli("analyze", "--spec", spec, "--format", "json").out)]
    fitted = rich_tables(docs)[0]
    fit(fitted, None)
    width = natural_width(fitted)
    untouched = rich_tables(docs)[0]
    assert width == natural_width(untouched)
    assert _render(fitted, width) == _render(untouched, width)
