"""`calibrate --device all` after its workers: the host's spec (each figure the median of its GPUs), the links
measured with the GPUs idle, the host table and the outliers, and the problems that make the run exit 1. The
command line runs the workers under its progress display and prints what this returns."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from roofline.errors import GateFailed, first_line
from roofline.gates.hosts import device_name, figure_rows, outliers
from roofline.measurement import interconnect as ic
from roofline.measurement.calibrate.figures import Figure, calibration_document, comparison_rows
from roofline.measurement.calibrate.links import with_interconnect
from roofline.measurement.calibrate.spec import written_spec
from roofline.measurement.multi.calibrate import device_figure_lists, host_figures
from roofline.measurement.multi.pool import Outcome, failure_lines
from roofline.version import __version__
from roofline.model.counts import counted

# The links step inside calibrate: big enough to reach the plateau (1 GiB copies gain < 1 % on an H200 pair),
# small enough to keep calibrate's time; `roofline interconnect` measures the whole 1 MiB..4 GiB range.
LINK_COPY_BYTES = 256 << 20
LINK_ALLREDUCE_MAX = 256 << 20

OnLinkStep = Callable[[str, "str | None"], None]  # (step name, why it was skipped or None)


@dataclass
class HostCalibration:
    """What `calibrate --device all` measured and concluded, before anything is printed or written."""

    parts: list[dict[str, Any]]  # each device's calibration, by index
    failures: list[str]  # the devices whose worker failed
    datasheet: Any
    figures: list[Figure]  # the host's: each the median of its GPUs
    host_device: dict[str, Any]
    spec_doc: dict[str, Any]
    warnings: list[str]
    text: str  # the measured spec's YAML, checked to load
    rows: list[dict[str, Any]]  # the host table: each figure on each device
    comparison: list[Any]
    wall: float
    outlier: float | None = None
    slow: list[dict[str, Any]] = field(default_factory=list)
    link_doc: dict[str, Any] | None = None
    link_error: str | None = None
    count: int = 0  # the devices calibrated (their workers' outcomes)

    def document(self) -> dict[str, Any]:
        """--format json: the host's figures, each device's, the host table, the links and what failed."""
        doc = calibration_document(self.figures, self.datasheet, self.host_device, self.spec_doc, self.wall)
        doc.update(devices=[calibration_document(p["figures"], self.datasheet, p["device"], None) for p in self.parts],
                   hosts=self.rows, interconnect=self.link_doc, device_errors=self.failures, outliers=self.slow)
        return doc

    def problems(self) -> list[str]:
        """Why the run exits 1: failed devices, devices --outlier finds too slow, links that failed."""
        return [*self.failures,
                *(f"{device_name(o['index'], o['pci_bus_id'])}: {o['kernel']} {-o['deviation']:.1%} below the host "
                  f"median (limit {self.outlier:.0%})" for o in self.slow),
                *([self.link_error] if self.link_error else [])]

    def verdict(self) -> None:
        """Exit 1 (GateFailed) with every problem, once the spec and the tables are out."""
        problems = self.problems()
        if problems:
            raise GateFailed(f"{counted(len(problems), 'problem')} across {self.count} GPUs: " + "; ".join(problems))


def host_calibration(outcomes: Mapping[int, Outcome], outlier: float | None, links: bool, started: float,
                     on_link_step: OnLinkStep) -> HostCalibration:
    """The host's calibration from its workers' outcomes; then, with every GPU idle, the links between them
    (a link that fails leaves the devices' figures standing and is a problem). GateFailed when every device failed."""
    parts = sorted((o.result for o in outcomes.values() if o.ok), key=lambda p: p["device"]["index"])
    failures = failure_lines(outcomes)
    if not parts:
        raise GateFailed("every device failed: " + "; ".join(failures))
    datasheet = parts[0]["datasheet"]
    figures = host_figures(parts)
    host_device = {**parts[0]["device"], "name": gpus_name(parts)}
    link_doc, link_error = None, None

    def links_measured(spec_doc: dict[str, Any], date: str) -> tuple[dict[str, Any], list[str]]:
        nonlocal link_doc, link_error
        if not links or len(parts) < 2:
            return spec_doc, []
        try:
            link_doc = _links([p["device"]["index"] for p in parts], datasheet, on_link_step)
        except Exception as exc:  # noqa: BLE001 - a copy that delivered wrong data, a driver error: the devices'
            # figures stand and are written; the links are reported as not measured, and the run exits 1
            link_error = f"links not measured: {type(exc).__name__}: {first_line(exc, 300)}"
            return spec_doc, []
        return with_interconnect(spec_doc, link_doc, f"roofline calibrate {__version__} on "
                                                     f"{host_device['name']}, {date}"), []

    spec = written_spec(figures, host_device, datasheet, links_measured)
    rows = figure_rows(device_figure_lists(parts))
    return HostCalibration(parts=parts, failures=failures, datasheet=datasheet, figures=figures,
                           host_device=host_device, spec_doc=spec.doc, warnings=spec.warnings, text=spec.text,
                           rows=rows,
                           comparison=comparison_rows(figures, datasheet), wall=time.perf_counter() - started,
                           outlier=outlier, slow=outliers(rows, outlier) if outlier is not None else [],
                           link_doc=link_doc, link_error=link_error, count=len(outcomes))


def gpus_name(parts: Sequence[Mapping[str, Any]]) -> str:
    """'8 × NVIDIA H200' for identical GPUs, else their names joined: the device name of a spec of their medians."""
    names = sorted({str(p["device"].get("name")) for p in parts})
    return f"{len(parts)} × {names[0]}" if len(names) == 1 else " + ".join(names)


def _links(devices: list[int], datasheet: Any, on_step: OnLinkStep) -> dict[str, Any]:
    return ic.links_document(devices, datasheet, LINK_COPY_BYTES,
                             [s for s in ic.ALLREDUCE_SIZES if s <= LINK_ALLREDUCE_MAX], on_step)
