"""`roofline calibrate --energy`: the spec's energy block (docs/energy.md) measured on this GPU, and the energy
counter check of `roofline doctor`.

Each probe runs in a loop for `loop_seconds` (2.5 s by default) between two readings of NVML's total-energy counter
(roofline.measurement.gpustate), so the counter's 20-100 ms updates move the figure by at most a few per cent
(roofline.records.energy). The idle power π0 is the counter's mean over `idle_seconds` with nothing running, read
first, before any probe has warmed the GPU. Then, as Choi et al. (IPDPS 2013) derive them, the energy of one byte or
one FLOP over idle:

    ε_mem  = (P_stream - π0) / bandwidth                 (J/B, from a copy; a triad beside it as a cross-check)
    ε_flop = (P_probe  - π0 - ε_mem · Q_probe) / FLOP rate (J/FLOP, per roof: FMA chains for fp32, cuBLAS GEMMs for
                                                           the tensor roofs through cupy.matmul)

where Q_probe is the compute probe's own compulsory DRAM traffic per second (a GEMM reads A and B and writes C):
its energy is the model's W·ε_flop + Q·ε_mem term for the bytes, so leaving it in ε_flop would count those bytes
twice for every kernel, the probe itself included (on an H200 a 4096³ FP16 GEMM's compulsory bytes are about 9 % of
its energy over idle). With it taken out, the model applied to a probe gives back the probe's own energy over idle.

Every probe runs on RANDOM data (normal floats, a random step per FMA chain): power depends on the data, and on an
H200 the same FP16 GEMM drew 377 W on all-ones matrices and 688 W on random normal ones (issue 33). Each probe's
output is checked before its figure counts. Each run records its window, the mean SM clock (sampled while the GPU
is busy), and whether the power cap held the clock down: a GEMM at the cap is measured at the cap's clock, which is
the energy it costs there.

Opt-in (`calibrate --energy`): about 20-25 s on top of calibrate's 30 s (six 2.5 s loops, the idle window, the
data). CuPy arrays come through the backend object; the probes take their launch and check functions, so the loop
and the arithmetic run with fakes on any machine.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from roofline.errors import first_line
from roofline.measurement.calibrate.figures import FAILED, OK, SKIPPED
from roofline.measurement.calibrate.spec import Amend
from roofline.measurement.progress import SILENT, Progress
from roofline.model.invariants import outside
from roofline.model.units import quantity_text
from roofline.records.clockstate import CAPPED_FRACTION
from roofline.records.energy import COUNTER_PERIOD
from roofline.version import __version__
from roofline.measurement.calibrate import gpu as calibrate_gpu  # through the module: tests stand in for its probes

# The part of the loop between two clock samples: short enough for several samples a second, long enough that the
# host's launch path and the NVML reads stay a small part of the window.
BATCH_SECONDS = 0.05
# Doctor: the counter's mean power and NVML's power samples over the same steady load agree within this.
COUNTER_TOLERANCE = 0.10


@dataclass(frozen=True)
class EnergyPlan:
    idle_settle: float = 1.0  # s of quiet before the idle window (the GPU leaves the last load's clocks)
    idle_seconds: float = 1.0  # s of the idle window
    loop_seconds: float = 2.5  # s of each probe's loop: the counter's 100 ms updates are then 4 % of it
    stream_n: int = 2**28  # float32 elements per stream array (1 GiB, far past any L2)
    fma_iters: int = 16384  # steps of each FMA chain per launch (about 2 ms on an H200)
    check_iters: int = 64  # steps of the checked FMA launch (compared with a float64 reference)
    gemm_n: int = 8192  # the GEMMs' N (2 N³ FLOP a run)
    seed: int = 1234


FULL_ENERGY = EnergyPlan()
QUICK_ENERGY = EnergyPlan(loop_seconds=1.5, stream_n=2**26, fma_iters=4096, gemm_n=4096)


@dataclass
class EnergyRun:
    """One probe's loop (or the idle window) and the energy per unit it gives, SI units."""

    name: str  # "idle", "copy", "triad", "FMA fp32", "GEMM fp16", ...
    field: str | None  # the energy block field it feeds: "idle_power", "memory.dram", "compute.fp32"; None: a check
    status: str  # OK, FAILED or SKIPPED
    unit: str = ""  # "B" or "FLOP": what `rate` and `per_unit` count
    window: float | None = None  # s between the two counter readings
    energy: float | None = None  # J over the window
    power: float | None = None  # W, mean over the window
    rate: float | None = None  # B/s or FLOP/s over the window
    per_unit: float | None = None  # J/B or J/FLOP over idle: (power - idle - memory_power) / rate
    memory_power: float | None = None  # W of a compute probe's compulsory DRAM traffic at ε_mem, taken out (Choi)
    runs: int = 0
    sm_clock_mean: float | None = None  # Hz, mean of the samples taken while the GPU was busy
    sm_clock_max: float | None = None  # Hz, the GPU's maximum SM clock
    power_capped: float | None = None  # share of the window the power policy held the clocks down
    capped: bool | None = None  # power_capped above roofline.records.clockstate.CAPPED_FRACTION
    power_limit: float | None = None  # W
    inputs: str = ""  # what data it ran on
    note: str | None = None  # why it failed, or what to know

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Probe:
    """A loop to time: `launch` queues one run (amount `per_run` of `unit`), `check` says what is wrong with the
    output of the runs so far (None: right)."""

    name: str
    field: str
    unit: str
    per_run: float
    launch: Callable[[], None]
    check: Callable[[], str | None]
    inputs: str
    dram_bytes: float = 0.0  # compulsory DRAM bytes per run of a compute probe: their energy is ε_mem's, not ε_flop's


