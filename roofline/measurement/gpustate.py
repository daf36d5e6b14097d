"""What the GPU's clocks and power did while a kernel was timed, read through NVML (the nvidia-ml-py package,
imported only here and only when a GPU backend asks for it).

Why: a tensor-core GEMM on an H200 reaches its 700 W limit within about 0.1 s, and the SM clock falls from 1980 to
about 1440 MHz (docs/measurements/h200.md). A figure without the clock it ran at cannot be compared with a
datasheet that assumes the boost clock, and a figure measured while the GPU cooled down cannot be repeated. Two
readings bracket each timed window. NVML's cumulative counters (energy, time the power or thermal policy held the
clocks down) make the window's mean power and capped fraction exact without a sampling thread that would compete
with the timing loop for the GIL.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable
import os

from roofline.errors import DISTRIBUTION, first_line

INSTALL_HINT = f"pip install nvidia-ml-py (the cuda12 and cuda13 extras of the {DISTRIBUTION} checkout have it)"

# NVML clock-event reasons (nvmlClocksEventReason*), the bits a user can act on or should know about.
REASONS: dict[int, str] = {
    0x1: "idle", 0x2: "application clocks setting", 0x4: "power cap", 0x8: "hardware slowdown",
    0x10: "sync boost", 0x20: "thermal (software)", 0x40: "thermal (hardware)", 0x80: "power brake",
    0x100: "display clocks setting",
}
@dataclass(frozen=True)
class Reading:
    """One NVML snapshot; every field is None where this driver or GPU does not report it."""

    time: float  # host time.perf_counter(), s
    sm_clock: float | None = None  # Hz, instantaneous
    energy: float | None = None  # J consumed since the driver loaded
    power_held: float | None = None  # s, cumulative time the power policy held the clocks down
    thermal_held: float | None = None  # s, likewise for the thermal policy
    reasons: int | None = None  # bitmask of the clock-event reasons active at the reading


def reason_names(mask: int | None) -> list[str]:
    if mask is None:
        return []
    return [name for bit, name in REASONS.items() if mask & bit]


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def window_state(before: Reading, after: Reading, max_sm_clock: float | None,
                 power_limit: float | None) -> dict[str, Any]:
    """The GPU over [before, after] in SI units: the results file's `gpu_state` of one kernel."""
    span = after.time - before.time
    energy = _delta(before.energy, after.energy)
    if energy is not None and energy < 0:  # the counter restarted (a driver reload) between the readings
        energy = None
    power_held = _delta(before.power_held, after.power_held)
    thermal_held = _delta(before.thermal_held, after.thermal_held)

    def fraction(held: float | None) -> float | None:
        return None if held is None or span <= 0 else min(1.0, max(0.0, held / span))

    return {
        "window": span,
        "sm_clock_start": before.sm_clock,
        "sm_clock_end": after.sm_clock,
        "sm_clock_max": max_sm_clock,
        "power_mean": energy / span if energy is not None and span > 0 else None,
        "energy": energy,  # J over the window (NVML's counter difference); None where it is not read
        "power_limit": power_limit,
        "power_capped": fraction(power_held),
        "thermal_capped": fraction(thermal_held),
        "reasons_end": reason_names(after.reasons),
    }


