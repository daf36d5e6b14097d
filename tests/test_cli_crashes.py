"""Inputs that crashed the CLI with a traceback (issue 23, "Output that reads"): each is one error naming what is
wrong, exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import NCU

GPT2 = NCU / "h200_gpt2_profile.csv"


@pytest.fixture(scope="module")
def grouped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from roofline.cli import main

    out = tmp_path_factory.mktemp("grouped") / "gpt2.json"
    with pytest.raises(SystemExit) as exc:
        main(["import", "ncu", str(GPT2), "--group-by", "op", "-o", str(out)])
    assert exc.value.code in (0, None) and out.is_file()
    return out


@pytest.mark.parametrize("name", ["chart.jpg", "chart.eps", "chart", "chart.PNG.txt"])
def test_plot_of_a_grouped_file_to_an_unknown_format(run_cli, grouped: Path, tmp_path: Path, name: str) -> None:
    out = tmp_path / name
    code, _, err = run_cli("plot", "--results", grouped, "-o", out)
    assert code == 2 and "unknown image format" in err and "Traceback" not in err
    assert not out.exists()


def test_plot_of_a_grouped_file_to_a_known_format_still_draws(run_cli, grouped: Path, tmp_path: Path) -> None:
    out = tmp_path / "chart.svg"
    code, _, err = run_cli("plot", "--results", grouped, "-o", out)
    assert code in (0, None), err
    assert out.read_bytes().lstrip().startswith(b"<?xml")


def test_import_of_a_5000_digit_launch_id(run_cli, tmp_path: Path) -> None:
    """An ID of 5000 digits is past Python's int-to-text limit: named and not imported, never a traceback."""
    lines = GPT2.read_text(encoding="utf-8").split("\n")
    first = next(i for i, line in enumerate(lines) if line.startswith('"0"'))
    lines[first] = '"' + "9" * 5000 + '"' + lines[first][lines[first].index(","):]
    csv = tmp_path / "long-id.csv"
    csv.write_text("\n".join(lines), encoding="utf-8")
    code, _, err = run_cli("import", "ncu", csv, "-o", tmp_path / "o.json")
    assert "Traceback" not in err
    assert code in (0, None, 2), err
    if code in (0, None):
        assert "an ID too long to be a launch number" in err and "5000 digits" in err
