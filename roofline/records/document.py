"""The typed results core: a measured (or imported) kernel is a KernelResult, a results file a ResultsDocument.

`from_json` checks exactly what a reader may rely on (the rules are roofline.records.schema) and names the file and
field of the first problem;
`to_json` writes the on-disk form (roofline/results/v1, history in roofline/records/files.py). Blocks that later stages
add to an entry (the timing mode, phases, GPU state, Nsight Compute counters, a sweep's prediction, per-level
traffic) are kept as written in `extra`, so a file round-trips whatever wrote it.
"""

from __future__ import annotations

import functools
import json

from dataclasses import dataclass, field, fields, replace
from enum import Enum
from pathlib import Path
from typing import Any, Mapping, Sequence

from roofline.records.caveats import warning
from roofline.records.energy import MeasuredEnergy
from roofline.records.coverage import ABOVE_CEILING, Unmodelled
from roofline.records.groups import Group, Program, unmodelled_time
from roofline.records.timeline import Timeline
from roofline.errors import InputError
from roofline.records.schema import RESULTS_SCHEMA, TOP_FIELDS, check_document
from roofline.load.jsonio import document_writes, write_json_atomic, why_not_replace

MODEL_ERROR_FRACTION = ABOVE_CEILING  # a verified kernel above this share of its ceiling means the model under-counts


class Status(str, Enum):
    OK = "OK"  # verified and timed
    FAILED = "FAILED"  # wrong output, or it raised: never timed
    SKIPPED = "SKIPPED"  # not run (reported, never gated)
    IMPORTED = "IMPORTED"  # from another tool's capture: timed there, not verified by roofline



@functools.lru_cache(maxsize=None)
def _field_names(cls: type) -> tuple[str, ...]:
    """A dataclass's field names in order, read once (dataclasses.fields is slow for 38,000 entries)."""
    return tuple(f.name for f in fields(cls))


@functools.lru_cache(maxsize=None)
def _known_fields(cls: type) -> frozenset[str]:
    return frozenset(_field_names(cls)) - {"extra", "omitted"}

# ---- one kernel ------------------------------------------------------------------------------------------------


def failed_status(status: str, verified: bool | None) -> bool:
    """The one rule for "did this kernel fail": FAILED, or not verified when roofline should have verified it. A
    SKIPPED entry never ran (not a failure); an IMPORTED one with verified null was timed by another tool and was
    never ours to check."""
    if status == Status.FAILED.value:
        return True
    if status == Status.SKIPPED.value or (status == Status.IMPORTED.value and verified is None):
        return False
    return verified is not True


def ceiling_for(bound: Any, bandwidth: float | None, attainable_flops: float | None) -> tuple[float | None, str]:
    """(value, unit) of the roof that bounds a kernel, in its own unit: the bandwidth when memory-bound, the
    attainable FLOP/s when compute-bound. One meaning of 'ceiling' for measure, report and the pytest plugin."""
    if bound == "memory":
        return bandwidth, "B/s"
    return attainable_flops, "FLOP/s"


def entry_failed(entry: Mapping[str, Any]) -> bool:
    """failed_status of a results entry as read from a file (a dict)."""
    return failed_status(str(entry.get("status")), entry.get("verified"))


@dataclass(frozen=True)
class Counters:
    """What Nsight Compute counted for a kernel (its `counters` block, roofline.ncu) that the hierarchical roofline
    draws: bytes at L1, L2 and DRAM, FLOPs and time. Typed, so a renderer reads attributes and the keys are spelt
    here once."""

    l1_bytes: float | None = None
    l2_bytes: float | None = None
    dram_bytes: float | None = None  # dram_bytes, else dram_read + dram_write where both were counted
    flops: float | None = None
    time: float | None = None

    @classmethod
    def of(cls, block: Mapping[str, Any] | None) -> "Counters | None":
        """None where the entry has no counters (or an empty block)."""
        if not block:
            return None
        dram = block.get("dram_bytes")
        if dram is None and block.get("dram_read") is not None and block.get("dram_write") is not None:
            dram = block["dram_read"] + block["dram_write"]
        return cls(block.get("l1_bytes"), block.get("l2_bytes"), dram, block.get("flops"), block.get("time"))

    def level_bytes(self) -> dict[str, float | None]:
        """{'l1', 'l2', 'dram'}: bytes at each level, None where not counted."""
        return {"l1": self.l1_bytes, "l2": self.l2_bytes, "dram": self.dram_bytes}


