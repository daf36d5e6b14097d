"""How much of a profile its figures cover, and what a figure above its ceiling means (issue 38, items 4 and 5).

An imported trace puts on the roofline only the work a model covers; the rest (an op without a model, a CUDA-graph
replay, a kernel launched outside any op) is listed in the document's `unmodelled` with its time and why. Every
share a renderer shows is of ALL the GPU time, modelled or not, and every whole-program figure (the program's
fraction of ceiling, MFU, HFU) computed from the modelled part alone is a bound, not a value, once more than
MATERIAL of the GPU time has no model: see `fraction_bounds` and `utilisation_bounds` for which way each bound
holds and why.

A kernel, group or program above ABOVE_CEILING of its ceiling did not beat the GPU: its figure is wrong, and
`above_ceiling` names the likely reason (operands the L2 served, or the spec or the model). Pure: numbers and
words, no formatting beyond the words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from roofline.model.units import format_bytes

MATERIAL = 0.01  # above this share of GPU time with no model, whole-program figures are bounds, not values
MAX_UNMODELLED = 0.05  # report's default --max-unmodelled: a program gate judges at most this much unknown
MOSTLY_UNKNOWN = 0.5  # above this share with no model a bound says nothing worth printing: "n/a"
ABOVE_CEILING = 1.02  # above this fraction of its ceiling a figure is an error, not a success (measure's too)
REASONS_SHOWN = 5  # the unmodelled row names this many reasons; the rest are counted

# ops that take the step's parameters as tensor lists: PyTorch's profiler records no shapes for a list of 30 or
# more tensors (torch/csrc/profiler/util.cpp), so a plain trace cannot model them; `profile --with torch`
# annotates the optimizer step with the parameter shapes (roofline.kineto.document.PARAM_LIST_OPS)
_LIST_OPS = re.compile(r"_foreach_|_fused_adam|_fused_sgd|_amp_foreach|multi_tensor_apply|Optimizer\.step",
                       re.IGNORECASE)
PROFILE_HINT = ("`roofline profile --with torch` records their shapes (a plain trace keeps none for a list of 30 or "
                "more tensors)")


@dataclass(frozen=True)
class Reason:
    """The unmodelled events that share one reason: their time, its share of all GPU time, and the ops."""

    why: str
    time: float
    share: float
    events: int
    ops: tuple[str, ...]
    hint: str | None = None  # what would give them a model, where the events are of list ops from a plain trace

    @property
    def text(self) -> str:
        return self.why + (f"; {self.hint}" if self.hint else "")

    def to_json(self) -> dict[str, Any]:
        return {"why": self.why, "time": self.time, "share": self.share, "events": self.events,
                "ops": list(self.ops), **({"hint": self.hint} if self.hint else {})}


@dataclass(frozen=True)
class Unmodelled:
    """The GPU time no model covers, split by why (largest first), with its share of all GPU time."""

    time: float
    gpu_time: float
    reasons: tuple[Reason, ...]

    @property
    def share(self) -> float:
        return self.time / self.gpu_time if self.gpu_time > 0 else 0.0

    @property
    def material(self) -> bool:
        """More than MATERIAL of the GPU time has no model: whole-program figures are bounds."""
        return self.share > MATERIAL

    @classmethod
    def of(cls, entries: Sequence[Mapping[str, Any]] | None, gpu_time: float, source_with: Any = None
           ) -> "Unmodelled":
        """From a document's `unmodelled` list ({why, time, op, ...}) and all the GPU time. `source_with` is the
        document's source.with: 'torch' for `profile --with torch`, which already annotates the list ops."""
        by: dict[str, list[Mapping[str, Any]]] = {}
        for e in entries or ():
            if isinstance(e, Mapping):
                by.setdefault(str(e.get("why") or "no reason given"), []).append(e)
        reasons = []
        for why, items in by.items():
            time = sum(float(e.get("time") or 0.0) for e in items)
            ops: dict[str, float] = {}
            for e in items:
                op = str(e.get("op") or e.get("name") or "?")
                ops[op] = ops.get(op, 0.0) + float(e.get("time") or 0.0)
            names = tuple(sorted(ops, key=lambda o: -ops[o]))
            listy = source_with != "torch" and any(_LIST_OPS.search(o) for o in names)
            reasons.append(Reason(why, time, time / gpu_time if gpu_time > 0 else 0.0, len(items), names,
                                  PROFILE_HINT if listy else None))
        reasons.sort(key=lambda r: (-r.time, r.why))
        return cls(sum(r.time for r in reasons), gpu_time, tuple(reasons))

    @classmethod
    def of_document(cls, doc: Mapping[str, Any], modelled_time: float) -> "Unmodelled | None":
        """A results document's unmodelled work; None for a document that keeps no such list (an ncu import, a
        measurement: every launch it holds is on the roofline)."""
        entries = doc.get("unmodelled")
        if not isinstance(entries, list):
            return None
        time = sum(float(e.get("time") or 0.0) for e in entries if isinstance(e, Mapping))
        source = doc.get("source")
        return cls.of(entries, modelled_time + time, source.get("with") if isinstance(source, Mapping) else None)

    def to_json(self) -> dict[str, Any]:
        return {"time": self.time, "gpu_time": self.gpu_time, "share": self.share,
                "reasons": [r.to_json() for r in self.reasons]}

    @classmethod
    def from_json(cls, block: Mapping[str, Any]) -> "Unmodelled":
        """The block to_json wrote (a report's program row carries it)."""
        return cls(block["time"], block["gpu_time"], tuple(
            Reason(r["why"], r["time"], r["share"], r["events"], tuple(r.get("ops") or ()), r.get("hint"))
            for r in block.get("reasons") or ()))


