"""The `roofline` command: a click group whose commands parse options, call the library and render.

Exit codes (a contract CI relies on): 0 success, 1 a CI gate failed, 2 usage or input error,
3 measurement backend unavailable, 4 the program `profile` ran failed, 5 `profile --timeout` ran out,
101 an unexpected internal error (traceback printed), 130 Ctrl-C, 143 SIGTERM.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Any

import click

from roofline.cli.common import guard_outputs
from roofline.version import __version__
from roofline.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, RooflineError

EPILOG = """\b
Exit codes: 0 success, 1 a CI gate failed, 2 usage or input error,
3 measurement backend (GPU, CuPy) unavailable, 4 the profiled program failed,
5 profile --timeout ran out, 101 internal error, 130 Ctrl-C, 143 SIGTERM.
"""


# The commands, each imported only when it runs or its own help is asked for (`roofline analyze` never pays for
# measure, plot or profile): name -> ("module:attribute", the summary `roofline --help` lists). The summary is the
# command's own first sentence, copied; tests/test_startup.py fails when the two differ.
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "analyze": ("roofline.cli.analyze:analyze",
                "FLOPs, bytes, intensity, ridge, bound, attainable FLOP/s, speed-of-light time and Little's Law."),
    "calibrate": ("roofline.cli.calibrate:calibrate",
                  "Measure the ceilings of this GPU and compare them with its datasheet."),
    "diff": ("roofline.cli.diff:diff_command",
             "Two programs side by side: GPU time, wall time, idle, MFU and each op group, with the changes."),
    "doctor": ("roofline.cli.doctor:doctor",
               "Check that this GPU and the measurement stack tell the truth, before any figure is trusted."),
    "fleet": ("roofline.cli.fleet_links:fleet",
              "The links between the ranks of an MPI job (mpirun, srun): collective bus bandwidth, and the link "
              "roofs a measured spec takes from it."),
    "import": ("roofline.cli.importer:import_group",
               "Turn another tool's measurements into roofline results, for 'report' and 'plot'."),
    "interconnect": ("roofline.cli.interconnect:interconnect",
                     "Peer-to-peer copy bandwidth for every ordered pair of GPUs (one way, and both ways at once), "
                     "pinned host<->device bandwidth per GPU, and NCCL all-reduce bus bandwidth (nccl-tests' "
                     "definition) from 1 MiB up."),
    "kernels": ("roofline.cli.catalog:kernels",
                "List the kernel descriptors: pattern, dtype, roof, launches, whether it can be measured."),
    "measure": ("roofline.cli.measure:measure",
                "Launch each kernel, check it against its NumPy reference, and time it with CUDA events."),
    "plot": ("roofline.cli.plot:plot",
             "Draw a roofline chart: compute and memory roofs, ridge points, and kernels as points."),
    "profile": ("roofline.cli.profile:profile",
                "Run PROGRAM under Nsight Compute or the PyTorch profiler and put every kernel it launches on the "
                "roofline, grouped and ranked."),
    "report": ("roofline.cli.report:report", "Achieved vs attainable per kernel and device, with CI gates."),
    "specs": ("roofline.cli.catalog:specs",
              "List the bundled machine specs: bandwidth, FP32, best tensor roof, ridge."),
    "sweep": ("roofline.cli.sweep:sweep",
              "Measure KERNEL at every size and set the model's prediction beside each measurement."),
}


class LazyGroup(click.Group):
    """A click group that imports a command's module only when that command is run or its help is shown; the
    group's own --help lists every command from the summaries in `lazy`, importing none of them."""

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = lazy

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module_name, attribute = self.lazy[cmd_name][0].split(":")
            command = getattr(importlib.import_module(module_name), attribute)
            guard_outputs(command)  # no output may be one of the command's inputs (checked before its work)
            self.add_command(command, cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's, the summaries shortened by click itself, but taken from the table for commands not loaded."""
        rows = []
        for name in self.list_commands(ctx):
            command = self.commands.get(name) or click.Command(name, help=self.lazy[name][1])
            if not command.hidden:
                rows.append((name, command))
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])


@click.group(cls=LazyGroup, lazy=LAZY_COMMANDS, epilog=EPILOG,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
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


def main(argv: list[str] | None = None) -> None:
    """Entry point: map user errors to their exit codes and anything unexpected to 101 with a traceback."""
    writer = sys.modules.get("roofline.load.jsonio")  # files written before this call (a test's earlier call) are
    written_before = len(writer.WRITTEN) if writer is not None else 0  # not this one's
    try:
        code = cli.main(args=argv, prog_name="roofline", standalone_mode=False)
    except RooflineError as exc:
        from roofline.render.text import clean  # lazy: only an error needs it, not --help; user text, no raw controls
        from roofline.render.console import stderr_width, wrap_message  # lazy: likewise

        click.echo(wrap_message(f"error: {clean(exc.message)}", stderr_width()), err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        from roofline.load.jsonio import WRITTEN  # lazy: only an interrupt needs it

        written = WRITTEN[written_before:]
        if written:  # the interrupt landed after a rename: that file is whole, and saying "aborted" would hide it
            click.echo(f"interrupted after writing {', '.join(written)} (complete: written before the interrupt)",
                       err=True)
        else:
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
