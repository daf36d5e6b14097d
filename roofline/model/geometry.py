"""A descriptor's launches at concrete parameters, as the first-principles size model sees them.

Pure physics of the descriptor (its `geometry:` block evaluated), so loading a descriptor can check its geometry
without the size model, and the size model (roofline.sizes.predict) builds on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from roofline.errors import at
from roofline.model.expr import Expr, FormulaError
from roofline.model.types import KernelDescriptor, Workload

EPS = 1e-9  # a whole number of windows computed in floating point must not round up to one more

# CUDA's launch limits (CUDA C++ Programming Guide, "Features and Technical Specifications", the table of technical
# specifications per compute capability, the same from 5.0 to 12.x): a grid is at most (2^31 - 1) x 65535 x 65535
# blocks and a block at most 1024 threads. A descriptor's threads and blocks are counts of these, whole and at least 1.
MAX_THREADS_PER_BLOCK = 1024
MAX_BLOCKS = (2**31 - 1) * 65535 * 65535
MAX_THREADS = MAX_BLOCKS * MAX_THREADS_PER_BLOCK
# Bytes one thread has in flight: at least one byte (the smallest load), at most what one SM holds on chip (4 MiB, the
# top of the plausible per-SM L1/shared range in roofline.model.invariants.PLAUSIBLE): a load needs somewhere to land.
MIN_BYTES_PER_THREAD = 1.0
MAX_BYTES_PER_THREAD = 4 * 2**20
# Launches in series one descriptor may describe (stages, or `launches` without stages). The largest bundled
# pipeline has 5; a descriptor of 20,000 stages is a generated file gone wrong, and would cost the size model seconds
# per size.
MAX_LAUNCHES = 1024


@dataclass(frozen=True)
class LaunchShape:
    """One launch as the model sees it: DRAM bytes, threads, bytes in flight per thread, blocks (None: not given),
    and the working set an earlier launch of the same run already brought on chip (a pipeline's later stage re-reading
    the first stage's input: 0 for none), which the model reads from L2 where it fits."""

    bytes: float
    threads: float
    bytes_per_thread: float
    reductions: int = 0  # block-wide reductions in series in each block
    blocks: float | None = None
    reread: float = 0.0  # B: the working set this launch shares with the launches before it in the same run



def _geometry_value(d: KernelDescriptor, field: str, expr: Expr, env: Mapping[str, float]) -> float:
    if "sm_count" in expr.names and "sm_count" not in env:
        raise at(d.path or d.name, field, f"'{expr.source}' uses sm_count, which the spec does not give")
    try:
        value = float(expr.evaluate(env))
    except FormulaError as exc:
        raise at(d.path or d.name, field, f"{exc} (in '{expr.source}')") from None
    if not math.isfinite(value) or value <= 0:
        raise at(d.path or d.name, field, f"'{expr.source}' gives {value:g}; it must be a positive number")
    name = field.rsplit(".", 1)[-1]
    if name in ("threads", "blocks"):
        most = MAX_THREADS if name == "threads" else MAX_BLOCKS
        if abs(value - round(value)) > EPS * max(1.0, value) or value < 1:
            raise at(d.path or d.name, field, f"'{expr.source}' gives {value:.6g}; {name} is a whole count of at "
                                              "least 1 (use ceil() where a division may leave a part)")
        if value > most:
            raise at(d.path or d.name, field, f"'{expr.source}' gives {value:.4g}, more {name} than one CUDA launch can "
                                              f"have ({most:.4g}: a grid of at most (2^31 - 1) x 65535 x 65535 blocks "
                                              "of at most 1024 threads, CUDA C++ Programming Guide)")
    elif name == "bytes_per_thread" and not MIN_BYTES_PER_THREAD <= value <= MAX_BYTES_PER_THREAD:
        raise at(d.path or d.name, field, f"'{expr.source}' gives {value:.4g} B; a thread has from 1 B (one byte "
                                          "load) to 4 MiB (more than any SM holds on chip) in flight")
    return value


def launch_shapes(d: KernelDescriptor, work: Workload, sm_count: int | None) -> tuple[LaunchShape, ...]:
    """The launches of `d` at the parameters of `work`: one per stage, or the main launch (all the bytes) followed by
    `launches − 1` launches of one block that move nothing the model counts (a reduction's second pass).

    Defaults: with threads but no bytes_per_thread, each thread moves its share once (B / T); with neither, one
    access_bytes access per thread (T = B / access_bytes), the reading `analyze` uses for threads_needed."""
    g = d.geometry
    env: dict[str, float] = dict(work.params)
    if d.itemsize is not None:
        env["itemsize"] = d.itemsize
    if sm_count:
        env["sm_count"] = sm_count
    threads = _geometry_value(d, "threads", g.threads, env) if g.threads else None
    kernel_per_thread = (_geometry_value(d, "bytes_per_thread", g.bytes_per_thread, env) if g.bytes_per_thread
                         else None)
    blocks = _geometry_value(d, "blocks", g.blocks, env) if g.blocks else None
    if threads is not None and blocks is not None and threads > blocks * MAX_THREADS_PER_BLOCK:
        raise at(d.path or d.name, "threads", f"'{g.threads.source if g.threads else ''}' gives {threads:.6g} threads "
                                              f"in {blocks:.6g} blocks, more than 1024 a block (CUDA's limit)")
    shapes = []
    sizes = [s.bytes for s in work.stages] or [work.bytes]
    seen = 0.0  # the largest stage so far: a running maximum, so the shapes take time linear in the stages
    for i, b in enumerate(sizes):
        reread = seen  # a later stage re-reads what the first ones read (a row's x)
        seen = max(seen, b)
        own = d.stages[i].bytes_per_thread if d.stages else None
        per_thread = (_geometry_value(d, f"stages[{i}].bytes_per_thread", own, env) if own is not None
                      else kernel_per_thread)
        if threads is None:
            b_t = per_thread or work.access_bytes
            shapes.append(LaunchShape(b, max(1.0, math.ceil(b / b_t - EPS)), b_t, blocks=blocks, reread=reread))
        else:
            shapes.append(LaunchShape(b, threads, per_thread if per_thread is not None else b / threads,
                                      blocks=blocks, reread=reread))
    if not work.stages:
        shapes += [LaunchShape(0.0, 1.0, 0.0, blocks=1.0)] * ((g.launches or 1) - 1)
    return tuple(_with_reductions(shapes, g.reductions or 0))


def _with_reductions(shapes: list[LaunchShape], reductions: int) -> list[LaunchShape]:
    """The descriptor's reductions, one per launch in order (a pipeline's passes each reduce once; a reduction's
    finishing launch holds the last); any beyond the launches stay on the last one."""
    if not reductions:
        return shapes
    out = []
    for i, s in enumerate(shapes):
        r = reductions - (len(shapes) - 1) if i == len(shapes) - 1 else min(1, max(0, reductions - i))
        out.append(LaunchShape(s.bytes, s.threads, s.bytes_per_thread, max(0, r), s.blocks, s.reread))
    return out
