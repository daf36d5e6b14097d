"""Rank documents → one fleet document (pure): the `--device all` merge (roofline.records.devices.merge_documents)
with the rank as the device key, every entry naming its host, rank, local rank, device and GPU, and a `fleet`
block saying which ranks finished, failed or hung."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from roofline.fleet.identity import rank_label
from roofline.measurement.multi.pool import Outcome
from roofline.records.devices import merge_documents
from roofline.measurement.multi.measure import raise_for_none

DONE, FAILED, HUNG = "done", "failed", "hung"


@dataclass
class RankOutcome:
    """What rank 0 knows of one rank: its identity (once sent), then its document, its error, or that it hung."""

    rank: int
    identity: dict[str, Any] = field(default_factory=dict)
    state: str | None = None  # DONE, FAILED, HUNG; None while it is still running
    document: dict[str, Any] | None = None
    error: str | None = None
    kind: str | None = None  # the exception's class name
    detail: str | None = None  # its traceback

    def label(self) -> str:
        return rank_label({**self.identity, "rank": self.rank}) if self.identity.get("host") else f"rank {self.rank}"


def part(out: RankOutcome) -> dict[str, Any]:
    """One rank's document with its rank as the device key and its identity in the device block and every entry
    (idempotent: a part made again from a part is the same)."""
    assert out.document is not None
    ident = {**out.identity, "rank": out.rank}
    device = {**out.document["device"], **{k: v for k, v in ident.items() if v is not None},
              "device_id": out.rank, "label": rank_label(ident)}
    fields = {k: ident.get(k) for k in ("host", "rank", "local_rank", "device_index", "uuid", "pci_bus_id")}
    return {**out.document, "device": device, "kernels": [{**k, **fields} for k in out.document["kernels"]]}


def failure_lines(outcomes: Mapping[int, RankOutcome], timeout: float | None = None) -> list[str]:
    """'rank 2 on node-1 (GPU 2): RuntimeError: …' for each rank that failed, 'rank 3 …: hung: …' for each that hung."""
    lines = []
    for rank, out in sorted(outcomes.items()):
        if out.state == FAILED:
            lines.append(f"{out.label()}: {out.error}")
        elif out.state in (HUNG, None):
            within = f" within --timeout {timeout:g} s" if timeout is not None else ""
            lines.append(f"{out.label()}: hung: no result{within}")
    return lines


def raise_if_none(outcomes: Mapping[int, RankOutcome], timeout: float | None = None) -> None:
    """No rank produced a result, so there is nothing to write: raise the ranks' own error class where they agree
    (all InputError: exit 2; all BackendUnavailable: exit 3, with its fix), else GateFailed (exit 1); the ranks
    that failed the same way are named in one line."""
    if not any(o.state == DONE and o.document is not None for o in outcomes.values()):
        raise_for_none(outcomes.values(), "; ".join(grouped_failures(outcomes, timeout)), "rank")


def fleet_document(outcomes: Mapping[int, RankOutcome], size: int, timeout: float | None = None,
                   gather: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The one results file of the job. Ranks that failed are in `device_errors` (as `--device all` lists a failed
    GPU) and, with those that hung, in the `fleet` block, with what the gather cost (roofline.fleet.mpi.GatherStats).
    With no rank's results there is nothing to write (raise_if_none)."""
    raise_if_none(outcomes, timeout)
    parts = [part(o) for _, o in sorted(outcomes.items()) if o.state == DONE and o.document is not None]
    failed = {r: Outcome(r, error=o.error if o.state == FAILED else "hung: no result", kind=o.kind,
                         identity=o.identity)
              for r, o in outcomes.items() if o.state != DONE}
    doc = merge_documents(parts, failed)
    doc["device"]["kind"] = parts[0]["device"].get("kind", "gpu")
    doc["fleet"] = {
        "engine": "mpi", "size": size, "timeout": timeout,
        "hosts": sorted({str(o.identity["host"]) for o in outcomes.values() if o.identity.get("host")}),
        "done": [r for r, o in sorted(outcomes.items()) if o.state == DONE],
        "failed": [{"rank": r, "host": o.identity.get("host"), "error": o.error}
                   for r, o in sorted(outcomes.items()) if o.state == FAILED],
        "hung": [{"rank": r, "host": o.identity.get("host")}
                 for r, o in sorted(outcomes.items()) if o.state in (HUNG, None)],
    }
    if gather is not None:
        doc["fleet"]["gather"] = dict(gather)
    return doc


def rank_ranges(ranks: list[int]) -> str:
    """[0, 1, 2, 3, 7, 9, 10] → '0-3, 7, 9-10': a set of ranks in a line, however many."""
    spans: list[list[int]] = []
    for r in sorted(set(ranks)):
        if spans and r == spans[-1][1] + 1:
            spans[-1][1] = r
        else:
            spans.append([r, r])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def grouped_failures(outcomes: Mapping[int, RankOutcome], timeout: float | None = None, hosts: int = 4) -> list[str]:
    """failure_lines with the ranks that failed the same way in one line ('ranks 0-63 on node-1, node-2 and 14
    more: calibrate measures a GPU: ...'), so a job whose every rank lacks CuPy says so once, not 10,000 times."""
    within = f" within --timeout {timeout:g} s" if timeout is not None else ""
    by_error: dict[str, list[RankOutcome]] = {}
    for _, out in sorted(outcomes.items()):
        if out.state == FAILED:
            by_error.setdefault(str(out.error), []).append(out)
        elif out.state in (HUNG, None):
            by_error.setdefault(f"hung: no result{within}", []).append(out)
    lines = []
    for error, outs in by_error.items():
        if len(outs) == 1:
            lines.append(f"{outs[0].label()}: {error}")
            continue
        names = sorted({str(o.identity.get("host")) for o in outs if o.identity.get("host")})
        on = ""
        if names:
            more = f" and {len(names) - hosts} more" if len(names) > hosts else ""
            on = f" on {', '.join(names[:hosts])}{more}"
        lines.append(f"ranks {rank_ranges([o.rank for o in outs])}{on}: {error}")
    return lines
