"""The formula evaluator: what it accepts, what it computes, and what it refuses (quickly, with a clear message)."""

from __future__ import annotations

import math
import operator
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from roofline.model.expr import FUNCTIONS, FormulaError, compile_expr


def ev(source: object, **env: float) -> float:
    return compile_expr(source).evaluate(env)


# ---- what is accepted ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "env", "expected"),
    [
        ("1e6", {}, 1_000_000),
        ("2**28", {}, 268_435_456),
        ("1 + 2 * 3", {}, 7),
        ("(1 + 2) * 3", {}, 9),
        ("7 - 10", {}, -3),
        ("7 / 2", {}, 3.5),
        ("7 // 2", {}, 3),
        ("-7 // 2", {}, -4),
        ("7 % 3", {}, 1),
        ("2 ** 10", {}, 1024),
        ("2 ** -1", {}, 0.5),
        ("-3 ** 2", {}, -9),  # Python precedence: -(3**2)
        ("+5", {}, 5),
        ("3 * n * itemsize", {"n": 1024, "itemsize": 4}, 12288),
        ("(2 * rows * cols + cols) * itemsize", {"rows": 10, "cols": 3, "itemsize": 4}, 252),
        ("min(a, b, 3)", {"a": 5, "b": 4}, 3),
        ("max(a, 2)", {"a": 1}, 2),
        ("ceil(n / 256)", {"n": 1000}, 4),
        ("floor(n / 256)", {"n": 1000}, 3),
        ("sqrt(n)", {"n": 2**20}, 1024),
        ("sqrt(2)", {}, math.sqrt(2)),
        ("log2(n)", {"n": 2**20}, 20),
        ("log2(10)", {}, math.log2(10)),
        ("n", {"n": 2.5}, 2.5),
        ("  n  ", {"n": 1}, 1),
    ],
)
def test_accepted_formulas(source: str, env: dict[str, float], expected: float) -> None:
    assert ev(source, **env) == pytest.approx(expected, rel=1e-12)


def test_integer_results_stay_exact_integers() -> None:
    assert ev("2**40 / 4") == 2**38 and isinstance(ev("2**40 / 4"), int)
    assert isinstance(ev("ceil(n / 3)", n=10), int)
    assert isinstance(ev("log2(1024)"), int)
    assert isinstance(ev("sqrt(1024)"), int)
    assert ev("2**62 + 1") == 2**62 + 1  # no float rounding


def test_numbers_compile_too() -> None:
    assert ev(1024) == 1024
    assert ev(2.5) == 2.5
    assert compile_expr(7).names == frozenset()


def test_names_are_collected() -> None:
    expr = compile_expr("3 * n * itemsize + min(rows, cols)")
    assert expr.names == {"n", "itemsize", "rows", "cols"}
    assert str(expr) == "3 * n * itemsize + min(rows, cols)"


def test_missing_name_at_evaluation() -> None:
    with pytest.raises(FormulaError, match="unknown name 'n'"):
        ev("n + 1")


def test_functions_are_exactly_the_documented_ones() -> None:
    assert set(FUNCTIONS) == {"min", "max", "ceil", "floor", "sqrt", "log2"}


# ---- hostile and broken inputs ------------------------------------------------------------------

