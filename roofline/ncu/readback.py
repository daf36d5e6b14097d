"""What `import ncu` and `profile` write must read back: the document is checked as `report` and `plot` will check
it, before anything is written or printed, and the ways an import goes wrong are named in words a user can act on.

  a launch over MAX_FRACTION of its ceiling   the counters were not taken on the --spec GPU: refused, naming both
                                              (over IMPOSSIBLE: on no GPU at all; the counts are not ncu's)
  a launch over ABOVE_CEILING of its ceiling  a note naming the likely cause (roofline.records.coverage.above_ceiling):
                                              a trace's bytes that fit in L2 were likely read from it; else the
                                              spec or the model (an ncu CSV: counted on another GPU than --spec)
  a group whose sums overflow a float          refused, naming the group (each launch's own figures were checked)
  anything else report would refuse           refused with report's own message, and "nothing was written"
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from roofline.errors import InputError
from roofline.records.coverage import above_ceiling, input_kind
from roofline.records.document import check_results
from roofline.records.schema import MAX_FRACTION
from roofline.model.units import format_flops, format_rate
from roofline.model.counts import counted

ABOVE_CEILING = 1.05  # above this share of its ceiling an imported launch beat the spec's GPU
IMPOSSIBLE = 1000.0  # no GPU is this many times another (a T4's 320 GB/s to a B200's 8 TB/s is 25x): not a wrong spec


def _percent(fraction: float) -> str:
    return f"{fraction:.0%}" if fraction < 1e4 else f"{fraction:.3g}×"


def _achieved(k: Mapping[str, Any]) -> str:
    def rate(value: float, fmt: Any, unit: str) -> str:
        return fmt(value) if value < 1e21 else f"{value:.3g} {unit}"  # beyond the unit table: plainly

    if k.get("bound") == "memory":
        return (f"{rate(k['achieved_bandwidth'], format_rate, 'B/s')} against {format_rate(k['bandwidth'])} of DRAM "
                "bandwidth")
    return (f"{rate(k['achieved_flops'], format_flops, 'FLOP/s')} against {format_flops(k['attainable_flops'])} "
            "attainable")


def _over(doc: Mapping[str, Any], limit: float) -> list[Mapping[str, Any]]:
    return [k for k in doc["kernels"] if (k.get("fraction_of_ceiling") or 0.0) > limit]


def check_import(doc: dict[str, Any], source: str) -> list[str]:
    """Notes for the user; InputError when the document must not be written."""
    spec = doc["machine"]["id"]
    kind = input_kind(doc)  # the Kineto trace or the ncu CSV: the words name what the user gave
    gpu = f"{kind} names {doc['device']['name']}" if doc["device"]["name"] != doc["machine"]["name"] else ""
    far = _over(doc, MAX_FRACTION)
    if far:
        k = max(far, key=lambda e: e["fraction_of_ceiling"])
        where = (f"{source}: {counted(len(far), 'launch')} would sit above {MAX_FRACTION:g}× their ceiling on {spec}, launch "
                 f"{k['params']['launch']} ({k['name']}) at {_percent(k['fraction_of_ceiling'])} ({_achieved(k)})")
        if k["fraction_of_ceiling"] > IMPOSSIBLE:
            raise InputError(f"{where}: no GPU comes near that, so these counts are not ones ncu writes",
                             fix="nothing was written")
        raise InputError(f"{where}: these counters were not taken on that GPU" + (f" ({gpu})" if gpu else ""),
                         fix="give --spec the GPU that ran the program (see 'roofline specs'); nothing was written")
    for where, block in [*((f"group {g.get('name')!r}", g) for g in doc.get("groups") or []),
                         ("the program", doc.get("program") or {})]:
        bad = next(((k, v) for k, v in block.items() if isinstance(v, float) and not math.isfinite(v)), None)
        if bad is not None:
            raise InputError(f"{source}: {where}: its {bad[0]} adds up to {bad[1]}: its launches' counts are too large "
                             "to be ones ncu writes", fix="nothing was written")
    notes = []
    above = _over(doc, ABOVE_CEILING)
    if above:
        k = max(above, key=lambda e: e["fraction_of_ceiling"])
        cause = above_ceiling(k["fraction_of_ceiling"], k.get("bound"), k.get("bytes"), doc.get("machine"), kind)
        why = cause.text.split(": ", 1)[-1] if cause is not None else ""
        notes.append(f"note: {counted(len(above), 'launch')} above their ceiling on {spec}, up to "
                     f"{_percent(k['fraction_of_ceiling'])} (launch {k['params']['launch']}, {k['name']}: "
                     f"{_achieved(k)}): {why}" + (f" ({gpu})" if gpu else ""))
    try:
        check_results(doc, f"{source} (as imported)")
    except InputError as exc:
        raise InputError(exc.reason, fix="nothing was written: 'roofline report' and 'plot' would refuse these "
                                         "results") from None
    return notes
