"""Fuzzing every input reader: whatever a file or option holds, the only exception allowed is the tool's own.

Each loader (spec, descriptor, results, gates, ncu CSV) gets valid documents with random fields replaced,
deleted or added, and arbitrary text and bytes; the unit and formula parsers get arbitrary strings and numbers.
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
from conftest import NCU_FULL

DATA = Path(__file__).parent / "data"
SPEC = yaml.safe_load((DATA / "specs" / "toy.yaml").read_text(encoding="utf-8"))
DESCRIPTOR = yaml.safe_load((DATA / "kernels" / "t_pipeline.yaml").read_text(encoding="utf-8"))
RESULTS = json.loads((DATA / "results" / "h100.json").read_text(encoding="utf-8"))
GATES = {"schema_version": 1, "default": {"fail_below": 0.7, "max_regression": "5%"},
         "kernels": {"vector_add": {"fail_below": 0.5}, "sum": {"max_regression": None}}}
NCU_CSV = NCU_FULL.read_text(encoding="utf-8")

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
    from roofline.analysis import analyze
    from roofline.kernels import load_descriptor
    from roofline.specs import load_spec as load
    from roofline.workload import evaluate

    analyze(load(path), evaluate(load_descriptor(DATA / "kernels" / "t_vadd.yaml")))  # a spec that loads analyses


def load_descriptor(path: Path) -> None:
    from roofline.kernels import load_descriptor as load
    from roofline.workload import evaluate

    evaluate(load(path))  # a descriptor that loads must evaluate at its defaults or refuse


def load_gates(path: Path) -> None:
    from roofline.gateconfig import load_gates as load

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
    from roofline.gates import build_report
    from roofline.resultfiles import load_results

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


@st.composite
def mutated_csv(draw: Callable) -> str:
    """The synthetic ncu CSV with a few cells replaced (numbers, units, names, quotes)."""
    lines = NCU_CSV.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    for _ in range(draw(st.integers(1, 4))):
        row = draw(st.integers(header, len(lines) - 1))
        cells = lines[row].split('","')
        column = draw(st.integers(0, len(cells) - 1))
        cell = draw(st.sampled_from(["-1", "1e999999", "nan", "", "0", "1" * 400, "\u0661\u0662", "[/]", '"', "n/a",
                                     "Kbyte", "Gbyte/second", "inst", "%"]) | st.text(max_size=8))
        cells[column] = cell.replace('"', '""') if draw(st.booleans()) else cell
        lines[row] = '","'.join(cells)
    if draw(st.booleans()):
        del lines[draw(st.integers(0, len(lines) - 1))]
    return "\n".join(lines) + "\n"


@FAST
@given(mutated_csv())
def test_ncu_import_with_mutated_cells(scratch: Path, text: str) -> None:
    only_input_errors(import_ncu, scratch / "ncu.csv", text)


@FAST
@given(st.text(max_size=80) | st.binary(max_size=40))
def test_ncu_import_with_arbitrary_text(scratch: Path, content: str | bytes) -> None:
    only_input_errors(import_ncu, scratch / "ncu-text.csv", content)


# ---- units and formulas --------------------------------------------------------------------------------

UNIT_TOKENS = [*"0123456789.eE+-_, kMGTPEKimunpµμ", "B/s", "FLOP/s", "Hz", "s", "B", "\u0661", "\uff11", "%"]
UNIT_TEXT = st.lists(st.sampled_from(UNIT_TOKENS), max_size=20).map("".join)


@FAST
@given(st.sampled_from(["bandwidth", "flops", "bytes", "time", "frequency"]),
       UNIT_TEXT | st.text(max_size=20) | SCALARS)
def test_parse_quantity_gives_a_finite_float_or_a_unit_error(kind: str, value: Any) -> None:
    from roofline.units import UnitError, parse_quantity

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
    from roofline.expr import FormulaError, compile_expr

    try:
        value = compile_expr(source).evaluate({"n": n})
    except FormulaError:
        return
    assert isinstance(value, (int, float)) and not isinstance(value, bool)


@FAST
@given(st.text(max_size=30) | NASTY)
def test_parameter_overrides_on_the_command_line(value: str) -> None:
    from roofline.kernels import load_descriptor, parse_overrides
    from roofline.workload import evaluate

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
@given(mutated(SPEC))
def test_specs_show_renders_or_refuses_a_mutated_spec(run_cli, scratch: Path, doc: Any) -> None:
    path = scratch / "cli-spec.yaml"
    path.write_text(yaml_text(doc), encoding="utf-8")
    code, _, err = run_cli("specs", "show", path)
    assert code in (0, 2) and "Traceback" not in err, err