@dataclass(frozen=True)
class Prediction:
    """The terms of a sweep entry's `prediction` block (roofline.sizes.predict writes it) that the sweep table and
    chart show: typed, so a renderer reads attributes and the block's keys are spelt here once."""

    regime: str
    model: str | None = None  # the size model that predicted it
    launches: int = 0  # how many launches the kernel makes at this size
    transfer: float | None = None  # s
    windows: Any = None
    active_sms: float | None = None
    stream_bandwidth: float | None = None  # B/s

    @classmethod
    def of(cls, block: Mapping[str, Any] | None) -> "Prediction | None":
        if not block:
            return None
        return cls(block.get("regime"), block.get("model"), len(block.get("launches") or []), block.get("transfer"),
                   block.get("windows"), block.get("active_sms"), block.get("stream_bandwidth"))


@dataclass(frozen=True)
class KernelResult:
    """The analysis fields of one kernel at its parameters, plus what was measured. SI base units throughout."""

    name: str
    params: Mapping[str, Any]
    dtype: str
    roof: str
    flops: float
    bytes: float
    intensity: float
    status: Status
    verified: bool | None  # None: imported from another tool, not checked by roofline
    launches: int = 1
    stages: tuple[Mapping[str, Any], ...] = ()
    access_bytes: float | None = None
    # the ceiling (null when measured without a spec)
    peak_flops: float | None = None
    bandwidth: float | None = None
    ridge: float | None = None
    bound: str | None = None
    attainable_flops: float | None = None
    memory_time: float | None = None
    compute_time: float | None = None
    sol_time: float | None = None
    threads_needed: float | None = None
    latency_bound: bool | None = None
    # the measurement
    time_median: float | None = None
    time_min: float | None = None
    time_max: float | None = None
    time_ci: tuple[float, float] | None = None  # 95 % bootstrap interval of the median time
    repeats: int | None = None
    achieved_bandwidth: float | None = None
    achieved_flops: float | None = None
    fraction_of_ceiling: float | None = None
    error: str | None = None
    warnings: tuple[Mapping[str, Any] | str, ...] = ()  # {code, text, fix} records (roofline.records.caveats)
    extra: Mapping[str, Any] = field(default_factory=dict)
    omitted: frozenset[str] = frozenset()  # optional keys the source did not have, so to_json leaves them out

    @property
    def failed(self) -> bool:
        """Wrong output, or not verified when roofline should have verified it: always fails a gate."""
        return failed_status(self.status.value, self.verified)

    @property
    def imported(self) -> bool:
        return self.status is Status.IMPORTED and self.verified is None

    @property
    def model_error(self) -> bool:
        """Verified and faster than its ceiling allows, beyond noise: the model under-counts (or the spec is low)."""
        return (self.verified is True and self.fraction_of_ceiling is not None
                and self.fraction_of_ceiling > MODEL_ERROR_FRACTION)

    @property
    def key(self) -> tuple[str, str]:
        """(name, parameters): the kernel's identity within one device's results (roofline.records.files.kernel_key
        of its entry)."""
        return self.name, json.dumps(self.params, sort_keys=True)

    @property
    def ceiling(self) -> tuple[float | None, str]:
        """(value, unit) of the roof that bounds it (ceiling_for)."""
        return ceiling_for(self.bound, self.bandwidth, self.attainable_flops)

    @property
    def gpu_state(self) -> Mapping[str, Any] | None:
        """The GPU's clocks and power over the timed window (roofline.records.clockstate), where measured."""
        return self.extra.get("gpu_state")

    @property
    def counters(self) -> Counters | None:
        """What Nsight Compute counted (measure --profile ncu, import ncu); None where nothing was."""
        return Counters.of(self.extra.get("counters"))

    def traffic_bytes(self) -> dict[str, Any]:
        """The descriptor's bytes per cache level (its `traffic` block: l1, l2), where it gives them."""
        return {level: (t or {}).get("bytes") for level, t in (self.extra.get("traffic") or {}).items()}

    @property
    def launch(self) -> Any:
        """An imported launch's number (params.launch: ncu's ID, a trace's order)."""
        return self.params.get("launch")

    @property
    def rank(self) -> Any:
        """The rank whose trace an imported launch came from (import torch)."""
        return self.extra.get("rank")

    @property
    def op(self) -> Any:
        """The ATen op that launched an imported kernel (import torch)."""
        return self.extra.get("op")

    @property
    def mixed_roof(self) -> bool:
        """An imported launch whose work ran on more than one roof (its `work` list; the roof shown holds most)."""
        return len(self.extra.get("work") or []) > 1

    @property
    def size(self) -> Any:
        """The swept parameter's value of a sweep's entry (None outside a sweep)."""
        return self.extra.get("size")

    @property
    def predicted_time(self) -> float | None:
        """The size model's time for a sweep's entry (roofline.sizes), where predicted."""
        return self.extra.get("predicted_time")

    @property
    def prediction_error(self) -> float | None:
        """measured / predicted - 1 of a sweep's entry, where both exist."""
        return self.extra.get("prediction_error")

    @property
    def prediction(self) -> Prediction | None:
        """The size model's terms for a sweep's entry (its `prediction` block), where predicted."""
        return Prediction.of(self.extra.get("prediction"))

    @property
    def power_limit(self) -> float | None:
        """The power limit (W) its timed window ran under (gpu_state), where read: the energy chart draws it."""
        return (self.gpu_state or {}).get("power_limit")

    @property
    def energy_measured(self) -> MeasuredEnergy | None:
        """What NVML's energy counter gave over the timed window; None where it read nothing."""
        return MeasuredEnergy.of(self.extra.get("energy_measured"))

    @property
    def device_index(self) -> Any:
        """The GPU an entry of a several-GPU document ran on (measure --device all, a fleet's rank); None in a
        one-device file. A renderer's per-GPU column reads it here, not from the entry's dict."""
        return self.extra.get("device")

    @property
    def timing(self) -> str | None:
        """How the kernel was timed (events, graph, ...; roofline.measurement), as the table's timing column shows."""
        return self.extra.get("timing")

    @property
    def buffer_sets(self) -> int:
        """How many input buffer sets the timed loop cycled through (1: the same buffers every run)."""
        return self.extra.get("buffer_sets", 1)

    @property
    def measured_backend(self) -> str | None:
        """The backend the API measured it with (its `measured_with` block), where the entry says."""
        return (self.extra.get("measured_with") or {}).get("backend")

    @classmethod
    def failure(cls, analysis: Mapping[str, Any], error: str, **extra: Any) -> "KernelResult":
        """The one place a FAILED entry is made: the analysis fields, no time, the reason."""
        measured = dict.fromkeys(("time_median", "time_min", "time_max", "achieved_bandwidth", "achieved_flops",
                                  "fraction_of_ceiling"))
        result = cls.from_fields({**analysis, **measured, "repeats": 0, "status": Status.FAILED, "verified": False,
                                  "error": error, "warnings": ()}, extra)
        return replace(result, omitted=frozenset())

    @classmethod
    def from_fields(cls, data: Mapping[str, Any], extra: Mapping[str, Any] | None = None) -> "KernelResult":
        known = _known_fields(cls)
        values = {k: v for k, v in data.items() if k in known}
        values["omitted"] = frozenset(k for k in known if k not in data)
        values["status"] = Status(values["status"])
        values["stages"] = tuple(values.get("stages") or ())
        values["warnings"] = tuple(values.get("warnings") or ())
        if values.get("time_ci") is not None:
            values["time_ci"] = tuple(values["time_ci"])
        rest = {k: v for k, v in data.items() if k not in known}
        return cls(**values, extra={**rest, **(extra or {})})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in _field_names(type(self)):
            if name in ("extra", "omitted") or name in self.omitted:
                continue
            value = getattr(self, name)
            if name in ("stages", "warnings") or (name == "time_ci" and value is not None):
                value = list(value)
            out[name] = value.value if isinstance(value, Status) else value
        out.update(self.extra)
        return out


