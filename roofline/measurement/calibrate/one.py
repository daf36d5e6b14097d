"""`calibrate` on one GPU: open it and choose its datasheet (refusing what cannot run before anything is measured),
measure every figure and with --energy the energy block, and conclude: the measured spec, the comparison with the
datasheet, the --format json document. The command line passes its progress display and prints what this returns;
`calibrate --device all` is roofline.measurement.multi.host."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from roofline.errors import BackendUnavailable
from roofline.load.specs import SpecCatalog
from roofline.measurement.calibrate.figures import Figure, calibration_document, comparison_rows
from roofline.measurement.calibrate.plan import FULL, QUICK
from roofline.measurement.calibrate.spec import WrittenSpec, written_spec
from roofline.measurement.gpustate import INSTALL_HINT
from roofline.measurement.progress import Progress


def needs_gpu(exc: BackendUnavailable) -> BackendUnavailable:
    """Exit 3 with calibrate's own fix: the shared "--backend numpy" does not apply to it."""
    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import CUPY_INSTALL

    return BackendUnavailable(f"calibrate measures a GPU: {exc.reason}", fix=CUPY_INSTALL)


@dataclass(frozen=True)
class OpenGPU:
    """The GPU to calibrate and the datasheet it is compared with (None: no bundled spec names it)."""

    backend: Any
    datasheet: Any


def open_gpu(device_id: int, spec_name: str, energy: bool) -> OpenGPU:
    """The device opened (exit 3 with calibrate's fix without one) and its datasheet chosen; with --energy, exit 3
    when NVML has no energy counter to read, before anything is measured."""
    # lazy: roofline.measurement.backend_cupy imports numpy (start-up)
    from roofline.measurement.backend_cupy import CupyBackend
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import choose_machine

    try:
        backend = CupyBackend(device_id)
    except BackendUnavailable as exc:
        raise needs_gpu(exc) from None
    datasheet = choose_machine(spec_name, backend, SpecCatalog.bundled())
    if energy and backend.monitor is None:
        why = backend.info.get("clock_monitor") or "NVML not opened"
        raise BackendUnavailable(f"--energy reads NVML's energy counter, and there is none ({why})", fix=INSTALL_HINT)
    return OpenGPU(backend, datasheet)


@dataclass
class OneCalibration:
    """What `calibrate` measured on one GPU and concluded, before anything is printed or written."""

    figures: list[Figure]
    datasheet: Any
    device: dict[str, Any]
    spec: WrittenSpec  # the measured spec: its document, warnings and YAML (checked to load)
    comparison: list[dict[str, Any]]  # the comparison table's rows
    wall: float
    energy_runs: list[Any] = field(default_factory=list)  # --energy: roofline.measurement.calibrate.energy.EnergyRun

    def document(self) -> dict[str, Any]:
        """--format json: every figure with its method and raw numbers, the spec, and the energy runs."""
        doc = calibration_document(self.figures, self.datasheet, self.device, self.spec.doc, self.wall)
        if self.energy_runs:
            doc["energy"] = [r.to_dict() for r in self.energy_runs]
        return doc


def calibrate_one(gpu: OpenGPU, quick: bool, energy: bool, progress: Progress, started: float) -> OneCalibration:
    """Measure the figures (then, with `energy`, the energy runs) with `progress` told of each step, and conclude."""
    # lazy: roofline.measurement.calibrate.gpu imports numpy (start-up)
    from roofline.measurement.calibrate.gpu import calibrate as calibrate_gpu

    figures = calibrate_gpu(gpu.backend, gpu.datasheet, QUICK if quick else FULL, progress)
    energy_runs = _energy_runs(gpu.backend, figures, quick, progress) if energy else []
    device = gpu.backend.device_info()
    amend = None
    if energy_runs:
        # lazy: roofline.measurement.calibrate.energy imports numpy (start-up)
        from roofline.measurement.calibrate.energy import with_energy

        amend = with_energy(energy_runs, device.get("name"))
    spec = written_spec(figures, device, gpu.datasheet, amend)
    return OneCalibration(figures, gpu.datasheet, device, spec, comparison_rows(figures, gpu.datasheet),
                          time.perf_counter() - started, energy_runs)


def _energy_runs(backend: Any, figures: list[Figure], quick: bool, progress: Progress) -> list[Any]:
    """calibrate --energy's runs (roofline.measurement.calibrate.energy), after the other figures: TF32's energy
    counts only where its GEMM beat the FP32 figure just measured."""
    # lazy: roofline.measurement.calibrate.energy imports numpy (start-up)
    from roofline.measurement.calibrate.energy import FULL_ENERGY, QUICK_ENERGY, calibrate_energy
    # lazy: roofline.measurement.calibrate.probes imports numpy (start-up)
    from roofline.measurement.calibrate.probes import current

    fp32 = next((f.value for f in figures if f.field == "compute.fp32" and f.ok), None)
    with current(backend):
        return calibrate_energy(backend, QUICK_ENERGY if quick else FULL_ENERGY, progress, fp32_rate=fp32)
