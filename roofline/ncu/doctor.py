"""`roofline doctor` with Nsight Compute: the GPU checks of roofline.measurement.selftest, whose copy and GEMM are
then replayed under ncu so the counters can be judged beside the timers. ncu sits above the measurement stage, so
the replay is handed down to it rather than imported by it."""

from __future__ import annotations

from functools import partial
from typing import Any, Mapping

from roofline.gates.doctor import Verdict
from roofline.load.kernels import KernelCatalog
from roofline.measurement.progress import SILENT, Progress
from roofline.measurement.selftest import FULL, DoctorPlan, run_doctor
from roofline.model.types import MachineSpec
from roofline.ncu.profile import add_profile, find_ncu
from roofline.records.document import Status


def doctor(backend: Any, spec: MachineSpec | None, plan: DoctorPlan = FULL, progress: Progress = SILENT,
           use_ncu: bool = True, ncu_path: str | None = None) -> Verdict:
    """Every check of `roofline doctor` on the backend's GPU, the counters too when `use_ncu`."""
    return run_doctor(backend, spec, plan, progress, partial(_replay, ncu_path) if use_ncu else None)


def _replay(ncu_path: str | None, results: Mapping[str, Any], plan: DoctorPlan, progress: Progress,
            backend: Any) -> tuple[float | None, str | None, dict[str, Any]]:
    """Replay the verified timer copy and the GEMM under Nsight Compute: (copy duration, why not, counters)."""
    exe, why = find_ncu(ncu_path)
    if exe is None:
        return None, why, {}
    picked = [dict(results[k], name=results[k].get("name") or k) for k in ("timer_graph", "gemm")
              if results.get(k, {}).get("status") == Status.OK]
    if not picked:
        return None, "the kernels to replay failed", {}
    progress.start("Nsight Compute")
    catalog = [d for d in KernelCatalog.load().descriptors if d.name in {"copy", "matmul_library_fp16"}]
    out, notes = add_profile(picked, catalog, ncu_path=exe, device_id=int(backend.info.get("device_id") or 0),
                             timeout=plan.ncu_timeout)
    progress.finish("Nsight Compute", Status.OK.value if any("counters" in e for e in out) else Status.FAILED.value)
    by = {e.get("name"): e.get("counters") or {} for e in out}
    copy_c, gemm_c = by.get("copy") or {}, by.get("matmul_library_fp16") or {}
    if not copy_c and not gemm_c:
        return None, "; ".join(n.removeprefix("note: --profile ncu: ") for n in notes) or "ncu gave no counters", {}
    return copy_c.get("time"), None, {"dram_read": copy_c.get("dram_read"), "dram_write": copy_c.get("dram_write"),
                                      "flops_tensor": gemm_c.get("flops_tensor")}