def idle_run(monitor: Any, plan: EnergyPlan, sleep: Callable[[float], None] = time.sleep) -> EnergyRun:
    """π0: the counter's mean power over `idle_seconds` with nothing running on the GPU."""
    sleep(plan.idle_settle)
    before = monitor.read()
    sleep(plan.idle_seconds)
    state = monitor.window(before, monitor.read())
    power = state.get("power_mean")
    if not power or power <= 0:
        return EnergyRun("idle", "idle_power", FAILED, window=state.get("window"),
                         note="the energy counter did not advance over the idle window")
    return EnergyRun("idle", "idle_power", OK, window=state["window"], energy=state.get("energy"), power=power,
                     sm_clock_mean=before.sm_clock, sm_clock_max=state.get("sm_clock_max"),
                     power_limit=state.get("power_limit"), inputs="nothing running")


def loop_run(probe: Probe, monitor: Any, sync: Callable[[], None], seconds: float) -> EnergyRun:
    """`probe` launched in batches for at least `seconds` between two counter readings; the SM clock sampled after
    each batch is queued (the GPU still busy), the batch sized to BATCH_SECONDS from one timed launch. Time is the
    monitor's clock, the one its readings carry."""
    clock: Callable[[], float] = monitor.clock
    try:
        probe.launch()  # the first launch pays for set-up (a cuBLAS handle, a module load): not the estimate
        sync()
        start = clock()
        for _ in range(3):
            probe.launch()
        sync()
        one = max((clock() - start) / 3, 1e-7)
        batch = max(1, int(BATCH_SECONDS / one))
        before = monitor.read()
        runs, clocks = 0, []
        while True:
            for _ in range(batch):
                probe.launch()
            runs += batch
            sample = monitor.read().sm_clock
            if sample:
                clocks.append(sample)
            sync()
            if clock() - before.time >= seconds:
                break
        after = monitor.read()
        problem = probe.check()
    except Exception as exc:  # noqa: BLE001 - a probe that raises is reported, never a crash
        return EnergyRun(probe.name, probe.field, FAILED, probe.unit, inputs=probe.inputs,
                         note=f"{type(exc).__name__}: {first_line(exc, 300)}")
    state = monitor.window(before, after)
    window, energy = state["window"], state.get("energy")
    capped = state.get("power_capped")
    run = EnergyRun(probe.name, probe.field, OK, probe.unit, window=window, energy=energy,
                    power=state.get("power_mean"), rate=probe.per_run * runs / window if window > 0 else None,
                    runs=runs, sm_clock_mean=sum(clocks) / len(clocks) if clocks else None,
                    sm_clock_max=state.get("sm_clock_max"), power_capped=capped,
                    capped=None if capped is None else capped > CAPPED_FRACTION,
                    power_limit=state.get("power_limit"), inputs=probe.inputs)
    if problem is not None:
        run.status, run.note = FAILED, f"wrong result: {problem}"
    elif not energy or energy <= 0:
        run.status, run.note = FAILED, "the energy counter did not advance over the loop"
    return run