HOSTILE = [
    ("attribute", "n.__class__", "attribute access"),
    ("attribute-call", "(1).__class__.__bases__", "attribute access"),
    ("import", "__import__('os')", "call to '__import__' is not allowed"),
    ("import-system", "__import__('os').system('true')", "not allowed"),
    ("open", "open('/etc/passwd')", "call to 'open' is not allowed"),
    ("eval", "eval('1')", "call to 'eval' is not allowed"),
    ("exec", "exec('x = 1')", "call to 'exec' is not allowed"),
    ("getattr", "getattr(n, 'real')", "call to 'getattr' is not allowed"),
    ("other-function", "sin(1)", "call to 'sin' is not allowed"),
    ("string", "'abc'", "only numbers are allowed"),
    ("bytes", "b'abc'", "only numbers are allowed"),
    ("none", "None", "only numbers are allowed"),
    ("complex", "1j", "only numbers are allowed"),
    ("list-comprehension", "[i for i in range(3)]", "comprehension"),
    ("generator", "sum(i for i in range(3))", "not allowed"),
    ("generator-bare", "(i for i in n)", "comprehension"),
    ("lambda", "lambda: 1", "lambda"),
    ("f-string", "f'{n}'", "f-string"),
    ("walrus", "(n := 3)", "':='"),
    ("comparison", "n < 2", "comparison"),
    ("chained-comparison", "1 < n < 3", "comparison"),
    ("and-or", "n and 1", "'and'/'or'"),
    ("conditional", "1 if n else 2", "'if'/'else'"),
    ("subscript", "n[0]", "indexing"),
    ("list", "[1, 2]", "a list"),
    ("tuple", "(1, 2)", "a tuple"),
    ("dict", "{1: 2}", "a dict"),
    ("bitshift", "1 << 3", "not allowed"),
    ("bitnot", "~1", "not allowed"),
    ("not", "not 1", "not allowed"),
    ("matmul", "n @ n", "not allowed"),
    ("bool-true", "True", "bool"),
    ("bool-false", "False + 1", "bool"),
    ("function-as-name", "min", "is a function"),
    ("keyword-argument", "max(1, key=2)", "positional"),
    ("starred-argument", "max(*n)", "positional"),
    ("wrong-arity", "ceil(1, 2)", "takes 1 argument"),
    ("no-arguments", "min()", "at least one argument"),
    ("statement", "import os", "syntax error"),
    ("assignment", "n = 1", "syntax error"),
    ("two-statements", "1; 2", "syntax error"),
    ("syntax", "n +", "syntax error"),
    ("empty", "", "empty formula"),
    ("blank", "   ", "empty formula"),
    ("deep-nesting", "(" * 10000, "longer than"),
    ("deep-nesting-short", "(" * 900 + "1" + ")" * 900, "nested"),
    ("deep-unary", "-" * 1500 + "1", "parts"),
    ("long", "1 + " * 1000 + "1", "longer than"),
    ("many-parts", "+".join(["n"] * 400), "parts"),
    ("big-power", "10**100000", "too large"),
    ("big-float-power", "2.0**100000", "too large"),
    ("big-int-literal", "1" * 1500, "more than 40 digits"),
    ("41-digit-literal", "1" * 41, "more than 40 digits"),
    ("arabic-indic-digits", "\u0661\u0662", "formulas are ASCII"),
    ("fullwidth-digits", "\uff11\uff12", "formulas are ASCII"),
    ("fullwidth-name", "\uff4e * 2", "formulas are ASCII"),  # Python would read it as plain n
    ("nul-byte", "n\x00", "control character"),
    ("division-by-zero", "1 / 0", "division by zero"),
    ("floor-division-by-zero", "1 // 0", "division by zero"),
    ("modulo-by-zero", "1 % 0", "modulo by zero"),
    ("zero-negative-power", "0 ** -1", "division by zero"),
    ("division-by-zero-param", "n / (n - n)", "division by zero"),
    ("inf-literal", "1e400", "out of range"),
    ("overflow", "1e300 * 1e300", "out of range"),
    ("nan-from-inf", "1e308 * 10 - 1e308 * 10", "out of range"),
    ("big-literal", "n * 1e308", "number 1e+308 is out of range"),  # the number written, not a result
    ("big-result", "1e200 * 1e200", "result inf is out of range"),
    ("complex-power", "(-8) ** 0.5", "not a real number"),
    ("sqrt-negative", "sqrt(-1)", "sqrt of a negative"),
    ("log2-zero", "log2(0)", "log2 of a non-positive"),
]


