"""Arithmetic formulas from kernel descriptors, checked against a whitelist and evaluated without eval().

A formula is parsed once with ``ast`` and compiled into nested closures, so evaluating it again with other
parameters costs microseconds. Only numbers, parameter names, ``+ - * / // % **``, unary signs, parentheses
and the functions in FUNCTIONS are accepted; anything else is refused with a message naming the construct.
"""

from __future__ import annotations

import ast
import functools
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping, Union

from roofline.model.units import MAX_DIGITS

Number = Union[int, float]

MAX_LENGTH = 2000  # characters; a formula is a line, not a program
MAX_NODES = 500
MAX_MAGNITUDE = 1e300  # larger results are refused rather than turned into inf
MAX_POW_BITS = 4096  # an integer power may have at most this many bits (2**4096), so 9**9**9**9 is refused


class FormulaError(ValueError):
    """A formula that cannot be parsed or evaluated; the message names the offending part."""


def _pow(base: Number, exponent: Number) -> Number:
    if isinstance(base, int) and isinstance(exponent, int) and exponent >= 0:
        if base not in (0, 1, -1) and exponent * max(abs(base).bit_length(), 1) > MAX_POW_BITS:
            raise FormulaError(f"power {base}**{exponent} is too large to compute")
        return base**exponent
    if base == 0 and exponent < 0:
        raise FormulaError("division by zero (0 raised to a negative power)")
    try:
        result = float(base) ** float(exponent)
    except OverflowError:
        raise FormulaError(f"power {base}**{exponent} is too large to compute") from None
    if isinstance(result, complex):
        raise FormulaError(f"power {base}**{exponent} is not a real number")
    return result


def _div(a: Number, b: Number) -> Number:
    if b == 0:
        raise FormulaError("division by zero")
    if isinstance(a, int) and isinstance(b, int) and a % b == 0:
        return a // b  # keep exact integers: 2**40 / 4 stays an int
    return a / b


def _floordiv(a: Number, b: Number) -> Number:
    if b == 0:
        raise FormulaError("division by zero")
    return a // b


def _mod(a: Number, b: Number) -> Number:
    if b == 0:
        raise FormulaError("modulo by zero")
    return a % b


def _sqrt(x: Number) -> Number:
    if x < 0:
        raise FormulaError(f"sqrt of a negative number ({x})")
    root = math.isqrt(x) if isinstance(x, int) else None
    return root if root is not None and root * root == x else math.sqrt(x)


def _log2(x: Number) -> Number:
    if x <= 0:
        raise FormulaError(f"log2 of a non-positive number ({x})")
    if isinstance(x, int) and x & (x - 1) == 0:
        return x.bit_length() - 1
    return math.log2(x)


def _rounding(fn: Callable[[float], int]) -> Callable[[Number], int]:
    def apply(x: Number) -> int:
        if isinstance(x, int):
            return x
        if not math.isfinite(x):
            raise FormulaError(f"cannot round {x}")
        return fn(x)

    return apply


def _minmax(fn: Callable[..., Number]) -> Callable[..., Number]:
    def apply(*args: Number) -> Number:
        if not args:
            raise FormulaError(f"{fn.__name__}() needs at least one argument")
        return fn(args)

    return apply


FUNCTIONS: dict[str, tuple[Callable[..., Number], int | None]] = {
    "min": (_minmax(min), None),
    "max": (_minmax(max), None),
    "ceil": (_rounding(math.ceil), 1),
    "floor": (_rounding(math.floor), 1),
    "sqrt": (_sqrt, 1),
    "log2": (_log2, 1),
}

_BINARY: dict[type, Callable[[Number, Number], Number]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: _div,
    ast.FloorDiv: _floordiv,
    ast.Mod: _mod,
    ast.Pow: _pow,
}
_UNARY: dict[type, Callable[[Number], Number]] = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a}

_DESCRIBE = {
    ast.Attribute: "attribute access",
    ast.Subscript: "indexing",
    ast.Lambda: "lambda",
    ast.ListComp: "a comprehension",
    ast.SetComp: "a comprehension",
    ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a comprehension",
    ast.Compare: "a comparison",
    ast.BoolOp: "'and'/'or'",
    ast.IfExp: "'if'/'else'",
    ast.List: "a list",
    ast.Tuple: "a tuple",
    ast.Dict: "a dict",
    ast.Set: "a set",
    ast.JoinedStr: "an f-string",
    ast.NamedExpr: "':='",
    ast.Starred: "'*' unpacking",
}


def _literal(value: Number) -> Number:
    """A number written in a formula or given as one: finite, and a whole number of at most MAX_DIGITS digits."""
    if isinstance(value, int) and abs(value) >= 10**MAX_DIGITS:
        raise FormulaError(f"a whole number of more than {MAX_DIGITS} digits is not allowed")
    if isinstance(value, float) and not (math.isfinite(value) and abs(value) <= MAX_MAGNITUDE):
        raise FormulaError(f"number {value:g} is out of range (at most {MAX_MAGNITUDE:g} in size)")
    return _check(value)