def derive(run: EnergyRun, idle: EnergyRun, memory_power: float = 0.0) -> EnergyRun:
    """The run's energy per unit over idle, (P - π0 - memory_power) / rate, held to the plausible range of its kind;
    `memory_power` is the W of a compute probe's own DRAM traffic at ε_mem (memory_power_of)."""
    if run.status != OK:
        return run
    if idle.status != OK or not idle.power:
        run.status, run.note = FAILED, "no idle power to subtract (the idle window failed)"
        return run
    if not run.rate or not run.power or run.power <= idle.power + memory_power:
        run.status = FAILED
        run.note = (f"mean power {run.power or 0:.0f} W is not above idle {idle.power:.0f} W"
                    + (f" plus its DRAM traffic's {memory_power:.0f} W" if memory_power else ""))
        return run
    run.per_unit = (run.power - idle.power - memory_power) / run.rate
    run.memory_power = memory_power or None
    kind = "energy_per_byte" if run.unit == "B" else "energy_per_flop"
    if (why := outside(kind, run.per_unit)) is not None:
        run.status, run.note = FAILED, why
    return run


def memory_power_of(probe: Probe, run: EnergyRun, earlier: Sequence[EnergyRun]) -> float:
    """W that a compute probe's compulsory DRAM traffic draws at the ε_mem of the copy run before it (the triad's
    where the copy failed): its bytes per second times ε_mem. 0 for a memory probe, or before any ε_mem is known
    (the figure then keeps the bytes' energy, as before; the probes run the copy first)."""
    if not probe.dram_bytes or probe.unit != "FLOP" or run.status != OK or not run.rate:
        return 0.0
    memory = dram_run(earlier)
    if memory is None or memory.per_unit is None:
        return 0.0
    return memory.per_unit * probe.dram_bytes * run.rate / probe.per_run


def dram_run(runs: Sequence[EnergyRun]) -> EnergyRun | None:
    """The run ε_mem comes from: the copy, else the triad (its cross-check), where one succeeded."""
    ok = {r.field: r for r in runs if r.status == OK and r.field}
    return ok.get("memory.dram") or ok.get("memory.triad")


def calibrate_energy(backend: Any, plan: EnergyPlan = FULL_ENERGY, progress: Progress = SILENT,
                     fp32_rate: float | None = None, probes: Sequence[Probe] | None = None,
                     sleep: Callable[[float], None] = time.sleep) -> list[EnergyRun]:
    """Idle first, then every probe (the GPU ones from the backend, or `probes`), each with its energy per unit.
    `fp32_rate` (FLOP/s of the FP32 cores) decides whether the TF32 GEMM ran on tensor cores."""
    monitor = backend.monitor
    progress.start("idle power")
    idle = idle_run(monitor, plan, sleep)
    progress.finish("idle power", idle.status)
    runs = [idle]
    for probe in (probes if probes is not None else gpu_probes(backend, plan)):
        progress.start(f"energy: {probe.name}")
        run = loop_run(probe, monitor, backend.synchronize, plan.loop_seconds)
        run = derive(run, idle, memory_power_of(probe, run, runs))
        if run.field == "compute.tf32_tensor" and run.status == OK and fp32_rate and run.rate \
                and run.rate <= fp32_rate:
            run.status, run.note = SKIPPED, (f"{run.rate / 1e12:.1f} TFLOP/s does not beat the FP32 cores "
                                             f"({fp32_rate / 1e12:.1f}): TF32 did not apply")
        runs.append(run)
        progress.finish(f"energy: {probe.name}", run.status)
        release = getattr(backend, "release", None)
        if release is not None:
            release()
    return runs


# ---- the GPU probes (CuPy through the backend) --------------------------------------------------------------

_FMA_PAIRS = 8
_FMA_SOURCE = r"""
extern "C" __global__ void energy_fma(const float* __restrict__ init, float* __restrict__ out, int iters) {
    // Each thread steps 8 independent pairs of the symplectic map x += h y, y -= h x (2 FMAs a step): area-
    // preserving for |h| < 2, so the values stay bounded and keep changing (random h and seeds: random data).
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const float* p = init + 17 * i;
    const float h = p[0], g = -p[0];
    float x[8], y[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) { x[j] = p[1 + 2 * j]; y[j] = p[2 + 2 * j]; }
    for (int k = 0; k < iters; ++k) {
#pragma unroll
        for (int j = 0; j < 8; ++j) { x[j] = fmaf(h, y[j], x[j]); y[j] = fmaf(g, x[j], y[j]); }
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) { out[16 * i + 2 * j] = x[j]; out[16 * i + 2 * j + 1] = y[j]; }
}
"""


