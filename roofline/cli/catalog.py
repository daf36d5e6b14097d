"""`roofline specs` and `roofline kernels`: list and show what the tool knows."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import emit, format_option, kernel_paths_option, print_tables, warn_about_specs, wide_option
from roofline.render.tables.catalog import spec_rows, specs_table, spec_detail, kernels_table, kernel_detail
from roofline.load.specs import SpecCatalog


@click.group(invoke_without_command=True)
@format_option(["table", "json"])
@wide_option
@click.pass_context
def specs(ctx: click.Context, fmt: str) -> None:
    """List the bundled machine specs: bandwidth, FP32, best tensor roof, ridge.

    \b
    Examples:
      roofline specs
      roofline specs show h100
      roofline specs show my_gpu.yaml
    """
    if ctx.invoked_subcommand is not None:
        return

    catalog = SpecCatalog.bundled()
    if fmt == "json":
        # lazy: not needed by `roofline specs`, which imports this module (start-up)
        from roofline.load.jsonio import dumps

        emit(dumps(spec_rows(catalog.specs)), None)
    else:
        print_tables([specs_table(catalog.specs)], None)


@specs.command("show")
@wide_option
@click.argument("spec")
def specs_show(spec: str) -> None:
    """Print one spec with every figure and its sources (SPEC: id, alias, prefix or path).

    \b
    Example:
      roofline specs show h200
    """
    machine = SpecCatalog.bundled().resolve(spec)
    print_tables(spec_detail(machine), None)
    warn_about_specs([machine])


@click.group(invoke_without_command=True)
@kernel_paths_option
@wide_option
@click.pass_context
def kernels(ctx: click.Context, kernel_paths: tuple[Path, ...]) -> None:
    """List the kernel descriptors: pattern, dtype, roof, launches, whether it can be measured.

    \b
    Examples:
      roofline kernels
      roofline kernels show softmax_fused
      roofline kernels --kernels my_kernels/ show my_kernel -p n=2**20
    """
    ctx.obj = kernel_paths
    if ctx.invoked_subcommand is not None:
        return
    # lazy: not needed by `roofline specs`, which imports this module (start-up)
    from roofline.load.kernels import KernelCatalog
    print_tables([kernels_table(KernelCatalog.load(kernel_paths).descriptors)], None)


@kernels.command("show")
@wide_option
@click.argument("name")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE", help="Override a parameter.")
@click.pass_obj
def kernels_show(kernel_paths: tuple[Path, ...], name: str, params: tuple[str, ...]) -> None:
    """Print one descriptor with its formulas evaluated at the defaults (or -p overrides).

    \b
    Example:
      roofline kernels show layernorm_3pass -p rows=4096
    """
    # lazy: not needed by `roofline specs`, which imports this module (start-up)
    from roofline.load.selection import load_selection
    # lazy: not needed by `roofline specs`, which imports this module (start-up)
    from roofline.model.workload import evaluate

    selected, overrides = load_selection([name], kernel_paths or (), params)
    d = selected[0]
    print_tables(kernel_detail(d, evaluate(d, overrides)), None)
