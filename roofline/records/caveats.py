"""Warnings about a figure, as data: {code, text, fix} records in the results (hyperfine's warnings carry their fix
the same way), so renderers and tools filter by code, never by the words, and every warning says what to do.

Files written before records were used hold plain strings; `record` reads both, with code "legacy".
"""

from __future__ import annotations

from typing import Any, Mapping

# The codes a result can carry, with what each means. A new warning gets a code here first.
CODES: dict[str, str] = {
    "noisy": "the timed runs spread more than 20 % (max/min)",
    "throttled": "the GPU's clocks were held down by its power or thermal limit during the window",
    "power-over-limit": "the window's mean power was above the power limit: a short excursion the limit's longer "
                        "average allows",
    "model-under-counts": "a verified kernel ran faster than its ceiling allows: the model counts too little",
    "above-power-roof": "a verified kernel ran faster than the power roof allows: the spec's energy figures are "
                        "too high for it",
    "graph-capture-failed": "the kernel could not be captured in a CUDA graph, so launches were timed directly",
    "unverified": "the result was timed without a check of its output",
    "cache-resident": "the working set fits in the cache and was not rotated between repeats",
    "flops-unknown": "the counters do not give the kernel's FLOPs (in full)",
    "roof-from-counters": "the counters put the kernel's work on another roof than its descriptor",
    "precision-ambiguous": "FP16 or BF16 work that neither the counters nor the kernel's name tell apart",
    "traffic-over-model": "the counters read more DRAM traffic than the model counts",
    "l2-reuse": "an imported kernel moved its modelled bytes faster than DRAM allows: inputs were still in the L2",
    "grid-upper-bound": "an imported multi-tensor kernel moved the grid model's bytes (an upper bound: blocks x the "
                        "chunk size) faster than DRAM allows: its tensors' last chunks held less",
    "energy-beyond-ceiling": "the kernel used less energy than the spec's minimum, beyond the counter's "
                             "uncertainty: the spec's energy figures are not this GPU's at this data and clock",
    "energy-constant-inputs": "an input array is constant, and power depends on the data: the energy can be 2x low",
    "legacy": "a warning from a file written before warnings carried a code",
}


def warning(code: str, text: str, fix: str | None = None) -> dict[str, Any]:
    if code not in CODES:
        raise ValueError(f"unknown warning code {code!r}: add it to roofline.records.caveats.CODES")
    return {"code": code, "text": text, "fix": fix}


def record(item: str | Mapping[str, Any]) -> dict[str, Any]:
    """A warning as a record, whether the file held a record or (before codes) a plain string."""
    if isinstance(item, str):
        return {"code": "legacy", "text": item, "fix": None}
    return {"code": str(item.get("code", "legacy")), "text": str(item.get("text", "")), "fix": item.get("fix")}


def line(item: str | Mapping[str, Any]) -> str:
    """One line for a person: the text, then what to do."""
    w = record(item)
    return f"{w['text']}; {w['fix']}" if w["fix"] else w["text"]


def valid(item: Any) -> bool:
    """What a results reader accepts: a string, or a record with a text and an optional fix."""
    if isinstance(item, str):
        return True
    return (isinstance(item, dict) and isinstance(item.get("code"), str) and isinstance(item.get("text"), str)
            and (item.get("fix") is None or isinstance(item.get("fix"), str)))
