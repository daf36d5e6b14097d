"""Options and output helpers shared by several commands."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence
import io

import click

from roofline.errors import InputError
from roofline.model.types import MachineSpec
from roofline.load.specs import DEFAULT_SPEC, SpecCatalog
from roofline.render.text import clean
from roofline.model.invariants import soft_violations
import functools
import re

F = Callable[..., object]
AUTO_HELP = (f" 'auto' is the GPU's own spec when the driver lists one (read cheaply, no CUDA), otherwise {DEFAULT_SPEC}; "
             "a line on standard error says which and why.")


class FilePath(click.Path):
    """click.Path for a file, where an empty value is a usage error saying so: Path('') is '.', and the message
    would otherwise be about the current folder, which the user never named."""

    def __init__(self, allow_dash: bool = False, dir_okay: bool = False):
        super().__init__(path_type=Path, dir_okay=dir_okay, allow_dash=allow_dash)

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        if isinstance(value, str) and not value.strip():
            self.fail(f"{value!r} is an empty path; give a file name", param, ctx)
        if isinstance(value, str) and "\0" in value:  # no shell passes one; a Python caller of main() can
            self.fail(f"{value!r}: a path cannot hold a NUL character", param, ctx)
        return super().convert(value, param, ctx)


class OutputPath(FilePath):
    """FilePath for an output: a name ending in '/' (or an existing folder) is refused, never written as a file
    named after the folder (Path('newdir/') is Path('newdir')): roofline does not guess a file name for you."""

    def __init__(self) -> None:
        super().__init__(allow_dash=True)

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        if isinstance(value, str) and value.endswith(("/", os.sep)) and value.strip("/" + os.sep):
            self.fail(f"{value!r} names a folder; give a file name in it (e.g. {value}{self.example(param, ctx)})",
                      param, ctx)
        return super().convert(value, param, ctx)

    @staticmethod
    def example(param: click.Parameter | None, ctx: click.Context | None) -> str:
        """A file name the command would sensibly write, for the message."""
        name = getattr(param, "name", "") or ""
        command = ctx.command.name if ctx is not None and ctx.command is not None else ""
        by_option = {"save_trace": "trace.json.gz", "save_csv": "ncu.csv"}
        by_command = {"plot": "roofline.png", "report": "report.md", "analyze": "analysis.json",
                      "calibrate": "measured.yaml", "link-roofs": "measured.yaml", "interconnect": "links.json",
                      "links": "links.json"}
        return by_option.get(name) or by_command.get(command or "", "results.json")


def force_option(f: F) -> F:
    """--force: -o may replace an existing file that is not what the command writes. Eager, so the -o checks that
    run as options are read see it."""
    def remember(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
        if value:
            ctx.meta["roofline.force"] = True
        return value

    return click.option(
        "--force", is_flag=True, expose_value=False, is_eager=True, callback=remember,
        help="Let -o replace an existing file that is not what this command writes (a results document replaces "
             "only a results document of the same kind of run: measurement, PyTorch import, Nsight Compute or "
             "prediction; a figure only a figure of its format, and nothing replaces a roofline "
             "document of another kind without it). Never an input, never through a symlink.",
    )(f)


def force_requested() -> bool:
    ctx = click.get_current_context(silent=True)
    return ctx is not None and bool(ctx.find_root().meta.get("roofline.force"))


# ---- outputs never replace inputs ---------------------------------------------------------------------------

OUTPUT_PARAMS = ("output", "save_trace", "save_csv")  # the parameters, in any command, that name files written


def updates_in_place(*names: str) -> Callable[[F], F]:
    """Mark a command whose -o may be the same file as these inputs on purpose (link-roofs -o SPEC --into SPEC)."""
    def mark(f: F) -> F:
        setattr(f, "roofline_updates_in_place", names)
        return f

    return mark


def _label(param: click.Parameter) -> str:
    if isinstance(param, click.Option):
        return param.opts[0]
    return (param.metavar or (param.name or "").upper()).strip("[].") or "an argument"


def _inputs(ctx: click.Context, exempt: Sequence[str]) -> list[tuple[str, Path]]:
    """(how the user gave it, path) for every file or folder a command's arguments name: the path options and
    arguments, and any other text (a --spec YAML, the profiled program's script) that names an existing file."""
    found = []
    for param in ctx.command.params:
        if param.name is None or param.name in OUTPUT_PARAMS or param.name in exempt:
            continue
        value = ctx.params.get(param.name)
        for item in value if isinstance(value, (tuple, list)) else (value,):
            if isinstance(item, Path) and str(item) != "-":
                found.append((_label(param), item))
            elif isinstance(item, str) and item not in ("", "-") and "\0" not in item and os.path.isfile(item):
                found.append((_label(param), Path(item)))
    return found


def _reads(output: Path, given: Path) -> bool:
    """Whether writing `output` would replace `given` or a file the command reads from it (a --kernels folder's
    descriptors)."""
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    from roofline.load.jsonio import same_file

    if os.path.isdir(given):
        return (output.suffix in (".yaml", ".yml") and not output.name.startswith("_") and output.exists()
                and same_file(output.parent if str(output.parent) else Path("."), given))
    return same_file(output, given)


def check_outputs(ctx: click.Context) -> None:
    """Refuse (exit 2) an output that is one of the command's inputs, or another of its outputs: found by inode
    where both exist, so a symlink, '..' or a hard link to an input is the input."""
    callback = ctx.command.callback
    exempt = getattr(getattr(callback, "__wrapped__", callback), "roofline_updates_in_place", ())
    outputs = [(p, ctx.params.get(p.name)) for p in ctx.command.params if p.name in OUTPUT_PARAMS]
    outputs = [(_label(p), Path(v)) for p, v in outputs if v is not None and not is_stdout(Path(v))]
    if not outputs:
        return
    inputs = _inputs(ctx, exempt)
    for i, (label, output) in enumerate(outputs):
        for other_label, given in inputs:
            if _reads(output, given):
                what = "a file read from " if os.path.isdir(given) else ""
                raise InputError(f"{label} {output}: is {what}the input {other_label} {given}; roofline never "
                                 "replaces its input: give another path")
        for other_label, other in outputs[:i]:
            # lazy: not needed by `roofline --help`, which imports this module (start-up)
            from roofline.load.jsonio import same_file

            if same_file(output, other):
                raise InputError(f"{label} {output}: is also {other_label}; give each output its own path")
    writes = ctx.meta.get("roofline.writes")
    output = ctx.params.get("output")
    if writes and output is not None and not is_stdout(output) and not force_requested():
        # lazy: not needed by `roofline --help`, which imports this module (start-up)
        from roofline.load.jsonio import symlink_refusal, why_not_replace

        why = None if symlink_refusal(output) else why_not_replace(output, writes)
        if why is not None:
            raise InputError(f"-o {output}: not replaced: {why}; give another path, or --force to replace it")


def check_output_kind(writes: str) -> None:
    """check_outputs once a command knows what it writes (`profile` after choosing ncu or torch, `sweep` measured
    or predicted: 'roofline/results/v1@torch'), so an existing file it must not replace stops it before its work."""
    ctx = click.get_current_context()
    ctx.meta["roofline.writes"] = writes
    check_outputs(ctx)


def guard_outputs(command: click.Command) -> None:
    """Run check_outputs before the work of `command` (and of every command of a group): one place for all."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            guard_outputs(sub)
        return
    callback = command.callback
    if callback is None or getattr(callback, "roofline_guarded", False) \
            or not any(p.name in OUTPUT_PARAMS for p in command.params):
        return

    @functools.wraps(callback)
    def guarded(*args: object, **kwargs: object) -> object:
        check_outputs(click.get_current_context())
        return callback(*args, **kwargs)

    setattr(guarded, "roofline_guarded", True)
    command.callback = guarded


def spec_option(multiple: bool = True, default: str | None = "auto", help_extra: str = "") -> Callable[[F], F]:
    text = (
        "Machine spec: a bundled id (h100-sxm), an alias or unique prefix (h100, t4), or a path to a YAML file."
        + (" Repeat to compare machines side by side." if multiple else "") + AUTO_HELP
        + help_extra
    )
    return click.option(
        "--spec", "spec_names", multiple=multiple, default=(default,) if multiple and default else default,
        show_default=True, metavar="SPEC", help=text,
    )


def kernel_paths_option(f: F) -> F:
    return click.option(
        "--kernels", "kernel_paths", multiple=True, type=FilePath(dir_okay=True), metavar="PATH",
        help="Add your kernel descriptors (a YAML file or a folder of them). Repeatable.",
    )(f)


def kernel_options(f: F) -> F:
    f = click.option(
        "-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
        help="Override a parameter of the selected kernels; VALUE may be a formula (-p n=2**20).",
    )(f)
    f = kernel_paths_option(f)
    f = click.argument("names", nargs=-1, metavar="[KERNEL]...")(f)
    return f


OUTPUT_HELP = ("A regular file is replaced atomically (written beside it, then renamed); never an input, a symlink "
               "or a folder; a FIFO or device is written to.")


def output_option(f: F) -> F:
    f = force_option(f)
    return click.option(
        "-o", "--output", type=OutputPath(), default=None,
        help="Write the output to this file instead of standard output ('-': standard output). " + OUTPUT_HELP,
    )(f)


def format_option(choices: Sequence[str], default: str = "table", help: str | None = None) -> Callable[[F], F]:
    return click.option(
        "--format", "fmt", type=click.Choice(list(choices)), default=default, show_default=True,
        help=help or "Output format" + (f"; {', '.join(c for c in choices if c != 'table')} "
                                        f"{'is' if len(choices) == 2 else 'are'} stable and machine-readable."
                                        if len(choices) > 1 else "."),
    )


def is_stdout(output: Path | None) -> bool:
    return output is None or str(output) == "-"


def emit(text: str, output: Path | None, writes: str = "text") -> None:
    """Write text to the -o file or to standard output ('-' or no -o)."""
    write_output(output, text, writes)
    if not is_stdout(output):
        note(f"wrote {output}")


def write_output(output: Path | None, data: str | bytes | Iterator[bytes], writes: str = "text") -> None:
    """The one -o writer (roofline.load.jsonio.write_text_atomic: '-' is standard output, a regular file replaced
    atomically, symlinks refused, FIFOs and devices written to, never replaced). It checks again, at the moment of
    writing, that the output is none of the command's inputs (check_outputs) and, unless --force, that what it
    replaces is of the kind `writes` names (roofline.load.jsonio.why_not_replace); a write that fails is one
    input error naming the path."""
    # lazy: not needed by `roofline analyze`, which imports this module (start-up)
    from roofline.load.jsonio import symlink_refusal, why_not_replace, write_stdout, write_text_atomic

    if is_stdout(output):
        write_stdout(data)  # a broken pipe stays BrokenPipeError: the CLI exits 0 on it, as `| head` expects
        return
    assert output is not None
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        check_outputs(ctx)
    link = symlink_refusal(output)
    if link is not None:
        raise InputError(f"-o {output}: cannot write: {link}")
    why = None if force_requested() else why_not_replace(output, writes)
    if why is not None:
        raise InputError(f"-o {output}: not replaced: {why}; give another path, or --force to replace it")
    try:
        write_text_atomic(output, data)
    except OSError as exc:
        raise InputError(f"-o {output}: cannot write: {exc.strerror or exc}") from None


def note(message: str) -> None:
    """Messages for people go to standard error, so standard output stays data (control characters escaped); on a
    terminal each is wrapped to its width at spaces, never inside a name or a number (roofline.render.console)."""
    # lazy: not needed by `roofline analyze --format json`, which imports this module (start-up)
    from roofline.render.console import stderr_width, wrap_message

    click.echo(wrap_message(clean(message), stderr_width()), err=True)


def say_auto_spec(spec_names: Sequence[str]) -> None:
    """The header line of a command given --spec auto (the default): which spec it became, and why."""
    # lazy: not needed by `roofline specs`, which imports this module (start-up)
    from roofline.load.autospec import AUTO, auto_spec
    if any(n.strip().lower() == AUTO for n in spec_names):
        note(auto_spec(SpecCatalog.bundled()).line())


def warn_about_specs(machines: Sequence[MachineSpec]) -> None:
    """The soft invariants each spec breaks (roofline.model.invariants: a roof far from its family, a bandwidth above its
    bus), one warning line per finding naming the file and field, once per spec. Hard ones never get here: the
    loader refuses those specs."""
    seen: set[object] = set()
    for machine in machines:
        key = machine.path or machine.id
        if key in seen:
            continue
        seen.add(key)
        for v in soft_violations(machine):
            note(f"warning: {key}: {v.line()}")


def wide_option(f: F) -> F:
    """--wide: every column of every table, however wide (default: what fits the terminal, numbers never cut); and
    --color, which every command that prints a table takes with it."""
    def remember(ctx: click.Context, _param: click.Parameter, value: bool) -> bool:
        if value:
            ctx.meta["roofline.wide"] = True
        return value

    return color_option(click.option(
        "--wide", is_flag=True, expose_value=False, callback=remember,
        help="Print every table column however wide (by default a narrow terminal leaves the least important "
             "columns out, never cutting a number or id).",
    )(f))


def color_option(f: F) -> F:
    """--color auto|always|never (roofline.render.console decides what auto means: NO_COLOR, TERM=dumb, MPI)."""
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    from roofline.render.console import COLOR_CHOICES

    def remember(ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
        if value is not None:
            ctx.meta["roofline.color"] = value
        return value

    return click.option(
        "--color", type=click.Choice(COLOR_CHOICES), default=None, expose_value=False, callback=remember,
        help="Colour in tables: auto (default) colours a terminal, but not with NO_COLOR set, TERM=dumb or under "
             "mpirun/srun (whose ranks' output only looks like a terminal); FORCE_COLOR=1 is always.",
    )(f)


def color_requested() -> str | None:
    """The --color given to this command, or None (auto)."""
    ctx = click.get_current_context(silent=True)
    return None if ctx is None else ctx.find_root().meta.get("roofline.color")


def wide_requested() -> bool:
    ctx = click.get_current_context(silent=True)
    return ctx is not None and bool(ctx.find_root().meta.get("roofline.wide"))


def table_width(console_width: int | None = None) -> int | None:
    """The width tables are fitted to: None (every column) with --wide; else $COLUMNS, the terminal's width, or
    None when the stream is not a terminal: what goes to a pipe or a file is read by a program or later, in an
    editor that scrolls, so it keeps every column rather than a width nobody chose (it was 200, which still left
    FLOPs, the roof and SOL time out beside a compiled trace's 150-character Triton names)."""
    if wide_requested():
        return None
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return console_width


def print_tables(tables: Sequence[object], output: Path | None, stderr: bool = False) -> None:
    """Rich tables to the terminal (or standard error), or as plain text to the -o file, each fitted to the width
    (roofline.render.tables.fit: least important columns left out, numbers and ids never cut; --wide keeps all).

    The console reads no markup and no emoji codes in plain strings: a kernel named `t[/]x` or `:fire:` is shown
    as written. Cells roofline colours are rich Text objects (roofline.render.text.styled)."""
    # lazy: not needed by `roofline analyze --format json`, which imports this module (start-up)
    from roofline.render.console import make_console
    # lazy: not needed by `roofline analyze --format json`, which imports this module (start-up)
    from roofline.render.tables.fit import fit, natural_width

    if is_stdout(output) or stderr:
        stream = sys.stderr if stderr else sys.stdout
        width = table_width(make_console(stream).width if stream.isatty() else None)
        for t in tables:
            fit(t, width)
        need = max([natural_width(t) for t in tables] + [80]) if width is None else width
        console = make_console(stream, color=color_requested(), markup=False, emoji=False, width=need)
        for t in tables:
            console.print(t)
        return

    buffer = io.StringIO()
    width = None  # a file written with -o holds every column, whatever the terminal it was written from
    for t in tables:
        fit(t, width)
    need = max([natural_width(t) for t in tables] + [80]) if width is None else width
    console = make_console(buffer, width=need, force_terminal=False, color_system=None, markup=False, emoji=False)
    for t in tables:
        console.print(t)
    emit(buffer.getvalue(), output)


def emit_results(doc: dict, output: Path | None, fmt: str, table: Callable[[dict], object], notes: Sequence[str],
                 fix: str = "measure or import fewer; nothing was written") -> None:
    """The end of every command that makes a document (results, links, interconnect): write -o atomically, print
    JSON or the table, then the notes (failures, warnings) on standard error. With -o - the JSON is standard
    output, once, and the table goes to standard error so standard output stays one JSON document."""
    # lazy: not needed by `roofline analyze`, which imports this module (start-up)
    from roofline.load.jsonio import dump_bytes

    data = dump_bytes(doc)
    emit_document(doc, len(data), lambda: data, output, fmt, table, notes, fix)


def emit_document(doc: dict, size: int, body: Callable[[], str | bytes | Iterator[bytes]], output: Path | None,
                  fmt: str,
                  table: Callable[[dict], object], notes: Sequence[str], fix: str) -> None:
    """emit_results once the document's JSON exists: `body()` gives its text (or its chunks, for a fleet's file
    assembled from spooled entries) each time it is called; `size` in bytes is held to what report and plot read."""
    # lazy: not needed by `roofline analyze`, which imports this module (start-up)
    from roofline.records.files import MAX_RESULTS_BYTES

    if size > MAX_RESULTS_BYTES:  # what we write, report and plot must read
        raise InputError(f"the results would be {size / 2**20:.3g} MiB, more than the "
                         f"{MAX_RESULTS_BYTES / 2**20:.3g} MiB 'report' and 'plot' read "
                         f"({len(doc.get('kernels') or [])} entries)", fix=fix)
    if output is not None:
        # lazy: not needed by `roofline analyze`, which imports this module (start-up)
        from roofline.load.jsonio import document_writes

        write_output(output, body(), document_writes(doc))
    to_stdout = output is not None and is_stdout(output)
    if fmt == "json":
        if not to_stdout:
            write_output(None, body())
    else:
        shown = table(doc)  # one table, or several (a document's table and its timeline)
        print_tables(list(shown) if isinstance(shown, (list, tuple)) else [shown], None, stderr=to_stdout)
    for line in notes:
        note(line)
    if output is not None and not to_stdout:
        note(f"wrote {output}")


# ---- options of the commands that measure (measure, sweep, calibrate) ----------------------------------------


def one_spec(default: str | None) -> Callable[[click.Context, click.Parameter, tuple[str, ...]], str | None]:
    """The callback of a --spec that takes one spec: given twice, click would silently keep the last, so a command
    that judges against one spec refuses the repeat (exit 2) and says where several are compared."""

    def check(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> str | None:
        if len(value) > 1:
            shown = ", ".join(repr(v) for v in value[:4])
            raise click.BadParameter(f"given {len(value)} times ({shown}); this command takes one spec: run it once "
                                     "per spec ('roofline analyze --spec A --spec B' compares specs side by side)")
        return value[0] if value else default

    return check


def options_given(**options: str) -> list[str]:
    """Which of these options (parameter name -> how the user spells it) the command line set, not left at its
    default: a command refuses the ones that mean nothing in the mode it runs in, rather than ignore them."""
    # lazy: click.core is loaded already; ParameterSource is where click keeps it
    from click.core import ParameterSource

    ctx = click.get_current_context()
    return [flag for name, flag in options.items()
            if ctx.get_parameter_source(name) not in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)]


def single_spec_option(help_text: str, default: str | None = None) -> Callable[[F], F]:
    """--spec SPEC once (a repeat is refused, not silently the last one)."""
    shown = f"  [default: {default}]" if default is not None else ""  # click would print a string default as (auto)
    return click.option("--spec", "spec_name", multiple=True, callback=one_spec(default), metavar="SPEC",
                        help=help_text + shown)


def measure_spec_option(what: str = "Ceilings to compare with") -> Callable[[F], F]:
    """--spec for a command that runs on a device: 'auto' matches the GPU, or any spec name or path."""
    return single_spec_option(f"{what}: 'auto' matches the GPU to a bundled spec (or derives one from its "
                              "properties); or a bundled id, alias, prefix, or YAML path.", "auto")


# ---- one vocabulary: a concept has one spelling on every command (docs/cli.md, "One vocabulary") -----------------

DEVICE_METAVAR = "N|N,M,...|all"


def _check_devices(_ctx: click.Context, param: click.Parameter, value: str) -> str:
    """Every --device reads the same forms (roofline.measurement.multi.pool.parse_devices); a bad one is exit 2 as
    the options are read, before any GPU is looked for."""
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    from roofline.measurement.multi.pool import parse_devices

    try:
        parse_devices(value)
    except InputError as exc:
        raise click.BadParameter(exc.message.split(": ", 1)[-1], param=param) from None
    return value


def devices_option(f: F | None = None, *, default: str = "0",
                   help: str = "CUDA device ordinal; a list (0,2,3) or 'all' runs on those GPUs at once, one "
                               "process each, into one file whose entries name their device.") -> Any:
    """--device N|N,M,...|all, the one spelling every command that runs on GPUs takes (the value stays text:
    roofline.cli.multi parses it)."""
    option = click.option("--device", "device_text", default=default, show_default=True, metavar=DEVICE_METAVAR,
                          callback=_check_devices, help=help)
    return option if f is None else option(f)


MODULE_IN_NCU = ("an ncu capture has no nn.Module ranges of its own: PyTorch's module ranges are NVTX levels there "
                 "(--group-by range:N); a PyTorch trace groups by module with 'roofline import torch --group-by "
                 "module'")
GROUP_BY_WORDS = ("op", "kernel", "module", "range:N", "none")  # every --group-by reads these words


def check_group_by(auto: bool = False, refused: dict[str, str] | None = None) -> Callable[..., str]:
    """The callback of every --group-by: one vocabulary (GROUP_BY_WORDS, and 'auto' where the command chooses);
    a word this command's data cannot give (`refused`: word or 'range' -> why) is exit 2 saying why, not
    'no such choice'."""
    def check(_ctx: click.Context, param: click.Parameter, value: str) -> str:
        words = (("auto",) if auto else ()) + GROUP_BY_WORDS
        word = "range" if re.fullmatch(r"range:\d+", value) else value
        if word == "range" and int(value.split(":")[1]) < 1:
            word = value
        if word not in ("auto" if auto else "", "op", "kernel", "module", "range", "none"):
            raise click.BadParameter(f"'{value:.40}' is not one of {', '.join(words)} (N >= 1)", param=param)
        if refused and word in refused:
            raise click.BadParameter(f"'{value:.40}': {refused[word]}", param=param)
        return value

    return check


def group_by_option(default: str, help: str, auto: bool = False,
                    refused: dict[str, str] | None = None) -> Callable[[F], F]:
    """--group-by with the one vocabulary and metavar on every command (profile, import ncu, import torch, plot)."""
    return click.option("--group-by", "group_by", default=default, show_default=True,
                        metavar="|".join((("auto",) if auto else ()) + GROUP_BY_WORDS),
                        callback=check_group_by(auto, refused), help=help)


def old_spelling(old: str, new: str, param_name: str, **option: Any) -> Callable[[F], F]:
    """A renamed option's old spelling, hidden and kept for one release: what it is given lands on the new
    option's parameter (give the new option `callback=takes_old_spelling(param_name)`), with a warning on standard
    error naming the new spelling, as profile's --kernel and sweep's --param NAME have."""
    def keep(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is None or value == ():
            return value
        note(f"warning: {old} is deprecated and will be removed in the next release; use {new}")
        ctx.meta[f"roofline.old.{param_name}"] = value
        if param_name in ctx.params:  # the new spelling was read first (both given): the two together
            current = ctx.params[param_name]
            ctx.params[param_name] = (tuple(current) + tuple(value)) if option.get("multiple") else (
                value if current is None else current)
        return value

    return click.option(old, f"old_{param_name}", hidden=True, expose_value=False, callback=keep, **option)


def takes_old_spelling(param_name: str, then: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """The new option's callback: its value, or what the old spelling was given (`then` checks the result)."""
    def merge(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        old = ctx.meta.get(f"roofline.old.{param_name}")
        if old is not None:
            value = (tuple(value or ()) + tuple(old)) if getattr(param, "multiple", False) else (
                old if value is None else value)
        return then(ctx, param, value) if then is not None else value

    return merge


def ncu_path_option(help: str = "The ncu executable (default: PATH, then CUDA's usual folders).",
                    old: bool = True) -> Callable[[F], F]:
    """--ncu-path PATH on every command that runs Nsight Compute; `--ncu PATH` (measure, profile) is its old
    spelling, kept hidden (old=False for doctor, whose --ncu/--no-ncu is the switch of its replay)."""
    def decorate(f: F) -> F:
        if old:
            f = old_spelling("--ncu", "--ncu-path PATH", "ncu_path", default=None, metavar="PATH")(f)
        return click.option("--ncu-path", "ncu_path", default=None, metavar="PATH",
                            callback=takes_old_spelling("ncu_path"), help=help)(f)

    return decorate


def measure_options(per: str = "kernel", many_devices: bool = False) -> Callable[[F], F]:
    """--backend, --device, --min-time, --min-repeats and --seed, as `measure` and `sweep` share them; the seed's
    default is MeasurePolicy's. `per` names what one timing covers ('kernel', 'size')."""
    # lazy: not needed by `roofline analyze`, which imports this module (start-up)
    from roofline.measurement.policy import MeasurePolicy

    def decorate(f: F) -> F:
        f = click.option("--seed", type=int, default=MeasurePolicy.seed, show_default=True,
                         help="Seed of the random inputs.")(f)
        f = click.option("--min-repeats", type=int, default=MeasurePolicy.min_repeats, show_default=True,
                         help=f"Timed runs per {per}, at least.")(f)
        f = click.option("--min-time", type=float, default=MeasurePolicy.min_time, show_default=True,
                         help=f"Seconds of timed runs per {per}.")(f)
        f = devices_option(f)
        return click.option(
            "--backend", type=click.Choice(["auto", "cupy", "numpy"]), default="auto", show_default=True,
            help="cupy: the GPU (auto means cupy; without a GPU it exits 3). numpy: the NumPy references on the "
                 "host CPU, timed by wall clock, so the pipeline runs without a GPU (say so explicitly).",
        )(f)

    return decorate


def measure_policy(min_time: float, min_repeats: int, seed: int) -> object:
    """The MeasurePolicy of --min-time, --min-repeats and --seed; values out of range are an input error."""
    # lazy: not needed by `roofline analyze`, which imports this module (start-up)
    from roofline.measurement.policy import MeasurePolicy

    if not 0 <= min_time < float("inf") or min_repeats < 1:  # nan fails the comparison too
        raise InputError(f"--min-time must be a finite number of seconds ≥ 0 (got {min_time:g}) and --min-repeats "
                         f"≥ 1 (got {min_repeats})")
    return MeasurePolicy(min_time=min_time, min_repeats=min_repeats, seed=seed)


def output_option_for(what: str, writes: str = "text") -> Callable[[F], F]:
    """-o for a command whose file is a document of its own (results JSON, a measured spec); checked as the
    options are read, so a path that cannot be written, or a file it must not replace, stops the command before
    its work (a whole profile). `writes`: what roofline.load.jsonio.why_not_replace compares the file with."""
    def decorate(f: F) -> F:
        f = force_option(f)
        return click.option("-o", "--output", type=OutputPath(), default=None, callback=writable_path_for(writes),
                            help=f"Write {what} here, atomically ('-': standard output). " + OUTPUT_HELP)(f)

    return decorate


def writable_path_for(writes: str) -> Callable[[click.Context, click.Parameter, Path | None], Path | None]:
    """writable_path that also has check_outputs refuse, unless --force, an existing file of another kind than
    `writes` (after the inputs are checked: that the file is an input is the message that matters)."""
    def check(ctx: click.Context, param: click.Parameter, value: Path | None) -> Path | None:
        ctx.meta["roofline.writes"] = writes
        return writable_path(ctx, param, value)

    return check


def writable_path(_ctx: click.Context, _param: click.Parameter, value: Path | None) -> Path | None:
    """An option's output file that the writer can write (roofline.load.jsonio.cannot_write), else a usage error
    (exit 2)."""
    if value is None:
        return value
    # lazy: not needed by `roofline analyze`, which imports this module (start-up)
    from roofline.load.jsonio import cannot_write

    why = cannot_write(value)
    if why is not None:
        raise click.BadParameter(f"{value}: cannot write: {why}")
    return value


class Fraction(click.ParamType):
    """A fraction option: 0.05, 5% (gates.config.parse_fraction); a bad one is click's usage error, exit 2."""

    name = "FRACTION"

    def convert(self, value, param, ctx):  # type: ignore[no-untyped-def]
        # lazy: not needed by `roofline analyze`, which imports this module (start-up)
        from roofline.gates.config import parse_fraction

        if isinstance(value, float):
            return value
        try:
            return parse_fraction(value, f"--{param.name.replace('_', '-')}" if param else "value")
        except InputError as exc:
            self.fail(exc.message, param, ctx)
