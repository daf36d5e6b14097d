"""Start-up stays fast: `roofline --help`, `analyze`, `specs` and `kernels` import only what they run.

The command group is lazy (roofline.cli.LazyGroup): a command's module is imported when that command runs or
shows its help, and `roofline --help` lists every command from the summaries in roofline.cli.LAZY_COMMANDS. These
tests fail when a heavy package (CuPy, matplotlib, torch, mpi4py, NumPy) or another command's module creeps into
the start of a light command, and when a summary in the table drifts from the command's own help.
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from conftest import TESTS

HEAVY = ("cupy", "matplotlib", "torch", "mpi4py", "numpy")
SHARED = {"roofline.cli", "roofline.cli.common"}  # the group and the options every command shares
# Not heavy, but each a cost a light command has no need of: PyYAML (the bundled files' data comes from
# roofline.load.yamlmemo, roofline/load/bundled_yaml.json) and rich's console and tables (JSON output).
WATCHED = ("yaml", "rich.console", "rich.table")

PROBE = """
import json, sys
from roofline.cli import main
try:
    main(json.loads(sys.argv[1]))
except SystemExit as exc:
    code = exc.code
else:
    code = 0
loaded = sorted(m for m in sys.modules if m.startswith('roofline.cli') or m.split('.')[0] in {heavy!r}
                or m in {watched!r})
print(json.dumps({{"code": code, "loaded": loaded}}), file=sys.stderr)
""".format(heavy=HEAVY, watched=WATCHED)


def _loaded(*args: str) -> set[str]:
    """The command modules and heavy packages a fresh interpreter has imported after `roofline ARGS`."""
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(list(args))], capture_output=True, text=True,
                          timeout=120, cwd=TESTS.parent)
    result = json.loads(proc.stderr.strip().splitlines()[-1])
    assert result["code"] == 0, proc.stderr
    return set(result["loaded"])


@pytest.mark.parametrize(("args", "own"), [
    (("--help",), set()),
    (("analyze",), {"roofline.cli.analyze"}),
    (("analyze", "vector_add", "--spec", "t4", "--format", "json"), {"roofline.cli.analyze"}),
    (("specs",), {"roofline.cli.catalog"}),
    (("kernels",), {"roofline.cli.catalog"}),
    (("kernels", "show", "vector_add"), {"roofline.cli.catalog"}),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_a_light_command_imports_neither_heavy_packages_nor_other_commands(args: tuple[str, ...], own: set[str]):
    loaded = _loaded(*args) - set(WATCHED)
    assert loaded - SHARED == own, f"roofline {' '.join(args)} imported {sorted(loaded - SHARED - own)}"


@pytest.mark.parametrize(("args", "allowed"), [
    (("--help",), set()),
    (("analyze",), {"rich.console", "rich.table"}),
    (("analyze", "--format", "json"), set()),
    (("analyze", "vector_add", "--spec", "t4", "--format", "csv"), set()),
    (("specs", "--format", "json"), set()),
    (("kernels",), {"rich.console", "rich.table"}),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_a_light_command_parses_no_yaml_and_draws_no_table_it_does_not_print(args: tuple[str, ...],
                                                                             allowed: set[str]) -> None:
    """issue 30: `roofline analyze` within 2.2x of a bare `import click, rich, yaml`. The bundled specs and
    descriptors are read through the memo of what they parse to (roofline.load.yamlmemo), so PyYAML (about 15 ms)
    is not imported; JSON and CSV output import none of rich's console and table code (about 30 ms)."""
    watched = _loaded(*args) & set(WATCHED)
    assert watched <= allowed, f"roofline {' '.join(args)} imported {sorted(watched - allowed)}"


def test_a_heavy_command_is_imported_when_it_runs() -> None:
    """The probe can fail: `plot --help` does import the plot command's module (and still no matplotlib)."""
    loaded = _loaded("plot", "--help")
    assert "roofline.cli.plot" in loaded
    assert "matplotlib" not in loaded


def test_every_summary_in_the_lazy_table_is_the_commands_own() -> None:
    from roofline.cli import LAZY_COMMANDS, cli

    ctx = click.Context(cli)
    for name, (_target, summary) in LAZY_COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None, name
        assert command.name == name
        assert summary == command.get_short_help_str(limit=10_000), (
            f"roofline.cli.LAZY_COMMANDS[{name!r}] differs from the command's first sentence: copy it again")


@pytest.mark.parametrize("width", [60, 80, 100, 200])
def test_help_lists_every_command_as_an_eager_group_would(width: int) -> None:
    """The lazy listing, shortened by click at any terminal width, reads exactly as click's own listing of the
    loaded commands."""
    from roofline.cli import LAZY_COMMANDS, LazyGroup, cli

    def group(cls: type[click.Group], **kwargs: object) -> click.Group:
        return cls("roofline", help=cli.help, epilog=cli.epilog, params=cli.params,
                   context_settings=cli.context_settings, **kwargs)

    lazy = group(LazyGroup, lazy=LAZY_COMMANDS)  # a fresh one: `cli` may have loaded commands in this process
    lazy_help = lazy.get_help(click.Context(lazy, terminal_width=width, max_content_width=100))
    assert not lazy.commands, "listing the commands imported them"
    eager = group(click.Group)
    ctx = click.Context(cli)
    for name in LAZY_COMMANDS:
        eager.add_command(cli.get_command(ctx, name), name)
    eager_help = eager.get_help(click.Context(eager, terminal_width=width, max_content_width=100))
    assert lazy_help == eager_help
    assert all(f"  {name} " in lazy_help for name in LAZY_COMMANDS)


def test_an_unknown_command_is_a_usage_error(run_cli) -> None:
    r = run_cli("analyse")
    assert r.code == 2
    assert "No such command 'analyse'" in r.err
