"""The CLI reference, docs/cli.md, generated from the click command tree so it cannot drift from the code: every
command and subcommand with its help and options, exactly as `--help` prints them, at a fixed width.

    python -m roofline.cli.reference > docs/cli.md

tests/test_cli_reference.py regenerates it and compares, as sqlite-utils checks its cog-generated docs: a help text
changed without regenerating fails the suite. Hidden options (the deprecated spellings) stay out, as in --help.
"""

from __future__ import annotations

import sys
from typing import Iterator

import click

from roofline.cli import cli

WIDTH = 100  # the width the reference is wrapped at, whatever the terminal that generates it
HEADER = """# Command-line reference

Generated from the commands themselves by `python -m roofline.cli.reference > docs/cli.md`; do not edit by hand
(tests/test_cli_reference.py fails when this file is stale). Each section is that command's `--help`.

## One vocabulary

A concept has one spelling on every command, in the Python API and in the pytest plugin
(tests/test_vocabulary.py walks every command and holds them to it). The old spellings still work for one release,
as hidden options: they are not listed below.

- **the ncu executable**: `--ncu-path PATH` (measure, profile, doctor). A path is named as one; a bare `--ncu`
  was a path in measure and profile and a switch in doctor (`--ncu/--no-ncu`, still doctor's switch). Old:
  `--ncu PATH` (measure, profile).
- **a measured spec**: `--calibrated FILE` (plot, sweep): what `roofline calibrate -o FILE` writes, as `sweep`
  already named it. Old: `--measured-spec` (plot).
- **the GPUs to run on**: `--device N|N,M,...|all` (measure, sweep, calibrate, interconnect, doctor), one parser for
  all; doctor checks one GPU per run and says how to check several (mpirun, one rank per GPU).
- **grouping**: `--group-by op|kernel|module|range:N|none` (profile, import ncu, import torch; plot adds `auto`).
  Every command reads every word; one its data cannot give is refused with the reason (an ncu capture has no
  nn.Module ranges, a PyTorch trace no NVTX levels).
- **where it runs**: `--backend auto|cupy|numpy`; the API's `backend=`, the plugin's `--roofline-backend`. Old: the
  API's `backend_name=`.
- **colour**: `--color auto|always|never` on every command that prints a table; auto colours a terminal, but not
  with `NO_COLOR` set, `TERM=dumb` or under mpirun/srun (their ranks' output only looks like a terminal);
  `FORCE_COLOR=1` forces it.

An error names the spelling of the place it is read: the CLI its options, the API its keywords (`backend="numpy"`,
`min_time=`), the plugin its options (`--roofline-backend numpy`); install hints name the distribution,
`gpu-roofline[extra]`.

## Tables and messages

- **On a terminal** a table fits its width (`$COLUMNS`, else the terminal's): a number or an id is never cut;
  headers wrap first, then names, at their spaces, and a long identifier (a Triton kernel's
  `triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_7`) after an underscore, never inside a part; then the box loses
  its rules; then the least important columns are left out, named under the table. `--wide` prints every column.
- **Off a terminal** (`| cat`, `> file`, `-o FILE`) a table holds every column, as with `--wide`: a program or an
  editor reads it, and nothing is left out. Set `COLUMNS` to fit a pipe to a width anyway.
- **Notes, warnings and errors** go to standard error, so standard output stays data. On a terminal each wraps to its
  width at spaces (continuation lines indented), never inside a name, a path or a number; off a terminal (a CI log)
  each stays one line, so grep finds it whole.
- **Counts** read as English: `1 launch`, `2 launches`.
"""


def walk(command: click.Command, path: tuple[str, ...] = ("roofline",),
         parent: click.Context | None = None) -> Iterator[tuple[tuple[str, ...], click.Command, click.Context]]:
    """Every command under `command` (itself first), depth first in the order --help lists them, with the context
    its help is rendered in (built as click builds it: settings inherited from the parent, a fixed width)."""
    settings = dict(command.context_settings)
    if parent is None:
        settings.update(terminal_width=WIDTH, max_content_width=settings.get("max_content_width", WIDTH))
    ctx = click.Context(command, info_name=path[-1], parent=parent, **settings)
    yield path, command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, (*path, name), ctx)


def reference(root: click.Command | None = None) -> str:
    """docs/cli.md: a contents list, then one section per command holding its --help."""
    entries = list(walk(cli if root is None else root))
    lines = [HEADER]
    for path, command, ctx in entries:
        summary = command.get_short_help_str(limit=90)
        lines.append(f"- [`{' '.join(path)}`](#{'-'.join(path)}){' — ' + summary if summary else ''}")
    for path, command, ctx in entries:
        lines += ["", f'<a id="{"-".join(path)}"></a>', "", f"## {' '.join(path)}", "", "```text",
                  command.get_help(ctx).rstrip(), "```"]
    return "\n".join(lines) + "\n"


def main() -> None:
    sys.stdout.write(reference())


if __name__ == "__main__":
    main()
