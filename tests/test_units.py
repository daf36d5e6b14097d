"""Units: parsing quantities into SI base units, formatting them back, and the round trip between the two."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from roofline.model.units import (
    KINDS,
    UnitError,
    format_bytes,
    format_flops,
    format_intensity,
    format_rate,
    format_si,
    format_time,
    parse_quantity,
)

# ---- parsing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("3.35 TB/s", "bandwidth", 3.35e12),
        ("989 TFLOP/s", "flops", 989e12),
        ("600 ns", "time", 6e-7),
        ("50 MiB", "bytes", 50 * 2**20),
        ("1.98 GHz", "frequency", 1.98e9),
        ("320 GB/s", "bandwidth", 320e9),
        ("1 us", "time", 1e-6),
        ("1 µs", "time", 1e-6),
        ("2 ms", "time", 2e-3),
        ("332ns", "time", 332e-9),  # no space
        ("1,555 GB/s", "bandwidth", 1555e9),  # thousands separator
        ("66.9 TFLOPS", "flops", 66.9e12),
        ("130 TOPS", "flops", 130e12),
        ("1.5e3 GB/s", "bandwidth", 1.5e12),
        ("  4.8 TB/s  ", "bandwidth", 4.8e12),
    ],
)
def test_parse_examples(text: str, kind: str, expected: float) -> None:
    assert parse_quantity(text, kind) == pytest.approx(expected, rel=1e-15)


def test_600_ns_is_the_float_nearest_6e_minus_7() -> None:
    # parsing uses exact decimal scales, so no 6.000000000000001e-07
    assert parse_quantity("600 ns", "time") == 6e-7
    assert parse_quantity("3.35 TB/s", "bandwidth") == 3.35e12


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [
        (42, "bytes", 42.0),
        (2.5e12, "bandwidth", 2.5e12),
        ("42", "bytes", 42.0),
        ("4e-7", "time", 4e-7),
        ("1e12", "flops", 1e12),
    ],
)
def test_bare_numbers_are_base_units(value: object, kind: str, expected: float) -> None:
    result = parse_quantity(value, kind)
    assert isinstance(result, float)
    assert result == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1 kB", 1000),
        ("1 MB", 10**6),
        ("1 GB", 10**9),
        ("1 TB", 10**12),
        ("1 KiB", 1024),
        ("1 MiB", 2**20),
        ("1 GiB", 2**30),
        ("1 TiB", 2**40),
        ("16 GB", 16 * 10**9),
        ("16 GiB", 16 * 2**30),
    ],
)
def test_decimal_and_binary_prefixes(text: str, expected: int) -> None:
    assert parse_quantity(text, "bytes") == expected


def test_binary_prefix_on_a_bandwidth() -> None:
    assert parse_quantity("1 GiB/s", "bandwidth") == 2**30
    assert parse_quantity("1 GB/s", "bandwidth") == 10**9


@pytest.mark.parametrize("text", ["1 KB", "96 KB", "1 KB/s"])
def test_KB_is_refused_as_ambiguous(text: str) -> None:
    kind = "bandwidth" if text.endswith("/s") else "bytes"
    with pytest.raises(UnitError, match="ambiguous") as exc_info:
        parse_quantity(text, kind)
    message = str(exc_info.value)
    assert "kB" in message and "KiB" in message  # says what to write instead


def test_prefix_case_is_never_guessed() -> None:
    # 'mB/s' would be milli-bytes; it must not be read as MB/s
    with pytest.raises(UnitError):
        parse_quantity("5 mB/s", "bandwidth")
    with pytest.raises(UnitError):
        parse_quantity("5 tflop/s", "flops")


def test_unit_name_case_is_forgiven() -> None:
    assert parse_quantity("19.5 Tflops", "flops") == pytest.approx(19.5e12)
    assert parse_quantity("19.5 Tflop/s", "flops") == pytest.approx(19.5e12)


@pytest.mark.parametrize(
    ("value", "kind", "fragment"),
    [
        ("4.8 TB", "bandwidth", "unknown unit 'TB' for a bandwidth"),
        ("4.8 TB/s", "bytes", "unknown unit 'TB/s' for a bytes"),
        ("600 ns", "bandwidth", "unknown unit 'ns'"),
        ("1.98 GHz", "time", "unknown unit 'GHz'"),
        ("fast", "bandwidth", "expected a bandwidth like '4.8 TB/s'"),
        ("", "time", "expected a time"),
        ("TB/s", "bandwidth", "expected a bandwidth"),
        ("1 2 TB/s", "bandwidth", "expected a bandwidth"),
        (True, "bytes", "expected a bytes"),
        (None, "bytes", "NoneType"),
        ([1, 2], "bytes", "list"),
        (float("inf"), "flops", "finite"),
        (float("nan"), "flops", "finite"),
        ("1e999 TB/s", "bandwidth", "finite"),
        ("1e999999 TB/s", "bandwidth", "finite"),  # overflows the decimal context, not only the float range
        ("1e99999999999 ns", "time", "finite"),
        (10**309, "bytes", "finite"),  # float() of it would raise OverflowError
        pytest.param(10**5000, "bytes", "finite", id="5000-digit-int"),  # its repr() would exceed 4300 digits
        ("1" * 41 + " B", "bytes", "more than 40 digits"),
        pytest.param("1" * 5000 + " B/s", "bandwidth", "more than 40 digits", id="5000-digit-string"),
        ("1." + "0" * 40 + " GHz", "frequency", "more than 40 digits"),
        ("\u0663\u066b\u0663\u0665 TB/s", "bandwidth", "digits must be ASCII"),  # Arabic-Indic 3.35
        ("\u0661\u0662 ns", "time", "digits must be ASCII"),
        ("\uff11\uff12 GHz", "frequency", "digits must be ASCII"),  # fullwidth 12
        ("\u0967 MiB", "bytes", "digits must be ASCII"),  # Devanagari 1
    ],
)
def test_bad_quantities_are_refused_with_a_clear_message(value: object, kind: str, fragment: str) -> None:
    with pytest.raises(UnitError) as exc_info:
        parse_quantity(value, kind)
    assert fragment in str(exc_info.value)


def test_forty_digits_are_still_a_number() -> None:
    assert parse_quantity("1" * 40 + " B", "bytes") == float("1" * 40)
    assert parse_quantity(10**300, "bytes") == 1e300


def test_unit_error_is_a_value_error() -> None:
    assert issubclass(UnitError, ValueError)


# ---- formatting --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3.35 TB/s", format_rate(3.35e12)),
        ("320 GB/s", format_rate(320e9)),
        ("989 TFLOP/s", format_flops(989e12)),
        ("1.98 PFLOP/s", format_flops(1.979e15)),
        ("600 ns", format_time(6e-7)),
        ("35.4 µs", format_time(35.4e-6)),
        ("1.5 s", format_time(1.5)),
        ("50 MiB", format_bytes(50 * 2**20, binary=True)),
        ("52.4 MB", format_bytes(50 * 2**20)),
        ("1.98 GHz", format_si(1.98e9, "Hz")),
        ("1 kB", format_bytes(1000)),
        ("1 kB", format_bytes(999.9)),  # rounds up into the next prefix, never '1e+03 B'
        ("0 B", format_bytes(0)),
        ("12 B", format_bytes(12)),
        ("0.0833 FLOP/B", format_intensity(1 / 12)),
        ("∞ FLOP/B", format_intensity(float("inf"))),
        ("2.9e20 FLOP/B", format_intensity(2.9e20)),  # a million and past in powers of ten, never 21 digits
        ("999999 FLOP/B", format_intensity(999999)),
        ("–", format_rate(None)),
        ("–", format_time(None)),
    ],
)
def test_format_examples(text: str, value: str) -> None:
    assert value == text


def test_format_never_uses_exponent_notation() -> None:
    for value in (1e3, 1e21, 1e25, 1.234e-10):
        assert "e+" not in format_si(value, "B") and "e-" not in format_si(value, "B")
    for seconds in (1234.0, 1e-13):
        assert "e" not in format_time(seconds).replace("µ", "")


# ---- round trip (property) ---------------------------------------------------------------------

ROUNDING = 5e-3  # three significant digits: at most half a unit in the third digit


@given(value=st.floats(min_value=1e-6, max_value=1e24, allow_nan=False, allow_infinity=False))
def test_rate_round_trip(value: float) -> None:
    assert parse_quantity(format_rate(value), "bandwidth") == pytest.approx(value, rel=ROUNDING)


@given(value=st.floats(min_value=1e-6, max_value=1e24))
def test_flops_round_trip(value: float) -> None:
    assert parse_quantity(format_flops(value), "flops") == pytest.approx(value, rel=ROUNDING)


@given(value=st.floats(min_value=1e-6, max_value=1e24), binary=st.booleans())
def test_bytes_round_trip(value: float, binary: bool) -> None:
    assert parse_quantity(format_bytes(value, binary=binary), "bytes") == pytest.approx(value, rel=ROUNDING)


@given(value=st.floats(min_value=1e-13, max_value=1e5))
def test_time_round_trip(value: float) -> None:
    assert parse_quantity(format_time(value), "time") == pytest.approx(value, rel=ROUNDING)


@given(value=st.floats(min_value=1e-3, max_value=1e15))
def test_frequency_round_trip(value: float) -> None:
    assert parse_quantity(format_si(value, "Hz"), "frequency") == pytest.approx(value, rel=ROUNDING)


@given(value=st.floats(min_value=-1e20, max_value=-1e-3))
def test_negative_values_round_trip(value: float) -> None:
    assert parse_quantity(format_rate(value), "bandwidth") == pytest.approx(value, rel=ROUNDING)


def test_every_kind_round_trips_its_own_example() -> None:
    from roofline.model.units import _KINDS

    from roofline.model.units import format_small

    # power and the energies per byte and FLOP: the energy block of a spec (issue 33), formatted below their unit
    small = {"power", "energy_per_byte", "energy_per_flop"}
    assert set(KINDS) == {"bandwidth", "flops", "bytes", "time", "frequency"} | small
    for kind in KINDS:
        example = _KINDS[kind][1]
        parsed = parse_quantity(example, kind)
        formatted = format_time(parsed) if kind == "time" else format_small(parsed, _KINDS[kind][0]) \
            if kind in small else format_si(parsed, _KINDS[kind][0], binary="i" in example)
        assert formatted == example


def test_parse_number_takes_ascii_finite_numbers_only():
    from roofline.model.units import parse_number

    assert parse_number(" 0.7 ") == 0.7 and parse_number("7e-1") == 0.7
    for bad in ("١٢", "inf", "nan", "1" * 41, "1e999", "0.7 TB/s", ""):
        with pytest.raises(UnitError):
            parse_number(bad)


# ---- bits are bits, and a file's figure carries its unit (issue 31) ----------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [("25 Gb/s", 25e9 / 8), ("25 Gbit/s", 25e9 / 8), ("400 Gb/s", 50e9),
                                                ("1555 GB/s", 1555e9), ("10 Mbit/s", 10e6 / 8)])
def test_a_bit_rate_is_an_eighth_of_the_byte_rate(text: str, expected: float) -> None:
    assert parse_quantity(text, "bandwidth") == pytest.approx(expected, rel=1e-15)


@pytest.mark.parametrize("text", ["1 gb/s", "1 gB/s", "1 GBIT/s"])
def test_a_bit_and_a_byte_are_never_case_folded_into_each_other(text: str) -> None:
    with pytest.raises(UnitError, match="case matters: B/s is bytes, b/s or bit/s is bits|unknown unit"):
        parse_quantity(text, "bandwidth")


@pytest.mark.parametrize("text", ["80 Gb", "256 Kibit"])
def test_a_size_in_bits_is_refused(text: str) -> None:
    with pytest.raises(UnitError, match="unknown unit"):
        parse_quantity(text, "bytes")


@pytest.mark.parametrize(("value", "kind", "shown"), [(1555, "bandwidth", "1555 has no unit (a bare number would be "
                                                      "read as 1555 B/s); write it with its unit, like '4.8 TB/s'"),
                                                     ("1.41", "frequency", "like '1.98 GHz'"),
                                                     (2.5e12, "flops", "like '66.9 TFLOP/s'")])
def test_a_bare_number_is_refused_where_the_unit_is_required(value: object, kind: str, shown: str) -> None:
    assert parse_quantity(value, kind) > 0  # a command line's byte count may still be bare
    with pytest.raises(UnitError) as exc_info:
        parse_quantity(value, kind, unit_required=True)
    assert shown in str(exc_info.value)
