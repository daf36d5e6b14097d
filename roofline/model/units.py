"""Quantities with units: parsed once at the edge into SI base units, formatted only by renderers.

Rates and FLOP counts use decimal prefixes (1 TB/s = 1e12 B/s); capacities may use either, and the
choice is explicit in the unit (GB = 1e9 B, GiB = 2**30 B). A bare 'KB' is refused as ambiguous.
Case matters where it changes the meaning: B is a byte and b a bit, so '25 Gb/s' (a network link's rating) is
25e9 / 8 B/s, as is '25 Gbit/s'; a bit is never case-folded into a byte ('Gb/s' is not 'GB/s'). A size in bits
('80 Gb') is refused: no GPU figure gives a capacity in bits, so it is a slip for GB.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, DecimalException

# A figure in a spec or on a command line never needs more digits than this; longer ones are refused rather than
# handed to int()/Decimal (Python refuses 4300 digits with a ValueError, and before that they just cost time).
MAX_DIGITS = 40

# Exact scales (Decimal) so that '600 ns' parses to the float nearest 6e-7, not 6.000000000000001e-07.
DECIMAL = {p: Decimal(10) ** e for p, e in {"": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}.items()}
BINARY = {p: Decimal(2) ** e for p, e in {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50}.items()}
SMALL = {p: Decimal(10) ** e for p, e in {"": 0, "m": -3, "u": -6, "µ": -6, "μ": -6, "n": -9, "p": -12}.items()}

# kind -> (base unit shown in messages, example, unit-spelling -> scale to base)
_KINDS: dict[str, tuple[str, str, dict[str, Decimal]]] = {}


def _table(units: dict[str, dict[str, Decimal]]) -> dict[str, Decimal]:
    table: dict[str, Decimal] = {}
    for unit, prefixes in units.items():
        for prefix, scale in prefixes.items():
            table[prefix + unit] = scale
    return table


_BITS = {p: scale / 8 for p, scale in DECIMAL.items()}  # a bit rate in bytes per second; bits take decimal prefixes
_KINDS["bandwidth"] = ("B/s", "4.8 TB/s", _table({"B/s": DECIMAL | BINARY, "b/s": _BITS, "bit/s": _BITS}))
_KINDS["flops"] = ("FLOP/s", "66.9 TFLOP/s", _table({"FLOP/s": DECIMAL, "FLOPS": DECIMAL, "OP/s": DECIMAL, "OPS": DECIMAL}))
_KINDS["bytes"] = ("B", "50 MiB", _table({"B": DECIMAL | BINARY}))
_KINDS["time"] = ("s", "332 ns", _table({"s": SMALL}))
_KINDS["frequency"] = ("Hz", "1.98 GHz", _table({"Hz": DECIMAL}))
# Energy (the optional `energy` block of a spec, docs/energy.md): power in W, and the energy of one byte moved or one
# FLOP done in J. Figures are picojoules ('138 pJ/B', '1.07 pJ/FLOP'); fJ for the next generations.
_SMALL_ENERGY = SMALL | {"f": Decimal(10) ** -15}
_KINDS["power"] = ("W", "101 W", _table({"W": SMALL | DECIMAL}))
_KINDS["energy_per_byte"] = ("J/B", "138 pJ/B", _table({"J/B": _SMALL_ENERGY}))
_KINDS["energy_per_flop"] = ("J/FLOP", "1.07 pJ/FLOP", _table({"J/FLOP": _SMALL_ENERGY, "J/OP": _SMALL_ENERGY}))
KINDS = tuple(_KINDS)

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"  # ASCII digits: float() takes '١٢' too
_QUANTITY = re.compile(rf"^\s*({_NUMBER})\s*([A-Za-zµμ/]*)\s*$")
_BARE_NUMBER = re.compile(rf"^\s*{_NUMBER}\s*$")


class UnitError(ValueError):
    """A value that is not a quantity of the expected kind; the message says what was expected."""


def parse_quantity(value: object, kind: str, unit_required: bool = False) -> float:
    """Parse '4.8 TB/s' into a finite float in SI base units. A bare number is read as base units only where
    unit_required is False (a command line's byte count); in a file a bare 1555 meant as GB/s would be 1,555 B/s,
    so files require the unit."""
    base, example, table = _KINDS[kind]
    expected = f"expected a {kind} like '{example}'"
    if isinstance(value, bool):
        raise UnitError(f"{expected}, got {value!r}")
    if unit_required and (isinstance(value, (int, float)) or (isinstance(value, str) and _BARE_NUMBER.match(value))):
        shown = _shown(value) if not isinstance(value, str) else value.strip()[:24]
        raise UnitError(f"{shown} has no unit (a bare number would be read as {shown} {base}); write it with "
                        f"its unit, like '{example}'")
    if isinstance(value, int):
        if value.bit_length() > 1024:  # past the float range; also keeps repr() below the int-string limit
            raise UnitError(f"expected a finite {kind}, got a whole number of {value.bit_length()} bits")
        number = float(value)
    elif isinstance(value, float):
        number = value
    elif isinstance(value, str):
        number = _parse_text(value, kind, _KINDS[kind])
    else:
        raise UnitError(f"{expected}, got {type(value).__name__} {_shown(value)}")
    if not math.isfinite(number):
        raise UnitError(f"expected a finite {kind}, got {_shown(value)}")
    return number


def parse_number(text: str) -> float:
    """A bare number written in ASCII digits, at most MAX_DIGITS of them, finite: what a quantity's number part may
    be (float() alone takes '١٢', 'inf' and 10⁵-digit text)."""
    if not _BARE_NUMBER.match(text) or sum(c.isdigit() for c in text) > MAX_DIGITS:
        raise UnitError(f"expected a number in ASCII digits (at most {MAX_DIGITS}), got {_shown(text)}")
    value = float(text)
    if not math.isfinite(value):
        raise UnitError(f"expected a finite number, got {_shown(text)}")
    return value


def _shown(value: object, limit: int = 40) -> str:
    text = repr(value) if not isinstance(value, int) or value.bit_length() < 1024 else "a huge number"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _parse_text(value: str, kind: str, spelling: tuple[str, str, dict[str, Decimal]]) -> float:
    base, example, table = spelling
    expected = f"expected a {kind} like '{example}'"
    match = _QUANTITY.match(value.replace(",", "").replace("_", ""))
    if not match:
        ascii_hint = " (digits must be ASCII 0-9)" if any(c.isdigit() and not c.isascii() for c in value) else ""
        raise UnitError(f"{expected}, got {_shown(value)}{ascii_hint}")
    number_text, unit = match.groups()
    if sum(c.isdigit() for c in number_text) > MAX_DIGITS:
        raise UnitError(f"{expected}, got a number of more than {MAX_DIGITS} digits ({_shown(value, 24)})")
    if unit == "":
        scale = Decimal(1)
    elif unit in table:
        scale = table[unit]
    else:
        unit_fixed = _case_fix(unit, table)
        if unit_fixed is None:
            hint = " ('KB' is ambiguous: write kB for 1000 B or KiB for 1024 B)" if unit.startswith("KB") else ""
            if kind == "bytes" and unit.endswith(("b", "bit")):
                hint = " (a lowercase b is a bit; a size is written in bytes: GB or GiB)"
            elif not hint and kind == "bandwidth" and any(u.upper() == unit.upper() for u in table):
                hint = " (case matters: B/s is bytes, b/s or bit/s is bits)"
            raise UnitError(
                f"unknown unit {unit!r} for a {kind} (expected {base} with a prefix, like '{example}'){hint}"
            )
        scale = table[unit_fixed]
    try:
        return float(Decimal(number_text) * scale)
    except DecimalException:  # '1e999999 TB/s' overflows the decimal context
        raise UnitError(f"expected a finite {kind}, got {_shown(value)}") from None


def _case_fix(unit: str, table: dict[str, Decimal]) -> str | None:
    """Accept 'flop/s' for 'FLOP/s' and 'Tflops' for 'TFLOPS', but never change a prefix's case, nor a byte (B) into
    a bit (b) or back: 'Gb/s' is not 'GB/s'."""
    for candidate in table:
        prefix_len = len(candidate) - len(candidate.lstrip("kMGTPEKimuµμnpf"))
        body, wanted = unit[prefix_len:], candidate[prefix_len:]
        if unit[:prefix_len] == candidate[:prefix_len] and body.upper() == wanted.upper() and \
                [c for c in body if c in "bB"] == [c for c in wanted if c in "bB"]:
            return candidate
    return None


# ---- formatting (renderers only) -------------------------------------------------------------

_FORMAT_DECIMAL = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, "")]
_FORMAT_BINARY = [(2.0**50, "Pi"), (2.0**40, "Ti"), (2.0**30, "Gi"), (2.0**20, "Mi"), (2.0**10, "Ki"), (1.0, "")]
_FORMAT_SMALL = [(1.0, ""), (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p")]


def _significant(x: float, digits: int = 3) -> str:
    if x == 0:
        return "0"
    if abs(x) >= 1e21:  # far past any figure (a hostile size): 2.7e48, not 49 digits
        mantissa, exponent = f"{x:.{digits}g}".split("e") if "e" in f"{x:.{digits}g}" else (f"{x:.{digits}g}", "0")
        return f"{mantissa}e{int(exponent)}"
    text = f"{x:.{digits}g}"
    if "e" in text:  # never print 1e+03 for 1000
        text = f"{x:.{max(digits - 1 - int(math.floor(math.log10(abs(x)))), 0)}f}"
    return text


def format_si(value: float | None, unit: str, digits: int = 3, binary: bool = False) -> str:
    """Human form of a base-unit value: format_si(4.8e12, 'B/s') == '4.8 TB/s'."""
    if value is None:
        return "–"
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return f"0 {unit}"
    steps = _FORMAT_BINARY if binary else _FORMAT_DECIMAL
    magnitude = abs(value)
    if magnitude >= steps[0][0] * 1e6:  # no prefix reads better than the exponent: 1.2e60 B, not 1.2e42 EB
        return f"{_significant(value, digits)} {unit}"
    for scale, prefix in steps:
        if magnitude >= scale * 0.9995:
            return f"{_significant(value / scale, digits)} {prefix}{unit}"
    return f"{_significant(value, digits)} {unit}"


def format_time(seconds: float | None, digits: int = 3) -> str:
    """'35.4 µs' style; seconds in, never prints 0.0000354 s."""
    return format_small(seconds, "s", digits)


def quantity_text(value: float, kind: str, digits: int = 4) -> str:
    """A base-unit value as a spec file writes it, which parse_quantity reads back within 5e-4: '4.213 TB/s',
    '64.1 TFLOP/s', '341.2 ns'. Bytes stay exact: a whole number of MiB or larger ('60 MiB'), else plain bytes."""
    if kind == "bytes":
        whole = int(round(value))
        for scale, prefix in _FORMAT_BINARY:
            if scale >= 2**20 and whole >= scale and whole % int(scale) == 0:
                return f"{whole // int(scale)} {prefix}B"
        return f"{whole} B"
    if kind == "time":
        return format_time(value, digits)
    if kind in ("power", "energy_per_byte", "energy_per_flop"):
        return format_small(value, _KINDS[kind][0], digits)
    return format_si(value, _KINDS[kind][0], digits)


def format_small(value: float | None, unit: str, digits: int = 3) -> str:
    """Human form of a figure that is usually below its unit: '138 pJ/B', '1.07 pJ/FLOP', '3.2 mJ', '101 W'."""
    if value is None:
        return "–"
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}"
    magnitude = abs(value)
    for scale, prefix in _FORMAT_SMALL:
        if magnitude >= scale * 0.9995:
            return f"{_significant(value / scale, digits)} {prefix}{unit}"
    # energy per byte or FLOP reads in pJ throughout (0.9 pJ/FLOP beside 6.65 pJ/FLOP), and a time in ps
    if unit.startswith("J/") or unit == "s":
        return f"{_significant(value / 1e-12, digits)} p{unit}"
    return f"{_significant(value / 1e-15, digits)} f{unit}"


def format_rate(value: float | None) -> str:
    return format_si(value, "B/s")


def format_flops(value: float | None) -> str:
    return format_si(value, "FLOP/s")


def format_bytes(value: float | None, binary: bool = False) -> str:
    return format_si(value, "B", binary=binary)


def format_count(value: float | None, unit: str = "FLOP") -> str:
    return format_si(value, unit)


def format_param(value: float | int) -> str:
    """A parameter's value as a user would write it back with -p: 2**40 for a power of two from 1024, whole numbers
    in full with thousands separators (1,000,000), others to six digits. Never 1.09951e+12."""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 2.0**63:
        value = int(value)
    if isinstance(value, int):
        if value >= 1024 and value & (value - 1) == 0:
            return f"2**{value.bit_length() - 1}"
        if abs(value) < 10**21:
            return f"{value:,}"
        return f"{value:.4g}"
    return f"{value:.6g}"


def format_fraction(value: float | None) -> str:
    """A fraction as a percentage with one decimal ('69.5%'): the one rounding `measure`, `report`, the pytest
    plugin and the charts use, so 0.695 never reads as 70% in one place and 69% in another."""
    return "–" if value is None else f"{value:.1%}"


def format_limit(value: float) -> str:
    """A gate's limit as the user gave it ('5%', '0.5%', '66.4%'): never rounded to whole percent, where 0.5% read
    '0%' and a program at 66.2% was 'below the 66% gate'."""
    return f"{value * 100:.3g}%"


def format_intensity(value: float | None) -> str:
    if value is None:
        return "–"
    if math.isinf(value):
        return "∞ FLOP/B"
    if abs(value) >= 1e6:  # a million FLOP per byte and past (a hostile or broken descriptor): 2.9e20, not 21 digits
        mantissa, exponent = f"{value:.3g}".split("e")
        return f"{mantissa}e{int(exponent)} FLOP/B"
    return f"{_significant(value, 3)} FLOP/B"
