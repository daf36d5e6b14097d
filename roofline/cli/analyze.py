"""`roofline analyze`: the analytic roofline of kernels on one or more machines."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import (emit, format_option, kernel_options, note, output_option, print_tables,
                                 say_auto_spec, spec_option, warn_about_specs, wide_option)
from roofline.load.selection import analysis_documents, load_selection, resolve_specs
from roofline.model.analysis import ANALYSIS_SCHEMA


@click.command()
@wide_option
@kernel_options
@spec_option()
@format_option(["table", "json", "csv", "markdown"])
@output_option
def analyze(names: tuple[str, ...], kernel_paths: tuple[Path, ...], params: tuple[str, ...],
            spec_names: tuple[str, ...], fmt: str, output: Path | None) -> None:
    """FLOPs, bytes, intensity, ridge, bound, attainable FLOP/s, speed-of-light time and Little's Law.

    KERNEL names select bundled or --kernels descriptors; none selects all. No GPU is needed.

    \b
    Examples:
      roofline analyze
      roofline analyze vector_add sum --spec t4 --spec a100 --spec h100
      roofline analyze vector_add -p n=2**20 --format json
      roofline analyze --kernels my_kernels/ my_kernel --spec my_gpu.yaml
    """
    selected, overrides = load_selection(names, kernel_paths, params)
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