def _check_text(text: str) -> None:
    """Formulas are ASCII: Python would read fullwidth 'ｎ' as 'n', and control characters have no place."""
    for i, ch in enumerate(text):
        if not ch.isascii():
            raise FormulaError(
                f"character {ch!r} (U+{ord(ch):04X}) at position {i + 1} is not allowed; formulas are ASCII"
            )
        if ch < " " and ch not in "\t\n\r" or ch == "\x7f":
            raise FormulaError(f"control character U+{ord(ch):04X} at position {i + 1} is not allowed")


def _check(value: Number) -> Number:
    if isinstance(value, float) and (math.isnan(value) or abs(value) > MAX_MAGNITUDE):
        raise FormulaError(f"result {value} is out of range")
    if isinstance(value, int) and value.bit_length() > 1000:
        raise FormulaError("result is too large")
    return value


Evaluator = Callable[[Mapping[str, Number]], Number]


@dataclass(frozen=True)
class Expr:
    """A compiled formula. ``names`` are the parameter names it reads."""

    source: str
    names: frozenset[str]
    _fn: Evaluator = field(repr=False, compare=False)

    def evaluate(self, env: Mapping[str, Number]) -> Number:
        try:
            return self._fn(env)
        except FormulaError:
            raise
        except ZeroDivisionError:
            raise FormulaError("division by zero") from None
        except OverflowError:
            raise FormulaError("result is too large") from None
        except RecursionError:
            raise FormulaError("formula is nested too deeply to evaluate") from None
        except (ValueError, TypeError) as exc:  # a math domain error, say
            raise FormulaError(str(exc)) from None

    def __str__(self) -> str:
        return self.source


def compile_expr(source: object) -> Expr:
    """Parse and check a formula (a string or a number). Raises FormulaError with a precise reason.

    An Expr is immutable, so one compiled formula serves every descriptor that writes it: the bundled catalogue's
    226 formulas are 70 different ones (`n`, `4*n`...), and loading it parses each once. Errors are not kept."""
    if isinstance(source, (str, int, float)):  # the hashable kinds; anything else is refused below
        return _compile_cached(source)
    return _compile_uncached(source)


@functools.lru_cache(maxsize=4096, typed=True)  # typed: 1, 1.0 and True are different formulas
def _compile_cached(source: str | int | float) -> Expr:
    return _compile_uncached(source)


def _compile_uncached(source: object) -> Expr:
    if isinstance(source, bool) or not isinstance(source, (str, int, float)):
        raise FormulaError(f"expected a number or a formula, got {type(source).__name__} {source!r}")
    if isinstance(source, (int, float)):
        value = _literal(source)
        return Expr(repr(source), frozenset(), lambda env: value)
    text = source.strip()
    if not text:
        raise FormulaError("empty formula")
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"formula is longer than {MAX_LENGTH} characters")
    _check_text(text)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise FormulaError(f"syntax error in {shown!r}: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise FormulaError(f"formula {text[:40]!r}… is nested too deeply") from None
    nodes = sum(1 for _ in ast.walk(tree))  # ast.walk is iterative: safe on any tree ast.parse returns
    if nodes > MAX_NODES:
        raise FormulaError(f"formula has {nodes} parts; at most {MAX_NODES} are allowed")
    names: set[str] = set()
    try:
        fn = _compile(tree.body, names)
    except RecursionError:
        raise FormulaError(f"formula {text[:40]!r}… is nested too deeply") from None
    return Expr(text, frozenset(names), fn)


def _compile(node: ast.AST, names: set[str]) -> Evaluator:
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise FormulaError(f"only numbers are allowed, not {type(value).__name__} {value!r}")
        value = _literal(value)
        return lambda env: value
    if isinstance(node, ast.Name):
        name = node.id
        if name in FUNCTIONS:
            raise FormulaError(f"'{name}' is a function: call it as {name}(...)")
        names.add(name)

        def lookup(env: Mapping[str, Number]) -> Number:
            try:
                return env[name]
            except KeyError:
                raise FormulaError(f"unknown name '{name}'") from None

        return lookup
    if isinstance(node, ast.BinOp):
        op = _BINARY.get(type(node.op))
        if op is None:
            raise FormulaError(f"operator '{ast.unparse(node)}' is not allowed (use + - * / // % **)")
        left, right = _compile(node.left, names), _compile(node.right, names)
        return lambda env: _check(op(left(env), right(env)))
    if isinstance(node, ast.UnaryOp):
        unary = _UNARY.get(type(node.op))
        if unary is None:
            raise FormulaError(f"operator in '{ast.unparse(node)}' is not allowed")
        operand = _compile(node.operand, names)
        return lambda env: unary(operand(env))
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            called = ast.unparse(node.func)
            raise FormulaError(f"call to '{called}' is not allowed (allowed: {', '.join(FUNCTIONS)})")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
            raise FormulaError(f"{node.func.id}() takes plain positional arguments only")
        function, arity = FUNCTIONS[node.func.id]
        if arity is not None and len(node.args) != arity:
            raise FormulaError(f"{node.func.id}() takes {arity} argument, got {len(node.args)}")
        args = [_compile(a, names) for a in node.args]
        return lambda env: _check(function(*(a(env) for a in args)))
    what = _DESCRIBE.get(type(node), type(node).__name__)
    raise FormulaError(f"{what} is not allowed in a formula")
