"""Fuzzing every input reader: whatever a file or option holds, the only exception allowed is the tool's own.

Each loader (spec, descriptor, results, grouped results, gates, ncu CSV, Kineto trace) gets valid documents with
random fields replaced, deleted or added, and arbitrary text and bytes; what `import ncu` and `import torch` write
from a mutated input must read back in report (issue 23); the Python API gets arbitrary counts, names, specs and
check results (only a true check passes); the unit and formula parsers get arbitrary strings and numbers.
Any exception other than roofline.errors.RooflineError (exit 2 with one line) is a failure: it would be a
traceback and exit 101 for the user. Bounded (few examples, no per-example deadline) so the file runs in seconds;
ROOFLINE_FUZZ_EXAMPLES=5000 python -m pytest tests/test_fuzz.py searches harder.
"""

from __future__ import annotations

import copy
import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from roofline.errors import RooflineError
from conftest import NCU, NCU_FULL

DATA = Path(__file__).parent / "data"
SPEC = yaml.safe_load((DATA / "specs" / "toy.yaml").read_text(encoding="utf-8"))
DESCRIPTOR = yaml.safe_load((DATA / "kernels" / "t_pipeline.yaml").read_text(encoding="utf-8"))
RESULTS = json.loads((DATA / "results" / "h100.json").read_text(encoding="utf-8"))
GATES = {"schema_version": 1, "default": {"fail_below": 0.7, "max_regression": "5%"},
         "kernels": {"vector_add": {"fail_below": 0.5}, "sum": {"max_regression": None}}}
NCU_CSV = NCU_FULL.read_text(encoding="utf-8")
SMALL_NVTX_CSV = (NCU / "h200_nvtx_small.csv").read_text(encoding="utf-8")  # a real capture with NVTX ranges


def _grouped() -> dict:
    from roofline.ncu.group import add_groups
    from roofline.ncu.importer import import_csv

    doc, _ = import_csv(NCU / "h200_nvtx_small.csv")
    add_groups(doc, "op")
    return json.loads(json.dumps(doc))


GROUPED = _grouped()  # a grouped results file: groups, program, counters, nvtx

FAST = settings(max_examples=int(os.environ.get("ROOFLINE_FUZZ_EXAMPLES", "60")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

# Values that have broken parsers before, mixed with arbitrary ones.
NASTY = st.sampled_from([
    "4.8 TB/s", "1e999999 TB/s", "1e-999999 ns", "\u0661\u0662 TB/s", "\uff11 GHz", "50 KB", "-3 ns", "0", "",
    "2**40", "n", "n / 0", "9**9**9**9", "(" * 300, "1" * 5000, "70%", "150%", "nan", "inf", "-inf", "[/]", "$x$",
    "\x00", "\x1b[31m", "FAILED", "VERIFIED", "float32", "fp32", "h100-sxm",
])
SCALARS = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10**80), max_value=10**80)
           | st.floats() | st.text(max_size=12) | NASTY)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8) | NASTY, inner, max_size=3),
    max_leaves=6,
)


