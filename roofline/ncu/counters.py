"""One launch's metrics -> roofline's counters: DRAM, L2 and L1 bytes, time, and FLOPs by kind of work.

FLOPs come from two places that never overlap: the CUDA cores (add + mul + 2 × fma of the SASS thread-instruction
counters, per precision) and the tensor cores (the sm__ops_path_tensor_src_* counters, whose unit is already a
math operation with an FMA counted as 2). `work` maps each roof to the FLOPs done on it, `work_counters` names the
metrics each figure came from. A counter the CSV lacks is None and its metric is listed in `missing`: never
silently taken as zero.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from roofline.ncu.metrics import (CUDA_ROOF, CYCLES_PER_SECOND, DRAM_READ, DRAM_WRITE, FLOP_METRICS, L1_BYTES,
                                  L2_BYTES, OPS, TENSOR_ACTIVE, TENSOR_INST, TENSOR_INST_VARIANTS, TENSOR_PATHS, TIME,
                                  TensorPath)
from roofline.model.units import format_bytes

_BYTE_FIELDS = ("dram_read", "dram_write", "dram_bytes", "l2_bytes", "l1_bytes", "time")


def _get(metrics: Mapping[str, float | None], name: str, missing: list[str]) -> float | None:
    value = metrics.get(name)
    if value is None:
        missing.append(name)
    return value


def metric_count(metrics: Mapping[str, float | None], name: str, time: float | None) -> tuple[float | None, bool]:
    """(count, from_rate) for a .sum metric: the metric itself, its smsp__ twin for an sm__ metric (the same
    total), or, as `--set full` records them, the per-cycle rate × smsp__cycles_elapsed.avg.per_second × time."""
    twins = [name] + (["smsp__" + name[len("sm__"):]] if name.startswith("sm__") else [])
    for candidate in twins:
        if metrics.get(candidate) is not None:
            return metrics[candidate], False
    cycles = metrics.get(CYCLES_PER_SECOND)
    for candidate in reversed(twins):
        rate = metrics.get(candidate + ".per_cycle_elapsed")
        if rate is not None and cycles is not None and time is not None:
            return rate * cycles * time, True
    return None, False


def tensor_flops(metrics: Mapping[str, float | None], path: TensorPath,
                 time: float | None) -> tuple[float | None, list[str], bool]:
    """(FLOPs, metrics used, from_rate) of one tensor path: its split metrics added up when any is present, else
    its total; (None, [], False) when the CSV has none of them."""
    split = [(m, *metric_count(metrics, m, time)) for m in path.split]
    present = [(m, v, r) for m, v, r in split if v is not None]
    if present:
        return sum(v for _, v, _ in present), [m for m, _, _ in present], any(r for _, _, r in present)
    if path.total:
        value, from_rate = metric_count(metrics, path.total, time)
        if value is not None:
            return value, [path.total], from_rate
    return None, [], False


def counters(metrics: Mapping[str, float | None]) -> dict[str, Any]:
    """roofline's counters from one launch's metrics (base units)."""
    missing: list[str] = []
    read = _get(metrics, DRAM_READ, missing)
    write = _get(metrics, DRAM_WRITE, missing)
    time = _get(metrics, TIME, missing)
    out: dict[str, Any] = {
        "dram_read": read, "dram_write": write,
        "dram_bytes": None if read is None or write is None else read + write,
        "l2_bytes": _get(metrics, L2_BYTES, missing), "l1_bytes": _get(metrics, L1_BYTES, missing), "time": time,
    }
    work: dict[str, float] = {}
    sources: dict[str, list[str]] = {}
    rates_used = False
    for precision, names in FLOP_METRICS.items():
        present = {}
        for op, name in zip(OPS, names):
            present[op], from_rate = metric_count(metrics, name, time)
            rates_used = rates_used or from_rate
        missing += [n for n, v in zip(names, present.values()) if v is None]
        if all(v is None for v in present.values()):
            out[f"flops_{precision}"] = None
            continue
        flops = (present["add"] or 0.0) + (present["mul"] or 0.0) + 2.0 * (present["fma"] or 0.0)
        out[f"flops_{precision}"] = flops
        work[CUDA_ROOF[precision]] = work.get(CUDA_ROOF[precision], 0.0) + flops
        sources[CUDA_ROOF[precision]] = [n for n, v in zip(names, present.values()) if v is not None]
    tensor_total, tensor_seen = 0.0, False
    for path in TENSOR_PATHS:
        flops, used, from_rate = tensor_flops(metrics, path, time)
        if flops is None:
            missing += [*path.split, *([path.total] if path.total else [])]
            continue
        tensor_seen, rates_used = True, rates_used or from_rate
        tensor_total += flops
        work[path.roof] = work.get(path.roof, 0.0) + flops
        sources[path.roof] = used
    out["flops_tensor"] = tensor_total if tensor_seen else None
    out["flops"] = sum(work.values()) if work else None
    out["flops_source"] = None if not work else ("rates" if rates_used else "counts")
    out["work"] = work
    out["work_counters"] = sources
    tensor = metrics.get(TENSOR_INST)
    if tensor is None:
        variants = [metrics.get(v) for v in TENSOR_INST_VARIANTS if metrics.get(v) is not None]
        tensor = sum(variants) if variants else None
    if tensor is None:
        missing.append(TENSOR_INST)
    out["tensor_inst"] = tensor
    out["tensor_active_pct"] = metrics.get(TENSOR_ACTIVE)
    out["missing"] = missing
    return out


def sum_counters(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Counters of several launches (one kernel that launches several CUDA kernels) added up. A field is None
    when any launch lacks it; work adds up per roof; missing is the union; tensor_active_pct is time-weighted."""
    if not items:
        raise ValueError("no launches to add up")
    out: dict[str, Any] = {}
    for key in (*_BYTE_FIELDS, "flops_fp32", "flops_fp64", "flops_fp16", "flops", "tensor_inst"):
        values = [c.get(key) for c in items]
        out[key] = None if any(v is None for v in values) else float(sum(values))
    tensor = [c.get("flops_tensor") for c in items if c.get("flops_tensor") is not None]
    out["flops_tensor"] = float(sum(tensor)) if tensor else None
    work: dict[str, float] = {}
    sources: dict[str, list[str]] = {}
    for c in items:
        for roof, flops in (c.get("work") or {}).items():
            work[roof] = work.get(roof, 0.0) + flops
            sources[roof] = list(dict.fromkeys([*sources.get(roof, []), *(c.get("work_counters") or {}).get(roof, [])]))
    out["work"], out["work_counters"] = work, sources
    pct = [(c.get("tensor_active_pct"), c.get("time") or 0.0) for c in items]
    if all(p is not None for p, _ in pct) and sum(t for _, t in pct) > 0:
        out["tensor_active_pct"] = sum(p * t for p, t in pct) / sum(t for _, t in pct)
    else:
        out["tensor_active_pct"] = None
    kinds = {c.get("flops_source") for c in items} - {None}
    out["flops_source"] = kinds.pop() if len(kinds) == 1 else ("mixed" if kinds else None)
    out["missing"] = list(dict.fromkeys(m for c in items for m in c.get("missing", [])))
    out["launches"] = len(items)
    return out


