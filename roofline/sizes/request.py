"""What `roofline sweep` is asked to do, read from its options once: the kernel, the swept parameter and its sizes
(--sizes), the other parameters held fixed (-p/--param), and the model's settings. Pure: no device, no files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from roofline.errors import InputError
from roofline.model.expr import Expr, FormulaError, compile_expr
from roofline.model.types import KernelDescriptor, MachineSpec
from roofline.model.units import format_param
from roofline.sizes.fitted import FIRST_PRINCIPLES, LATENCY_SETTINGS, MODEL_CHOICES
from roofline.load.kernels import parse_overrides

MAX_SIZES = 64


@dataclass(frozen=True)
class SweepRequest:
    """One sweep: `kernel` measured with `param` at each of `sizes`, the `fixed` overrides for its other parameters,
    and which model predicts it: first-principles (roofline.sizes.predict) or the fitted one (roofline.sizes.fitted.fit_model,
    --latency and --efficiency apply to it). `calibrated`, when given, supplies BW, latency and resident threads."""

    kernel: KernelDescriptor
    param: str
    sizes: tuple[int, ...]
    fixed: Mapping[str, Expr]
    model: str = FIRST_PRINCIPLES
    latency: str = "auto"
    efficiency: str | float = "auto"
    calibrated: MachineSpec | None = None


def sweep_request(d: KernelDescriptor, param: str, sizes_text: str, fixed: Sequence[str], *,
                  model: str = FIRST_PRINCIPLES,
                  latency: str = "auto", efficiency: str = "auto", calibrated: MachineSpec | None = None,
                  param_option: str = "--over") -> SweepRequest:
    """Check the options against the kernel and parse them; every problem is an InputError naming its option
    (`param_option` is how the user spelled the swept parameter's option)."""
    sizes = parse_sizes(sizes_text)
    eta = parse_efficiency(efficiency)
    if model not in MODEL_CHOICES:
        raise InputError(f"--model: expected one of {', '.join(MODEL_CHOICES)}, got {model!r}")
    if latency not in LATENCY_SETTINGS:
        raise InputError(f"--latency: expected one of {', '.join(LATENCY_SETTINGS)}, got {latency!r}")
    if param not in d.params:
        named = f"{param_option} {param}" if param.strip() else f"{param_option} {param!r} (an empty name)"
        raise InputError(f"{named}: kernel '{d.name}' has no parameter '{param}'; it has: "
                         f"{', '.join(d.params) or 'none'}")
    overrides = dict(parse_overrides(fixed, [d]))
    if param in overrides:
        raise InputError(f"-p {param}=…: {param} is the swept parameter; its values come from --sizes")
    allowed = d.values.get(param)
    if allowed is not None:  # a size the kernel has no code for is refused here, before anything runs
        bad = [size for size in sizes if size not in allowed]
        if bad:
            where = d.path or d.name
            raise InputError(f"--sizes {sizes_text:.60}: kernel '{d.name}' has no code for {param}="
                             f"{', '.join(format_param(b) for b in bad[:5])}{' …' if len(bad) > 5 else ''}; {param} must be "
                             f"one of {', '.join(format_param(v) for v in allowed)} ({where}: values.{param})")
    return SweepRequest(d, param, tuple(sizes), overrides, model, latency, eta, calibrated)


def same_gpu(calibrated: MachineSpec, machine: MachineSpec) -> bool:
    """Whether a measured spec was measured on the GPU `machine` describes: the spec itself, calibrate's id for it
    ('h200-sxm-measured'), or a CUDA device name the two share."""
    if calibrated is machine or calibrated.id in (machine.id, f"{machine.id}-measured"):
        return True
    names = set(calibrated.device_names) | {calibrated.measurement.get("device", "")}
    return bool(names & set(machine.device_names))


def check_calibrated(calibrated: MachineSpec, machine: MachineSpec | None) -> None:
    """--calibrated gives the model measured figures of the GPU being modelled: a datasheet spec (no `measured: true`)
    is no calibration, and another GPU's figures would be shown under this one's name. Both are refused (exit 2)."""
    where = f"--calibrated {calibrated.path or calibrated.id}"
    if not calibrated.measured:
        raise InputError(f"{where}: {calibrated.id} is not a measured spec (its file has no 'measured: true'): "
                         "--calibrated takes what 'roofline calibrate -o FILE' wrote on the GPU; a datasheet spec is "
                         "named with --spec")
    if machine is not None and not same_gpu(calibrated, machine):
        measured_on = calibrated.measurement.get("device") or ", ".join(calibrated.device_names) or calibrated.id
        raise InputError(f"{where}: measured on {measured_on}, not on {machine.name} ({machine.id}, --spec): its "
                         f"figures would be shown under {machine.id}'s name; give --spec {calibrated.path or 'FILE'} "
                         "alone, or a calibration of this GPU")


def parse_efficiency(text: str) -> str | float:
    """--efficiency: 'auto', or η as a number in (0, 10)."""
    if text == "auto":
        return text
    try:
        eta = float(text)
    except ValueError:
        raise InputError(f"--efficiency: expected 'auto' or a number, got {text!r}") from None
    if not 0 < eta < 10:
        raise InputError(f"--efficiency: expected a number between 0 and 10, got {text}")
    return eta


def _size(text: str, whole: str) -> int:
    item = text.strip()
    if not item:
        raise InputError(f"--sizes {whole:.60}: a range needs a start and an end, like 2**12..2**28")
    try:
        expr = compile_expr(item.replace("^", "**"))
        if expr.names:
            raise InputError(f"--sizes {whole:.60}: '{item:.40}' uses names ({', '.join(sorted(expr.names))}); "
                             "sizes are numbers or formulas of numbers, like 2**20")
        value = expr.evaluate({})
    except FormulaError as exc:
        raise InputError(f"--sizes {whole:.60}: '{item:.40}': {exc}") from None
    if isinstance(value, float):
        if not value.is_integer():
            raise InputError(f"--sizes {whole:.60}: '{item:.40}' is {value:g}, not a whole number")
        value = int(value)
    if value < 1:
        raise InputError(f"--sizes {whole:.60}: '{item:.40}' is {value:.4g}; sizes must be at least 1")
    if value > 2**62:
        raise InputError(f"--sizes {whole:.60}: '{item:.40}' is too large")
    return int(value)


def parse_sizes(text: str) -> list[int]:
    """'2**12..2**28' → [4096, 8192, …, 2**28] (doubling); 'A..B:4' steps by ×4; '4096,65536,2**20' is a list.

    Items may mix (``2**10..2**12,100000``); '^' is read as a power (2^20). Returns the distinct sizes ascending.
    Anything else is an InputError that names --sizes."""
    whole = str(text).strip()
    if not whole:
        raise InputError("--sizes: empty; give a range like 2**12..2**28 or a list like 4096,65536,2**20")
    sizes: list[int] = []
    for part in whole.split(","):
        part = part.strip()
        if not part:
            raise InputError(f"--sizes {whole:.60}: an empty item between commas")
        if ".." in part:
            lo_text, _, rest = part.partition("..")
            hi_text, colon, step_text = rest.partition(":")
            lo, hi = _size(lo_text, whole), _size(hi_text, whole)
            factor = _size(step_text, whole) if colon else 2
            if factor < 2:
                raise InputError(f"--sizes {whole:.60}: the step after ':' multiplies each size; it must be 2 or more")
            if hi < lo:
                raise InputError(f"--sizes {whole:.60}: the range {part} ends below its start")
            value = lo
            while value <= hi:
                sizes.append(value)
                if len(sizes) > MAX_SIZES:
                    break
                value *= factor
        else:
            sizes.append(_size(part, whole))
        if len(set(sizes)) > MAX_SIZES:
            raise InputError(f"--sizes {whole:.60}: more than {MAX_SIZES} sizes; sweep a narrower range or a coarser step")
    return sorted(set(sizes))
