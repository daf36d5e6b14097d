"""The file `roofline fleet links` writes (roofline/fleet-links/v1), read back and summarised. Pure: no MPI, no GPU.

    schema        "roofline/fleet-links/v1"
    backend       "cupy" (NCCL between GPUs) or "numpy" (MPI between host buffers)
    transport     "NCCL 2.21.5", "MPI (Open MPI v4.1.4), host memory"
    size, nodes   ranks in the job, nodes they ran on; hosts: the nodes' names; ranks: each rank's identity
    scopes        one per group that was measured: {scope: intra-node | inter-node, link: nvlink | network | null,
                  hosts, ranks, points}. intra-node: the ranks of one node (one scope per node); inter-node: every
                  rank of a job that spans nodes, so its figures are bound by the network between them.
    points        {collective, bytes (nccl-tests' S), requested_bytes, count (float32 elements in S), ranks,
                  status OK | FAILED, time (s, the slowest rank's median), algbw and busbw (B/s), iters;
                  error when FAILED}
    skipped       why a scope was not measured (one rank per node: no intra-node link; one node: no network)
    cut_short     only when --timeout ended the run: {timeout (s), step, error, not_reported (ranks), sizes (each
                  {scope, ranks, collective, bytes}: the size each group was measuring, a FAILED point in its
                  scope), unmeasured (what was never reached)}

History: v1 (this), the first; `cut_short` added (an optional key: files without it read as before).
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any, Mapping

from roofline.fleet import collectives as cv
from roofline.errors import at
from roofline.load.inputs import read_json
from roofline.records.files import MAX_RESULTS_BYTES

SCHEMA = "roofline/fleet-links/v1"
INTRA, INTER = "intra-node", "inter-node"
SCOPES = (INTRA, INTER)
DEFAULT_LINK = {("cupy", INTRA): "nvlink", ("cupy", INTER): "network"}  # NCCL only: MPI's host path is no GPU link


def scope_link(backend: str, scope: str) -> str | None:
    """The spec link a scope's NCCL figures are a roof for; None for the host transport (--backend numpy)."""
    return DEFAULT_LINK.get((backend, scope))


def load_links(path: Path) -> dict[str, Any]:
    """Read a roofline/fleet-links/v1 file and check every field the table, chart and spec writer use; an
    InputError naming the file and field otherwise."""
    doc = read_json(path, MAX_RESULTS_BYTES, "a fleet links JSON file")
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        hint = " (that is 'roofline interconnect' output: draw it with plot --interconnect)" \
            if got == "roofline/interconnect/v1" else ""
        raise at(path, "schema", f"is {got!r:.60}; expected '{SCHEMA}' (written by 'roofline fleet links -o')"
                 + hint)
    if doc.get("backend") not in ("cupy", "numpy"):
        raise at(path, "backend", f"expected 'cupy' or 'numpy', got {doc.get('backend')!r:.40}")
    scopes = doc.get("scopes")
    if not isinstance(scopes, list):
        raise at(path, "scopes", "expected a list of measured scopes")
    for i, scope in enumerate(scopes):
        where = f"scopes[{i}]"
        if not isinstance(scope, dict) or scope.get("scope") not in SCOPES:
            raise at(path, f"{where}.scope", f"expected one of {', '.join(SCOPES)}")
        points = scope.get("points")
        if not isinstance(points, list):
            raise at(path, f"{where}.points", "expected a list")
        for j, p in enumerate(points):
            _check_point(path, f"{where}.points[{j}]", p)
    return doc


def _check_point(path: Path, where: str, p: Any) -> None:
    if not isinstance(p, dict):
        raise at(path, where, "expected a mapping")
    if p.get("collective") not in cv.COLLECTIVES:
        raise at(path, f"{where}.collective", f"expected one of {', '.join(cv.COLLECTIVES)}, got "
                                              f"{p.get('collective')!r:.40}")
    keys = ("bytes", "ranks") + (("time", "algbw", "busbw") if p.get("status") == "OK" else ())
    if p.get("status") not in ("OK", "FAILED"):
        raise at(path, f"{where}.status", f"expected OK or FAILED, got {p.get('status')!r:.40}")
    for key in keys:
        value = p.get(key)
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0
        if not ok or (key in ("bytes", "ranks", "time") and not value > 0):
            raise at(path, f"{where}.{key}", f"expected a {'positive' if key != 'busbw' else 'non-negative'} "
                                             f"number, got {value!r:.40}")


def ok_points(scope: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [p for p in scope.get("points", []) if p.get("status") == "OK"]


def failures(doc: Mapping[str, Any]) -> list[str]:
    """'intra-node: rank 1 on node-0: all-reduce of 4096 B wrong ...' for each point that FAILED (its error names
    the collective and the size)."""
    out = []
    for scope in doc.get("scopes", []):
        for p in scope.get("points", []):
            if p.get("status") == "FAILED":
                out.append(f"{scope['scope']}: {p.get('error')}")
    return out


def peak(scope: Mapping[str, Any], collective: str | None = None) -> dict[str, Any] | None:
    """The point of highest bus bandwidth in a scope (of one collective, or of any), or None."""
    points = [p for p in ok_points(scope) if collective is None or p["collective"] == collective]
    return max(points, key=lambda p: p["busbw"], default=None)


def best_by_scope(doc: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """{scope: {busbw, collective, bytes, ranks, groups}}: the best bus bandwidth of each scope kind, over every
    collective and size. Several nodes' intra-node groups give the median of their peaks (one slow node does not
    set every node's roof, nor one fast one). A group of one rank crosses no link and counts for nothing."""
    found: dict[str, list[dict[str, Any]]] = {}
    for scope in doc.get("scopes", []):
        best = peak(scope)
        if best is not None and best["ranks"] >= 2 and best["busbw"] > 0:
            found.setdefault(scope["scope"], []).append(best)
    out = {}
    for kind, peaks in found.items():
        value = statistics.median(b["busbw"] for b in peaks)
        nearest = min(peaks, key=lambda b: abs(b["busbw"] - value))
        out[kind] = {"busbw": value, "collective": nearest["collective"], "bytes": nearest["bytes"],
                     "ranks": nearest["ranks"], "groups": len(peaks)}
    return out


def link_roofs(doc: Mapping[str, Any], intra_link: str = "nvlink") -> dict[str, dict[str, Any]]:
    """{link: best_by_scope's entry + scope}: the roof a measured spec takes for each link kind from an NCCL run,
    intra-node as `intra_link` (nvlink, or pcie where the GPUs talk over PCIe), inter-node as `network`. Nothing
    from --backend numpy: MPI between host buffers is no GPU link."""
    if doc.get("backend") != "cupy":
        return {}
    links = {INTRA: intra_link, INTER: "network"}
    return {links[kind]: {**best, "scope": kind} for kind, best in best_by_scope(doc).items()}
