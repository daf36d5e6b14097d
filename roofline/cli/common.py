"""Options and output helpers shared by several commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Callable, Sequence

import click

from roofline.errors import InputError
from roofline.specs import DEFAULT_SPEC

F = Callable[..., object]


def spec_option(multiple: bool = True, default: str | None = DEFAULT_SPEC, help_extra: str = "") -> Callable[[F], F]:
    text = (
        "Machine spec: a bundled id (h100-sxm), an alias or unique prefix (h100, t4), or a path to a YAML file."
        + (" Repeat to compare machines side by side." if multiple else "")
        + help_extra
    )
    return click.option(
        "--spec", "spec_names", multiple=multiple, default=(default,) if multiple and default else default,
        show_default=True, metavar="SPEC", help=text,
    )


def kernel_options(f: F) -> F:
    f = click.option(
        "-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
        help="Override a parameter of the selected kernels; VALUE may be a formula (-p n=2**20).",
    )(f)
    f = click.option(
        "--kernels", "kernel_paths", multiple=True, type=click.Path(path_type=Path), metavar="PATH",
        help="Add your kernel descriptors (a YAML file or a folder of them). Repeatable.",
    )(f)
    f = click.argument("names", nargs=-1, metavar="[KERNEL]...")(f)
    return f


def output_option(f: F) -> F:
    return click.option(
        "-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
        help="Write the output to this file (atomically) instead of standard output.",
    )(f)


def format_option(choices: Sequence[str], default: str = "table") -> Callable[[F], F]:
    return click.option(
        "--format", "fmt", type=click.Choice(list(choices)), default=default, show_default=True,
        help="Output format. json, csv and markdown are stable and machine-readable.",
    )


def emit(text: str, output: Path | None) -> None:
    """Write text to the file (atomically) or to standard output."""
    if output is None or str(output) == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_output(output, text)
    note(f"wrote {output}")


def write_output(output: Path, data: str | bytes) -> None:
    """Write the -o file atomically; a write that fails is an input error naming the path, not a traceback."""
    from roofline.jsonio import write_text_atomic

    try:
        write_text_atomic(output, data)
    except OSError as exc:
        raise InputError(f"-o {output}: cannot write: {exc.strerror}") from None


def note(message: str) -> None:
    """Messages for people go to standard error, so standard output stays data."""
    click.echo(message, err=True)


def print_tables(tables: Sequence[object], output: Path | None) -> None:
    from rich.console import Console

    if output is None or str(output) == "-":
        console = Console() if sys.stdout.isatty() else Console(width=200)  # never truncate piped tables
        for t in tables:
            console.print(t)
        return
    import io

    buffer = io.StringIO()
    console = Console(file=buffer, width=160, force_terminal=False, color_system=None)
    for t in tables:
        console.print(t)
    emit(buffer.getvalue(), output)


def emit_results(doc: dict, output: Path | None, fmt: str, table: Callable[[dict], object], notes: Sequence[str]) -> None:
    """The end of every command that makes a results document: write -o atomically, print JSON or the table,
    then the notes (failures, warnings) on standard error."""
    from roofline.jsonio import dumps

    text = dumps(doc)
    if output is not None:
        write_output(output, text)
    if fmt == "json":
        click.echo(text, nl=False)
    else:
        print_tables([table(doc)], None)
    for line in notes:
        note(line)
    if output is not None:
        note(f"wrote {output}")
