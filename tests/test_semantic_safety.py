"""Issue 15, the semantic cases: inputs that parse but cannot be right. Each gives exit 2 (or the documented exit)
with one line naming the file and field, before anything runs or is allocated."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

MEASURE = Path(__file__).resolve().parent / "data" / "measure"
FAST = ("--min-time", "0", "--min-repeats", "2")


def _one_line_error(r) -> str:
    assert "Traceback" not in r.err, r.err
    errors = [line for line in r.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, r.err
    return errors[0]


# ---- parameters the kernel cannot take ---------------------------------------------------------------------


def test_a_fractional_size_is_an_input_error_naming_the_parameter(run_cli):
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, "m_add", "-p", "n=1.5", *FAST)
    assert r.code == 2, r.err
    assert "-p n=1.5" in _one_line_error(r) and "whole number" in r.err


def test_a_size_that_cannot_be_allocated_is_refused_before_anything_is_allocated(run_cli):
    r = run_cli("measure", "--backend", "numpy", "--kernels", MEASURE, "m_add", "-p", "n=2**62", *FAST)
    assert r.code == 2, r.err
    line = _one_line_error(r)
    assert "n=4.61169e+18" in line and "host's memory" in line


# ---- implementation: only a file inside the descriptor's folder is ever imported -----------------------------


def _descriptor(folder: Path, implementation: str) -> Path:
    path = folder / "k.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: k
        description: test
        pattern: map
        dtype: float32
        params: {{n: 1000}}
        flops: n
        bytes: 3 * n * itemsize
        implementation: {implementation}
        """), encoding="utf-8")
    return path


def test_an_absolute_implementation_path_is_refused_before_import(run_cli, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = tmp_path / "imported"
    (outside / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n", encoding="utf-8")
    mine = tmp_path / "mine"
    mine.mkdir()
    _descriptor(mine, str(outside / "evil.py"))
    r = run_cli("measure", "--backend", "numpy", "--kernels", mine, "k", *FAST)
    assert r.code == 2, r.err
    assert "k.yaml: implementation: must be a file name relative" in _one_line_error(r)
    assert not marker.exists()


@pytest.mark.parametrize("how", ["dotdot", "symlink"])
def test_an_implementation_outside_the_folder_is_refused_before_import(run_cli, tmp_path, how):
    outside = tmp_path / "outside"
    outside.mkdir()
    marker = tmp_path / "imported"
    (outside / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n", encoding="utf-8")
    mine = tmp_path / "mine"
    mine.mkdir()
    if how == "dotdot":
        _descriptor(mine, "../outside/evil.py")
    else:
        (mine / "k.py").symlink_to(outside / "evil.py")
        _descriptor(mine, "k.py")
    r = run_cli("measure", "--backend", "numpy", "--kernels", mine, "k", *FAST)
    assert r.code == 2, r.err
    assert "outside the descriptor's folder" in _one_line_error(r)
    assert not marker.exists()


def test_an_implementation_in_a_subfolder_is_accepted(run_cli, tmp_path):
    mine = tmp_path / "mine"
    (mine / "impl").mkdir(parents=True)
    shutil.copy(MEASURE / "m_add.py", mine / "impl" / "k.py")
    _descriptor(mine, "impl/k.py")
    r = run_cli("kernels", "--kernels", mine)
    assert r.code == 0, r.err
