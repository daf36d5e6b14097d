"""`roofline fleet`: the links between the ranks of an MPI job. `fleet links` measures nccl-tests' bus bandwidth
of the collectives (intra-node and inter-node), `fleet link-roofs` writes the best of it into a measured spec."""

from __future__ import annotations

import traceback
from pathlib import Path
from typing import Any
import time

import click
import yaml

from roofline.cli.common import (FilePath, emit_results, format_option, note, output_option_for, updates_in_place,
                                 wide_option, write_output)
from roofline.errors import GateFailed, InputError, RooflineError, BackendUnavailable, at, install_extra
from roofline.fleet import collectives as cv, mpi_links
from roofline.fleet.collective_sweep import Plan, Solo
from roofline.fleet.links import LinksRun
from roofline.fleet.links_doc import failures, link_roofs as roofs_of, load_links
from roofline.model.units import parse_quantity, format_bytes, format_rate
from roofline.render.charts.fleet_links import links_table, summary_lines
from roofline.fleet.watchdog import BackstopOnly, MpiWatchdog, SoloWatchdog, Watch
from roofline.fleet.mpi_links import watchdog_comm
from roofline.fleet.launch import mpi4py_installed, under_mpi
from roofline.fleet.link_spec import where, with_link_roofs
from roofline.measurement.calibrate.spec import check_loads
from roofline.load.specs import load_spec
from roofline.load.yamlio import read_yaml_mapping
from roofline.fleet.abort import abort
from roofline.fleet.mpi import require_mpi4py
from roofline.model.counts import counted

NUMPY_MAX = "64 MiB"  # host buffers: 2 x 64 MiB per rank at the top size, so 16 ranks fit on a small host


@click.group()
def fleet() -> None:
    """The links between the ranks of an MPI job (mpirun, srun): collective bus bandwidth, and the link roofs a
    measured spec takes from it.

    \b
    Examples:
      mpirun -n 16 roofline fleet links -o links.json
      roofline fleet link-roofs links.json --into h200-measured.yaml -o h200-measured.yaml
      roofline plot --links links.json --spec h200 -o links.png
    """


@fleet.command()
@wide_option
@click.option("--backend", type=click.Choice(["cupy", "numpy"]), default="cupy", show_default=True,
              help="cupy: NCCL between the ranks' GPUs (CuPy's cupy.cuda.nccl); numpy: MPI between host buffers "
                   "(the host transport's roof; runs without a GPU).")
@click.option("--collectives", "collectives_text", default="all", show_default=True,
              metavar="all|all_reduce,all_gather,reduce_scatter,send_recv", help="Which collectives to sweep.")
@click.option("--min-bytes", "min_text", default="1 KiB", show_default=True, help="Smallest size (nccl-tests' -b).")
@click.option("--max-bytes", "max_text", default=None,
              help=f"Largest size (nccl-tests' -e); sizes double from --min-bytes. [default: 4 GiB with cupy, "
                   f"{NUMPY_MAX} with numpy]")
@click.option("--iters", type=click.IntRange(1, 100000), default=20, show_default=True,
              help="Timed runs per size; each rank's median counts.")
@click.option("--warmup", type=click.IntRange(0, 100000), default=5, show_default=True,
              help="Untimed runs per size before the timed ones.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
              help="The longest any one step may take on any rank (one size of one collective, checked and timed; "
                   "the set-up of a scope; the gathering of results). Past it rank 0 names the step and the ranks "
                   "that did not report, writes the sizes completed (the file says which were cut short) and ends "
                   "the job (exit 1). [default: no limit]")