class Monitor:
    """NVML readings for the one GPU that CUDA calls `pci_bus_id` (so CUDA_VISIBLE_DEVICES cannot mix them up)."""

    def __init__(self, nvml: Any, pci_bus_id: str, clock: Callable[[], float] = time.perf_counter):
        self.nvml, self.clock = nvml, clock
        nvml.nvmlInit()
        self.handle = nvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
        self.max_sm_clock = self._try(lambda: nvml.nvmlDeviceGetMaxClockInfo(self.handle, nvml.NVML_CLOCK_SM) * 1e6)
        self.power_limit = self._try(lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1e3)
        reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
        self._reasons = (lambda: reasons(self.handle)) if reasons else (lambda: None)

    def _try(self, read: Callable[[], Any]) -> Any:
        try:
            return read()
        except self.nvml.NVMLError:  # not supported on this GPU or driver: unknown, never zero
            return None

    def _held(self, policy: int) -> float | None:
        status = self._try(lambda: self.nvml.nvmlDeviceGetViolationStatus(self.handle, policy))
        return None if status is None else status.violationTime * 1e-9

    def read(self) -> Reading:
        nvml, h = self.nvml, self.handle
        sm = self._try(lambda: nvml.nvmlDeviceGetClockInfo(h, nvml.NVML_CLOCK_SM))
        energy = self._try(lambda: nvml.nvmlDeviceGetTotalEnergyConsumption(h))
        return Reading(
            time=self.clock(),
            sm_clock=None if sm is None else sm * 1e6,
            energy=None if energy is None else energy * 1e-3,
            power_held=self._held(nvml.NVML_PERF_POLICY_POWER),
            thermal_held=self._held(nvml.NVML_PERF_POLICY_THERMAL),
            reasons=self._try(self._reasons),
        )

    def power_usage(self) -> float | None:
        """W, NVML's power reading (nvmlDeviceGetPowerUsage: a 1 s average on Ampere and newer), None if not read:
        doctor compares it with the energy counter's mean."""
        mw = self._try(lambda: self.nvml.nvmlDeviceGetPowerUsage(self.handle))
        return None if mw is None else mw / 1e3

    def window(self, before: Reading, after: Reading) -> dict[str, Any]:
        return window_state(before, after, self.max_sm_clock, self.power_limit)


def open_monitor(pci_bus_id: str | None) -> tuple[Monitor | None, str]:
    """(monitor, what it is) or (None, why there is none): the why goes into the results file's device block."""
    if not pci_bus_id:
        return None, "none: the CUDA device has no PCI bus id to match with NVML"
    try:
        import pynvml  # lazy: pynvml is a start-up cost only this path pays
    except ImportError:
        return None, f"none: clocks and power are not recorded; {INSTALL_HINT}"
    try:
        monitor = Monitor(pynvml, pci_bus_id)
    except Exception as exc:  # noqa: BLE001 - NVMLError or a missing library: measure without clock readings
        return None, f"none: NVML could not be opened ({first_line(exc)})"
    version = getattr(pynvml, "__version__", None) or _dist_version("nvidia-ml-py")
    return monitor, f"NVML (nvidia-ml-py {version})" if version else "NVML"


def _dist_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def device_state(monitor: Monitor | None, why: str = "") -> dict[str, Any]:
    """What NVML says about the GPU as a whole, for `roofline doctor`: persistence mode, ECC mode and volatile
    uncorrected errors, a pending row remap, the enforced and default power limits, and the compute processes of
    other programs. A field this GPU or driver does not report is None (unknown, never a pass)."""
    if monitor is None:
        return {"nvml": False, "why": why}

    nvml, h, get = monitor.nvml, monitor.handle, monitor._try
    state: dict[str, Any] = {"nvml": True}
    state["persistence_mode"] = get(lambda: bool(nvml.nvmlDeviceGetPersistenceMode(h)))
    ecc = get(lambda: nvml.nvmlDeviceGetEccMode(h))
    state["ecc_mode"] = None if ecc is None else bool(ecc[0])
    if state["ecc_mode"]:
        state["ecc_uncorrected"] = get(lambda: int(nvml.nvmlDeviceGetTotalEccErrors(
            h, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, nvml.NVML_VOLATILE_ECC)))
    remap = get(lambda: nvml.nvmlDeviceGetRemappedRows(h))  # (corrected, uncorrected, pending, failure)
    state["remap_pending"] = None if remap is None else bool(remap[2] or remap[3])
    state["power_limit"] = monitor.power_limit
    state["power_default_limit"] = get(lambda: nvml.nvmlDeviceGetPowerManagementDefaultLimit(h) / 1e3)
    procs = get(lambda: nvml.nvmlDeviceGetComputeRunningProcesses(h))
    if procs is not None:
        pids = [int(p.pid) for p in procs]
        me = os.getpid()
        # In a container NVML reports host PIDs, so this process is there under another number: then one of the
        # processes is ours, and the others are the rest (which one is ours cannot be told; the count is right).
        state["other_processes"] = [p for p in pids if p != me] if me in pids else pids[1:]
    else:
        state["other_processes"] = None
    state["max_sm_clock"] = monitor.max_sm_clock
    return state