def _paths(doc: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a document a value can be replaced or deleted: (key, key, ...)."""
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for key, value in doc.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            out += _paths(value, (*prefix, i))
    return out


@st.composite
def mutated(draw: Callable, base: Any) -> Any:
    """A copy of base with one to three fields replaced by arbitrary values, deleted, or added."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        places = _paths(doc)
        if not places:
            return doc
        place = draw(st.sampled_from(places))
        parent = doc
        for key in place[:-1]:
            parent = parent[key]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "replace":
            parent[place[-1]] = draw(VALUES)
        elif action == "delete":
            del parent[place[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.text(max_size=8) | NASTY)] = draw(VALUES)
        else:
            parent.append(draw(VALUES))
    return doc


@pytest.fixture(scope="module")
def scratch() -> Path:
    with tempfile.TemporaryDirectory() as folder:
        yield Path(folder)


def only_input_errors(load: Callable[[Path], Any], path: Path, content: str | bytes) -> None:
    """Write content, load it: any outcome but an exception other than RooflineError passes."""
    if isinstance(content, str):
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_bytes(content)
    try:
        load(path)
    except RooflineError:
        pass


def yaml_text(doc: Any) -> str:
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


# ---- YAML loaders ---------------------------------------------------------------------------------------


def load_spec(path: Path) -> None:
    from roofline.model.analysis import analyze
    from roofline.load.kernels import load_descriptor
    from roofline.load.specs import load_spec as load
    from roofline.model.workload import evaluate

    analyze(load(path), evaluate(load_descriptor(DATA / "kernels" / "t_vadd.yaml")))  # a spec that loads analyses


def load_descriptor(path: Path) -> None:
    from roofline.load.kernels import load_descriptor as load
    from roofline.model.workload import evaluate

    evaluate(load(path))  # a descriptor that loads must evaluate at its defaults or refuse


def load_gates(path: Path) -> None:
    from roofline.gates.config import load_gates as load

    load(path)


YAML_LOADERS = [("spec", load_spec, SPEC), ("descriptor", load_descriptor, DESCRIPTOR), ("gates", load_gates, GATES)]


@pytest.mark.parametrize(("name", "load", "base"), YAML_LOADERS, ids=[n for n, _, _ in YAML_LOADERS])
def test_yaml_loaders_with_mutated_documents(scratch: Path, name: str, load: Callable, base: Any) -> None:
    @FAST
    @given(mutated(base))
    def check(doc: Any) -> None:
        only_input_errors(load, scratch / f"{name}.yaml", yaml_text(doc))

    check()


@pytest.mark.parametrize(("name", "load", "base"), YAML_LOADERS, ids=[n for n, _, _ in YAML_LOADERS])
def test_yaml_loaders_with_arbitrary_text(scratch: Path, name: str, load: Callable, base: Any) -> None:
    tokens = [*"abc:-[]{}&*!|>'\"#%@`,? \n\t0123456789.e+x\\", "\u0661", "\x00", "!!timestamp ", "!!bool ", "!!int ",
              "!!float ", "!!binary ", "!!omap ", "!!set ", "!!python/name:x ", "&a ", "*a ", "<<: ", "--- ", "? "]
    prefix = yaml_text(base)

    @FAST
    @given(st.lists(st.sampled_from(tokens), max_size=40).map("".join) | st.text(max_size=40), st.booleans())
    def check(text: str, after_valid: bool) -> None:
        only_input_errors(load, scratch / f"{name}-text.yaml", prefix + text if after_valid else text)

    check()


# ---- results (JSON), through report and its gates ------------------------------------------------------


def load_and_report(path: Path) -> None:
    from roofline.gates.report import build_report
    from roofline.records.files import load_results

    build_report([load_results(path)])


@FAST
@given(mutated(RESULTS))
def test_results_with_mutated_fields(scratch: Path, doc: Any) -> None:
    only_input_errors(load_and_report, scratch / "results.json", json.dumps(doc))


@FAST
@given(st.text(st.sampled_from(list('{}[]":,0123456789.eE+-truefalsn \n\\') + ["\u0661"]), max_size=60) | st.binary(max_size=40))
def test_results_with_arbitrary_text(scratch: Path, content: str | bytes) -> None:
    only_input_errors(load_and_report, scratch / "results-text.json", content)


# ---- ncu CSV import ------------------------------------------------------------------------------------


def import_ncu(path: Path) -> None:
    from roofline.ncu.importer import import_csv

    import_csv(path, "h100-sxm")


# Cells that broke the importer or made it write what report refused (issue 23): line separators inside a name, a
# cell over csv's 131,072-character limit, an ID of 5000 digits, counts that overflow a float once added up.
CSV_CELLS = ["-1", "1e999999", "nan", "", "0", "1" * 400, "\u0661\u0662", "[/]", '"', "n/a", "Kbyte", "Gbyte/second",
             "inst", "%", "1e308", "1.7e308", "1e-300", "9" * 5000, "k\u2028x", "a\x0bb\x1cc\x85d", "a\nb", "\r",
             "k" * 140_000, "c10::BFloat16", "__half", "bf16", "fp16", "Pbyte", "99999999999999999999"]


@st.composite
def mutated_csv(draw: Callable, base: str = NCU_CSV) -> str:
    """An ncu CSV with a few cells replaced (numbers, units, names, quotes), and perhaps a row cut short, a row
    repeated or the whole capture repeated (two captures concatenated)."""
    lines = base.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    for _ in range(draw(st.integers(1, 4))):
        row = draw(st.integers(header, len(lines) - 1))
        cells = lines[row].split('","')
        column = draw(st.integers(0, len(cells) - 1))
        cell = draw(st.sampled_from(CSV_CELLS) | st.text(max_size=8))
        cells[column] = cell.replace('"', '""') if draw(st.booleans()) else cell
        lines[row] = '","'.join(cells)
    action = draw(st.sampled_from(["none", "delete", "cut", "repeat-row", "repeat-capture"]))
    row = draw(st.integers(header, len(lines) - 1))
    if action == "delete":
        del lines[draw(st.integers(0, len(lines) - 1))]
    elif action == "cut":
        lines[row] = lines[row][: draw(st.integers(0, len(lines[row])))]
    elif action == "repeat-row":
        lines.insert(row, lines[row])
    elif action == "repeat-capture":
        lines += lines[header:]
    return "\n".join(lines) + "\n"


@FAST
@given(mutated_csv())
def test_ncu_import_with_mutated_cells(scratch: Path, text: str) -> None:
    only_input_errors(import_ncu, scratch / "ncu.csv", text)


@FAST
@given(st.text(max_size=80) | st.binary(max_size=40))
def test_ncu_import_with_arbitrary_text(scratch: Path, content: str | bytes) -> None:
    only_input_errors(import_ncu, scratch / "ncu-text.csv", content)


def import_and_check(path: Path, group_by: str, spec: str | None) -> dict:
    """import ncu as the command runs it, up to the point where it writes."""
    from roofline.ncu.group import add_groups
    from roofline.ncu.importer import import_csv
    from roofline.ncu.readback import check_import

    doc, _ = import_csv(path, spec)
    add_groups(doc, group_by)
    check_import(doc, str(path))
    return doc


def read_back_and_render(path: Path) -> None:
    """What report and plot do with the file: load it, gate it, render it."""
    from roofline.gates.report import build_report
    from roofline.gates.groups import group_report
    from roofline.render.tables import grouped
    from roofline.render.tables.imported import imported_table
    from roofline.render.charts.profile import chart_points
    from roofline.records.files import load_results

    results = load_results(path)
    back = results.doc
    chart_points(back)
    if back.get("groups"):
        report = group_report([results], 0.5, 0.5)
        grouped.report_tables(report), grouped.report_markdown(report), grouped.report_junit(report)
        grouped.grouped_table(back), grouped.grouped_markdown(back)
    else:
        build_report([results]), imported_table(back)


@FAST
@given(mutated_csv(SMALL_NVTX_CSV), st.sampled_from(["op", "kernel", "range:1", "none"]),
       st.sampled_from([None, "h200", "t4", "a100-sxm4-80gb", "h200-nvl"]))
def test_ncu_import_writes_only_what_report_reads(scratch: Path, text: str, group_by: str, spec: str | None) -> None:
    """The property issue 23 asked for: an import refuses with one RooflineError, or what it writes loads and
    renders as report and plot do (outside the try: a refusal there fails the test). The importer's own checks name
    the problem before its last line of defence, report's own check, has to."""
    from roofline.load.jsonio import dumps

    path = scratch / "ncu-readback.csv"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        doc = import_and_check(path, group_by, spec)
    except RooflineError as exc:
        assert "(as imported)" not in str(exc), exc
        return
    written = path.with_suffix(".json")
    written.write_text(dumps(doc), encoding="utf-8")
    read_back_and_render(written)


# ---- grouped results (profile, import ncu --group-by), through report's group gates ---------------------------


def load_and_report_groups(path: Path) -> None:
    from roofline.gates.groups import group_report
    from roofline.render.tables import grouped
    from roofline.render.charts.profile import chart_points
    from roofline.records.files import load_results

    results = load_results(path)
    doc = results.doc
    report = group_report([results], 0.5, 0.3)
    grouped.report_tables(report), grouped.report_markdown(report), grouped.report_junit(report)
    grouped.report_github_benchmark(report), chart_points(doc)
    if doc.get("groups"):
        grouped.grouped_table(doc), grouped.grouped_markdown(doc)


@FAST
@given(mutated(GROUPED))
def test_grouped_results_with_mutated_fields(scratch: Path, doc: Any) -> None:
    only_input_errors(load_and_report_groups, scratch / "grouped.json", json.dumps(doc))


# ---- units and formulas --------------------------------------------------------------------------------

UNIT_TOKENS = [*"0123456789.eE+-_, kMGTPEKimunpµμ", "B/s", "FLOP/s", "Hz", "s", "B", "\u0661", "\uff11", "%"]
UNIT_TEXT = st.lists(st.sampled_from(UNIT_TOKENS), max_size=20).map("".join)


@FAST
@given(st.sampled_from(["bandwidth", "flops", "bytes", "time", "frequency"]),
       UNIT_TEXT | st.text(max_size=20) | SCALARS)
def test_parse_quantity_gives_a_finite_float_or_a_unit_error(kind: str, value: Any) -> None:
    from roofline.model.units import UnitError, parse_quantity

    try:
        number = parse_quantity(value, kind)
    except UnitError:
        return
    assert isinstance(number, float) and math.isfinite(number)


FORMULA_TOKENS = [*"n0123456789.e+-*/%() ,", "**", "//", "min", "max", "ceil", "sqrt", "log2", "floor", "\u0661", "_x"]
FORMULA_TEXT = st.lists(st.sampled_from(FORMULA_TOKENS), max_size=25).map("".join)


@FAST
@given(FORMULA_TEXT | st.text(max_size=30) | SCALARS, st.integers(-(10**6), 10**12) | st.floats(allow_nan=False))
def test_formulas_evaluate_or_raise_a_formula_error(source: Any, n: float) -> None:
    from roofline.model.expr import FormulaError, compile_expr

    try:
        value = compile_expr(source).evaluate({"n": n})
    except FormulaError:
        return
    assert isinstance(value, (int, float)) and not isinstance(value, bool)


@FAST
@given(st.text(max_size=30) | NASTY)
def test_parameter_overrides_on_the_command_line(value: str) -> None:
    from roofline.load.kernels import load_descriptor, parse_overrides
    from roofline.model.workload import evaluate

    descriptor = load_descriptor(DATA / "kernels" / "t_vadd.yaml")
    try:
        overrides = parse_overrides([f"n={value}"], [descriptor])
        evaluate(descriptor, overrides)
    except RooflineError:
        pass


# ---- through the CLI: what loads must also render ------------------------------------------------------

CLI = settings(FAST, max_examples=max(FAST.max_examples // 2, 10),
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@CLI
@given(mutated(RESULTS), st.sampled_from(["table", "markdown", "json", "junit"]))
def test_report_renders_or_refuses_mutated_results(run_cli, scratch: Path, doc: Any, fmt: str) -> None:
    path = scratch / "cli-results.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, _, err = run_cli("report", path, "--format", fmt, "--fail-below", "0.5")
    assert code in (0, 1, 2) and "Traceback" not in err, err


@CLI
@given(mutated(GROUPED), st.sampled_from(["table", "markdown", "json", "junit", "github-benchmark"]))
def test_report_renders_or_refuses_mutated_grouped_results(run_cli, scratch: Path, doc: Any, fmt: str) -> None:
    path = scratch / "cli-grouped.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    code, _, err = run_cli("report", path, "--format", fmt, "--fail-below", "0.5", "--fail-below-program", "0.3")
    assert code in (0, 1, 2) and "Traceback" not in err, err


@CLI
@given(mutated_csv(SMALL_NVTX_CSV), st.sampled_from(["none", "op"]))
def test_import_ncu_cli_writes_what_report_reads(run_cli, scratch: Path, text: str, group_by: str) -> None:
    csv, out = scratch / "cli-import.csv", scratch / "cli-import.json"
    csv.write_text(text, encoding="utf-8", errors="surrogatepass")
    out.unlink(missing_ok=True)
    code, _, err = run_cli("import", "ncu", csv, "--group-by", group_by, "-o", out)
    assert code in (0, 2) and "Traceback" not in err, err
    assert out.exists() == (code == 0)  # nothing half-written
    if out.exists():
        code, _, err = run_cli("report", out)
        assert code in (0, 1) and "Traceback" not in err, err


@CLI
@given(mutated(SPEC))
def test_specs_show_renders_or_refuses_a_mutated_spec(run_cli, scratch: Path, doc: Any) -> None:
    path = scratch / "cli-spec.yaml"
    path.write_text(yaml_text(doc), encoding="utf-8")
    code, _, err = run_cli("specs", "show", path)
    assert code in (0, 2) and "Traceback" not in err, err


# ---- the Python API, the pytest plugin's check, and `import torch` (issues 23, 24) ----------------------------

API_VALUES = SCALARS | st.lists(SCALARS, max_size=3) | st.just(10**400) | st.just(float("nan"))


@FAST
@given(flops=API_VALUES, nbytes=API_VALUES, check=API_VALUES, name=SCALARS, spec=st.sampled_from(
    [None, "h100", "nope", "", 3]))
def test_the_api_measures_or_refuses_with_its_own_error(flops: Any, nbytes: Any, check: Any, name: Any,
                                                        spec: Any) -> None:
    """roofline.measure with arbitrary counts, names, specs and check results: a result (verified only when the
    check returned a true value) or one RooflineError, never another exception."""
    import numpy as np

    import roofline

    a = np.ones(64, dtype=np.float32)
    try:
        r = roofline.measure(lambda: np.add(a, 1.0), flops=flops, bytes=nbytes, check=lambda: check, name=name,
                             spec=spec, backend="numpy", min_time=0, min_repeats=2)
    except RooflineError:
        return
    if r.verified:
        assert check is True, check  # nothing but a true value passes a check


@FAST
@given(st.lists(SCALARS | st.just(object()), max_size=4))
def test_results_of_arbitrary_lists_refuse_with_their_own_error(items: list) -> None:
    import roofline

    try:
        roofline.results(items)
    except RooflineError:
        pass


KINETO = json.loads((DATA / "kineto" / "step.json").read_text(encoding="utf-8"))


@FAST
@given(mutated(KINETO), st.sampled_from(["op", "kernel", "module", "none"]))
def test_import_torch_writes_only_what_report_reads(scratch: Path, doc: Any, group_by: str) -> None:
    """A mutated Kineto trace: `import torch` refuses with one RooflineError, or what it builds reads back and
    renders as report and plot do."""
    from roofline.load.jsonio import dumps
    from roofline.kineto.document import import_traces
    from roofline.ncu.readback import check_import

    path = scratch / "trace.json"
    path.write_text(json.dumps(doc, default=str), encoding="utf-8")
    try:  # as `roofline import torch` runs, up to the point where it writes
        built, _ = import_traces([path], None, group_by)
        check_import(built, str(path))
    except RooflineError:
        return
    out = scratch / "trace-results.json"
    out.write_text(dumps(built), encoding="utf-8")
    read_back_and_render(out)



@pytest.mark.parametrize("source", [7, "ncu", [1], None, {"with": 3}])
def test_grouped_results_whose_source_is_not_a_block(scratch: Path, source: Any) -> None:
    """Found by the fuzz suite: `source` is free-form in a results file; a number there crashed the table."""
    only_input_errors(load_and_report_groups, scratch / "grouped.json", json.dumps({**GROUPED, "source": source}))
