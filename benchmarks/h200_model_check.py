"""Issue 10, part 1, on an H200: does every bundled kernel's model count DRAM honestly? One table over the whole
catalogue: kernel, model DRAM bytes, Nsight Compute's DRAM bytes (read + write), their ratio, and a WARN naming why
when the ratio is outside ±10 % (the tool's own warning text where it gives one, then the known reason).

Run on the GPU machine from the repository root:
    python3 benchmarks/h200_model_check.py --out DIR [--deadline 200] [--kernel-timeout 60] [--group 4]
    python3 benchmarks/h200_model_check.py --table DIR [DIR ...]     # the table again from saved results, no GPU

Kernels are profiled in small groups (`roofline measure --profile ncu --min-time 0.01 --min-repeats 3`, each
verified first) in their own process group with a timeout of --kernel-timeout seconds per kernel: a group that
times out or fails is killed whole (ncu and its target too) and its kernels are retried one at a time, so a slow
kernel costs only itself. No group starts after --deadline seconds; kernels not reached are listed as such (run
again with --only to finish them). matmul_tiled runs first, at N = 4096, 3072 and 2048: its DRAM traffic is A + C
+ B once per wave of resident blocks when B (4N² bytes) outgrows the L2 (see its descriptor), so the three sizes
test that explanation (predicted 2.00×, 1.67× and 1.00× the model). DIR receives groups/*.json and *.log, and
table.txt, the table this prints. Exit status 0 when every kernel got counters, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

L2_BYTES = 60 * 2**20  # H200 L2 (spec h200-sxm)
SMS = 132
TOLERANCE = 0.10
TILED = [("matmul_tiled", {"n": 4096}), ("matmul_tiled", {"n": 3072}), ("matmul_tiled", {"n": 2048})]


def tiled_prediction(n: int, sms: int = SMS, blocks_per_sm: int = 2, l2: int = L2_BYTES, itemsize: int = 4) -> float:
    """matmul_tiled's DRAM bytes ÷ its model (3N² × itemsize). Blocks run in row-major order, so a wave of resident
    blocks spans every block column and needs all of B; A and C are touched once. When what one wave streams through
    the L2 (all of B, its A panels, its C tiles) is more than the L2 holds, B is gone by the time the next wave starts
    at k = 0, and each wave reads it again: ceil(waves) times (the last, partial wave still spans every column). Else
    B is read once. The arithmetic of kernels/matmul_tiled.yaml's description."""
    tiles = -(-n // 128)
    per_wave = sms * blocks_per_sm
    waves = -(-tiles * tiles // per_wave)
    b = n * n * itemsize
    rows = min(tiles, -(-per_wave // tiles))  # block rows one wave spans
    wave_bytes = b + rows * 128 * n * itemsize + min(per_wave, tiles * tiles) * 128 * 128 * itemsize
    b_reads = waves if wave_bytes > l2 else 1
    return (2 + b_reads) / 3


def known_reason(k: dict[str, Any], ratio: float) -> str | None:
    """Why a kernel's DRAM bytes differ from its model, where the descriptor or the hardware explains it."""
    name, params, model = k["name"], k.get("params") or {}, float(k.get("bytes") or 0)
    if name == "matmul_tiled" and ratio > 1 + TOLERANCE:
        n = int(params["n"])
        predicted = tiled_prediction(n)
        beyond = ("" if abs(ratio - predicted) <= TOLERANCE * predicted else
                  f"; {ratio:.2f}× is beyond what the waves explain: not yet diagnosed")
        return (f"the kernel, not the model: B ({4 * n**2 / 2**20:.0f} MiB), a wave's A panels and C tiles outgrow the "
                f"60 MiB L2, so each of the {-(-(-(-n // 128))**2 // (SMS * 2))} waves of resident blocks reads B "
                f"again (predicted {predicted:.2f}×{beyond}; kernels/matmul_tiled.yaml)")
    if name == "matmul_naive" and ratio > 1 + TOLERANCE:
        return "the kernel, not the model: each wave of resident blocks streams all of B, which outgrows the L2 " \
               "(kernels/matmul_naive.yaml)"
    if name.startswith("matmul_library") and ratio > 1 + TOLERANCE:
        return ("the library, not the model: cuBLAS's tile order re-reads A and B from DRAM (measured 2.0× in FP32 "
                "and 1.75× in FP16 at N = 4096 on the H200); the model counts the compulsory 3N², and the GEMM is "
                "compute-bound either way (kernels/matmul_library*.yaml)")
    missing = model * (1 - ratio)
    if ratio < 1 - TOLERANCE and 0 < missing <= L2_BYTES:
        return (f"{missing / 2**20:.0f} MiB short, within the L2's 60 MiB: the last writes were still in L2 when the "
                "kernel ended (ncu counts what reached DRAM by then)")
    return None


def dram_bytes(k: dict[str, Any]) -> float | None:
    c = k.get("counters") or {}
    if c.get("dram_bytes") is not None:
        return float(c["dram_bytes"])
    if c.get("dram_read") is not None and c.get("dram_write") is not None:
        return float(c["dram_read"]) + float(c["dram_write"])
    return None


def row(k: dict[str, Any]) -> tuple[list[str], bool]:
    """One table row and whether it needs no warning (within ±10 %, or a stated reason)."""
    from roofline.records.files import params_text
    from roofline.model.units import format_bytes

    model, measured = k.get("bytes"), dram_bytes(k)
    cells = [k["name"], params_text(k.get("params") or {}), format_bytes(model) if model else "–",
             format_bytes(measured) if measured is not None else "–"]
    if measured is None or not model:
        return cells + ["–", "NO COUNTERS " + (k.get("error") or k.get("status") or "")], False
    ratio = measured / model
    if abs(ratio - 1) <= TOLERANCE:
        return cells + [f"{ratio:.2f}", "ok"], True
    tool = [k["counter_flag"]] if k.get("counter_flag") else []  # measure's traffic-over-model warning, verbatim
    reason = known_reason(k, ratio)
    why = "; ".join(tool + [reason or "no known reason"])
    return cells + [f"{ratio:.2f}", f"WARN {why}"], reason is not None


def table(results: list[dict[str, Any]], missing: list[tuple[str, str]]) -> tuple[str, bool]:
    """The table, and whether every kernel has counters and is within ±10 % or has a stated reason. `missing` lists
    (kernel, why) for kernels with no results at all (not reached before the deadline, a group that died)."""
    head = ["kernel", "params", "model DRAM", "ncu DRAM", "ncu/model", "verdict"]
    rows, ok = [], True
    for k in results:
        cells, good = row(k)
        rows.append(cells)
        ok &= good
    rows += [[name, "", "–", "–", "–", why] for name, why in missing]
    ok &= not missing
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r[:5], widths)) + " | " + r[5] for r in [head] + rows]
    lines.append(f"{sum(1 for r in rows if r[5] == 'ok')} of {len(rows)} within ±{TOLERANCE:.0%}; "
                 + ("every other one has a stated reason" if ok else "SOME WITHOUT A REASON OR COUNTERS (see above)"))
    return "\n".join(lines) + "\n", ok


def run_group(cases: list[tuple[str, dict]], out: Path, tag: str, timeout: float, ncu: str) -> int:
    """One `measure --profile ncu` of `cases` (one params set), killed with its whole process group on timeout."""
    params = cases[0][1]
    cmd = [sys.executable, "-m", "roofline", "measure", "--spec", "h200", "--min-time", "0.01", "--min-repeats", "3",
           "--profile", "ncu", "--ncu", ncu, "-o", str(out / f"{tag}.json")]
    for key, value in params.items():
        cmd += ["-p", f"{key}={value}"]
    cmd += [name for name, _ in cases]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    started = time.perf_counter()
    with (out / f"{tag}.log").open("w") as log:
        log.write(" ".join(cmd) + "\n")
        log.flush()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # measure, ncu and the target it started: nothing left on the GPU
            proc.wait()
            rc = 124
        log.write(f"\n[exit {rc} after {time.perf_counter() - started:.1f} s]\n")
    print(f"{tag}: {' '.join(n for n, _ in cases)} {params or ''} exit {rc} ({time.perf_counter() - started:.0f} s)",
          flush=True)
    return rc


def load(dirs: list[Path]) -> list[dict[str, Any]]:
    """Every profiled entry in the groups' results, the last one per (kernel, params)."""
    found: dict[str, dict[str, Any]] = {}
    for d in dirs:
        for path in sorted((d / "groups").glob("*.json")) if (d / "groups").is_dir() else []:
            for k in json.loads(path.read_text())["kernels"]:
                key = k["name"] + json.dumps(k.get("params") or {}, sort_keys=True)
                if dram_bytes(k) is not None or key not in found:
                    found[key] = k
    return list(found.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("model-check"))
    ap.add_argument("--table", type=Path, nargs="+", help="print the table from saved DIRs, run nothing")
    ap.add_argument("--only", help="comma-separated kernels (default: the whole catalogue)")
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--kernel-timeout", type=float, default=60.0)
    ap.add_argument("--deadline", type=float, default=200.0)
    args = ap.parse_args()
    if args.table:
        text, ok = table(load(args.table), [])
        print(text)
        return 0 if ok else 1

    from roofline.load.kernels import KernelCatalog

    names = [d.name for d in KernelCatalog.load().descriptors if d.implementation]
    if args.only:
        names = [n for n in args.only.split(",") if n]
    cases: list[list[tuple[str, dict]]] = [[c] for c in TILED if c[0] in names]
    rest = [n for n in names if n != "matmul_tiled"]
    cases += [[(n, {}) for n in rest[i:i + args.group]] for i in range(0, len(rest), args.group)]
    groups = args.out / "groups"
    groups.mkdir(parents=True, exist_ok=True)
    ncu = os.environ.get("NCU") or shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    started = time.perf_counter()
    last: dict[str, str] = {}  # kernel (with params) → the last attempt's tag and exit status

    def key(case: tuple[str, dict]) -> str:
        return case[0] + json.dumps(case[1], sort_keys=True)

    def attempt(group: list[tuple[str, dict]], tag: str, timeout: float) -> None:
        rc = run_group(group, groups, tag, timeout, ncu)
        for case in group:
            last[key(case)] = f"NO RESULT (exit {rc}{', timed out' if rc == 124 else ''}; groups/{tag}.log)"

    for i, group in enumerate(cases):
        if time.perf_counter() - started > args.deadline:
            continue
        attempt(group, f"g{i:02d}", args.kernel_timeout * len(group))
        if len(group) == 1:
            continue
        done = {key((k["name"], {})) for k in load([args.out]) if dram_bytes(k) is not None or k["status"] == "FAILED"}
        for j, case in enumerate(c for c in group if key(c) not in done):  # the group died: each on its own
            if time.perf_counter() - started <= args.deadline:
                attempt([case], f"g{i:02d}r{j}", args.kernel_timeout)
    results = load([args.out])
    have = {k["name"] + json.dumps(k.get("params") or {}, sort_keys=True) for k in results}
    have |= {key((k["name"], {})) for k in results}
    missing = [(c[0] + (f" {c[1]}" if c[1] else ""), last.get(key(c), "NOT RUN (deadline)"))
               for group in cases for c in group if key(c) not in have]
    text, ok = table(results, missing)
    text = f"{len(cases)} groups in {time.perf_counter() - started:.0f} s\n" + text
    (args.out / "table.txt").write_text(text)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
