"""`roofline report`: results files → table / Markdown / JSON / JUnit, with CI gates and exit codes."""

from __future__ import annotations

from pathlib import Path
from dataclasses import replace

import click

from roofline.cli.common import FilePath, Fraction, emit, output_option, print_tables, wide_option
from roofline.errors import GateFailed, InputError
from roofline.gates.config import GateConfig, load_gates
from roofline.gates.report import failure_message
from roofline.model.launch import LaunchFloor
from roofline.records.files import ResultsFile, load_results
from roofline.gates.devices import host_report
from roofline.render.tables.fleet import host_view, host_view_markdown
from roofline.gates.baseline import apply_baseline, baseline_message
from roofline.gates.groups import group_failure_message, group_report
from roofline.render.tables.baseline import baseline_markdown, baseline_tables
from roofline.render.tables.step import step_markdown, step_tables, with_step_junit
from roofline.records.coverage import MAX_UNMODELLED
from roofline.render.tables import grouped as grouped_tables, report as report_tables
from roofline.render.tables.report import rich_table
from roofline.gates.nodes import slow_nodes_text
from roofline.load.jsonio import document_writes, dumps


@click.command()
@wide_option
@click.argument("results", nargs=-1, required=True, type=FilePath(dir_okay=True), metavar="RESULTS.json...")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json", "junit", "github-benchmark"]),
              default="table", show_default=True,
              help="table for people; markdown for a CI job summary; json and junit for tools; github-benchmark for "
                   "github-action-benchmark (customSmallerIsBetter, microseconds).")
@output_option
@click.option("--fail-below", type=Fraction(), default=None,
              help="Fail any verified kernel achieving less than this fraction of its ceiling (0.7 or 70%); a "
                   "profile's group, less than this fraction of what its launches can attain (each at least the "
                   "spec's launch floor: a tiny op is 'launch-bound', not failed for the launch it cannot avoid).")
@click.option("--baseline", type=FilePath(dir_okay=True), default=None, metavar="FILE",
              help="Results to compare with (e.g. from the main branch); the report shows each kernel's change.")
@click.option("--max-regression", type=Fraction(), default=None,
              help="With --baseline: fail a kernel more than this fraction slower than the baseline (0.05 or 5%).")
@click.option("--gates", "gates_path", type=FilePath(dir_okay=True), default=None, metavar="FILE",
              help="YAML gates: a default and per-kernel fail_below / max_regression (see docs/ci.md). "
                   "--fail-below/--max-regression replace its default.")
@click.option("--allow-unknown-ceiling", is_flag=True,
              help="Let --fail-below pass a kernel whose ceiling is unknown (measured without a spec) instead of "
                   "failing it.")
@click.option("--regression-test", type=click.Choice(["ci", "median"]), default="ci", show_default=True,
              help="ci: a kernel regresses when its median is over --max-regression AND the 95% bootstrap "
                   "intervals of the two medians do not overlap (noise-proof); median: the medians alone.")
@click.option("--outlier", type=Fraction(), default=None,
              help="Node acceptance, for files measured with --device all: fail a GPU more than this fraction below "
                   "its host's median on a kernel (5%), naming it by index and PCI bus id. For a fleet file (mpirun): "
                   "each GPU against the fleet median and each node's median against the median of the node "
                   "medians, named by rank and host; where the times have intervals, only when they do not overlap.")
@click.option("--fail-below-program", type=Fraction(), default=None,
              help="For a grouped profile ('roofline profile', 'import ncu --group-by'): fail when the whole "
                   "program's time-weighted fraction of ceiling is below this (0.3 or 30%). There --fail-below "
                   "applies to each group's time-weighted fraction.")
@click.option("--max-idle", type=Fraction(), default=None,
              help="For an imported PyTorch trace ('import torch', 'profile --with torch'): fail the step when the "
                   "GPU sat idle for more than this fraction of its window (0.4 or 40%; HTA's definition: the window "
                   "less the union of kernels, copies and fills), on any rank. Gates the step, not its kernels.")
@click.option("--max-unmodelled", type=Fraction(), default=None,
              help="For an imported PyTorch trace ('import torch', 'profile --with torch'): fail the program when "
                   "more than this fraction of its GPU time has no model (default 5%; 'max_unmodelled' in a --gates "
                   "file): its figures would judge only the part a model covers.")
