"""The README is part of the product: its worked kernel example must run, and every command must appear in it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from roofline.cli import cli

README = Path(__file__).resolve().parent.parent / "README.md"
TEXT = README.read_text(encoding="utf-8")


def _example_files() -> dict[str, str]:
    files = {}
    for lang, comment, name, body in re.findall(r"```(yaml|python|cuda)\n(#|//) my_kernels/(\S+)\n(.*?)```", TEXT, re.S):
        files[name] = body
    return files


def test_readme_kernel_example_is_complete():
    assert set(_example_files()) == {"saxpy.yaml", "saxpy.py", "saxpy.cu"}


def test_readme_kernel_example_analyses_and_measures(tmp_path, run_cli):
    folder = tmp_path / "my_kernels"
    folder.mkdir()
    for name, body in _example_files().items():
        (folder / name).write_text(body)
    result = run_cli("analyze", "--kernels", folder, "saxpy", "--spec", "a100", "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["kernels"][0]["intensity"] == pytest.approx(1 / 6)
    result = run_cli("measure", "--backend", "numpy", "--kernels", folder, "saxpy", "-p", "n=4099",
                     "--min-time", "0", "--min-repeats", "2", "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["kernels"][0]["status"] == "OK"


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_is_in_the_readme(name):
    assert f"roofline {name}" in TEXT


def test_readme_has_exactly_two_fresh_machine_commands():
    section = TEXT.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(commands) == 2
    assert "roofline analyze" in commands[0]
    assert "pytest" in commands[1] and ".[test]" in commands[1]


@pytest.mark.gpu
def test_readme_kernel_example_runs_on_the_gpu(tmp_path, run_cli):
    folder = tmp_path / "my_kernels"
    folder.mkdir()
    for name, body in _example_files().items():
        (folder / name).write_text(body)
    result = run_cli("measure", "--backend", "cupy", "--kernels", folder, "saxpy", "-p", "n=1000003",
                     "--min-time", "0", "--min-repeats", "3", "--format", "json")
    assert result.code == 0, result.err
    entry = json.loads(result.out)["kernels"][0]
    assert entry["status"] == "OK", entry["error"]
    assert entry["time_median"] > 0
