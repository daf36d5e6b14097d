"""Every GPU of a host at once: one worker process per device, their results merged into one document.

Why processes: a CUDA context belongs to one process, and two devices timed from threads of one process would share
a GIL, so a launch on one could wait for the other's host work. Each worker opens its own CuPy backend on its own
device (spawned, never forked: a forked CUDA context is undefined). A worker that raises sends its error and stops;
the others' results are kept, and the caller names the device that failed.
"""

from __future__ import annotations

import contextlib
import os
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping, Sequence
from multiprocessing.connection import wait
import multiprocessing as mp

from roofline.errors import InputError, BackendUnavailable

# NVLink multicast (NVLS) can put a shared host's GPUs out of service; nothing roofline runs needs it.
SAFE_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def parse_devices(text: str) -> list[int] | None:
    """'--device 0' → [0]; '0,2,3' → [0, 2, 3]; 'all' → None (every device). Refuses repeats and negatives."""
    value = str(text).strip().lower()
    if value == "all":
        return None
    out: list[int] = []
    for part in value.split(","):
        part = part.strip()
        if not part.isdigit() or not part.isascii():
            raise InputError(f"--device {text!r:.40}: expected a device ordinal (0), a list (0,2,3) or 'all'")
        index = int(part)
        if index in out:
            raise InputError(f"--device {text!r:.40}: device {index} is named twice")
        out.append(index)
    return out


def resolve_devices(wanted: list[int] | None, count: int) -> list[int]:
    """The ordinals to run on; one this host does not have is refused before any worker starts."""
    if wanted is None:
        return list(range(count))
    missing = [i for i in wanted if not 0 <= i < count]
    if missing:
        raise BackendUnavailable(f"--device {','.join(map(str, wanted))}: there are {count} CUDA devices "
                                 f"(0..{count - 1}); no device {missing[0]}")
    return list(wanted)


# ---- running workers -------------------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one device's worker sent back: its result, or the error it raised (kind, message, traceback)."""

    device: int
    result: Any = None
    error: str | None = None
    kind: str | None = None  # the exception's class name, e.g. BackendUnavailable
    detail: str | None = None  # the traceback text, for a bug
    identity: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


Worker = Callable[[int, Any, Callable[[str, Any], None]], Any]


class Relay:
    """The Progress protocol over the worker's pipe: the parent shows each device's steps."""

    def __init__(self, send: Callable[[str, Any], None]) -> None:
        self.send = send

    def start(self, name: str) -> None:
        self.send("progress", name)

    def finish(self, name: str, status: str) -> None:
        self.send("finished", (name, status))


def _child(target: Worker, device: int, payload: Any, conn: Any) -> None:
    """The worker process's body: run, then send ('done', result) or ('error', kind, message, traceback)."""
    os.environ.update(SAFE_ENV)

    def send(kind: str, value: Any) -> None:
        conn.send((kind, value))

    try:
        result = target(device, payload, send)
    except BaseException as exc:  # noqa: BLE001 - every failure goes back to the parent, named by device
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        conn.send(("error", (type(exc).__name__, str(message), traceback.format_exc())))
    else:
        conn.send(("done", result))
    finally:
        conn.close()


THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "ROOFLINE_HOST_THREADS")


def thread_caps(workers: int, cpus: int, environ: Mapping[str, str]) -> dict[str, str]:
    """Each worker's share of the host's cores for the BLAS and OpenMP pools of its NumPy references and for our own
    (roofline.kernelapi.HOST_THREADS): without it, every worker starts a thread per core in each, and the host-side
    references (float64 GEMMs, attention, the erf series) of several workers at once oversubscribe the CPU many times
    over. A variable the user set is left as it is."""
    share = str(max(1, cpus // max(1, workers)))
    return {name: share for name in THREAD_VARIABLES if name not in environ}


@contextlib.contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    """os.environ with `values` set for the duration (spawned children copy it when they start), then restored."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_workers(devices: Sequence[int], target: Worker, payload: Any,
                on_message: Callable[[int, str, Any], None] = lambda d, k, v: None) -> dict[int, Outcome]:
    """Start one spawned process per device running target(device, payload, send), concurrently; collect each
    one's result or error. `send(kind, value)` from a worker reaches on_message(device, kind, value) in the parent
    (progress, identity). A worker that dies without a word (killed, a crash in the driver) is an error too."""
    for key, value in SAFE_ENV.items():  # children inherit it from the parent's environment as well
        os.environ.setdefault(key, value)
    ctx = mp.get_context("spawn")
    procs: dict[Any, tuple[int, Any]] = {}
    outcomes = {d: Outcome(d) for d in devices}
    with _environment(thread_caps(len(devices), os.cpu_count() or 1, os.environ)):  # read by each child at start
        for device in devices:
            reader, writer = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_child, args=(target, device, payload, writer), name=f"roofline-gpu{device}",
                               daemon=True)
            proc.start()
            writer.close()
            procs[reader] = (device, proc)
    finished: set[int] = set()
    try:
        while procs:
            for reader in wait(list(procs)):
                device, proc = procs[reader]
                try:
                    kind, value = reader.recv()
                except (EOFError, OSError):
                    proc.join()
                    if device not in finished:
                        outcomes[device].error = f"the worker process exited with code {proc.exitcode} without a result"
                        outcomes[device].kind = "WorkerDied"
                    del procs[reader]
                    continue
                if kind == "done":
                    outcomes[device].result = value
                    finished.add(device)
                elif kind == "error":
                    outcomes[device].kind, outcomes[device].error, outcomes[device].detail = value
                    finished.add(device)
                elif kind == "identity":
                    outcomes[device].identity = dict(value)
                    on_message(device, kind, value)
                else:
                    on_message(device, kind, value)
    finally:
        for _, proc in procs.values():
            proc.terminate()
    return outcomes


def failure_lines(outcomes: Mapping[int, Outcome]) -> list[str]:
    """'GPU 1 (0000:1B:00.0): <error>' for each device whose worker failed, by index and PCI bus id."""
    lines = []
    for device, out in sorted(outcomes.items()):
        if not out.ok:
            bus = out.identity.get("pci_bus_id")
            lines.append(f"GPU {device}{f' ({bus})' if bus else ''}: {out.error}")
    return lines
