"""docs/cli.md is generated from the click commands (roofline.cli.reference) and kept current by this test, as
sqlite-utils keeps its cog-generated reference: change a command's help, then regenerate with

    python -m roofline.cli.reference > docs/cli.md
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click

from roofline.cli import cli
from roofline.cli.reference import reference, walk

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "cli.md"


def test_the_cli_reference_is_current():
    assert DOC.exists(), "docs/cli.md is missing: python -m roofline.cli.reference > docs/cli.md"
    assert DOC.read_text(encoding="utf-8") == reference(), (
        "docs/cli.md is stale: regenerate it with 'python -m roofline.cli.reference > docs/cli.md'")


def test_every_command_and_option_is_in_it():
    text = reference()
    paths = [" ".join(path) for path, _, _ in walk(cli)]
    assert {"roofline analyze", "roofline import ncu", "roofline specs show", "roofline sweep"} <= set(paths)
    for path, command, _ in walk(cli):
        section = text.split(f"\n## {' '.join(path)}\n", 1)[1].split("\n## ", 1)[0]
        assert f"Usage: {' '.join(path)}" in section
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert any(opt in section for opt in param.opts), f"{' '.join(path)}: {param.opts} missing"
            elif isinstance(param, click.Option):
                assert f"{param.opts[0]} " not in section, f"{' '.join(path)}: hidden {param.opts} shown"
    assert "%%" not in text  # click does not %-format help: a doubled % shows as written


def test_it_does_not_depend_on_the_terminal_it_is_generated_in():
    env = {"COLUMNS": "40", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "roofline.cli.reference"], capture_output=True, text=True, env=env,
                         cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert out.stdout == reference()


def test_a_changed_help_makes_it_differ():
    @click.group()
    def tool() -> None:
        """A tool."""

    @tool.command()
    @click.option("--level", default=1, help="How hard.")
    def go(level: int) -> None:
        """Go."""

    before = reference(tool)
    go.params[0].help = "How hard, now."
    assert reference(tool) != before and "How hard, now." in reference(tool)
