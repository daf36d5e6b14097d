"""`roofline analyze`: the analytic roofline of kernels on one or more machines."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from roofline.cli.common import (FilePath, emit, format_option, kernel_options, note, output_option, print_tables,
                                 say_auto_spec, spec_option, warn_about_specs, wide_option)
from roofline.load.selection import analysis_documents, load_selection, resolve_specs
from roofline.model.analysis import ANALYSIS_SCHEMA, lacks
from roofline.model.invariants import outside
from roofline.model.types import MachineSpec
from roofline.model.units import UnitError, parse_quantity
from roofline.errors import InputError
from roofline.load.specs import load_spec


def _check_power_limit(_ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    """--power-limit in W with its unit ('450W', '0.45 kW'), within the plausible board powers; exit 2 otherwise."""
    if value is None:
        return None
    try:
        watts = parse_quantity(value, "power", unit_required=True)
    except UnitError as exc:
        raise click.BadParameter(str(exc), param=param) from None
    if (why := outside("power", watts)) is not None:
        raise click.BadParameter(f"'{value:.40}': {why}", param=param)
    return watts


@click.command()
@wide_option
@kernel_options
@spec_option()
@format_option(["table", "json", "csv", "markdown"])
@output_option
@click.option("--predict", "predict_only", is_flag=True,
              help="Predict each kernel's time at its parameters with the first-principles size model (regime and "
                   "terms), from the spec alone; the figures it had to assume are named. No GPU.")
@click.option("--calibrated", "calibrated_path", type=FilePath(), default=None, metavar="FILE",
              help="With --predict: a measured spec from 'roofline calibrate -o FILE' whose figures feed the model.")
@click.option("--power-limit", "power_limit", default=None, metavar="WATTS", callback=_check_power_limit,
              help="What if the board were held at this power limit (e.g. 450W): the power roof of every spec with "
                   "an energy block is drawn at it instead of the spec's power_limit.")
def analyze(names: tuple[str, ...], kernel_paths: tuple[Path, ...], params: tuple[str, ...],
            spec_names: tuple[str, ...], fmt: str, output: Path | None, predict_only: bool = False,
            calibrated_path: Path | None = None, power_limit: float | None = None) -> None:
    """FLOPs, bytes, intensity, ridge, bound, attainable FLOP/s, speed-of-light time and Little's Law.

    KERNEL names select bundled or --kernels descriptors; none selects all. No GPU is needed.

    \b
    Examples:
      roofline analyze
      roofline analyze vector_add sum --spec t4 --spec a100 --spec h100
      roofline analyze vector_add -p n=2**20 --format json
      roofline analyze --kernels my_kernels/ my_kernel --spec my_gpu.yaml
      roofline analyze softmax_fused -p rows=64 -p cols=32768 --spec h100 --predict
      roofline analyze attention_fused_bf16 --spec h200 --power-limit 450W
    """
    selected, overrides = load_selection(names, kernel_paths, params)
    if calibrated_path is not None and not predict_only:
        raise InputError("--calibrated feeds the size model: give it with --predict")
    if predict_only and power_limit is not None:
        raise InputError("--power-limit is a what-if on the roofline's power roof; --predict does not use it")
    if predict_only:
        return _predict(selected, overrides, spec_names, calibrated_path, fmt, output)
    machines = resolve_specs(spec_names)
    say_auto_spec(spec_names)
    warn_about_specs(machines)
    if power_limit is not None:
        machines = [_with_power_limit(m, power_limit) for m in machines]
    docs, skipped = analysis_documents(machines, selected, overrides, power_limit_what_if=power_limit is not None)
    for s in skipped:
        note(f"note: {s}")

    if fmt == "json":
        # lazy: not needed by `roofline analyze`, which imports this module (start-up)
        from roofline.load.jsonio import dumps

        emit(dumps(docs[0] if len(docs) == 1 else docs), output, ANALYSIS_SCHEMA)
    elif fmt == "csv":
        # lazy: not needed by `roofline analyze --format json`, which imports this module (start-up)
        from roofline.render.tables.analysis import to_csv

        emit(to_csv(docs), output)
    elif fmt == "markdown":
        # lazy: not needed by `roofline analyze --format json`, which imports this module (start-up)
        from roofline.render.tables.analysis import to_markdown

        emit(to_markdown(docs), output)
    else:
        # lazy: not needed by `roofline analyze --format json`, which imports this module (start-up)
        from roofline.render.tables.analysis import rich_tables

        print_tables(rich_tables(docs), output)


def _with_power_limit(machine: MachineSpec, limit: float) -> MachineSpec:
    """The spec with its power limit replaced: the what-if. Refused (exit 2, naming the option) where the spec has
    no energy block (no power roof to move) or the limit is not above its idle power (no kernel could run)."""
    if machine.energy is None:
        raise InputError(f"--power-limit: {machine.id} has no energy block, so it has no power roof to move "
                         "(measure one with roofline calibrate --energy -o FILE and analyze with --spec FILE)")
    if limit <= machine.energy.idle_power:
        raise InputError(f"--power-limit {limit:,.4g} W is not above {machine.id}'s idle power "
                         f"{machine.energy.idle_power:,.4g} W (energy.idle_power): no kernel could run under it")
    return replace(machine, power_limit=limit)


def _predict(selected: list, overrides: dict, spec_names: tuple[str, ...], calibrated_path: Path | None, fmt: str,
             output: Path | None) -> None:
    """`analyze --predict`: one predicted results document per spec (roofline.sizes.whatif), as a table or JSON."""
    # lazy: not needed by `roofline analyze`, which imports this module (start-up)
    from roofline.render.tables.sweep import predicted_table, prediction_lines
    # lazy: not needed by `roofline analyze`, which imports this module (start-up)
    from roofline.sizes.whatif import predict_kernels

    if fmt in ("csv", "markdown"):
        raise InputError(f"--predict prints a table or JSON; leave out --format {fmt}")
    calibrated = load_spec(calibrated_path) if calibrated_path is not None else None
    named = [n for n in spec_names if n.strip().lower() != "auto"]
    machines = [calibrated] if calibrated is not None and not named else resolve_specs(spec_names)
    if calibrated is None or named:
        say_auto_spec(spec_names)
    docs = []
    for m in machines:
        kernels = [d for d in selected if not lacks(m, d)]
        for d in selected:
            if lacks(m, d):
                note(f"note: {d.name} skipped on {m.id}: {lacks(m, d)}")
        if kernels:
            docs.append(predict_kernels(kernels, overrides, m, calibrated))
    if not docs:
        raise InputError("--predict: no kernel has the roofs of the spec(s) given")
    if fmt == "json":
        # lazy: not needed by `roofline analyze`, which imports this module (start-up)
        from roofline.load.jsonio import document_writes, dumps

        emit(dumps(docs[0] if len(docs) == 1 else docs), output, document_writes(docs))
        return
    print_tables([predicted_table(d, "Predicted") for d in docs], output)
    for d in docs:
        if len(docs) > 1:
            note(f"{d['device']['spec_id']}:")
        for line in prediction_lines(d["prediction"]["model"]):
            note(line)
