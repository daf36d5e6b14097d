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
import os
from typing import Any, Callable, Mapping

from roofline.errors import BackendUnavailable, GateFailed, InputError, RooflineError
from roofline.fleet.collective_sweep import Control, Plan, corrupt_targets, run_sweep
from roofline.fleet.identity import host_name
from roofline.fleet.links_doc import INTER, INTRA, SCHEMA, SCOPES, scope_link
from roofline.fleet.watchdog import Unwatched
from roofline.fleet.nccl import NcclEngine
from roofline.fleet.mpi_links import NumpyEngine
from roofline.version import __version__
from roofline.model.counts import counted

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
        f"; and {counted(len(errors) - 4, 'more rank')}" if len(errors) > 4 else "")
    kind = (BackendUnavailable if kinds == {"BackendUnavailable"} else InputError if kinds == {"InputError"}
            else GateFailed)
    if control.size == 1:
        raise kind(errors[0][2])
    raise kind(f"{len(errors)} of {counted(control.size, 'rank')} could not set up: {text}")


def _open(backend: str, control: Control, device: int) -> Any:
    if backend == "numpy":
        return NumpyEngine(control)  # type: ignore[arg-type]

    return NcclEngine(device)


def rank_identity(engine: Any, rank: int, local_rank: int, host: str) -> dict[str, Any]:
    """Who measured: host, rank, local rank and the device (a GPU's index, name, UUID, PCI bus id; the host CPU)."""
    ident = dict(engine.identity())
    return {"rank": rank, "host": host, "local_rank": local_rank, "device_index": ident.pop("index", None), **ident}


# Test-only (tests/test_fleet_watchdog.py): the rank named raises an unexpected error after its first scope's sweep,
# outside every guard, as a bug would: the CLI must abort the job rather than leave the others waiting. Not an
# interface.
TEST_BUG_RANK = "ROOFLINE_FLEET_TEST_LINK_BUG"


