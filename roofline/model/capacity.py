"""Whether a kernel's data fits the memory it must live in: one rule for `measure` (the device's or the host's memory,
roofline.measurement.session.check_fits) and `--predict` (the spec's memory.capacity, roofline.sizes.whatif), so a
prediction is never made for data no GPU of that kind holds (17.6 TB of softmax rows on an 80 GB card)."""

from __future__ import annotations

from roofline.model.types import Workload
from roofline.model.units import format_bytes, format_param


def data_bytes(work: Workload) -> float:
    """The least memory the kernel's data takes: its largest launch's modelled DRAM traffic (every byte a launch moves
    from DRAM is in an array that must exist at once)."""
    return max((s.bytes for s in work.stages), default=work.bytes)


def params_shown(work: Workload) -> str:
    """'rows=2**28 cols=8192': the parameters as -p would take them back."""
    return " ".join(f"{k}={format_param(v)}" for k, v in work.params.items())


def too_large(work: Workload, limit: float | None, where: str, note: str = "") -> str | None:
    """Why the kernel's data does not fit `limit` bytes of `where` ("the GPU's memory", "h100-sxm's memory.capacity"),
    or None when it fits or the limit is not known; `note` says where the limit came from, beside its figure."""
    if limit is None:
        return None
    need = data_bytes(work)
    if need <= limit:
        return None
    return (f"kernel '{work.name}' at {params_shown(work)} needs at least {format_bytes(need)} of data, more than "
            f"{where} ({format_bytes(limit)}{'; ' + note if note else ''})")