@click.option("--strict-model", is_flag=True,
              help="Fail a kernel, group or program above 102% of its ceiling (without it, its verdict is "
                   "'above-ceiling', never a pass): the model under-counts its bytes or FLOPs, the spec is not this "
                   "GPU's, or operands came from L2.")
@click.option("--min-energy-fraction", type=Fraction(), default=None,
              help="Fail a verified kernel whose minimum energy (the spec's energy roofline) is less than this "
                   "fraction of the energy NVML measured per run (0.5 or 50%); see docs/energy.md.")
def report(results: tuple[Path, ...], fmt: str, output: Path | None, fail_below: float | None,
           baseline: Path | None, max_regression: float | None, gates_path: Path | None,
           regression_test: str, allow_unknown_ceiling: bool, strict_model: bool,
           outlier: float | None = None, fail_below_program: float | None = None,
           max_idle: float | None = None, min_energy_fraction: float | None = None,
           max_unmodelled: float | None = None) -> None:
    """Achieved vs attainable per kernel and device, with CI gates.

    Reads one or more results files from 'roofline measure' (several machines or runs) and shows, per kernel:
    median time, achieved bandwidth and FLOP/s, the attainable ceiling, the fraction of it reached, the gap,
    the change against a baseline, and the gate verdict.

    A kernel that failed verification (FAILED) always fails; a --fail-below gate on a kernel with no known
    ceiling fails unless --allow-unknown-ceiling. Exit status: 0 when every gate holds, 1 when one
    fails (the report is written first), 2 on bad input (a broken file, another schema version).

    \b
    Examples:
      roofline report results.json
      roofline report h100.json a100.json --fail-below 0.7
      roofline report results.json --baseline main.json --max-regression 5% \\
          --format markdown >> "$GITHUB_STEP_SUMMARY"
      roofline report results.json --gates gates.yaml --format junit -o roofline-junit.xml
      roofline report gpt2.json --fail-below 0.3 --fail-below-program 0.25   # a grouped profile
      roofline report step.json --max-idle 40%        # an imported trace: the GPU idle at most 40% of the step
      roofline report step.json --max-unmodelled 20%  # pass a program with up to 20% of its GPU time unmodelled
    """
    files = [load_results(p) for p in results]
    if (any(f.doc.get("groups") for f in files) or fail_below_program is not None or max_idle is not None
            or max_unmodelled is not None):
        config = load_gates(gates_path) if gates_path is not None else None
        _report_groups(files, fmt, output, fail_below, fail_below_program, max_idle, strict_model=strict_model,
                       max_unmodelled=max_unmodelled, config=config,
                       baseline=baseline, max_regression=max_regression, regression_test=regression_test,
                       outlier=outlier, min_energy_fraction=min_energy_fraction)
        return
    baseline_files = [load_results(baseline)] if baseline is not None else []
    if baseline_files and baseline_files[0].doc.get("groups"):
        # A kernel's result matches no group: the gate would say 'matched none' and exit 1, as if it had run.
        raise InputError(f"{baseline_files[0].name}: is a grouped profile; a kernel results file's baseline is "
                         "another kernel results file ('roofline measure', 'roofline profile' without groups)")
    if max_regression is not None and baseline is None:
        raise InputError("--max-regression needs --baseline FILE to compare with")
    config = load_gates(gates_path) if gates_path is not None else GateConfig()
    config = replace(config.with_options(fail_below, max_regression), allow_unknown_ceiling=allow_unknown_ceiling,
                     strict_model=strict_model, regression_test=regression_test,
                     min_energy_fraction=min_energy_fraction)

    doc, hosts = host_report(files, baseline_files, config, outlier)

    if fmt == "table":
        print_tables([rich_table(doc), *host_view(doc, hosts, outlier)], output)
    else:
        writers = {"markdown": report_tables.to_markdown, "json": report_tables.to_json,
                   "junit": report_tables.to_junit, "github-benchmark": report_tables.to_github_benchmark}
        text = writers[fmt](doc)
        emit(text + (host_view_markdown(doc, hosts, outlier) if fmt == "markdown" else ""), output,
             str(doc.get("schema")) if fmt == "json" else "text")

    if not doc["summary"]["ok"]:
        raise GateFailed(failure_message(doc) + slow_nodes_text(doc))


