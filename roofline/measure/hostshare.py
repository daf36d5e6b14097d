"""Host inputs and references made once per kernel for every GPU of a several-device `measure`, not once per GPU.

Why: every worker draws the same inputs (one seed) and computes the same float64 NumPy reference, and those
references (an erf series over 2^28 elements, float64 GEMMs, attention) are CPU-bound. With every worker making its
own, a two-GPU run on 32 cores spent 1.35-1.5x the one-GPU wall time waiting on the host. Here each kernel's
HostData is made by one worker (its producer, chosen by a hash of the kernel and its parameters, so the work is
spread), published as .npy files in a folder on /dev/shm, and mapped copy-on-write by the others.

Publishing is atomic (a folder renamed into place). Whatever cannot be shared is made locally, never waited on
forever: the producer marks a kernel `.local` when its data will not go to disk (not arrays, no room, an error), the
parent marks a producer `dead-N` when its worker stops, and a consumer gives up after `timeout` seconds. The last
consumer removes a kernel's folder; the parent removes the whole root at the end.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from roofline.measure.harness import HostData, prepare_host

SHM = Path("/dev/shm")
POLL = 0.02  # s between looks at the folder while waiting for a producer


def share_root(devices: Sequence[int]) -> Path | None:
    """A fresh folder on /dev/shm for a run over several devices; None with one device or no /dev/shm."""
    if len(devices) < 2 or not SHM.is_dir() or not os.access(SHM, os.W_OK):
        return None
    return Path(tempfile.mkdtemp(prefix="roofline-host-", dir=SHM))


def mark_dead(root: Path | None, device: int) -> None:
    """The parent's word that this device's worker has stopped: consumers stop waiting for what it would make."""
    if root is not None and root.is_dir():
        (root / f"dead-{device}").touch()


def remove_root(root: Path | None) -> None:
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


class HostShare:
    """prepare(d, work, impl, policy) for one worker of a several-device run: HostData made here or mapped."""

    def __init__(self, root: Path, device: int, devices: Sequence[int], timeout: float = 1800.0) -> None:
        self.root, self.device, self.devices, self.timeout = root, device, list(devices), timeout

    def key(self, name: str, params: dict[str, Any]) -> tuple[str, int]:
        """(folder name, producing device) of a kernel at its parameters: the same in every worker."""
        text = json.dumps([name, params], sort_keys=True, default=str)
        digest = hashlib.sha1(text.encode()).hexdigest()[:16]
        return digest, self.devices[int(digest, 16) % len(self.devices)]

    def prepare(self, d: Any, work: Any, impl: Any, policy: Any) -> HostData:
        key, producer = self.key(d.name, dict(work.params))
        if producer == self.device:
            return self._produce(key, d, work, impl, policy)
        loaded = self._wait(key, producer)
        return loaded if loaded is not None else prepare_host(d, work, impl, policy)

    # ---- the producer ----------------------------------------------------------------------------------------

    def _produce(self, key: str, d: Any, work: Any, impl: Any, policy: Any) -> HostData:
        try:
            host = prepare_host(d, work, impl, policy)
        except BaseException:
            self._local(key)  # the others make it themselves (and meet the same error, as a single run would)
            raise
        try:
            self._publish(key, host)
        except (OSError, ValueError, TypeError):
            self._local(key)
        return host

    def _publish(self, key: str, host: HostData) -> None:
        arrays = {f"in-{k}": v for k, v in host.inputs.items()} | {f"ref-{k}": v for k, v in host.reference.items()}
        if not all(isinstance(v, np.ndarray) and v.dtype != object for v in arrays.values()):
            raise TypeError("only NumPy arrays are shared")
        need = sum(v.nbytes for v in arrays.values()) + (1 << 20)
        free = os.statvfs(self.root).f_bavail * os.statvfs(self.root).f_frsize
        if need > free // 2:  # leave room for the other producers' folders and the consumers' copies
            raise OSError("no room on /dev/shm")
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=self.root))
        try:
            for name, value in arrays.items():
                np.save(tmp / f"{name}.npy", value, allow_pickle=False)
            meta = {"params": host.params, "phases": host.phases, "inputs": list(host.inputs),
                    "reference": list(host.reference),
                    "out_specs": {k: [list(s), np.dtype(t).str] for k, (s, t) in host.out_specs.items()}}
            (tmp / "meta.json").write_text(json.dumps(meta, default=str))
            tmp.rename(self.root / key)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def _local(self, key: str) -> None:
        try:
            (self.root / f"{key}.local").touch()
        except OSError:
            pass

    # ---- a consumer ------------------------------------------------------------------------------------------

    def _wait(self, key: str, producer: int) -> HostData | None:
        """The producer's HostData mapped copy-on-write, or None (make it here) when it will not come."""
        folder, started = self.root / key, time.perf_counter()
        while not folder.is_dir():
            if (self.root / f"{key}.local").exists() or (self.root / f"dead-{producer}").exists() \
                    or time.perf_counter() - started > self.timeout:
                return None
            time.sleep(POLL)
        waited = time.perf_counter() - started
        try:
            meta = json.loads((folder / "meta.json").read_text())
            inputs = {k: np.load(folder / f"in-{k}.npy", mmap_mode="c") for k in meta["inputs"]}
            reference = {k: np.load(folder / f"ref-{k}.npy", mmap_mode="c") for k in meta["reference"]}
        except (OSError, ValueError, KeyError):
            return None
        self._used(folder)
        specs = {k: (tuple(s), np.dtype(t)) for k, (s, t) in meta["out_specs"].items()}
        phases = {"shared_wait": waited}  # the producer spent the inputs and reference phases, not this worker
        return HostData(meta["params"], inputs, specs, reference, phases)

    def _used(self, folder: Path) -> None:
        """Mark this consumer done with the folder; the last one removes it (the mappings stay valid)."""
        try:
            (folder / f"used-{self.device}").touch()
            if len(list(folder.glob("used-*"))) >= len(self.devices) - 1:
                shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            pass
