"""`roofline interconnect`: what the links between a host's GPUs carry, against the spec's interconnect roofs."""

from __future__ import annotations

from pathlib import Path

import click

from roofline.cli.common import devices_option, format_option, measure_spec_option, note, output_option_for, wide_option

@click.command()
@wide_option
@devices_option(default="all", help="The GPUs whose links to measure: their ordinals (0,2,3), or all.")
@measure_spec_option("Link roofs (interconnect.nvlink / pcie) to compare with")
@click.option("--size", "size_text", default="1 GiB", show_default=True,
              help="Bytes per peer and host copy.")
@click.option("--max-allreduce", "max_text", default="4 GiB", show_default=True,
              help="Largest all-reduce message (from 1 MiB, x4 each step).")
@output_option_for("the interconnect JSON (roofline/interconnect/v1)", "roofline/interconnect/v1")
@format_option(["table", "json"], help="What to print on standard output.")
def interconnect(device_text: str, spec_name: str, size_text: str, max_text: str, output: Path | None,
                 fmt: str) -> None:
    """Peer-to-peer copy bandwidth for every ordered pair of GPUs (one way, and both ways at once), pinned
    host<->device bandwidth per GPU, and NCCL all-reduce bus bandwidth (nccl-tests' definition) from 1 MiB up.

    Each copy and all-reduce is checked before it is timed. With one GPU, or CuPy without NCCL, the steps
    that need them are skipped with the reason.

    \b
    Examples:
      roofline interconnect -o links.json
      roofline plot --interconnect links.json -o links.png
    """
    from roofline.fleet.placement import place
    from roofline.errors import InputError
    from roofline.measurement import interconnect as ic
    from roofline.model.units import parse_quantity

    devices = list(place(device_text).devices)
    try:
        size = int(parse_quantity(size_text, "bytes"))
        largest = int(parse_quantity(max_text, "bytes"))
    except Exception as exc:  # noqa: BLE001 - a bad quantity
        raise InputError(f"--size/--max-allreduce: {getattr(exc, 'message', exc)}") from None
    if size < 4 or largest < ic.MiB:
        raise InputError("--size must be at least 4 B and --max-allreduce at least 1 MiB")
    spec = _spec(spec_name, devices)

    def on_step(name: str, skipped: str | None) -> None:
        note(f"note: {name} skipped: {skipped}" if skipped else f"interconnect: {name} ...")

    doc = ic.links_document(devices, spec, size, [s for s in ic.ALLREDUCE_SIZES if s <= largest], on_step)
    from roofline.cli.common import emit_results
    from roofline.render.charts.interconnect import interconnect_table

    emit_results(doc, output, fmt, interconnect_table, (), fix="a smaller --max-allreduce; nothing was written")


def _spec(spec_name: str, devices: list[int]):  # type: ignore[no-untyped-def]
    from roofline.load.specs import SpecCatalog

    catalog = SpecCatalog.bundled()
    if spec_name != "auto":
        return catalog.resolve(spec_name)
    from roofline.measurement.session import choose_machine, open_backend

    return choose_machine("auto", open_backend("cupy", devices[0]), catalog)