@output_option_for("the links JSON (roofline/fleet-links/v1; rank 0 writes it)", "roofline/fleet-links/v1")
@format_option(["table", "json"], help="What rank 0 prints on standard output.")
def links(backend: str, collectives_text: str, min_text: str, max_text: str | None, iters: int, warmup: int,
          timeout: float | None, output: Path | None, fmt: str) -> None:
    """All-reduce, all-gather, reduce-scatter and send/recv between the ranks of the job, at sizes doubling from
    --min-bytes to --max-bytes, with nccl-tests' algorithm and bus bandwidth (busbw = algbw x 2(n-1)/n for
    all-reduce, x (n-1)/n for all-gather and reduce-scatter, x 1 for send/recv).

    Intra-node (the ranks of each node, from MPI's shared-memory split) and inter-node (every rank, when the job
    spans nodes) are measured and reported apart. Every result is checked against the exact expected values
    before it is timed, and again after; a wrong result on any rank fails that size on all of them (FAILED in the
    file, exit 1, naming the rank and host). Rank 0 writes one file, atomically.

    With --timeout no collective can hold the job: a step still running on some rank past it ends the job, and
    the sizes completed are written; a rank 0 that no longer responds is named by the rank that noticed, and
    nothing is written.

    Without mpirun it runs as one rank: NCCL with one GPU exercises the whole path (its reductions cross no link,
    so their busbw is 0).

    \b
    Examples:
      mpirun -n 8 roofline fleet links -o links.json                 # NCCL between 8 GPUs
      srun --mpi=pmix -N 4 --ntasks-per-node=8 roofline fleet links -o links.json
      mpirun -n 4 roofline fleet links --backend numpy --max-bytes 4MiB -o host-links.json
      roofline fleet links --max-bytes 1GiB -o one-gpu.json            # one rank, one GPU
      mpirun -n 16 roofline fleet links --timeout 120 -o links.json   # no step may take longer than 2 min
    """
    try:
        low = int(parse_quantity(min_text, "bytes"))
        high = int(parse_quantity(max_text or ("4 GiB" if backend == "cupy" else NUMPY_MAX), "bytes"))
    except RooflineError as exc:
        raise InputError(f"--min-bytes/--max-bytes: {exc.message}") from None
    plan = Plan(cv.parse_collectives(collectives_text), cv.sizes(low, high), iters, warmup)
    world, node, launched = _controls(backend)

    def on_point(scope: str, p: dict[str, Any]) -> None:
        what = f"fleet links: {scope} {cv.LABELS[p['collective']]} {format_bytes(p['bytes'], binary=True)}"
        note(f"{what}: busbw {format_rate(p['busbw'])}" if p["status"] == "OK" else f"{what}: FAILED: {p['error']}")

    run = LinksRun(backend, plan, world, node)
    dog = _watchdog(timeout, run, world, output, fmt) if timeout is not None else None
    try:
        doc = run.run(on_point, note)
    except RooflineError:
        _stop(dog)
        if world.rank != 0:
            return  # every rank raised the same agreed error; rank 0 reports it for the job
        raise
    except Exception:  # noqa: BLE001 - one rank's bug must not leave the others waiting in a collective
        if launched and world.size > 1:
            traceback.print_exc()
            click.echo(f"error: internal error on rank {world.rank}; aborting the job", err=True)
            abort(101)
        _stop(dog)
        raise
    _stop(dog)
    if doc is None:
        return
    _emit(doc, output, fmt)
    failed = failures(doc)
    if failed:
        raise GateFailed(f"{counted(len(failed), 'size')} FAILED their check (kept out of the figures): "
                         + "; ".join(failed[:3]) + (" ..." if len(failed) > 3 else ""))


def _emit(doc: dict[str, Any], output: Path | None, fmt: str) -> None:
    """Write and print a links document as rank 0 does at the end (also when a deadline cut the run)."""
    emit_results(doc, output, fmt, links_table, summary_lines(doc),
                 fix="measure fewer sizes (--max-bytes) or collectives; nothing was written")


def _watchdog(timeout: float, run: Any, world: Any, output: Path | None, fmt: str) -> Any:
    """Every rank's watchdog (roofline.fleet.watchdog) over `run`; on rank 0 a deadline that passes writes the
    sizes completed and ends the job (exit 1)."""
    watch = Watch(timeout, world.rank, run.host, backstop=True)
    run.watch = watch

    def on_cut(verdict: Any, answers: Any) -> None:
        note(f"error: fleet links: {verdict.message}")
        doc = run.partial_document(answers, verdict)
        done = sum(p["status"] == "OK" for s in doc["scopes"] for p in s["points"])
        _emit(doc, output, fmt)
        note(f"fleet links: {counted(done, 'size')} completed before the deadline"
             + (f" are in {output} (cut_short names the rest)" if output is not None and str(output) != "-" else "")
             + "; aborting the job")

    comm = getattr(world, "comm", None)
    if comm is None:
        return SoloWatchdog(watch, on_cut, note).start()

    mine = watchdog_comm(world)
    if mine is None:
        if world.rank == 0:
            note("fleet links: this MPI gives no MPI_THREAD_MULTIPLE, so --timeout cannot name a hung rank; a rank "
                 "past it ends the job after printing its stacks")
        return BackstopOnly(watch).start()
    return MpiWatchdog(watch, mine, on_cut, note, run.hosts).start()


