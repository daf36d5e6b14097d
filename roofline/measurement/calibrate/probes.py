"""The custom probes of the calibration: L2 bandwidth (l2_read) and DRAM latency (a single-thread pointer chase),
each run from roofline/measurement/calibrate/kernels.cu and checked against the host before its figure is reported, with the
pure helpers (chase order, chain filling, expected sum and slot) that the tests check on the host.

It exists because these two figures do not go through the kernel harness: they build their own buffers, launch
their own kernels and verify their own results, which is a job of its own. CuPy is reached only through the
backend object passed in (backend.cp); the helpers take an array module (cupy, or numpy in the tests).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

import numpy as np

from roofline.measurement.calibrate.figures import FAILED, OK, Figure, failed, measured, skipped
from roofline.errors import first_line
from roofline.measurement.calibrate.plan import Plan, median
from roofline.measurement.harness import current
from roofline.measurement.policy import MeasurePolicy

LINE = 128  # bytes per pointer-chase slot: one cache line per step


# ---- L2 bandwidth -------------------------------------------------------------------------------------


def timed_read(backend: Any, kernel: Any, blocks: int, threads: int, args: tuple, out: Any, expected: int,
               policy: MeasurePolicy) -> tuple[Any, str | None]:
    """A read probe (l2_read, l1_read, smem_read) run once and checked by the sum of the words its threads read,
    timed, and checked again: (timing, None), or (None, what was wrong). Why the second check: a kernel the
    compiler reduced to less than the reads it claims would still pass the first."""
    with current(backend):
        return _timed_read(backend, kernel, blocks, threads, args, out, expected, policy)


def _timed_read(backend: Any, kernel: Any, blocks: int, threads: int, args: tuple, out: Any, expected: int,
                policy: MeasurePolicy) -> tuple[Any, str | None]:
    cp = backend.cp

    def run() -> None:
        kernel((blocks,), (threads,), args)

    def check() -> str | None:
        got = int(out.sum(dtype=cp.uint64).get()) % 2**32
        return None if got == expected else f"wrong sum: got {got}, expected {expected}"

    run()
    backend.synchronize()
    problem = check()
    if problem:
        return None, problem
    timing = backend.time_runs(run, [{}], policy)
    problem = check()
    return (None, f"after timing: {problem}") if problem else (timing, None)


MIB = 1 << 20
SLICE = 512 << 10  # bytes each l2_read block reads (RRZE gpu-l2-cache's 512 kB per block)
L2_THREADS = 1024  # L2_THREADS in kernels.cu


def l2_working_sets(l2_size: int) -> list[int]:
    """The working sets of the L2 curve, 1.5 MiB to 2 × L2 (RRZE gpu-benches' gpu-l2-cache spans the same range):
    1.5 MiB, then powers of two from 2 MiB below L2/2, then L2/2, 3/4, 1, 1.5 and 2 × L2, so the curve shows the
    plateau, the edge and the fall to DRAM. Whole numbers of 512 KiB slices (the probe reads a slice per block)."""
    points = [3 * SLICE]
    p = 2 * MIB
    while p < l2_size // 2:
        points.append(p)
        p *= 2
    points += [int(l2_size * f) for f in (0.5, 0.75, 1.0, 1.5, 2.0)]
    return sorted(set(max(SLICE, x // SLICE * SLICE) for x in points))


def plateau(curve: Sequence[Mapping[str, float]], l2_size: int) -> Mapping[str, float] | None:
    """The L2 roof from the curve: its best point whose working set is at most half the L2 (where every line
    stays resident whatever the replacement policy does)."""
    inside = [c for c in curve if c["working_set"] <= l2_size // 2]
    return max(inside, key=lambda c: c["bandwidth"]) if inside else None


def l2_bandwidth(backend: Any, module: Any, plan: Plan, policy: MeasurePolicy,
                 seed: int = MeasurePolicy.seed) -> Figure:
    """The L2 read bandwidth over working sets from 1.5 MiB to 2 × L2 (details["curve"]); the figure is the
    plateau (best point at ≤ L2/2), and every point is checked by its word sum before and after timing."""
    field = "caches.l2.bandwidth"
    cp, info = backend.cp, backend.info
    l2 = int(info.get("l2_size") or 0)
    if l2 <= 0:
        return skipped(field, "the device reports no L2 size")
    sets = l2_working_sets(l2)
    point_policy = replace(policy, min_time=min(policy.min_time, plan.l2_point_time))
    method = (f"l2_read kernel (roofline/measurement/calibrate/kernels.cu): blocks of {L2_THREADS} threads each read one "
              f"{SLICE >> 10} KiB slice of the working set with 16-byte ld.global.cg loads (L2, not L1; RRZE "
              f"gpu-l2-cache's layout), at {len(sets)} working sets from {sets[0] / MIB:.3g} MiB to "
              f"{sets[-1] / MIB:.3g} MiB (2 × L2); every slice read equally often, about "
              f"{plan.l2_bytes_per_launch / 1e9:.3g} GB a launch; every point checked (sum of the words) before and "
              "after timing; the figure is the best point at ≤ L2/2")
    curve: list[dict[str, Any]] = []
    gpu_state = None
    try:
        words_all = np.random.default_rng(seed).integers(0, 2**32, sets[-1] // 4, dtype=np.uint32)
        buf_all = cp.asarray(words_all)
        kernel = module.get_function("l2_read")
        for size in sets:
            nslices = size // SLICE
            repeats = max(1, int(round(plan.l2_bytes_per_launch / size)))
            blocks = repeats * nslices
            expected = l2_expected_sum(words_all[: size // 4], repeats)
            out = cp.full(blocks * L2_THREADS, 0xFFFFFFFF, dtype=cp.uint32)
            timing, problem = timed_read(backend, kernel, blocks, L2_THREADS,
                                         (buf_all, np.int32(nslices), np.int32(SLICE // 16), out),
                                         out, expected, point_policy)
            del out
            if problem:
                return failed(field, f"l2_read at a {size / MIB:.3g} MiB working set: {problem}", method)
            t = median(timing.samples)
            curve.append({"working_set": size, "bandwidth": size * repeats / t, "repeats": repeats,
                          "time_median": t, "time_min": min(timing.samples), "time_max": max(timing.samples),
                          "runs": timing.repeats, "timing": timing.mode})
            if size <= l2 // 2:
                gpu_state = timing.gpu_state or gpu_state
    except Exception as exc:  # noqa: BLE001
        return failed(field, f"{type(exc).__name__}: {first_line(exc, 300)}", method)
    finally:
        backend.release()
    best = plateau(curve, l2)
    if best is None:
        return failed(field, "no working set at or below L2/2 was measured", method)
    details = {"curve": curve, "l2_size": l2, "buffer_bytes": best["working_set"], "repeats": best["repeats"],
               "time_median": best["time_median"], "runs": best["runs"], "timing": best["timing"]}
    note = (f"plateau at {best['working_set'] / MIB:.3g} MiB; curve "
            + ", ".join(f"{c['working_set'] / MIB:.3g} MiB {c['bandwidth'] / 1e12:.2f}" for c in curve) + " TB/s")
    return measured(field, best["bandwidth"], f"{method}; each point the median of its runs, CUDA events or graph "
                                              "replay", note, details, gpu_state)


# ---- DRAM latency: single-thread pointer chase --------------------------------------------------------


def chase_order(slots: int, seed: int) -> np.ndarray:
    """A random visiting order of all slots: slot order[i] points to order[i + 1], the last back to order[0]
    (one cycle through every slot, so the walk never repeats before it has seen them all)."""
    return np.random.default_rng(seed).permutation(slots).astype(np.int64)


def fill_chain(xp: Any, chain: Any, order: np.ndarray, base: int) -> None:
    """Write the cycle into `chain` (uint64 words, LINE bytes per slot, at device address `base`): the first word of
    slot order[i] holds the address of slot order[i + 1]. `xp` is cupy (or numpy, in the tests)."""
    order_d = xp.asarray(order)
    targets = xp.roll(order_d, -1).astype(xp.uint64)
    targets *= xp.uint64(LINE)
    targets += xp.uint64(base)
    chain[order_d * (LINE // 8)] = targets


def l2_expected_sum(words: np.ndarray, repeats: int) -> int:
    """What the l2_read kernel's per-thread sums add up to, mod 2^32: every word read `repeats` times."""
    return (repeats * int(words.sum(dtype=np.uint64))) % 2**32


def expected_slot(order: np.ndarray, steps_done: int) -> int:
    """The slot the walk reaches after `steps_done` steps from order[0]."""
    return int(order[steps_done % len(order)])


def dram_latency(backend: Any, module: Any, plan: Plan, seed: int = MeasurePolicy.seed) -> Figure:
    field = "memory.latency"
    cp, info = backend.cp, backend.info
    l2 = int(info.get("l2_size") or (64 << 20))
    want = max(16 * l2, plan.chase_min_footprint)
    free = backend.free_bytes() or 0
    footprint = want
    while footprint > max(free, 1) // 2 and footprint > 4 * l2:
        footprint //= 2
    if footprint < 4 * l2 or footprint > max(free, 1) // 2 + 1:
        return failed(field, f"not enough free device memory for a pointer chase over {want / 2**30:.2f} GiB")
    slots = footprint // LINE
    warm = max(1000, plan.chase_steps // 10)
    total_steps = warm + plan.chase_passes * plan.chase_steps
    if total_steps > slots:
        return failed(field, f"{total_steps} steps would revisit the chain of {slots} slots")
    method = (f"pointer_chase kernel (roofline/measurement/calibrate/kernels.cu): one thread, dependent 8-byte ld.global.cg "
              f"loads, one {LINE}-byte line per step, a random cycle over {footprint / 2**30:.2f} GiB "
              f"({footprint / l2:.0f}× L2); {plan.chase_passes} timed passes of {plan.chase_steps} steps, each starting "
              "where the previous ended (a new part of the chain every pass), median ns per step by %globaltimer; "
              "final pointer checked against the host's walk")
    try:
        order = chase_order(slots, seed)
        chain = cp.zeros(slots * (LINE // 8), dtype=cp.uint64)
        base = int(chain.data.ptr)
        fill_chain(cp, chain, order, base)
        flush = cp.empty(max(2 * l2, 1 << 20) // 4, dtype=cp.float32)  # evict the chain's last writes from L2
        flush.fill(1.0)
        del flush
        out = cp.zeros(4, dtype=cp.uint64)
        kernel = module.get_function("pointer_chase")
        backend.synchronize()

        address = base + int(order[0]) * LINE
        done = 0
        ns, cycles = [], []
        for p in range(plan.chase_passes + 1):
            steps = warm if p == 0 else plan.chase_steps
            kernel((1,), (1,), (np.uint64(address), np.int64(steps), out))
            backend.synchronize()
            final, elapsed, clk = (int(v) for v in out[:3].get())
            done += steps
            want_address = base + expected_slot(order, done) * LINE
            if final != want_address:
                return failed(field, f"pass {p}: the chase ended at {final:#x}, the host's walk at {want_address:#x}",
                              method)
            if p > 0:  # pass 0 warms the TLB and the code path; it is not timed
                ns.append(elapsed / steps)
                cycles.append(clk / steps)
            address = final
        del chain
    except Exception as exc:  # noqa: BLE001
        return failed(field, f"{type(exc).__name__}: {first_line(exc, 300)}", method)
    finally:
        backend.release()
    latency = median(ns) * 1e-9
    details = {"footprint_bytes": footprint, "slots": slots, "passes": plan.chase_passes, "steps": plan.chase_steps,
               "ns_per_step": ns, "cycles_per_step": cycles, "median_cycles": median(cycles)}
    if not 1e-9 < latency < 1e-5:
        return Figure(field, FAILED, None, method, f"implausible latency {latency * 1e9:.3g} ns (is %globaltimer "
                                                   "running?)", details)
    if cycles and median(cycles) > 0:
        details["implied_clock_hz"] = median(cycles) / latency
    return Figure(field, OK, latency, method, None, details)