@dataclass(frozen=True)
class Bounds:
    """A whole-program figure when some GPU time has no model: the figure from the modelled part alone, the range
    the true figure lies in, and the share of GPU time that makes it a range."""

    modelled: float | None
    low: float | None
    high: float | None
    unmodelled_share: float

    @property
    def exact(self) -> bool:
        """At most MATERIAL of the GPU time has no model: the modelled figure stands for the whole."""
        return self.unmodelled_share <= MATERIAL

    @property
    def unknown(self) -> bool:
        """Most of the GPU time has no model: the range says nothing worth printing."""
        return self.unmodelled_share > MOSTLY_UNKNOWN or self.low is None

    def to_json(self) -> dict[str, Any]:
        return {"modelled": self.modelled, "low": self.low, "high": self.high,
                "unmodelled_share": self.unmodelled_share}


def fraction_bounds(sol_time: float, modelled_time: float, unmodelled_time: float) -> Bounds:
    """The program's time-weighted fraction of ceiling over ALL its GPU time, T = modelled + unmodelled.

    The true fraction is (sol_m + sol_u) / T, where sol_u, the unmodelled work's speed-of-light time, is unknown.
    sol_u >= 0 (no work takes negative time), so sol_m / T is a valid LOWER bound whatever the unmodelled work is.
    sol_u <= T_u holds when no unmodelled kernel beats its roof (the same premise as every roofline: a kernel
    above its ceiling is an error, see above_ceiling), so (sol_m + T_u) / T is the upper bound. The figure from the
    modelled part alone, sol_m / T_m, lies inside the range (when it is at most 1) but is neither bound: it assumes
    the unmodelled work runs at the modelled work's mean fraction, which nothing says. The same reasoning bounds the
    fraction over the wall time (sol / wall): utilisation_bounds, with T_u / wall as the most it can add."""
    total = modelled_time + unmodelled_time
    modelled = sol_time / modelled_time if modelled_time > 0 else None
    if total <= 0:
        return Bounds(modelled, None, None, 0.0)
    return Bounds(modelled, sol_time / total, (sol_time + unmodelled_time) / total, unmodelled_time / total)


def utilisation_bounds(value: float | None, unmodelled_time: float, wall_time: float, gpu_time: float) -> Bounds:
    """MFU or HFU (FLOPs / (wall time x peak)) when `unmodelled_time` of the GPU time has no model.

    The wall time and the peak are measured or given, whatever the models cover; only the FLOPs are missing. The
    unmodelled work can only ADD FLOPs (it does some work, never negative work), so the modelled figure is a valid
    LOWER bound: "MFU >= x". It can add at most unmodelled_time x peak FLOPs (no kernel beats the peak), so
    value + unmodelled_time / wall_time is the upper bound."""
    share = unmodelled_time / gpu_time if gpu_time > 0 else 0.0
    if value is None:
        return Bounds(None, None, None, share)
    high = value + unmodelled_time / wall_time if wall_time > 0 else None
    return Bounds(value, value, high, share)