def _stop(dog: Any) -> None:
    """The main thread is done with the job; when the watchdog is ending it (a deadline passed), only wait."""
    if dog is not None and not dog.stop():
        while True:
            time.sleep(1)


def _controls(backend: str) -> tuple[Any, Any, bool]:
    """(world, node group, launched): MPI under a launcher (or for --backend numpy, which moves its data with
    MPI even on one rank); for NCCL on one rank without a launcher, no MPI at all."""
    if under_mpi():
        require_mpi4py()
    elif backend != "numpy":
        return Solo(), Solo(), False
    elif not mpi4py_installed():
        raise BackendUnavailable("--backend numpy moves its buffers with MPI, and mpi4py is not installed",
                                 fix=f"{install_extra('mpi')} (mpi4py, built against the cluster's MPI)")

    world = mpi_links.world()
    return world, mpi_links.node_group(world), under_mpi()


@fleet.command("link-roofs")
@click.argument("links_path", type=FilePath(), metavar="LINKS.json")
@click.option("--into", "spec_path", type=FilePath(), required=True,
              metavar="SPEC.yaml", help="The measured spec (measured: true, as 'roofline calibrate -o' writes) to "
                                        "add the link roofs to.")
@click.option("--intra-link", type=click.Choice(["nvlink", "pcie"]), default="nvlink", show_default=True,
              help="The spec link the intra-node figures are a roof for: pcie where the GPUs talk over PCIe.")
@output_option_for("the spec with the link roofs (YAML; the same path as --into updates it in place)",
                   "measured-spec")
@updates_in_place("spec_path")
def link_roofs(links_path: Path, spec_path: Path, intra_link: str, output: Path | None) -> None:
    """Write the best NCCL bus bandwidth of a 'fleet links' file into a measured spec as link roofs:
    interconnect.nvlink from the intra-node groups, interconnect.network from the inter-node run.

    A spec's link bandwidth is both directions summed, as datasheets print it, so each link gets 2 x busbw and
    analyze's one-direction roof for it is the busbw itself. Descriptors whose 'interconnect:' bytes go over
    nvlink or network then analyze against what the links carry. Without -o the spec goes to standard output.

    \b
    Examples:
      roofline fleet link-roofs links.json --into h200-measured.yaml -o h200-measured.yaml
      roofline analyze allreduce_ring --spec h200-measured.yaml
    """
    doc = load_links(links_path)
    spec = load_spec(spec_path)
    if not spec.measured:
        raise at(spec_path, "measured", "is not true: link roofs go into a measured spec (write one with "
                                        "'roofline calibrate -o FILE.yaml'), never into a datasheet")
    if doc["backend"] != "cupy":
        raise at(links_path, "backend", "is 'numpy': MPI between host buffers is not a GPU link; measure with "
                                        "--backend cupy (NCCL) to write link roofs")
    roofs = roofs_of(doc, intra_link)
    if not roofs:
        raise InputError(f"{links_path}: no link was crossed (a scope needs two ranks and a size that passed its "
                         "check); nothing to write")
    spec_doc, notes = with_link_roofs(read_yaml_mapping(spec_path), roofs, where(doc))
    text = ("# Link roofs from " + where(doc) + " ('roofline fleet link-roofs').\n"
            + yaml.safe_dump(spec_doc, sort_keys=False, allow_unicode=True, width=120, default_flow_style=False))
    check_loads(text)
    write_output(output if output is not None else Path("-"), text, "measured-spec")
    for line in notes:
        note(f"note: {line}")
    for link, roof in roofs.items():
        note(f"interconnect.{link}: {format_rate(2 * roof['busbw'])} both ways (busbw {format_rate(roof['busbw'])} "
             f"one way, {roof['scope']})")
    if output is not None and str(output) != "-":
        note(f"wrote {output}")