def model_error_warning(fraction: float, bound: str | None = None) -> dict[str, Any]:
    """What a verified kernel beyond its ceiling means, in the words measure and report both use. Beyond the power
    roof (bound `power`, roofline.model.power) it is the spec's energy figures, not the work's count, that are off."""
    if bound == "power":
        return warning("above-power-roof",
                       f"above the power roof: verified at {fraction:.0%} of the rate the spec's energy figures allow "
                       "under its power limit; those figures are calibrate's probes on random data (FMA chains, cuBLAS "
                       "GEMMs, a copy), and this kernel drew less per FLOP or byte, or ran above the limit over a "
                       "window shorter than the one the GPU holds it on",
                       "measure the energy figures on this GPU (roofline calibrate --energy -o FILE, then measure "
                       "--spec FILE); power_measured.fraction_of_time_roof gives the figure against the datasheet "
                       "roofs")
    return warning("model-under-counts",
                   f"the model under-counts: verified at {fraction:.0%} of the ceiling, which no kernel can beat "
                   f"(above {MODEL_ERROR_FRACTION:.0%} is a model error, not a success)",
                   "count only DRAM traffic in the descriptor's bytes (data the caches served is not DRAM traffic) "
                   "and every FLOP, or check the spec's figure")



# ---- one file --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultsDocument:
    """One results file: where it was measured, against which ceilings, and each kernel's result."""

    created: str
    tool_version: str
    backend: str
    device: Mapping[str, Any]
    machine: Mapping[str, Any] | None
    kernels: tuple[KernelResult, ...]
    policy: Mapping[str, Any] | None = None
    sweep: Mapping[str, Any] | None = None
    groups: tuple[Mapping[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_json(cls, doc: Any, path: Path | str = "<results>") -> "ResultsDocument":
        """Validate a parsed results document (roofline.records.schema); InputError naming the file and field of the
        first problem."""
        check_document(Path(path), doc, [s.value for s in Status])
        return cls.from_checked(doc)

    @classmethod
    def from_checked(cls, doc: Mapping[str, Any]) -> "ResultsDocument":
        """The typed form of a document that met the checks already (one device's part of a checked document,
        roofline.records.devices.split_devices), without checking it again."""
        named = {"schema", *TOP_FIELDS}
        return cls(created=doc["created"], tool_version=doc["tool_version"], backend=doc["backend"],
                   device=doc["device"], machine=doc["machine"],
                   kernels=tuple(KernelResult.from_fields(k) for k in doc["kernels"]), policy=doc.get("policy"),
                   sweep=doc.get("sweep"), groups=tuple(doc.get("groups", ())),
                   extra={k: v for k, v in doc.items() if k not in named})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": RESULTS_SCHEMA, "created": self.created, "tool_version": self.tool_version,
                               "backend": self.backend, "device": dict(self.device),
                               "machine": None if self.machine is None else dict(self.machine)}
        if self.policy is not None:
            out["policy"] = dict(self.policy)
        out["kernels"] = [k.to_json() for k in self.kernels]
        if self.sweep is not None:
            out["sweep"] = dict(self.sweep)
        if self.groups:
            out["groups"] = [dict(g) for g in self.groups]
        out.update(self.extra)
        return out

    @property
    def device_name(self) -> str:
        """The GPU's name as the file gives it."""
        return str(self.device["name"])

    @property
    def spec_id(self) -> str | None:
        """The spec the device was matched to, where the file says."""
        return self.device.get("spec_id")

    @property
    def device_index(self) -> Any:
        """The GPU's index, in a several-GPU file's part (roofline.records.devices.split_devices)."""
        return self.device.get("index")

    @property
    def device_kind(self) -> str | None:
        """'cpu' for a host rank's device block (a fleet's CPU rank); None where the block does not say."""
        return self.device.get("kind")

    @property
    def cupy_version(self) -> str | None:
        return self.device.get("cupy_version")

    @property
    def cuda_runtime(self) -> Any:
        return self.device.get("cuda_runtime")

    @property
    def spec_derived(self) -> bool:
        """The spec was derived from the device's properties (no spec file named the GPU)."""
        return bool(self.device.get("spec_derived"))

    @property
    def pci_bus_id(self) -> str | None:
        return self.device.get("pci_bus_id")

    @property
    def device_label(self) -> str | None:
        """Where a fleet's device ran: 'rank 5 on node-2 (GPU 1)'."""
        return self.device.get("label")

    @property
    def host(self) -> str | None:
        """The host a fleet's device ran on."""
        return self.device.get("host")

    @property
    def several_devices(self) -> bool:
        """Measured on several GPUs at once (a `devices` list: --device all, a fleet)."""
        return bool(self.extra.get("devices"))

    @property
    def fleet(self) -> bool:
        """A fleet's file (mpirun; roofline.fleet)."""
        return bool(self.extra.get("fleet"))

    @property
    def machine_id(self) -> str | None:
        """The spec the results were measured against; None for results measured without one (ceiling unknown)."""
        return self.machine["id"] if self.machine else None

    @property
    def source_with(self) -> Any:
        """What a profile's figures came from ('ncu' counters, 'torch' op models), as its `source` block says."""
        block = self.extra.get("source")
        return block.get("with") if isinstance(block, Mapping) else None

    @property
    def size_model(self) -> Mapping[str, Any]:
        """The block holding the size model's figures: a sweep's `sweep`, else `analyze --predict`'s `prediction`
        ({} for results that are neither)."""
        return self.sweep or self.extra.get("prediction") or {}

    @property
    def sweep_kernel(self) -> str | None:
        """The kernel a sweep's marker names (its series is drawn first); None for results that are not a sweep."""
        return self.sweep.get("kernel") if isinstance(self.sweep, Mapping) else None

    def grouped(self) -> tuple[Group, ...]:
        """The typed `groups` (a grouped profile's), built when asked: empty for results that are not grouped. Each
        share is of all the GPU time, the unmodelled work's included (issue 38)."""
        return Group.all_of(self.groups, self.gpu_time)

    @property
    def gpu_time(self) -> float:
        """All the GPU time the file accounts for: its timed launches and the work no model covers (`unmodelled`,
        an imported trace's)."""
        return sum(k.time_median or 0.0 for k in self.kernels) + unmodelled_time(self.extra)

    def unmodelled(self) -> Unmodelled | None:
        """The work no model covers, split by why, with its share of all GPU time; None for a document that keeps
        no `unmodelled` list (every launch it holds is on the roofline)."""
        return Unmodelled.of_document(self.extra, sum(k.time_median or 0.0 for k in self.kernels))

    def program(self) -> Program:
        """A grouped document's program totals as its groups give them, with what an importer stored beside them."""
        return Program.of(self.grouped(), self.extra.get("program"))

    def written_program(self) -> Program | None:
        """The stored `program` block's figures as written (what a table shows; check_groups found them equal to the
        groups'), None for a document without one."""
        block = self.extra.get("program")
        return Program.as_written(block) if block else None

    @property
    def timeline(self) -> Timeline | None:
        """The step's timeline (an imported PyTorch trace's), where the document has one."""
        return Timeline.of(self.extra.get("timeline"))

    def with_kernels(self, kernels: Sequence[KernelResult]) -> "ResultsDocument":
        return replace(self, kernels=tuple(kernels))

    def write(self, path: Path | str, force: bool = False) -> None:
        """Write the file `roofline report` and `roofline plot` read, atomically, after checking it as they will.
        An existing file that is not a results document is not replaced (InputError) unless force=True."""
        doc = self.to_json()
        ResultsDocument.from_json(doc, path)
        why = None if force else why_not_replace(path, document_writes(doc))
        if why is not None:
            raise InputError(f"{path}: not replaced: {why}; give another path, or write(path, force=True)")
        write_json_atomic(Path(path), doc)


def as_document(doc: "ResultsDocument | Mapping[str, Any]") -> ResultsDocument:
    """The typed form of a document a producer made and already checks on writing (measure, sweep, import hand
    their dict to the CLI's emit): a renderer takes this once at its entry, so its body reads only the typed form
    (issue 30). A ResultsDocument comes back as it is; a dict is not checked again, and its entries are taken as
    `as_result` takes them: a fleet's streamed sweep shows rank 0's entries in full and the others' measured
    figures only."""
    if isinstance(doc, ResultsDocument):
        return doc
    typed = ResultsDocument.from_checked({**doc, "kernels": []})
    return replace(typed, kernels=tuple(as_result(k) for k in doc.get("kernels") or ()))


_SHOWN_ONLY = {"params": {}, "dtype": "", "roof": "", "flops": 0.0, "bytes": 0.0, "intensity": 0.0, "verified": None}


def as_result(entry: "KernelResult | Mapping[str, Any]") -> KernelResult:
    """An entry as a renderer reads it. A dict is an entry built in memory that may hold only the measured figures a
    table shows (a test's row, a caller's from before the typed form): the analysis fields it lacks are left empty
    (no flops, no bytes, no roof), which no table column shows. Never written back: a file's entries are checked."""
    return entry if isinstance(entry, KernelResult) else KernelResult.from_fields({**_SHOWN_ONLY, **entry})


def check_results(doc: Any, path: Path | str) -> None:
    """require_results without building the typed form: the check of a document about to be written (an import of
    38,000 launches spends two seconds building what nobody reads)."""
    try:
        check_document(Path(path), doc, [s.value for s in Status])
    except RecursionError:
        raise InputError(f"{path}: nested too deeply to be a results document") from None


def require_results(doc: Any, path: Path | str) -> ResultsDocument:
    """The same check for a document already in memory (an importer's output, a test's)."""
    check_results(doc, path)
    return ResultsDocument.from_checked(doc)