# ---- comparing with the model -----------------------------------------------------------------------

FLAG_THRESHOLD = 1.10  # measured DRAM traffic more than 10 % above the model is flagged


def ratio(measured: float | None, model: float | None) -> float | None:
    if measured is None or not model:
        return None
    return measured / model


def traffic_flag(c: Mapping[str, Any], model_bytes: float | None, threshold: float = FLAG_THRESHOLD) -> str | None:
    """A one-line hint when measured DRAM traffic exceeds the model's bytes by more than 10 %, else None.

    Reads and writes are judged together against the model (which counts both); the hint names the larger."""
    measured = c.get("dram_bytes")
    r = ratio(measured, model_bytes)
    if r is None or r <= threshold:
        return None
    read, write = c.get("dram_read") or 0.0, c.get("dram_write") or 0.0

    detail = f"{format_bytes(read)} read + {format_bytes(write)} written vs {format_bytes(model_bytes)} modelled"
    if read >= write:
        return f"reads {r:.1f}× the model ({detail}): re-reads or uncoalesced access?"
    return f"writes {r:.1f}× the model ({detail}): redundant stores, a temporary array, or spills?"


def compare(c: Mapping[str, Any], model_flops: float | None, model_bytes: float | None) -> dict[str, Any]:
    """measured / model for DRAM bytes and FLOPs, and the traffic flag (None when within 10 %)."""
    return {
        "measured_bytes_ratio": ratio(c.get("dram_bytes"), model_bytes),
        "measured_flops_ratio": ratio(c.get("flops"), model_flops),
        "flag": traffic_flag(c, model_bytes),
    }
