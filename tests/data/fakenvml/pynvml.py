"""A stand-in for nvidia-ml-py in CPU tests of the torch capture's energy meter: one GPU at PCI 00000000:19:00.0
whose total-energy counter runs at a steady 400 W of host time (mJ, as NVML gives it)."""

import time

WATTS = 400.0


class NVMLError(Exception):
    pass


def nvmlInit():
    pass


def nvmlDeviceGetHandleByPciBusId(bus):
    if bus != "00000000:19:00.0":
        raise NVMLError(f"no GPU at {bus}")
    return bus


def nvmlDeviceGetTotalEnergyConsumption(handle):
    return int(time.perf_counter() * WATTS * 1e3)
