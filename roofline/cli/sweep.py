"""`roofline sweep`: one kernel measured over a range of sizes, each beside the model's prediction."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import (FilePath, check_output_kind, emit_results, format_option, kernel_paths_option,
                                 measure_options, measure_policy, measure_spec_option, note, options_given,
                                 output_option_for, wide_option)
from roofline.records.schema import RESULTS_SCHEMA
from roofline.cli.fleet import timeout_option, sweep_fleet
from roofline.cli.progress import Steps
from roofline.measurement.multi.sweep import SweepArgs, sweep_args_request, sweep_on
from roofline.render.tables.sweep import explanation, sweep_table
from roofline.fleet.placement import HOST, place, under_ranks
from roofline.cli.multi import sweep_many
from roofline.errors import InputError
from roofline.sizes.whatif import predict_spec, predict_sweep


@click.command()
@wide_option
@click.argument("kernel")
@click.option("--over", default=None, metavar="NAME",
              help="The parameter to sweep (the kernel's size).  [default: n]")
@click.option("--sizes", "sizes_text", default="2**12..2**28", show_default=True, metavar="SIZES",
              help="A range A..B in powers of two (A, 2A, 4A, … ≤ B; A..B:4 steps by ×4), or a list "
                   "'4096,65536,2**20'; items may mix.")
@click.option("-p", "--param", "params", multiple=True, metavar="NAME=VALUE",
              help="Fix another parameter of the kernel (repeatable); VALUE may be a formula (-p cols=8192).")
@click.option("--set", "set_alias", multiple=True, metavar="NAME=VALUE", hidden=True,
              help="Deprecated spelling of -p/--param NAME=VALUE; removed in the next release.")
@kernel_paths_option
@measure_spec_option("Ceilings for the results file and the model (needed with --backend numpy)")
@click.option("--calibrated", "calibrated_path", type=FilePath(), default=None,
              metavar="FILE", help="A measured spec from 'roofline calibrate -o FILE': its bandwidth, latency and "
                                   "resident threads feed the model instead of the datasheet's.")
@click.option("--model", type=click.Choice(["first-principles", "fitted", "additive", "max"]),
              default="first-principles", show_default=True,
              help="first-principles: machine figures and the kernel's launch geometry only, nothing fitted on "
                   "the kernel. fitted (= additive): t = L + λ + B / (η·BW) with λ and η read off this kernel's "
                   "smallest and largest sizes. max: the fitted model's first-order form max(L, λ + B / (η·BW)).")
@click.option("--efficiency", default="auto", show_default=True, metavar="auto|X",
              help="Fitted model: η, the fraction of the bandwidth the kernel streams at: 'auto' takes it from the "
                   "largest size measured (that size is then exact by construction), or a number (1: the bandwidth "
                   "as given).")
@click.option("--latency", "latency_setting", type=click.Choice(["auto", "measured"]), default="auto",
              show_default=True,
              help="Fitted model: λ: 'auto' reads this kernel's fixed cost off the smallest size measured (that size "
                   "is then exact by construction); 'measured' uses the one-element kernel's round trip.")
@click.option("--predict", "predict_only", is_flag=True,
              help="Predict every size from the spec alone: no GPU, nothing run or measured. --calibrated FILE gives "
                   "the measured spec's figures; with a datasheet spec the model states every figure it assumes. "
                   "Works for a GPU you do not have (--spec h100 --predict).")
@measure_options(per="size", many_devices=True)
@output_option_for("the results JSON (roofline/results/v1 with a 'sweep' block; 'roofline plot --sweep FILE' "
                   "draws it)", RESULTS_SCHEMA)
@format_option(["table", "json"], help="What to print on standard output.")
@timeout_option
def sweep(kernel: str, over: str | None, sizes_text: str, params: tuple[str, ...], set_alias: tuple[str, ...],
          kernel_paths: tuple[Path, ...], spec_name: str, calibrated_path: Path | None, model: str, efficiency: str,
          latency_setting: str, backend: str, device_text: str, min_time: float, min_repeats: int, seed: int,
          output: Path | None, fmt: str, timeout: float | None = None, predict_only: bool = False) -> None:
    """Measure KERNEL at every size and set the model's prediction beside each measurement.

    The first-principles model (the default) needs nothing measured on the kernel:

    \b
        t = Σ over launches of  L + max(λk + B / BW,  ceil(B / F) · λk)
        F = min(threads, resident threads) × bytes per thread
    \b
    L    launch floor: an empty kernel timed the same way (graph replay), measured here
    λk   what a small streaming launch on every SM pays beyond L (the stream probe: one cold
         float4 load and store per thread), measured here; 2 × the spec's latency without a GPU
    BW   the spec's bandwidth (or --calibrated); resident threads = SMs × threads per SM
    F    Little's Law: the bytes a launch has in flight; threads and bytes per thread from
         the descriptor (threads, bytes_per_thread, launches; docs/kernel-interface.md)

    A launch with fewer than BW × λk bytes in flight moves F per round trip (concurrency-bound) instead of streaming
    at BW. The fitted model (--model fitted) is t(B) = L + λ + B / (η · BW) with λ and η read off this kernel's
    smallest and largest sizes. Each entry gets predicted_time and prediction_error (predicted / measured − 1); the
    first-order max(L, λ + B/BW) with the spec's figures is recorded beside it ("simple" model) for comparison. Off
    a terminal, one line per size on standard error.

    \b
    Examples:
      roofline sweep vector_add_float4 --sizes 2**12..2**28 -o sweep.json
      roofline sweep copy --sizes 2**16..2**28:4 --calibrated h200-measured.yaml
      roofline sweep softmax_fused --over rows -p cols=8192 --sizes 1..4096:4
      roofline sweep vector_add_float4 --model fitted --sizes 2**12..2**28
      roofline plot --sweep sweep.json -o sweep.png
      roofline sweep vector_add --backend numpy --spec h200 --sizes 2**10..2**14   # no GPU: the host CPU
      roofline sweep copy --device all --sizes 2**16..2**28:4    # every GPU at once, side by side
      roofline sweep softmax_fused --over rows -p cols=8192 --spec h100 --predict   # no GPU: the model alone
      mpirun -n 16 roofline sweep copy --sizes 2**16..2**28:4 -o fleet-sweep.json   # every rank its GPU
    """
    fixed = tuple(p for p in params if "=" in p) + set_alias
    named = [p for p in params if "=" not in p]  # --param NAME: the old spelling of --over
    param_alias = named[-1] if named else None
    if param_alias is not None:
        note("warning: --param NAME is deprecated for sweep (-p/--param is NAME=VALUE everywhere); use --over NAME")
    if set_alias:
        note("warning: --set is deprecated and will be removed in the next release; use -p/--param NAME=VALUE, as "
             "every other command does")
    # lazy: not needed by `roofline analyze`, which imports this module (start-up)
    from roofline.load.jsonio import MEASUREMENT

    check_output_kind(f"{RESULTS_SCHEMA}@{'model' if predict_only else MEASUREMENT}")  # before the sweep runs
    swept = over if over is not None else (param_alias or "n")  # an empty --over is refused, not read as n
    args = SweepArgs(kernel, kernel_paths, swept, sizes_text, fixed, model, latency_setting,
                     efficiency, calibrated_path, "--over" if over is not None or param_alias is None else "--param",
                     spec_name, measure_policy(min_time, min_repeats, seed))
    if predict_only:
        ignored = options_given(efficiency="--efficiency", latency_setting="--latency", backend="--backend",
                                device_text="--device", min_time="--min-time", min_repeats="--min-repeats",
                                seed="--seed", timeout="--timeout")
        if ignored:
            raise InputError(f"--predict runs nothing and fits nothing, so {', '.join(ignored)} would be ignored: "
                             "leave {} out, or drop --predict to measure".format("it" if len(ignored) == 1 else "them"))
        if model != "first-principles":
            raise InputError(f"--predict uses the first-principles model (nothing measured to fit); leave out "
                             f"--model {model}")
        request = sweep_args_request(args)
        doc = predict_sweep(request, predict_spec(spec_name, request.calibrated))
        return emit_results(doc, output, fmt, sweep_table, explanation(doc))

    if under_ranks(device_text, timeout):  # the options are checked on each rank; a bad one comes back once
        return sweep_fleet(args, backend, output, fmt, timeout)
    request = sweep_args_request(args)  # bad options exit 2 here, before any device is touched
    where = place(device_text, "several devices are swept on the GPU backend" if backend == "numpy" else None)
    if where.kind == HOST:
        return sweep_many(list(where.devices), args, output, fmt)
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import open_backend

    engine = open_backend(backend, where.device)
    with Steps("sweep") as steps:
        doc = sweep_on(request, engine, spec_name, args.policy, steps)

    emit_results(doc, output, fmt, sweep_table, explanation(doc))