class LinksRun:
    """One rank's share of `fleet links`: the steps every rank takes in the same order (so the job-wide agreements
    line up), what rank 0 has gathered so far, and the document rank 0 makes of it, whole at the end or, when a
    deadline passed (roofline.fleet.watchdog), of the sizes completed by then."""

    def __init__(self, backend: str, plan: Plan, world: Control, node: Control, watch: Any = None):
        if backend not in BACKENDS:
            raise InputError(f"--backend {backend!r}: expected one of {', '.join(BACKENDS)}")
        self.backend, self.plan, self.world, self.node = backend, plan, world, node
        self.watch = watch if watch is not None else Unwatched()
        self.host = host_name() + (f"#{node.node_tag}" if getattr(node, "node_tag", None) else "")
        self.leaders: list[str] = []  # the hosts of the node leaders, in rank order
        self.widest = 1  # the most ranks any node has
        self.members: list[tuple[int, str]] = []  # this node's ranks and their host
        self.hosts: dict[int, str] = {}  # rank 0: every rank's host; the others: rank 0's
        self.local: dict[int, int] = {}  # rank 0: every rank's node-local rank
        self.scopes: list[dict[str, Any]] = []  # rank 0: the scopes gathered so far
        self.skipped: list[str] = []

    def start(self) -> None:
        """The small collectives every later step relies on: which ranks lead a node, the widest node, every rank's
        host (rank 0 names the ranks with them, even one that never answers later)."""
        world, node = self.world, self.node
        self.watch.step("start of the job")
        self.watch.phase("learning the other ranks' hosts", waiting=True)
        self.leaders = [h for h in world.allgather(self.host if node.rank == 0 else None) if h is not None]
        self.widest = max(world.allgather(node.size))
        self.members = node.allgather((world.rank, self.host))
        roster = world.gather((self.host, node.rank))  # ~50 B a rank, to rank 0 only
        if roster is not None:
            self.hosts.update((r, h) for r, (h, _) in enumerate(roster))  # updated: the watchdog holds this dict
            self.local.update((r, local) for r, (_, local) in enumerate(roster))
        first = world.bcast(self.host if world.rank == 0 else None)  # every rank can name rank 0
        self.hosts.setdefault(0, first)

    def run(self, on_point: Callable[[str, dict[str, Any]], None] = lambda scope, p: None,
            on_note: Callable[[str], None] = lambda line: None) -> dict[str, Any] | None:
        """The whole job on this rank; rank 0 gets the document, the others None. A rank that cannot set up raises
        the agreed error on every rank (no rank goes on alone)."""
        world, node, watch = self.world, self.node, self.watch
        self.start()
        who = f"rank {world.rank} on {self.host}"
        device = node.rank  # the node-local rank takes the node's GPU of that index
        corrupt = corrupt_targets(world.rank)

        # (scope, the group this rank measures it in, whether its group measures it); every rank takes every step
        # below, active or not, so the job-wide agreements line up.
        groups: list[tuple[str, Control, bool]] = []
        if self.widest > 1 or world.size == 1:
            groups.append((INTRA, node, node.size > 1 or world.size == 1))
        else:
            self.skipped.append(f"{INTRA}: one rank per node, so no link within a node was crossed")
        if len(self.leaders) > 1:
            groups.append((INTER, world, True))
        else:
            self.skipped.append(f"{INTER}: every rank is on one node ({self.leaders[0] if self.leaders else self.host}"
                                "), so the network was not crossed")

        identity: dict[str, Any] | None = None
        transport: str | None = None
        for scope, control, active in groups:
            watch.step(f"setting up of the {scope} measurement")
            watch.phase(f"opening the {self.backend} engine")
            engine, error = _attempt(lambda: _open(self.backend, control, device)) if active else (None, None)
            watch.phase("agreeing with the other ranks on the set-up", waiting=True)
            _agree(world, who, error)
            if active and hasattr(engine, "connect"):
                watch.phase("joining the communicator of its group", waiting=True)
                _, error = _attempt(lambda: engine.connect(control))
            watch.phase("agreeing with the other ranks on the set-up", waiting=True)
            _agree(world, who, error)
            if engine is not None and identity is None:
                identity = rank_identity(engine, world.rank, node.rank, self.host)
                transport = engine.transport()
                watch.hold(identity=identity, transport=transport)
            block = None
            if active:
                if world.rank == 0:
                    on_note(f"fleet links: {scope}, {counted(control.size, 'rank')} a group, over {transport}")
                ranks = [r for r, _ in self.members] if scope == INTRA else list(range(world.size))
                hosts = sorted({h for _, h in self.members}) if scope == INTRA else sorted(self.leaders)
                block = {"scope": scope, "link": scope_link(self.backend, scope), "ranks": ranks, "hosts": hosts,
                         "points": []}
                if control.rank == 0:
                    watch.hold(block=block)

                def point_done(p: dict[str, Any], s: str = scope, leads: bool = control.rank == 0) -> None:
                    if leads:
                        watch.add_point(p)
                    if world.rank == 0:
                        on_point(s, p)

                try:
                    block["points"] = run_sweep(engine, control, self.plan, who, point_done, corrupt, watch, scope,
                                                world.rank)
                finally:
                    if hasattr(engine, "close"):
                        engine.close()
                if os.environ.get(TEST_BUG_RANK, "").strip() == str(world.rank):
                    raise RuntimeError(f"injected bug on rank {world.rank} ({TEST_BUG_RANK}, test-only)")
                if control.rank != 0:
                    block = None
            watch.step(f"gathering of the {scope} results")
            watch.phase("sending its results to rank 0", waiting=True)
            blocks = world.gather(block)
            watch.hold(block=None)
            if blocks is not None:
                self.scopes.extend(b for b in blocks if b is not None)
        watch.step("end of the job")
        watch.phase("sending its identity to rank 0", waiting=True)
        identities = world.gather(identity)
        transports = world.gather(transport)
        watch.phase("waiting for every rank to finish", waiting=True)
        world.barrier()
        if identities is None or transports is None:
            return None
        return self.document(self.scopes, [i for i in identities if i], transports[0])

    def document(self, scopes: list[dict[str, Any]], identities: list[dict[str, Any]], transport: str | None,
                 ) -> dict[str, Any]:
        """The roofline/fleet-links/v1 document of these scopes (roofline.fleet.links_doc)."""
        plan = self.plan
        return {
            "schema": SCHEMA,
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "tool_version": __version__,
            "backend": self.backend,
            "transport": transport,
            "dtype": "float32", "op": "sum",
            "collectives": list(plan.collectives),
            "min_bytes": plan.sizes[0], "max_bytes": plan.sizes[-1],
            "iters": plan.iters, "warmup": plan.warmup,
            "timing": (f"{TIMING[0] if self.backend == 'cupy' else TIMING[1]}; per rank the median of {plan.iters} "
                       f"runs after {plan.warmup} warm-up runs; a size's time is the slowest rank's"),
            "size": self.world.size, "nodes": len(self.leaders), "hosts": sorted(self.leaders),
            "ranks": sorted(identities, key=lambda i: i["rank"]),
            "scopes": scopes,
            "skipped": list(self.skipped),
        }

    def partial_document(self, answers: Mapping[int, Mapping[str, Any] | None], why: Any) -> dict[str, Any]:
        """Rank 0's document when a deadline passed (`why`: roofline.fleet.watchdog.Verdict): the scopes gathered,
        and from each group leader that answered the points its group completed, the size it was measuring when
        the job was cut written as FAILED with the reason; `cut_short` says what was cut and why."""
        timeout = self.watch.timeout
        error = f"cut short at --timeout {timeout:g} s: {why.reason}"
        scopes = [dict(s) for s in self.scopes]
        gathered = {(s["scope"], tuple(s["ranks"])) for s in scopes}
        cut: list[dict[str, Any]] = []
        lost: list[int] = []
        for rank, answer in sorted(answers.items()):
            block = (answer or {}).get("block")
            if answer is None or block is None or (block["scope"], tuple(block["ranks"])) in gathered:
                continue
            points = list(block["points"])
            size = answer.get("size")  # set while a size is measured, None in the other steps
            if size is not None and not any((p["collective"], p["bytes"]) == (size["collective"], size["bytes"])
                                            for p in points):
                points.append({**size, "status": "FAILED", "error": error})
                cut.append({"scope": block["scope"], "ranks": block["ranks"], "collective": size["collective"],
                            "bytes": size["bytes"]})
            scopes.append({**{k: v for k, v in block.items() if k != "points"}, "points": points})
        for rank, answer in sorted(answers.items()):
            if answer is None and self.local.get(rank) == 0:
                lost.append(rank)  # a node leader that did not answer: its group's points are not here
        identities = [a["identity"] for a in answers.values() if a and a.get("identity")]
        known = {i["rank"] for i in identities}
        identities += [{"rank": r, "host": h, "local_rank": self.local.get(r)} for r, h in self.hosts.items()
                       if r not in known]
        transport = next((a["transport"] for a in answers.values() if a and a.get("transport")), None)
        doc = self.document(sorted(scopes, key=_scope_order), identities, transport)
        doc["cut_short"] = {
            "timeout": timeout, "step": why.step, "error": why.message, "not_reported": why.not_reported,
            "sizes": cut,
            "unmeasured": ("the sizes after these, and the scopes after this one, were not measured"
                           + (f"; the points of the group(s) led by rank(s) {', '.join(map(str, lost))} are lost "
                              "(their leader did not answer)" if lost else "")),
        }
        return doc


def _scope_order(scope: Mapping[str, Any]) -> tuple[int, int]:
    """Intra-node groups in rank order, then inter-node: the order of a whole run's file."""
    return (SCOPES.index(scope["scope"]) if scope["scope"] in SCOPES else len(SCOPES), min(scope["ranks"] or [0]))


def run_links(backend: str, plan: Plan, world: Control, node: Control,
              on_point: Callable[[str, dict[str, Any]], None] = lambda scope, p: None,
              on_note: Callable[[str], None] = lambda line: None, watch: Any = None) -> dict[str, Any] | None:
    """The whole job on this rank (LinksRun); rank 0 gets the document, the others None."""
    return LinksRun(backend, plan, world, node, watch).run(on_point, on_note)
