"""The `roofline` command: a click group whose commands parse options, call the library and render.

Exit codes (a contract CI relies on): 0 success, 1 a CI gate failed, 2 usage or input error,
3 measurement backend unavailable, 4 the program `profile` ran failed, 5 `profile --timeout` ran out,
101 an unexpected internal error (traceback printed), 130 Ctrl-C, 143 SIGTERM.
"""

from __future__ import annotations

import sys
import traceback

import click

from roofline.cli.common import guard_outputs
from roofline.version import __version__
from roofline.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, RooflineError

EPILOG = """\b
Exit codes: 0 success, 1 a CI gate failed, 2 usage or input error,
3 measurement backend (GPU, CuPy) unavailable, 4 the profiled program failed,
5 profile --timeout ran out, 101 internal error, 130 Ctrl-C, 143 SIGTERM.
"""


@click.group(epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "--version", prog_name="roofline")
def cli() -> None:
    """GPU roofline analysis: what a kernel should reach on a GPU, and how close it gets.

    \b
    Examples:
      roofline analyze                      # every bundled kernel on the default spec
      roofline analyze vector_add --spec t4 --spec a100 --spec h100
      roofline specs                        # the bundled machine specs
      roofline kernels show softmax_fused
    """


def _register() -> None:
    from roofline.cli import analyze, catalog

    cli.add_command(analyze.analyze)
    cli.add_command(catalog.specs)
    cli.add_command(catalog.kernels)
    for module_name in ("measure", "plot", "report", "calibrate", "doctor", "sweep", "importer", "interconnect",
                        "fleet_links"):
        try:
            module = __import__(f"roofline.cli.{module_name}", fromlist=["COMMANDS"])
        except ModuleNotFoundError as exc:
            if exc.name == f"roofline.cli.{module_name}":
                continue
            raise
        for command in module.COMMANDS:
            cli.add_command(command)


_register()
guard_outputs(cli)


def main(argv: list[str] | None = None) -> None:
    """Entry point: map user errors to their exit codes and anything unexpected to 101 with a traceback."""
    try:
        code = cli.main(args=argv, prog_name="roofline", standalone_mode=False)
    except RooflineError as exc:
        from roofline.render.text import clean  # messages quote user text: no raw control characters

        click.echo(f"error: {clean(exc.message)}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except Exception:  # noqa: BLE001 - the contract: internal errors exit 101 with their traceback
        traceback.print_exc()
        click.echo(
            "error: internal error in roofline (this is a bug; please report it with the traceback above)", err=True
        )
        sys.exit(EXIT_INTERNAL)
    sys.exit(code if isinstance(code, int) else 0)
