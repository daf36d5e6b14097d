"""Results files (roofline/results/v1, written by `roofline measure`): strict reading, merging, iterating.

Format history:
  v1  first version: schema, created, tool_version, backend, device, machine (the analysis machine block),
      kernels (every analysis kernel field plus time_median/min/max, repeats, achieved_bandwidth,
      achieved_flops, fraction_of_ceiling, verified, status, error); an optional top-level "sweep"
      marker {"kernel", "param"} for a kernel measured at several sizes. Added within v1 (optional, so older
      files still read): a kernel's "gpu_state" (SM clock at the start and end of its timed window, the maximum,
      mean power, the power limit, the fractions of the window held down by the power or thermal policy, the
      clock-event reasons at the end) and the device's "clock_monitor" (what read them, or why nothing did);
      a kernel's "warnings" (strings at first, now {code, text, fix} records: roofline.records.caveats); a top-level
      "groups" list (a profile's kernels grouped: name, by, launches, time, share, flops, bytes, intensity,
      roof, fraction_of_ceiling (time-weighted), sol_time, recoverable_time, model_flops/model_bytes where
      known; from roofline profile and import ncu --group-by), the "program" totals beside it, and an imported
      launch's "nvtx" (its NVTX range stack, outermost first).
      Checked since 0.x (issue 15), as readers always assumed: at least one kernel; each (name, params, device)
      once; times positive; flops and bytes not negative; fraction_of_ceiling from 0 to 10; status one of
      OK, FAILED, SKIPPED, IMPORTED. The typed form is roofline.records.document (KernelResult, ResultsDocument).
      Checked since issue 23: a time_ci holds its time_median; counters and gpu_state fields are numbers (or
      null), not negative; a grouped file's groups list their launches in `kernels` (each launch in one group),
      and every group and program figure equals what its launches give (roofline.records.groups), else the file is
      refused naming the field. Added then (optional): a group's "dtype", an imported launch's "half_precision"
      {dtype, from} and ncu.capture, and source.dropped / dropped_rows / captures.
      Added with issue 33 (optional): gpu_state "energy" (J over the window); a kernel's "energy" (the analysis's
      energy-roofline figures, roofline.model.energy) and "energy_measured" (joules_per_run, power_mean,
      flops_per_joule, bytes_per_joule, fraction_of_energy_ceiling, window, runs, energy, counter_period,
      uncertainty, short_window, inputs: roofline.measurement.energy), present only where NVML read the energy.

Values are SI base units (s, B, B/s, FLOP, FLOP/s). A reader refuses another schema version with a message that
says which side is newer, and names the file and the field for anything else it cannot use.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from roofline.errors import InputError, at
from roofline.load.inputs import parse_json, read_input_text
from roofline.records.devices import split_devices
from roofline.records.document import KernelResult, ResultsDocument, ceiling_for, require_results
from roofline.records.schema import RESULTS_SCHEMA  # noqa: F401 - re-exported: readers of results files name it here

MAX_RESULTS_BYTES = 256 << 20


@dataclass(frozen=True)
class ResultsFile:
    """A checked results document and where it came from. The place is kept beside the document, never in it, so
    a renderer or gate sees exactly what the file holds; `typed` is the ResultsDocument the check built."""

    path: Path | None  # None: a document built in memory (an importer's output, a test's)
    doc: dict[str, Any]  # the document as parsed: what dict readers index
    typed: ResultsDocument

    @classmethod
    def of(cls, doc: Any, path: Path | str | None = None) -> "ResultsFile":
        """Check a parsed document (ResultsDocument.from_json); InputError naming `path` and the field if it fails."""
        return cls(None if path is None else Path(path), doc, require_results(doc, path or "<results>"))

    @property
    def source(self) -> str | None:
        """The file's path as given, for reports and messages; None for a document built in memory."""
        return None if self.path is None else str(self.path)

    @property
    def name(self) -> str:
        """How a message names it: the path, else 'the results'."""
        return self.source or "the results"

    def machine_to_draw(self) -> dict[str, Any]:
        """The machine block a chart draws the roofs from; an InputError naming the file when it was measured
        without a spec (machine: null), since there is then no ceiling to draw."""
        machine = self.doc.get("machine")
        if machine is None:
            raise InputError(
                f"{self.name}: machine: is null (measured without a spec, so there is no ceiling to draw); "
                "measure again with --spec, e.g. 'roofline measure --backend numpy --spec h100'"
            )
        return machine