@pytest.mark.parametrize(("source", "fragment"), [(s, f) for _, s, f in HOSTILE], ids=[i for i, _, _ in HOSTILE])
def test_hostile_inputs_are_refused(source: str, fragment: str) -> None:
    start = time.process_time()
    with pytest.raises(FormulaError) as exc_info:
        compile_expr(source).evaluate({"n": 4})
    elapsed = time.process_time() - start
    message = str(exc_info.value)
    assert fragment in message
    assert len(message) < 300  # one readable line, not an echo of the whole input
    assert elapsed < 1.0


def test_power_tower_is_refused_without_computing_it() -> None:
    """In a child process, so that a regression that starts computing 9**9**9**9 fails instead of hanging."""
    script = (
        "import time\n"
        "from roofline.model.expr import compile_expr, FormulaError\n"
        "start = time.process_time()\n"
        "try:\n"
        "    compile_expr('9**9**9**9').evaluate({})\n"
        "    print('COMPUTED')\n"
        "except FormulaError as exc:\n"
        "    print('REFUSED', time.process_time() - start, exc)\n"
    )
    try:
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).resolve().parent.parent)
    except subprocess.TimeoutExpired:
        pytest.fail("9**9**9**9 was computed instead of refused")
    word, seconds, message = proc.stdout.split(" ", 2)
    assert word == "REFUSED", proc.stdout + proc.stderr
    assert float(seconds) < 1.0
    assert "too large" in message


@pytest.mark.parametrize("value", [True, None, [1], {"n": 1}, b"1", float("nan"), float("inf")])
def test_non_formula_objects_are_refused(value: object) -> None:
    with pytest.raises(FormulaError):
        compile_expr(value).evaluate({})


def test_nan_and_inf_parameters_do_not_leak_through_arithmetic() -> None:
    with pytest.raises(FormulaError, match="out of range"):
        ev("n * 2", n=float("nan"))
    with pytest.raises(FormulaError, match="out of range"):
        ev("n - n", n=float("inf"))


def test_formula_error_is_a_value_error() -> None:
    assert issubclass(FormulaError, ValueError)


# ---- properties ---------------------------------------------------------------------------------

_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "//": operator.floordiv, "%": operator.mod}


def _trees(leaves: st.SearchStrategy) -> st.SearchStrategy:
    """(text, value-function) trees; the value is computed with Python's operators, never eval()."""

    def extend(children: st.SearchStrategy) -> st.SearchStrategy:
        return st.tuples(st.sampled_from(sorted(_OPS)), children, children)

    return st.recursive(leaves, extend, max_leaves=12)


def _text(tree: object) -> str:
    if isinstance(tree, tuple):
        op, left, right = tree
        return f"({_text(left)} {op} {_text(right)})"
    return f"({tree})" if isinstance(tree, int) and tree < 0 else str(tree)


def _value(tree: object) -> int:
    if isinstance(tree, tuple):
        op, left, right = tree
        return _OPS[op](_value(left), _value(right))
    return tree  # type: ignore[return-value]


@given(tree=_trees(st.integers(min_value=-9, max_value=9)))
def test_integer_trees_agree_with_python(tree: object) -> None:
    text = _text(tree)
    try:
        expected = _value(tree)
    except ZeroDivisionError:
        with pytest.raises(FormulaError, match="by zero"):
            ev(text)
        return
    result = ev(text)
    assert result == expected
    assert isinstance(result, int)


_FLOAT_OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}


@given(
    tree=st.recursive(
        st.integers(min_value=1, max_value=9),
        lambda children: st.tuples(st.sampled_from(sorted(_FLOAT_OPS)), children, children),
        max_leaves=10,
    )
)
def test_true_division_trees_agree_with_python(tree: object) -> None:
    def value(t: object) -> float:
        if isinstance(t, tuple):
            op, left, right = t
            return _FLOAT_OPS[op](value(left), value(right))
        return t  # type: ignore[return-value]

    def text(t: object) -> str:
        if isinstance(t, tuple):
            op, left, right = t
            return f"({text(left)} {op} {text(right)})"
        return str(t)

    try:
        expected = value(tree)
    except ZeroDivisionError:
        with pytest.raises(FormulaError, match="division by zero"):
            ev(text(tree))
        return
    assert ev(text(tree)) == pytest.approx(expected, rel=1e-9, abs=1e-9)