def fma_init(threads: int, seed: int) -> np.ndarray:
    """Per thread: a step h uniform in [0.1, 1.9) and 8 (x, y) seeds, normal: 17 float32 a thread."""
    rng = np.random.default_rng(seed)
    init = rng.standard_normal((threads, 17)).astype(np.float32)
    init[:, 0] = rng.uniform(0.1, 1.9, threads).astype(np.float32)
    return init


def fma_reference(init: np.ndarray, iters: int) -> np.ndarray:
    """What energy_fma writes, in float64: (threads, 16) as x0, y0, x1, y1, ..."""
    h = init[:, :1].astype(np.float64)
    x = init[:, 1::2].astype(np.float64)
    y = init[:, 2::2].astype(np.float64)
    for _ in range(iters):
        x = x + h * y
        y = y - h * x
    out = np.empty((init.shape[0], 16))
    out[:, 0::2], out[:, 1::2] = x, y
    return out


def _close(got: np.ndarray, want: np.ndarray, rtol: float) -> str | None:
    """None when got is within rtol of want, relative to want's largest magnitude (sums that cancel stay fair)."""
    scale = float(np.max(np.abs(want))) or 1.0
    err = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
    if not np.all(np.isfinite(got)):
        return "non-finite values"
    return None if err <= rtol else f"max error {err:.3g} of the largest value, over {rtol:g}"


