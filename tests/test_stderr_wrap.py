"""Notes, warnings and errors on standard error wrap to the terminal (issue 39: lines of 97, 129 and 258
characters at 80 columns), never inside a name or a number; off a terminal (a CI log) each stays one line."""

from __future__ import annotations

import io

import pytest

from roofline.render.console import stderr_width, wrap_message

TRITON = "triton_red_fused__log_softmax__to_copy__unsafe_view_prepare_softmax_online_view_12"
NOTE = (f"note: 3 GPU events of kernel {TRITON} took 1.25e-05 s each below the launch floor of 2.1 µs "
        "on h200-sxm; see docs/torch-trace.md for how they are modelled")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_long_note_wraps_to_80_columns_without_cutting_a_word() -> None:
    out = wrap_message(NOTE, 80)
    lines = out.split("\n")
    assert len(lines) > 1
    assert all(len(line) <= 80 for line in lines if TRITON not in line)
    assert out.split() == NOTE.split()  # every word whole: the name, 1.25e-05, docs/torch-trace.md
    assert all(line.startswith("  ") for line in lines[1:])  # continuation lines read as one message
    assert wrap_message("short", 80) == "short" and wrap_message(NOTE, None) == NOTE


def test_the_width_is_the_terminal_s_and_none_off_a_terminal() -> None:
    assert stderr_width(_Terminal(), {"COLUMNS": "80"}) == 80
    assert stderr_width(io.StringIO(), {"COLUMNS": "80"}) is None  # a log keeps one line a message


def test_note_wraps_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from roofline.cli.common import note

    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setenv("COLUMNS", "80")
    note(NOTE)
    printed = terminal.getvalue().rstrip("\n").split("\n")
    assert len(printed) > 1 and max(len(line) for line in printed if TRITON not in line) <= 80
    assert TRITON in terminal.getvalue()