@given(base=st.integers(min_value=-6, max_value=6), exponent=st.integers(min_value=0, max_value=12),
       n=st.integers(min_value=1, max_value=10**6))
def test_powers_functions_and_names_agree_with_python(base: int, exponent: int, n: int) -> None:
    assert ev(f"({base}) ** {exponent}") == base**exponent
    assert ev("ceil(n / 7)", n=n) == math.ceil(n / 7)
    assert ev("floor(n / 7)", n=n) == n // 7
    assert ev("min(n, 1000) + max(n, 1000)", n=n) == min(n, 1000) + max(n, 1000)
    assert ev("sqrt(n)", n=n) == pytest.approx(math.sqrt(n))
    assert ev("log2(n)", n=n) == pytest.approx(math.log2(n))


_FORMULA_CHARS = "0123456789n.e+-*/%() ,_'[]<=:!" + "minaxceilfloorsqrtlog2"


@pytest.mark.filterwarnings("ignore::SyntaxWarning")  # ast.parse warns about inputs like '1or 2' before refusing
@settings(max_examples=300)
@given(source=st.text(alphabet=_FORMULA_CHARS, max_size=40), n=st.one_of(st.integers(-10**6, 10**6), st.floats()))
def test_evaluation_never_raises_anything_but_formula_error(source: str, n: float) -> None:
    try:
        result = compile_expr(source).evaluate({"n": n})
    except FormulaError:
        return
    assert isinstance(result, (int, float))


@settings(max_examples=300)
@given(
    tree=st.recursive(
        st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False).map(repr), st.just("n")),
        lambda children: st.one_of(
            st.tuples(st.sampled_from(["+", "-", "*", "/", "//", "%", "**"]), children, children),
            st.tuples(st.sampled_from(["ceil", "floor", "sqrt", "log2", "min", "max"]), children),
        ),
        max_leaves=10,
    ),
    n=st.integers(-1000, 1000),
)
def test_random_trees_with_every_operator_never_raise_anything_else(tree: object, n: int) -> None:
    def text(t: object) -> str:
        if isinstance(t, tuple) and len(t) == 3:
            return f"({text(t[1])} {t[0]} {text(t[2])})"
        if isinstance(t, tuple):
            return f"{t[0]}({text(t[1])})"
        return f"({t})"

    try:
        result = compile_expr(text(tree)).evaluate({"n": n})
    except FormulaError:
        return
    assert isinstance(result, (int, float))
    assert not isinstance(result, bool)
    assert math.isfinite(result)


# ---- speed --------------------------------------------------------------------------------------


def test_compiled_formula_is_fast_to_evaluate() -> None:
    """A sanity bound, not a benchmark: a sweep evaluates a formula thousands of times."""
    expr = compile_expr("(2 * rows * cols + cols) * itemsize + ceil(rows / 256) * min(rows, cols)")
    env = {"rows": 4096, "cols": 4096, "itemsize": 4}
    start = time.process_time()
    for i in range(10_000):
        env["rows"] = 4096 + i
        expr.evaluate(env)
    assert time.process_time() - start < 1.0


@pytest.mark.parametrize("value", [10**40, -(10**40), 10**5000, float("inf"), float("nan")],
                         ids=["41-digits", "negative-41-digits", "5001-digits", "inf", "nan"])
def test_numbers_given_as_numbers_are_bounded_like_literals(value: float) -> None:
    """A YAML or JSON number reaches compile_expr without text: the same digit and range limits hold."""
    with pytest.raises(FormulaError, match="more than 40 digits|out of range"):
        compile_expr(value)
    assert compile_expr(10**40 - 1).evaluate({}) == 10**40 - 1