def gpu_probes(backend: Any, plan: EnergyPlan) -> list[Probe]:
    """Copy and triad on random normal float32, FMA chains on random steps and seeds, and a cuBLAS GEMM per
    precision (FP16, BF16 where CuPy has it, TF32) on random normal matrices."""
    cp = backend.cp
    n, m = plan.stream_n, plan.gemm_n
    rs = cp.random.RandomState(plan.seed)
    probes: list[Probe] = []

    a = rs.standard_normal(n, dtype=cp.float32)
    b = cp.empty_like(a)
    step = max(1, n // 4096)
    probes.append(Probe("copy", "memory.dram", "B", 2.0 * n * 4, lambda: cp.copyto(b, a),
                        lambda: None if bool(cp.all(b[::step] == a[::step])) else "b differs from a",
                        f"random normal float32, 2 x {n} elements (cupy.random, seed {plan.seed})"))
    c, d = rs.standard_normal(n, dtype=cp.float32), rs.standard_normal(n, dtype=cp.float32)
    triad = cp.ElementwiseKernel("float32 b, float32 c, float32 s", "float32 a", "a = b + s * c", "energy_triad")
    s = np.float32(0.5)
    out = cp.empty_like(a)
    probes.append(Probe("triad", "memory.triad", "B", 3.0 * n * 4, lambda: triad(c, d, s, out),
                        lambda: _close(cp.asnumpy(out[::step]), cp.asnumpy(c[::step]).astype(np.float64)
                                       + 0.5 * cp.asnumpy(d[::step]).astype(np.float64), 1e-6),
                        f"random normal float32, 3 x {n} elements (cupy.random, seed {plan.seed})"))

    sms = int(backend.info.get("sm_count") or 16)
    blocks, threads = 8 * sms, 256
    total = blocks * threads
    init_host = fma_init(total, plan.seed)
    init = cp.asarray(init_host)
    fma_out = cp.empty(total * 16, dtype=cp.float32)
    kernel = cp.RawKernel(_FMA_SOURCE, "energy_fma")
    kernel((blocks,), (threads,), (init, fma_out, np.int32(plan.check_iters)))
    backend.synchronize()
    sample = slice(0, min(total, 512))
    fma_problem = _close(cp.asnumpy(fma_out).reshape(total, 16)[sample],
                         fma_reference(init_host[sample], plan.check_iters), 1e-3)
    flops = 2.0 * 2 * _FMA_PAIRS * plan.fma_iters * total
    probes.append(Probe("FMA fp32", "compute.fp32", "FLOP", flops,
                        lambda: kernel((blocks,), (threads,), (init, fma_out, np.int32(plan.fma_iters))),
                        lambda: fma_problem or (None if bool(cp.all(cp.isfinite(fma_out))) else "non-finite output"),
                        f"random steps h in [0.1, 1.9) and normal seeds per FMA chain (seed {plan.seed}), "
                        f"{plan.check_iters}-step launch checked against float64",
                        dram_bytes=float(init.nbytes + fma_out.nbytes)))

    def gemm(name: str, field: str, dtype: Any, rtol: float, host: bool = False,
             around: Callable[[], Any] | None = None) -> Probe:
        if host:  # bfloat16: random normal made on the host, in ml_dtypes' bfloat16
            rng = np.random.default_rng(plan.seed)
            ga = cp.asarray(rng.standard_normal((m, m), dtype=np.float32).astype(dtype))
            gb = cp.asarray(rng.standard_normal((m, m), dtype=np.float32).astype(dtype))
        else:
            ga = rs.standard_normal((m, m), dtype=cp.float32).astype(dtype)
            gb = rs.standard_normal((m, m), dtype=cp.float32).astype(dtype)
        gc = cp.empty((m, m), dtype=dtype)

        def launch() -> None:
            if around is None:
                cp.matmul(ga, gb, out=gc)
                return
            with around():
                cp.matmul(ga, gb, out=gc)

        def check() -> str | None:
            rows = cp.asnumpy(ga[:4]).astype(np.float64)
            want = rows @ cp.asnumpy(gb).astype(np.float64)
            return _close(cp.asnumpy(gc[:4]).astype(np.float32), want, rtol)

        return Probe(name, field, "FLOP", 2.0 * m**3, launch, check,
                     f"random normal {np.dtype(dtype).name} {m}x{m} matrices (seed {plan.seed})",
                     dram_bytes=3.0 * m * m * np.dtype(dtype).itemsize)  # A and B read, C written, once each

    cc = float(str(backend.info.get("compute_capability") or 0) or 0)
    if cc >= 7.0:
        probes.append(gemm("GEMM fp16", "compute.fp16_tensor", cp.float16, 1e-2))
    if cc >= 8.0:
        if calibrate_gpu.bf16_probe(cp) is None:
            import ml_dtypes  # lazy: optional (CuPy without its own bfloat16), for this GPU probe only

            probes.append(gemm("GEMM bf16", "compute.bf16_tensor", np.dtype(ml_dtypes.bfloat16), 3e-2, host=True))
        probes.append(gemm("GEMM tf32", "compute.tf32_tensor", cp.float32, 1e-2,
                           around=lambda: calibrate_gpu.tf32_compute_type(cp)))
    return probes


# ---- the measured spec's energy block ----------------------------------------------------------------------


def energy_block(runs: Sequence[EnergyRun], roofs: Sequence[str], where: str) -> tuple[dict[str, Any] | None,
                                                                                     list[str]]:
    """The spec's `energy` block (as a spec file writes it) and the notes to print; None when the idle power or the
    DRAM figure is missing (the block requires both). Only roofs the spec has (`roofs`) are written."""
    ok = {r.field: r for r in runs if r.status == OK and r.field}
    notes = [f"energy {r.name}: {r.status.lower()}: {r.note}" for r in runs if r.status != OK]
    idle, dram = ok.get("idle_power"), dram_run(runs)
    if idle is None or dram is None:
        notes.append("no energy block written: it needs the idle power and the copy's energy per byte")
        return None, notes
    compute = {}
    for r in runs:
        roof = (r.field or "").removeprefix("compute.")
        if r.status == OK and r.field and r.field.startswith("compute."):
            if roof in roofs:
                compute[roof] = quantity_text(r.per_unit or 0.0, "energy_per_flop")
            else:
                notes.append(f"energy {r.name}: not written: the measured spec has no {roof} roof")
    if not compute:
        notes.append("no energy block written: no roof's energy per FLOP was measured")
        return None, notes
    capped = [r.name for r in runs if r.status == OK and r.capped]
    parts = [f"{r.name} {r.power:.0f} W over {r.window:.2f} s, {_rate_text(r)}" for r in runs
             if r.status == OK and r.power and r.window]
    shortest = min(r.window or 0.0 for r in runs if r.status == OK)
    source = (f"{where}: NVML total-energy counter around each loop (>= {shortest:.1f} s; the counter updates every "
              f"20-100 ms, so <= {COUNTER_PERIOD / shortest:.0%} of a window), on random data; energy per unit over "
              f"idle = (P - idle) / rate, a compute probe's own compulsory DRAM bytes at the copy's energy per byte taken "
              f"out (Choi et al., IPDPS 2013); {'; '.join(parts)}"
              + (f"; power-capped: {', '.join(capped)} (figures at the capped clock)" if capped else ""))
    return {"idle_power": quantity_text(idle.power or 0.0, "power"),
            "memory": {"dram": quantity_text(dram.per_unit or 0.0, "energy_per_byte")},
            # the rate that energy per byte was measured at: the power roof charges DRAM bytes at most at it
            **({"dram_bandwidth": quantity_text(dram.rate, "bandwidth")} if dram.rate else {}),
            "compute": compute, "inputs": "random", "source": source}, notes


def _rate_text(run: EnergyRun) -> str:
    if run.unit == "B":
        return f"{(run.rate or 0) / 1e12:.3g} TB/s"
    if run.unit == "FLOP":
        return f"{(run.rate or 0) / 1e12:.4g} TFLOP/s"
    return "idle"


def add_energy(spec_doc: dict[str, Any], runs: Sequence[EnergyRun], where: str) -> list[str]:
    """Put the energy block into a measured spec document (before its notes), with its sources entry; the notes
    to print."""
    block, notes = energy_block(runs, list(spec_doc.get("compute") or {}), where)
    if block is None:
        return notes
    fields = ["energy.idle_power", "energy.memory.dram", *(["energy.dram_bandwidth"] if "dram_bandwidth" in block else []),
              *(f"energy.compute.{k}" for k in block["compute"])]
    rebuilt: dict[str, Any] = {}
    for key, value in spec_doc.items():
        if key == "notes":
            rebuilt["energy"] = block
        rebuilt[key] = value
    rebuilt.setdefault("energy", block)
    rebuilt.setdefault("sources", []).append({"for": fields, "cite": block["source"]})
    spec_doc.clear()
    spec_doc.update(rebuilt)
    return notes


# ---- doctor: does the energy counter work, and agree with the power samples? ------------------------------


def with_energy(runs: Sequence[EnergyRun], device_name: Any) -> Amend:
    """calibrate --energy's amendment of the measured spec (roofline.measurement.calibrate.spec.written_spec): the
    energy block, cited with the date the spec carries; its notes become the spec's warnings."""
    def amend(spec_doc: dict[str, Any], date: str) -> tuple[dict[str, Any], list[str]]:
        return spec_doc, add_energy(spec_doc, runs, f"roofline calibrate --energy {__version__} on {device_name}, "
                                                    f"{date}")

    return amend


def counter_agreement(monitor: Any, launch: Callable[[], None], sync: Callable[[], None], seconds: float = 2.0,
                      warmup: float = 1.0, every: float = 0.1) -> dict[str, Any]:
    """Under a steady load (`launch` repeated): the counter's mean power over `seconds` after `warmup` s (so NVML's
    1 s power average has caught up), and the mean of nvmlDeviceGetPowerUsage sampled every `every` s over the
    same span. {counter_power, sampled_power, samples, window, energy} (None where not read)."""
    clock: Callable[[], float] = monitor.clock
    deadline = clock() + warmup
    while clock() < deadline:
        launch()
        sync()
    before = monitor.read()
    samples, next_at = [], clock()
    while clock() - before.time < seconds:
        launch()
        if clock() >= next_at:
            power = monitor.power_usage()
            if power is not None:
                samples.append(power)
            next_at += every
        sync()
    after = monitor.read()
    state = monitor.window(before, after)
    return {"counter_power": state.get("power_mean"), "sampled_power": sum(samples) / len(samples) if samples
            else None, "samples": len(samples), "window": state.get("window"), "energy": state.get("energy")}


def doctor_load(backend: Any, n: int) -> tuple[Callable[[], None], Callable[[], None]]:
    """A copy of random normal float32 (n elements) as doctor's steady load: (launch, release)."""
    cp = backend.cp
    a = cp.random.RandomState(7).standard_normal(n, dtype=cp.float32)
    b = cp.empty_like(a)

    def release() -> None:
        nonlocal a, b
        a = b = None
        backend.release()

    return (lambda: cp.copyto(b, a)), release


def table_rows(runs: Sequence[EnergyRun]) -> list[Mapping[str, Any]]:
    """The runs as the documents the renderer and --format json take."""
    return [r.to_dict() for r in runs]
