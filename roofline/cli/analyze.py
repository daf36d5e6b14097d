"""`roofline analyze`: the analytic roofline of kernels on one or more machines."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import (FilePath, emit, format_option, kernel_options, note, output_option, print_tables,
                                 say_auto_spec, spec_option, warn_about_specs, wide_option)
from roofline.load.selection import analysis_documents, load_selection, resolve_specs
from roofline.model.analysis import ANALYSIS_SCHEMA, lacks
from roofline.errors import InputError
from roofline.load.specs import load_spec


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
def analyze(names: tuple[str, ...], kernel_paths: tuple[Path, ...], params: tuple[str, ...],
            spec_names: tuple[str, ...], fmt: str, output: Path | None, predict_only: bool = False,
            calibrated_path: Path | None = None) -> None:
    """FLOPs, bytes, intensity, ridge, bound, attainable FLOP/s, speed-of-light time and Little's Law.

    KERNEL names select bundled or --kernels descriptors; none selects all. No GPU is needed.

    \b
    Examples:
      roofline analyze
      roofline analyze vector_add sum --spec t4 --spec a100 --spec h100
      roofline analyze vector_add -p n=2**20 --format json
      roofline analyze --kernels my_kernels/ my_kernel --spec my_gpu.yaml
      roofline analyze softmax_fused -p rows=64 -p cols=32768 --spec h100 --predict
    """
    selected, overrides = load_selection(names, kernel_paths, params)
    if calibrated_path is not None and not predict_only:
        raise InputError("--calibrated feeds the size model: give it with --predict")
    if predict_only:
        return _predict(selected, overrides, spec_names, calibrated_path, fmt, output)
    machines = resolve_specs(spec_names)
    say_auto_spec(spec_names)
    warn_about_specs(machines)
    docs, skipped = analysis_documents(machines, selected, overrides)
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