def load_results(path: Path | str) -> ResultsFile:
    """Read and validate one results file. Every problem is an InputError (exit 2) naming the file."""
    path = Path(path)
    text = read_input_text(path, MAX_RESULTS_BYTES, "a results JSON file")
    if not text.strip():
        raise at(path, None, "is empty (expected a results JSON file from 'roofline measure -o FILE')")
    doc = parse_json(text, path)  # depth-limited, bounded numbers, never a RecursionError
    return ResultsFile.of(doc, path)


def split_file(results: ResultsFile) -> list[ResultsFile]:
    """A several-device file → one ResultsFile per GPU (roofline.records.devices.split_devices), each still naming
    the file it came from. A single-device file comes back as it is."""
    if not results.typed.several_devices:
        return [results]
    return [ResultsFile(results.path, part, ResultsDocument.from_checked(part)) for part in split_devices(results.doc)]


# ---- iterating and merging ---------------------------------------------------------------------


def ceiling_of(kernel: dict[str, Any]) -> tuple[float | None, str]:
    """(value, unit) of the roof that bounds a results entry (a dict; KernelResult.ceiling for a typed one)."""
    return ceiling_for(kernel.get("bound"), kernel.get("bandwidth"), kernel.get("attainable_flops"))


def params_text(params: dict[str, Any]) -> str:
    """Short parameters: 'n=2^28', 'rows=8192 cols=8192'."""
    return " ".join(f"{k}={_short_number(v)}" for k, v in params.items())


def _short_number(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int):
        if v >= 1024 and v & (v - 1) == 0:
            return f"2^{v.bit_length() - 1}"
        return str(v)
    return f"{v:.4g}"


def kernel_key(kernel: dict[str, Any]) -> tuple[str, str]:
    """(name, parameters): a kernel's identity within one device's results."""
    return kernel["name"], json.dumps(kernel.get("params", {}), sort_keys=True)


def device_labels(files: Sequence[ResultsFile]) -> list[str]:
    """A readable label per file: the device name, with the file name added where two files share a device."""
    names = [f.typed.device_name for f in files]
    labels = []
    for f, name in zip(files, names):
        if names.count(name) > 1:
            labels.append(f"{name} ({f.path.name if f.path is not None else '?'})")
        else:
            labels.append(name)
    if len(set(labels)) < len(labels):  # same device and same file name in different folders
        labels = [f"{label} #{i + 1}" for i, label in enumerate(labels)]
    return labels


def iter_kernels(files: Sequence[ResultsFile]) -> Iterator[tuple[str, ResultsFile, KernelResult]]:
    """(device label, file, typed kernel) over every kernel of every file, files in the order given."""
    for label, f in zip(device_labels(files), files):
        for kernel in f.typed.kernels:
            yield label, f, kernel


def sweep_groups(doc: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Kernels measured at several sizes: name -> entries sorted by bytes (only names with 2+ distinct sizes)."""
    several = bool(doc.get("devices"))
    keyed = [(f"{k['name']} (GPU {k['device']})" if several and "device" in k else k["name"], k["bytes"], k)
             for k in doc["kernels"]]  # a several-GPU sweep: one series per device
    marker = doc.get("sweep")
    return _series(keyed, marker.get("kernel") if isinstance(marker, dict) else None)


def sweep_series(doc: ResultsDocument) -> dict[str, list[KernelResult]]:
    """sweep_groups of the typed form, what the sweep chart draws (issue 30: renderers read no dict): name ->
    results sorted by bytes, one series per device in a several-GPU sweep, the marked kernel first."""
    keyed = [(f"{k.name} (GPU {k.device_index})" if doc.several_devices and k.device_index is not None else k.name,
              k.bytes, k) for k in doc.kernels]
    return _series(keyed, doc.sweep_kernel)


def _series(keyed: Sequence[tuple[str, float, Any]], marked: Any) -> dict[str, list[Any]]:
    """The one rule of sweep_groups and sweep_series over (series name, bytes, entry): names with 2+ distinct sizes,
    sorted by bytes, the series of the marked kernel (each of its devices) first."""
    groups: dict[str, list[tuple[float, Any]]] = {}
    for key, bytes_, entry in keyed:
        groups.setdefault(key, []).append((bytes_, entry))
    out = {}
    for name, entries in groups.items():
        if len({b for b, _ in entries}) >= 2:
            out[name] = [e for _, e in sorted(entries, key=lambda t: t[0])]
    if marked:
        first = [k for k in out if k == marked or k.startswith(f"{marked} (GPU ")]
        out = {**{k: out[k] for k in first}, **{k: v for k, v in out.items() if k not in first}}
    return out
