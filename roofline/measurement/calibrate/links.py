"""`calibrate --device all`, the links: the measured interconnect (roofline/interconnect/v1) as the measured spec's
`interconnect` block, in the datasheet's convention (both directions summed), each figure cited with how it was made.

Pure: the measurement itself is roofline.measurement.interconnect. A link the run did not measure (one GPU, no peer
access) is left out of the block, never copied from the datasheet.
"""

from __future__ import annotations

import statistics
from typing import Any, Mapping

from roofline.model.units import quantity_text
from roofline.model.counts import counted


def link_figures(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{link: {bandwidth (B/s, both directions summed), method}} from an interconnect document.

    nvlink: the median over GPU pairs of the copy both ways at once (two cudaMemcpyPeerAsync, one per direction,
    overlapped): that is the datasheet's both-directions figure measured directly. pcie: the median over GPUs of
    host→device plus device→host, each measured alone with pinned memory (the sum of the two one-way figures)."""
    out: dict[str, dict[str, Any]] = {}
    peer = doc.get("peer") or {}
    both = [p["bandwidth"] for p in peer.get("both_ways", []) if p.get("bandwidth")] if isinstance(peer, dict) else []
    if both:
        out["nvlink"] = {"bandwidth": statistics.median(both),
                         "method": f"peer copies both ways at once (cudaMemcpyPeerAsync, {_size(peer)} each way, "
                                   f"checked, CUDA events), median over {counted(len(both), 'GPU pair')}"}
    host = doc.get("host") if isinstance(doc.get("host"), list) else []
    sums = [h["h2d"] + h["d2h"] for h in host if h.get("h2d") and h.get("d2h")]
    if sums:
        out["pcie"] = {"bandwidth": statistics.median(sums),
                       "method": "pinned host->device plus device->host (cudaMemcpyAsync, each direction timed "
                                 f"alone, checked, CUDA events), median over {counted(len(sums), 'GPU')}"}
    return out


def _size(peer: Mapping[str, Any]) -> str:
    size = peer.get("bytes")
    return quantity_text(float(size), "bytes") if size else "one buffer"


def with_interconnect(spec_doc: Mapping[str, Any], doc: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The measured spec with an `interconnect` block of the links measured, and a source entry for each."""
    figures = link_figures(doc)
    if not figures:
        return dict(spec_doc)
    out = dict(spec_doc)
    block = {name: {"bandwidth": quantity_text(f["bandwidth"], "bandwidth")} for name, f in figures.items()}
    sources = list(out.get("sources", []))
    for name, f in figures.items():
        sources.append({"for": [f"interconnect.{name}.bandwidth"], "cite": f"{where}: {f['method']}"})
    # insert before notes/sources so the file reads in the bundled specs' order
    ordered: dict[str, Any] = {}
    for key, value in out.items():
        if key in ("notes", "sources", "measured", "measurement") and "interconnect" not in ordered:
            ordered["interconnect"] = block
        ordered[key] = value
    ordered.setdefault("interconnect", block)
    ordered["sources"] = sources
    return ordered
