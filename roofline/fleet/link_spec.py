"""NCCL's measured link roofs written into a measured spec's `interconnect` block, so descriptors with
`interconnect:` bytes analyze against what the links really carry.

A spec's link `bandwidth` is both directions summed, as datasheets print it (roofline.model.types.Link), and the model
divides it by two; nccl-tests' bus bandwidth is one direction's. So the spec gets 2 x busbw, and analyze's roof for
the link is the busbw itself. Each figure gets a source entry saying how it was measured; a link the spec already
had (calibrate's peer copies for nvlink) is replaced and said so. Pure: documents in, a document out.
"""

from __future__ import annotations

from typing import Any, Mapping

from roofline.fleet import collectives as cv
from roofline.model.units import format_bytes, format_rate, quantity_text
from roofline.model.counts import counted

_BEFORE = ("notes", "sources", "measured", "measurement")  # the bundled specs' order: interconnect before these


def where(doc: Mapping[str, Any]) -> str:
    """'roofline fleet links 0.9 over NCCL 2.21.5, 16 ranks on 2 nodes, 2026-05-01'."""
    return (f"roofline fleet links {doc.get('tool_version', '?')} over {doc.get('transport') or doc.get('backend')}, "
            f"{doc.get('size')} ranks on {counted(doc.get('nodes'), 'node')}, {str(doc.get('created', ''))[:10]}")


def with_link_roofs(spec_doc: Mapping[str, Any], roofs: Mapping[str, Mapping[str, Any]],
                    source: str) -> tuple[dict[str, Any], list[str]]:
    """The spec document with `interconnect.<link>.bandwidth` = 2 x the best busbw of each link in `roofs`
    (roofline.fleet.links_doc.link_roofs), a source entry for each, and notes for the people reading the output
    (a link replaced, with its old figure)."""
    out = {k: v for k, v in spec_doc.items()}
    block = {k: dict(v) for k, v in (out.get("interconnect") or {}).items()}
    sources = [dict(s) for s in out.get("sources") or []]
    notes = []
    for link, roof in roofs.items():
        field = f"interconnect.{link}.bandwidth"
        old = block.get(link, {}).get("bandwidth")
        if old is not None:
            new = quantity_text(2 * roof["busbw"], "bandwidth")
            one_way = format_rate(roof["busbw"])
            notes.append(f"interconnect.{link}: {old} replaced by NCCL's {new} (2 x busbw {one_way})")
        block[link] = {**{k: v for k, v in block.get(link, {}).items() if k != "bandwidth"},
                       "bandwidth": quantity_text(2 * roof["busbw"], "bandwidth")}
        for s in sources:  # the old figure's citation no longer holds
            if isinstance(s.get("for"), list) and field in s["for"]:
                s["for"] = [f for f in s["for"] if f != field]
        groups = f", median over {roof['groups']} nodes' peaks" if roof.get("groups", 1) > 1 else ""
        sources.append({"for": [field], "cite": (
            f"{source}: best nccl-tests bus bandwidth ({roof['scope']}, one direction) {format_rate(roof['busbw'])}, "
            f"{cv.LABELS[roof['collective']]} of {format_bytes(roof['bytes'], binary=True)} on {roof['ranks']} "
            f"ranks{groups}, every result checked before it was timed; written x 2 (both directions summed, the "
            "spec's convention), so analyze's one-direction roof is the busbw")})
    sources = [s for s in sources if not isinstance(s.get("for"), list) or s["for"]]
    ordered: dict[str, Any] = {}
    for key, value in out.items():
        if key in _BEFORE and "interconnect" not in ordered:
            ordered["interconnect"] = block
        if key != "interconnect":
            ordered[key] = value
        elif "interconnect" not in ordered:
            ordered["interconnect"] = block
    ordered.setdefault("interconnect", block)
    ordered["sources"] = sources
    return ordered, notes