@dataclass(frozen=True)
class AboveCeiling:
    """Why a figure above its ceiling is wrong: `cause` is 'l2-resident' or 'spec-or-model', `text` says it."""

    fraction: float
    cause: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"fraction_of_ceiling": self.fraction, "cause": self.cause, "text": self.text}


INPUT_KINDS = {"kineto": "the Kineto trace", "ncu": "the ncu CSV"}


def input_kind(doc: Mapping[str, Any]) -> str:
    """What a results document was made from, in words: 'the Kineto trace', 'the ncu CSV' or 'the results file'."""
    source = doc.get("source")
    tool = source.get("tool") if isinstance(source, Mapping) else None
    if tool is None and isinstance(source, Mapping) and source.get("with") == "ncu":
        tool = "ncu"
    return INPUT_KINDS.get(str(tool), "the results file")


def l2_size(machine: Mapping[str, Any] | None) -> float | None:
    """The spec's L2 size in bytes, where the results' machine block gives it."""
    caches = (machine or {}).get("caches")
    l2 = caches.get("l2") or caches.get("L2") if isinstance(caches, Mapping) else None
    size = l2.get("size") if isinstance(l2, Mapping) else None
    return float(size) if isinstance(size, (int, float)) and size > 0 else None


def above_ceiling(fraction: float | None, bound: str | None, bytes_per_launch: float | None,
                  machine: Mapping[str, Any] | None, kind: str = "the results file") -> AboveCeiling | None:
    """None at or below ABOVE_CEILING; else the likely reason the figure beats the roof.

    A memory-bound launch whose modelled bytes fit in the spec's L2 most likely read operands the kernel before it
    left there (a trace's `aten::mul` on a 16.8 MB tensor at 5.35 TB/s on a 4.8 TB/s H200): the model counts the
    DRAM traffic a cold cache would need. Otherwise (the bytes do not fit, or the work is compute-bound) the spec's
    roof is below this GPU's, or the model counts too few bytes or FLOPs; for an ncu CSV, whose bytes are counted,
    most likely the counters came from another GPU than --spec names."""
    if fraction is None or fraction <= ABOVE_CEILING:
        return None
    l2 = l2_size(machine)
    spec = (machine or {}).get("id") or "the spec"
    at = f"above its ceiling, at {fraction:.0%} of it"
    counted = kind == INPUT_KINDS["ncu"]  # ncu counts the DRAM bytes themselves: an L2 hit is not among them
    if (not counted and bound == "memory" and l2 is not None and bytes_per_launch is not None
            and 0 < bytes_per_launch <= l2):
        return AboveCeiling(fraction, "l2-resident", (
            f"{at}: its {format_bytes(bytes_per_launch)} per launch fit in the {format_bytes(l2)} L2 of {spec}, so "
            "its operands were likely still in L2 from the kernel before (L2-resident), read faster than DRAM; "
            "the model counts the DRAM traffic a cold cache would need"))
    if counted:
        blame = (f"its bytes and FLOPs are counted by ncu, and no GPU beats its roof: {kind} was likely taken on "
                 f"another GPU than {spec}, so is --spec the GPU that ran it?")
    else:
        blame = (f"no GPU beats its roof: the model of its work (from {kind}) counts too few bytes or FLOPs, or "
                 f"the {spec} spec's roof is below this GPU's (check --spec)")
    why = ("" if l2 is None or bound != "memory" or counted
           else f" (its bytes do not fit the {format_bytes(l2)} L2)")
    return AboveCeiling(fraction, "spec-or-model", f"{at}{why}: {blame}")


def bound_of(intensity: float | None, roof: str, machine: Mapping[str, Any] | None) -> str | None:
    """'memory' or 'compute' for work of this intensity under `roof` (below or above the ridge); None where the
    machine block lacks the roof. Work with no FLOPs (intensity None or 0) is memory-bound."""
    if not intensity:
        return "memory"
    roofs = (machine or {}).get("roofs") or {}
    bandwidth = (machine or {}).get("bandwidth")
    if roof not in roofs or not bandwidth:
        return None
    return "memory" if intensity < roofs[roof] / bandwidth else "compute"
