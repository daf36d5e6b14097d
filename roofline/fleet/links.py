"""`roofline fleet links`, the job: which groups of ranks to measure (intra-node, inter-node), the engine opened on
each with every rank agreeing before and after, the sweep (roofline.fleet.collective_sweep), and the one document
rank 0 returns (roofline.fleet.links_doc).

Intra-node: the ranks of one node, from MPI's shared-memory split (every node measures its own group at once).
Inter-node: all ranks, when they span more than one node; NCCL's figures are then bound by the network. A job of
one rank is an intra-node group of one (NCCL and MPI both run with one rank): it exercises the whole path on one
GPU, although its reductions cross no link (busbw 0) and its send/recv is a copy within the GPU.

Every failure is agreed on by the whole job before anyone goes on, so no rank waits in a collective another has
left: a setup failure (no NCCL on a rank) ends the job with that rank's error on every rank, a failed size is
FAILED in the file with the rank that failed it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Callable

from roofline.errors import BackendUnavailable, GateFailed, InputError, RooflineError
from roofline.fleet.collective_sweep import Control, Plan, corrupt_targets, run_sweep
from roofline.fleet.identity import host_name
from roofline.fleet.links_doc import INTER, INTRA, SCHEMA, scope_link

BACKENDS = ("cupy", "numpy")
TIMING = ("CUDA event pairs around back-to-back runs (as many as make a sample last 100 us, at most 64), per run",
          "host clock from a barrier to the end of each run")


def _attempt(step: Callable[[], Any]) -> tuple[Any, tuple[str, str] | None]:
    try:
        return step(), None
    except RooflineError as exc:
        return None, (type(exc).__name__, exc.message)
    except Exception as exc:  # noqa: BLE001 - a rank's failure is agreed on, never left to hang the others
        first = (str(exc).strip().splitlines() or [""])[0]
        return None, (type(exc).__name__, f"{type(exc).__name__}: {first}".rstrip(": "))


def _agree(control: Control, who: str, error: tuple[str, str] | None) -> None:
    """Raise the same error on every rank of `control` when any rank had one (exit 3 when every failing rank lacked
    its backend, 2 for input errors, else 1), naming each failing rank."""
    errors = [e for e in control.allgather((who, *error) if error else None) if e]
    if not errors:
        return
    kinds = {kind for _, kind, _ in errors}
    text = "; ".join(f"{w}: {m}" for w, _, m in errors[:4]) + (
        f"; and {len(errors) - 4} more rank(s)" if len(errors) > 4 else "")
    kind = (BackendUnavailable if kinds == {"BackendUnavailable"} else InputError if kinds == {"InputError"}
            else GateFailed)
    if control.size == 1:
        raise kind(errors[0][2])
    raise kind(f"{len(errors)} of {control.size} rank(s) could not set up: {text}")


def _open(backend: str, control: Control, device: int) -> Any:
    if backend == "numpy":
        from roofline.fleet.mpi_links import NumpyEngine

        return NumpyEngine(control)  # type: ignore[arg-type]
    from roofline.fleet.nccl import NcclEngine

    return NcclEngine(device)


def rank_identity(engine: Any, rank: int, local_rank: int, host: str) -> dict[str, Any]:
    """Who measured: host, rank, local rank and the device (a GPU's index, name, UUID, PCI bus id; the host CPU)."""
    ident = dict(engine.identity())
    return {"rank": rank, "host": host, "local_rank": local_rank, "device_index": ident.pop("index", None), **ident}


def run_links(backend: str, plan: Plan, world: Control, node: Control,
              on_point: Callable[[str, dict[str, Any]], None] = lambda scope, p: None,
              on_note: Callable[[str], None] = lambda line: None) -> dict[str, Any] | None:
    """The whole job on this rank; rank 0 gets the document, the others None. A rank that cannot set up raises
    the agreed error on every rank (no rank goes on alone)."""
    if backend not in BACKENDS:
        raise InputError(f"--backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    host = host_name() + (f"#{node.node_tag}" if getattr(node, "node_tag", None) else "")
    who = f"rank {world.rank} on {host}"
    device = node.rank  # the node-local rank takes the node's GPU of that index
    corrupt = corrupt_targets(world.rank)
    leaders = [h for h in world.allgather(host if node.rank == 0 else None) if h is not None]
    widest = max(world.allgather(node.size))
    members = node.allgather((world.rank, host))

    # (scope, the group this rank measures it in, whether its group measures it); every rank takes every step
    # below, active or not, so the job-wide agreements line up.
    groups: list[tuple[str, Control, bool]] = []
    skipped = []
    if widest > 1 or world.size == 1:
        groups.append((INTRA, node, node.size > 1 or world.size == 1))
    else:
        skipped.append(f"{INTRA}: one rank per node, so no link within a node was crossed")
    if len(leaders) > 1:
        groups.append((INTER, world, True))
    else:
        skipped.append(f"{INTER}: every rank is on one node ({leaders[0] if leaders else host}), so the network "
                       "was not crossed")

    scopes: list[dict[str, Any]] = []
    identity: dict[str, Any] | None = None
    transport: str | None = None
    for scope, control, active in groups:
        engine, error = _attempt(lambda: _open(backend, control, device)) if active else (None, None)
        _agree(world, who, error)
        if active and hasattr(engine, "connect"):
            _, error = _attempt(lambda: engine.connect(control))
        _agree(world, who, error)
        if engine is not None and identity is None:
            identity = rank_identity(engine, world.rank, node.rank, host)
            transport = engine.transport()
        block = None
        if active:
            if world.rank == 0:
                on_note(f"fleet links: {scope}, {control.size} rank(s) a group, over {transport}")
            try:
                points = run_sweep(engine, control, plan, who,
                                   (lambda p, s=scope: on_point(s, p)) if world.rank == 0 else (lambda p: None),
                                   corrupt)
            finally:
                if hasattr(engine, "close"):
                    engine.close()
            if control.rank == 0:
                ranks = [r for r, _ in members] if scope == INTRA else list(range(world.size))
                hosts = sorted({h for _, h in members}) if scope == INTRA else sorted(leaders)
                block = {"scope": scope, "link": scope_link(backend, scope), "ranks": ranks, "hosts": hosts,
                         "points": points}
        blocks = world.gather(block)
        if blocks is not None:
            scopes.extend(b for b in blocks if b is not None)
    identities = world.gather(identity)
    transports = world.gather(transport)
    if identities is None or transports is None:
        return None
    from roofline import __version__

    return {
        "schema": SCHEMA,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "tool_version": __version__,
        "backend": backend,
        "transport": transports[0],
        "dtype": "float32", "op": "sum",
        "collectives": list(plan.collectives),
        "min_bytes": plan.sizes[0], "max_bytes": plan.sizes[-1],
        "iters": plan.iters, "warmup": plan.warmup,
        "timing": (f"{TIMING[0] if backend == 'cupy' else TIMING[1]}; per rank the median of {plan.iters} runs "
                   f"after {plan.warmup} warm-up runs; a size's time is the slowest rank's"),
        "size": world.size, "nodes": len(leaders), "hosts": sorted(leaders),
        "ranks": sorted((i for i in identities if i), key=lambda i: i["rank"]),
        "scopes": scopes,
        "skipped": skipped,
    }
