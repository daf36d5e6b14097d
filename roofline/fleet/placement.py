"""Where a measuring command's work runs: this process's one GPU, every GPU of this host at once, or one rank per
GPU under mpirun/srun. Decided here once, with the same refusals, for measure, sweep, calibrate and doctor, so every
command gets several GPUs and MPI ranks the same way. Two steps, so that input errors (exit 2) still come before
a GPU is looked for (exit 3): `under_ranks` first (a rank loads its own inputs), then the command's own inputs,
then `place`."""

from __future__ import annotations

from dataclasses import dataclass

from roofline.errors import InputError
from roofline.fleet.launch import under_mpi
from roofline.measurement.multi.pool import parse_devices, resolve_devices

ONE, HOST = "one", "host"


@dataclass(frozen=True)
class Placement:
    """ONE: `devices` holds the device; HOST: every device to run on at once (more than one)."""

    kind: str
    devices: tuple[int, ...]

    @property
    def device(self) -> int:
        return self.devices[0]


def under_ranks(device_text: str, timeout: float | None, refused: str | None = None) -> bool:
    """True when this process is one rank of an MPI launch. There each rank takes its node-local GPU, so --device
    (and `refused`, an option a rank run does not take) is an input error; outside one, --timeout is (there is no
    rank to wait for)."""
    if under_mpi():
        given = refused or ("--device" if device_text != "0" else None)
        if given:
            raise InputError(f"{given} under mpirun/srun: each rank measures its node-local GPU (its local rank); "
                             "leave the option out")
        return True
    if timeout is not None:
        raise InputError("--timeout applies to a run under mpirun or srun (how long rank 0 waits for the ranks); "
                         "leave it out here")
    return False


def device_count() -> int:
    """How many CUDA devices this process sees (exit 3 with the fix when there is no GPU or no CuPy)."""
    from roofline.measurement.backend_cupy import import_cupy  # CuPy only when several devices are named

    return int(import_cupy().cuda.runtime.getDeviceCount())


def place(device_text: str, several: str | None = None, fix: str | None = None) -> Placement:
    """--device as given: one ordinal runs here without asking the driver; a list or 'all' is resolved against the
    devices this host has (one left is ONE). `several`: why this run takes one device only (then a list or 'all' is
    an input error, with `fix`)."""
    wanted = parse_devices(device_text)
    if wanted is not None and len(wanted) == 1:
        return Placement(ONE, (wanted[0],))
    if several is not None:
        raise InputError(f"--device {device_text}: {several}", fix=fix)
    devices = tuple(resolve_devices(wanted, device_count()))
    return Placement(HOST if len(devices) > 1 else ONE, devices)