def _launch_floor(results: ResultsFile) -> LaunchFloor:
    """The launch floor a grouped file's launches are judged with (roofline.model.launch): the model.launch_floor
    of the bundled spec its machine id names, else the stated default (a file judged against a spec of one's own:
    its figures are in the file, its model block is not)."""
    # lazy: not needed by `roofline report` of plain results (start-up)
    from roofline.errors import RooflineError
    from roofline.load.specs import SpecCatalog
    from roofline.model.launch import launch_floor_of

    machine_id = results.typed.machine_id
    try:
        machine = SpecCatalog.bundled().resolve(machine_id) if machine_id else None
    except RooflineError:
        machine = None
    if machine is not None and machine.id != machine_id:
        machine = None  # an alias or prefix match of some other id is not this file's spec
    return launch_floor_of(machine, machine_id)


def _report_groups(files: list, fmt: str, output: Path | None, fail_below: float | None,
                   fail_below_program: float | None, max_idle: float | None = None, strict_model: bool = False,
                   max_unmodelled: float | None = None, config: GateConfig | None = None,
                   baseline: Path | None = None, max_regression: float | None = None, regression_test: str = "ci",
                   **kernel_only: object) -> None:
    """Issue 11: a grouped profile is reported and gated by group (roofline.gates.groups), ranked by
    recoverable time; issue 40: --baseline compares each group and the program with another profile
    (roofline.gates.baseline). The kernel-only gates (per-kernel entries, outliers, energy) do not apply to groups.
    A gates file gives its default fail_below and max_unmodelled (the options win); --strict-model fails a group or
    program above its ceiling (issue 38)."""
    given = [f"--{k.replace('_', '-')}" for k, v in kernel_only.items() if v is not None]
    if config is not None and config.kernels:
        given.append(f"{config.source}: kernels (per-kernel gates)")
    if config is not None and config.default.max_regression is not None and max_regression is None:
        max_regression = config.default.max_regression  # with --baseline, the gates file's default applies to groups
    if given:
        raise InputError(f"{', '.join(given)} gate kernels; a grouped profile is gated with --fail-below "
                         "(each group), --fail-below-program (the whole), --max-idle (the step) and --baseline with "
                         "--max-regression: report it without the groups by importing again with "
                         "'roofline import ncu --group-by none'")
    if max_regression is not None and baseline is None and (config is None or config.default.max_regression is None):
        raise InputError("--max-regression needs --baseline FILE to compare with")
    untimed = [f.name for f in files if "timeline" not in f.doc]
    if max_idle is not None and untimed:
        raise InputError(f"{untimed[0]}: has no timeline; --max-idle gates the step of an imported PyTorch trace "
                         "('roofline import torch TRACE' or 'roofline profile --with torch' write one)")
    missing = [f.name for f in files if not f.doc.get("groups")]
    if missing:
        raise InputError(f"{missing[0]}: has no groups; --fail-below-program and grouped reports need results from "
                         "'roofline profile' or 'roofline import ncu --group-by op' (report such files apart)")
    if config is not None:
        fail_below = fail_below if fail_below is not None else config.default.fail_below
        max_unmodelled = max_unmodelled if max_unmodelled is not None else config.max_unmodelled
    doc = group_report(files, fail_below, fail_below_program, max_idle, strict_model=strict_model,
                       max_unmodelled=MAX_UNMODELLED if max_unmodelled is None else max_unmodelled,
                       floors=[_launch_floor(f) for f in files])
    if baseline is not None:
        base = load_results(baseline)
        if not base.doc.get("groups"):
            raise InputError(f"{base.name}: has no groups; a grouped profile's baseline is another grouped profile "
                             "('roofline profile', 'import torch', 'import ncu --group-by op')")
        # lazy: numpy's bootstrap, which only a baseline comparison pays for
        from roofline.measurement.stats import median_interval

        doc = apply_baseline(doc, files, base, max_regression, regression_test, median_interval)
    if fmt == "table":
        print_tables([*grouped_tables.report_tables(doc), *step_tables(doc), *baseline_tables(doc)], output)
    else:
        writers = {"markdown": lambda d: grouped_tables.report_markdown(d) + step_markdown(d) + baseline_markdown(d),
                   "json": lambda d: dumps(d), "junit": lambda d: with_step_junit(grouped_tables.report_junit(d), d),
                   "github-benchmark": grouped_tables.report_github_benchmark}
        emit(writers[fmt](doc), output, document_writes(doc) if fmt == "json" else "text")
    if not doc["summary"]["ok"]:
        raise GateFailed("; ".join(m for m in (group_failure_message(doc), baseline_message(doc)) if m))
