"""Check roofline's table of Triton FLOPs per operation (roofline/model/ops/triton_flops.py: OPS) against what
Nsight Compute counts on the GPU (issue 38 §3).

Each operation is compiled alone in a tiny Triton kernel, `out = OP(x[, w]) + z` over 2^19 float32 elements (a
baseline kernel `out = x + z` is subtracted, so an operation that folds into the add, like a negation, shows as
what it adds), and run once under ncu with the FLOP counters roofline reads (add + mul + 2 x fma of
sm__sass_thread_inst_executed_op_{f,h,d}{add,mul,fma}_pred_on). Inputs stay in the normal range, so the
subnormal-scaling paths of the approximations stay predicated off. Two whole kernels written as Inductor writes
them (a layer-norm backward and an RMS norm, persistent reductions) are counted too and compared with what
roofline's reader of generated sources (read_source) makes of the same text.

Run ON the GPU machine from the repository root (torch, triton and ncu needed):
    python benchmarks/triton_flops_check.py            # ncu; falls back to counting SASS (cuobjdump) without it
Writes $OUT/triton_flops_check.txt and .json (OUT defaults to ./triton-flops-out); about a minute, at most 3
(ncu is stopped at NCU_TIMEOUT). A case whose function this Triton lacks (looked up in the backend's own libdevice
module, triton.language.extra.cuda.libdevice on NVIDIA: `libdevice.fast_tanhf` is ROCm's) is reported "not
available in triton X" and skipped, and one that fails to compile or launch is reported with its error; the rest
still run. Exit 1 when an operation's count differs from the table (or a whole kernel from read_source with its
sums' trees as launched, roofline.model.ops.triton_flops.reduction_tree_adds, by more than 0.8-1.25x: the model
leaves out the per-row work every thread of a row repeats), 2 when nothing could run.
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from roofline.model.ops.triton import read_source  # noqa: E402
from roofline.model.ops.triton_flops import OPS, reduction_tree_adds  # noqa: E402

N = 1 << 19
NCU_TIMEOUT = 150  # s: the whole check stays under 3 minutes
BLOCK = 128  # with 4 warps: one element per thread, so a static SASS count is a count per element
METRICS = [f"sm__sass_thread_inst_executed_op_{p}{o}_pred_on.sum" for p in "fhd" for o in ("add", "mul", "fma")]

# name, the table entries it should cost (summed), x's kind, the expression (x, w: loaded; xp: x > 0)
CASES: list[tuple[str, tuple[str, ...], str, str]] = [
    ("add", ("+",), "f32", "x + w"),
    ("sub", ("-",), "f32", "x - w"),
    ("mul", ("*",), "f32", "x * w"),
    ("neg", ("neg",), "f32", "-x"),
    ("div", ("/",), "f32", "x / w"),
    ("div_rn", ("div_rn",), "f32", "tl.div_rn(x, w)"),
    ("libdevice_exp", ("libdevice.exp",), "f32", "libdevice.exp(x)"),
    ("tl_math_exp", ("tl_math.exp",), "f32", "tl_math.exp(x)"),
    ("libdevice_exp2", ("libdevice.exp2",), "f32", "libdevice.exp2(x)"),
    ("tl_math_exp2", ("tl_math.exp2",), "f32", "tl_math.exp2(x)"),
    ("tl_math_log", ("tl_math.log",), "pos", "tl_math.log(x)"),
    ("libdevice_log", ("libdevice.log",), "pos", "libdevice.log(x)"),
    ("libdevice_log2", ("libdevice.log2",), "pos", "libdevice.log2(x)"),
    ("libdevice_log1p", ("libdevice.log1p",), "pos", "libdevice.log1p(x)"),
    ("libdevice_expm1", ("libdevice.expm1",), "f32", "libdevice.expm1(x)"),
    ("libdevice_tanh", ("libdevice.tanh",), "f32", "libdevice.tanh(x)"),
    ("libdevice_erf", ("libdevice.erf",), "f32", "libdevice.erf(x)"),
    ("tl_math_sin", ("tl_math.sin",), "f32", "tl_math.sin(x)"),
    ("tl_math_cos", ("tl_math.cos",), "f32", "tl_math.cos(x)"),
    ("libdevice_rsqrt", ("libdevice.rsqrt",), "pos", "libdevice.rsqrt(x)"),
    ("tl_sqrt_rn", ("tl.sqrt_rn",), "pos", "tl.sqrt_rn(x)"),
    ("libdevice_sqrt", ("libdevice.sqrt",), "pos", "libdevice.sqrt(x)"),
    ("tl_sqrt", ("tl.sqrt",), "pos", "tl.sqrt(x)"),
    ("tl_sigmoid", ("tl.sigmoid",), "f32", "tl.sigmoid(x)"),
    ("libdevice_pow", ("libdevice.pow",), "pos", "libdevice.pow(x, w)"),
    ("tl_math_abs", ("tl_math.abs",), "f32", "tl_math.abs(x)"),
    ("maximum", ("triton_helpers.maximum",), "f32", "triton_helpers.maximum(x, w)"),
    ("minimum", ("triton_helpers.minimum",), "f32", "triton_helpers.minimum(x, w)"),
    ("where", ("tl.where",), "f32", "tl.where(x > w, x, w)"),
    ("rand", ("tl.rand",), "f32", "tl.rand(123, i) + x"),
    ("cast_fp16", ("cast_fp16_fp32",), "f16", "x.to(tl.float32)"),
    ("cast_bf16", ("cast",), "bf16", "x.to(tl.float32)"),
    ("exp_of_bf16", ("cast", "libdevice.exp"), "bf16", "libdevice.exp(x.to(tl.float32))"),
    ("exp_of_fp16", ("cast_fp16_fp32", "libdevice.exp"), "f16", "libdevice.exp(x.to(tl.float32))"),
    ("fast_tanhf", ("libdevice.fast_tanhf",), "f32", "libdevice.fast_tanhf(x)"),
]
EXTRA = {"rand": ("+",)}  # rand(...) + x: the add to x is one more FLOP

# the imports of an Inductor kernel (torch/_inductor/runtime/triton_helpers.py picks the backend's libdevice)
HEADER = '''import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
'''

POINTWISE = '''
@triton.jit
def k_{name}(x_ptr, w_ptr, z_ptr, out_ptr, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + i)
    w = tl.load(w_ptr + i)
    z = tl.load(z_ptr + i)
    y = {expr}
    tl.store(out_ptr + i, y + z)
'''

# Inductor's persistent layer-norm backward (GPT-2, triton_per_fused_..._native_layer_norm_backward_view_2) and RMS
# norm (Llama, triton_per_fused_..._add_mean_mul_pow_rsqrt_5), their bodies as generated
CLASSES = {
    "ln_backward": ("{'in_ptr0': '*fp32', 'in_ptr1': '*fp16', 'in_ptr2': '*fp32', 'in_ptr3': '*fp32', "
                    "'in_ptr4': '*fp32', 'in_ptr5': '*i1', 'out_ptr2': '*fp32', 'out_ptr3': '*fp16', "
                    "'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}", 4096, 768, 1024, '''
@triton.jit
def c_ln_backward(in_ptr0, in_ptr1, in_ptr2, in_ptr3, in_ptr4, in_ptr5, out_ptr2, out_ptr3, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 4096
    r0_numel = 768
    R0_BLOCK: tl.constexpr = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 768*x0), r0_mask, other=0.0)
    tmp1 = tl.load(in_ptr1 + (r0_1 + 768*x0), r0_mask, other=0.0).to(tl.float32)
    tmp4 = tl.load(in_ptr2 + (r0_1), r0_mask, eviction_policy='evict_last', other=0.0)
    tmp10 = tl.load(in_ptr3 + (r0_1 + 768*x0), r0_mask, other=0.0)
    tmp16 = tl.load(in_ptr4 + (x0), None, eviction_policy='evict_last')
    tmp24 = tl.load(in_ptr5 + (r0_1 + 768*x0), r0_mask, other=0.0).to(tl.int1)
    tmp2 = tmp1.to(tl.float32)
    tmp3 = tmp0 + tmp2
    tmp5 = tmp3 * tmp4
    tmp6 = tl.broadcast_to(tmp5, [XBLOCK, R0_BLOCK])
    tmp8 = tl.where(r0_mask, tmp6, 0)
    tmp9 = tl.sum(tmp8, 1)[:, None].to(tl.float32)
    tmp11 = tmp5 * tmp10
    tmp12 = tl.broadcast_to(tmp11, [XBLOCK, R0_BLOCK])
    tmp14 = tl.where(r0_mask, tmp12, 0)
    tmp15 = tl.sum(tmp14, 1)[:, None].to(tl.float32)
    tmp17 = tl.full([1, 1], 768.0, tl.float32)
    tmp18 = tmp5 * tmp17
    tmp19 = tmp18 - tmp9
    tmp20 = tmp10 * tmp15
    tmp21 = tmp19 - tmp20
    tmp22 = tmp16 * tmp21
    tmp23 = tmp22.to(tl.float32)
    tmp25 = tmp24.to(tl.float32)
    tmp26 = tl.full([1, 1], 1.1111111111111112, tl.float32)
    tmp27 = tmp25 * tmp26
    tmp28 = tmp23 * tmp27
    tl.store(out_ptr2 + (r0_1 + 768*x0), tmp22, r0_mask)
    tl.store(out_ptr3 + (r0_1 + 768*x0), tmp28, r0_mask)
'''),
    "rms_norm": ("{'in_out_ptr0': '*fp32', 'in_ptr0': '*bf16', 'in_ptr1': '*bf16', 'in_ptr2': '*bf16', "
                 "'out_ptr0': '*bf16', 'xnumel': 'i32', 'r0_numel': 'i32', 'XBLOCK': 'constexpr'}", 4096, 1024, 1024,
                 '''
@triton.jit
def c_rms_norm(in_out_ptr0, in_ptr0, in_ptr1, in_ptr2, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 4096
    r0_numel = 1024
    R0_BLOCK: tl.constexpr = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 1024*x0), None).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (r0_1 + 1024*x0), None).to(tl.float32)
    tmp13 = tl.load(in_ptr2 + (r0_1), None, eviction_policy='evict_last').to(tl.float32)
    tmp2 = tmp0 + tmp1
    tmp3 = tmp2.to(tl.float32)
    tmp4 = tmp3 * tmp3
    tmp5 = tl.broadcast_to(tmp4, [XBLOCK, R0_BLOCK])
    tmp7 = tl.sum(tmp5, 1)[:, None].to(tl.float32)
    tmp8 = tl.full([1, 1], 1024.0, tl.float32)
    tmp9 = (tmp7 / tmp8)
    tmp10 = tl.full([1, 1], 1e-06, tl.float32)
    tmp11 = tmp9 + tmp10
    tmp12 = libdevice.rsqrt(tmp11)
    tmp14 = tmp3 * tmp12
    tmp15 = tmp14.to(tl.float32)
    tmp16 = tmp13 * tmp15
    tl.debug_barrier()
    tl.store(in_out_ptr0 + (x0), tmp12, None)
    tl.store(out_ptr0 + (r0_1 + 1024*x0), tmp16, None)
'''),
}


def module_text(cases: list[tuple[str, tuple[str, ...], str, str]]) -> str:
    parts = [HEADER, POINTWISE.format(name="baseline", expr="x")]
    parts += [POINTWISE.format(name=name, expr=expr) for name, _, _, expr in cases]
    parts += [body for *_, body in CLASSES.values()]
    return "\n".join(parts)


def backend_modules() -> dict[str, object]:
    """The modules a case's calls resolve in on this machine: `libdevice` is the backend's own module
    (triton.language.extra.cuda.libdevice on NVIDIA; triton.language.extra.libdevice is a dispatcher naming every
    backend's functions, so a name it has may be missing from CUDA's: fast_tanhf is ROCm's, in Triton 3.6)."""
    import torch
    import triton.language as tl

    if torch.version.hip:
        from triton.language.extra.hip import libdevice
    else:
        from triton.language.extra.cuda import libdevice
    from torch._inductor.runtime import triton_helpers

    return {"libdevice": libdevice, "tl": tl, "tl_math": tl.math, "triton_helpers": triton_helpers}


def split_cases(cases: list[tuple[str, tuple[str, ...], str, str]], modules: dict[str, object], version: str
                ) -> tuple[list[tuple[str, tuple[str, ...], str, str]], dict[str, str]]:
    """(the cases whose every call exists in `modules`, {case: why not} for the others)."""
    usable, missing = [], {}
    for case in cases:
        absent = [f"{m}.{f}" for m, f in re.findall(r"\b(libdevice|tl_math|tl|triton_helpers)\.(\w+)\(", case[3])
                  if not hasattr(modules[m], f)]
        if absent:
            where = ", ".join(f"{a} (not in {getattr(modules[a.split('.')[0]], '__name__', '?')})" for a in absent)
            missing[case[0]] = f"not available in triton {version}: {where}"
        else:
            usable.append(case)
    return usable, missing


def launch_all(workdir: Path) -> dict[str, object]:
    """Compile and launch every kernel once, each on its own: one that does not compile or launch is written to
    workdir/failed.json with its error and the others still run. Returns the compiled kernels by name (for the
    SASS fallback)."""
    import torch
    import triton

    sys.path.insert(0, str(workdir))
    mod = importlib.import_module("flops_kernels")
    usable, _ = split_cases(CASES, backend_modules(), triton.__version__)
    g = torch.Generator(device="cuda").manual_seed(0)
    dev = "cuda"
    x32 = torch.rand(N, device=dev, generator=g) * 4 - 2
    kinds = {"f32": x32, "pos": torch.rand(N, device=dev, generator=g) * 3 + 0.5,
             "f16": x32.half(), "bf16": x32.bfloat16()}
    w = torch.rand(N, device=dev, generator=g) * 2 + 1
    z = torch.rand(N, device=dev, generator=g)
    out = torch.empty(N, device=dev)
    compiled: dict[str, object] = {}
    failed: dict[str, str] = {}
    grid = (N // BLOCK,)

    def attempt(name: str, launch) -> None:
        try:
            compiled[name] = launch()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - a kernel this Triton cannot build is reported, not fatal
            failed[name] = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300] if str(e).strip() else ''}"
            (workdir / "failed.json").write_text(json.dumps(failed, indent=1))  # kept should the process die later

    attempt("baseline", lambda: mod.k_baseline[grid](x32, w, z, out, BLOCK=BLOCK, num_warps=4))
    for name, _, kind, _ in usable:
        attempt(name, lambda name=name, kind=kind: getattr(mod, f"k_{name}")[grid](
            kinds[kind], w, z, out, BLOCK=BLOCK, num_warps=4))
    rows, r = 4096, 1024
    f32 = lambda *s: torch.rand(*s, device=dev, generator=g) + 0.5  # noqa: E731
    attempt("c_ln_backward", lambda: mod.c_ln_backward[(rows,)](
        f32(rows * 768), f32(rows * 768).half(), f32(768), f32(rows * 768), f32(rows), f32(rows * 768) > 1,
        torch.empty(rows * 768, device=dev), torch.empty(rows * 768, device=dev, dtype=torch.half), rows, 768,
        XBLOCK=1, num_warps=8))
    attempt("c_rms_norm", lambda: mod.c_rms_norm[(rows,)](
        torch.empty(rows, device=dev), f32(rows * r).bfloat16(), f32(rows * r).bfloat16(), f32(r).bfloat16(),
        torch.empty(rows * r, device=dev, dtype=torch.bfloat16), rows, r, XBLOCK=1, num_warps=8))
    (workdir / "failed.json").write_text(json.dumps(failed, indent=1))
    return compiled


def ncu_counts(workdir: Path) -> dict[str, float] | None:
    """FLOPs per kernel as ncu counts them, or None when ncu is missing or refuses."""
    ncu = shutil.which("ncu")
    if ncu is None:
        return None
    cmd = [ncu, "--csv", "--print-units", "base", "--metrics", ",".join(METRICS), "--kernel-name", "regex:^[kc]_",
           "--target-processes", "all", sys.executable, str(Path(__file__).resolve()), "--child", str(workdir)]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=NCU_TIMEOUT)
    except subprocess.TimeoutExpired:
        print(f"ncu ran past {NCU_TIMEOUT} s", file=sys.stderr)
        return None
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith('"')]
    if run.returncode != 0 or not lines:
        print(f"ncu exited {run.returncode}: {(run.stderr or run.stdout)[-2000:]}", file=sys.stderr)
        return None
    flops: dict[str, float] = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        name = row.get("Kernel Name", "").split("(")[0].strip()
        metric = row.get("Metric Name", "")
        try:
            value = float(row.get("Metric Value", "0").replace(",", ""))
        except ValueError:
            continue
        weight = 2.0 if metric.endswith("fma_pred_on.sum") else 1.0
        flops[name] = flops.get(name, 0.0) + weight * value
    return flops


_SASS_OP = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z0-9]+)(\.[\w.]+)?\s")


def sass_counts(compiled: dict[str, object], workdir: Path) -> dict[str, float]:
    """Static FLOPs per thread of each pointwise kernel's SASS up to its first EXIT (the slow paths after it are
    not run for normal inputs); predicated instructions are counted as not run. Only a fallback: ncu is exact."""
    out: dict[str, float] = {}
    tool = shutil.which("cuobjdump")
    if tool is None:
        print("neither ncu nor cuobjdump on PATH", file=sys.stderr)
        return out
    for name, ck in compiled.items():
        if name.startswith("c_"):
            continue
        try:
            cubin = ck.asm["cubin"]
        except (AttributeError, KeyError, TypeError):
            continue
        path = workdir / f"{name}.cubin"
        path.write_bytes(cubin)
        sass = subprocess.run([tool, "-sass", str(path)], capture_output=True, text=True).stdout
        total = 0.0
        for line in sass.splitlines():
            m = _SASS_OP.match(line)
            if not m:
                continue
            op = m.group(2)
            if op == "EXIT" and not m.group(1):
                break
            if m.group(1):
                continue
            if op in ("FADD", "FMUL", "HADD2", "HMUL2", "DADD", "DMUL"):
                total += 1
            elif op in ("FFMA", "HFMA2", "DFMA"):
                total += 2
        out[f"k_{name}"] = total * N  # one element per thread: per thread = per element; kernel-wide like ncu
    return out


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--child":
        launch_all(Path(sys.argv[2]))
        return 0
    out_dir = Path(os.environ.get("OUT") or "triton-flops-out")
    out_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    try:
        import torch
        import triton
    except ImportError as e:
        print(f"torch and triton are needed: {e}", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="triton-flops-"))
    usable, missing = split_cases(CASES, backend_modules(), triton.__version__)
    (workdir / "flops_kernels.py").write_text(module_text(usable))
    counts = ncu_counts(workdir)
    how = "ncu"
    if counts is None:
        how = "static SASS (cuobjdump), ncu unavailable"
        counts = sass_counts(launch_all(workdir), workdir)
    try:
        failed = json.loads((workdir / "failed.json").read_text())
    except (OSError, ValueError):
        failed = {}
    if "k_baseline" not in counts:
        print(f"no counts came back ({how}){': baseline ' + failed['baseline'] if 'baseline' in failed else ''}",
              file=sys.stderr)
        return 2
    base = counts["k_baseline"] / N
    lines = [f"Triton FLOPs per element as counted by {how} on {torch.cuda.get_device_name()} "
             f"(torch {torch.__version__}, triton {triton.__version__}); baseline x + z = {base:g}",
             f"{'case':18s} {'table':>6s} {'counted':>8s}  ok   table entries"]
    results = []
    bad = 0
    for name, keys, kind, expr in CASES:
        table = sum(OPS[k].flops for k in keys) + sum(OPS[k].flops for k in EXTRA.get(name, ()))
        got = counts.get(f"k_{name}")
        counted = None if got is None else got / N - base
        ok = counted is not None and abs(counted - table) < 0.05
        if counted is not None and not ok:
            bad += 1
        why = missing.get(name) or (f"did not compile or run: {failed[name]}" if name in failed else None)
        if counted is None and why is None:
            why = f"no count came back ({how})"
        results.append({"case": name, "expr": expr, "input": kind, "table": table, "counted": counted,
                        "ok": ok if counted is not None else None, "skipped": why if counted is None else None})
        shown = "n/a" if counted is None else f"{counted:8.2f}"
        lines.append(f"{name:18s} {table:6g} {shown:>8s}  {'yes' if ok else ('-' if counted is None else 'NO')}"
                     f"   {' + '.join(keys)}" + (f"   [{why}]" if counted is None else ""))
    if how == "ncu":
        lines.append("")
        lines.append(f"{'Inductor kernel':18s} {'model':>12s} {'counted':>12s} {'ratio':>6s}")
        for cname, (signature, rows, r0, rblock, body) in CLASSES.items():
            source = read_source(f"triton_meta={{'signature': {signature}}}\n{body}")
            model = source.flops_per_point * rows * rblock + source.flops_per_row * rows
            # the sums' trees as launched here (XBLOCK 1, 8 warps): roofline.model.ops.triton's _tree
            tree = source.block_sums * rows * (reduction_tree_adds(rblock, 1, 8, source.r_contiguous,
                                                                   source.element_bits) - rblock)
            model += tree
            got = counts.get(f"c_{cname}")
            if got is None:
                why = failed.get(f"c_{cname}", f"no count came back ({how})")
                results.append({"class": cname, "model": model, "counted": None, "ratio": None, "ok": None,
                                "skipped": why})
                lines.append(f"{cname:18s} {model:12.4g} {'n/a':>12s}   [{why}]")
                continue
            ratio = got / model if got and model else None
            ok = ratio is not None and 0.8 <= ratio <= 1.25
            bad += 0 if ok else 1
            results.append({"class": cname, "model": model, "counted": got, "ratio": ratio, "tree": tree,
                            "per_point": source.flops_per_point, "per_row": source.flops_per_row, "ok": ok})
            lines.append(f"{cname:18s} {model:12.4g} {got or 0:12.4g} {ratio or 0:6.3f}"
                         f"  ({source.flops_per_point:g}/point over {rows}x{rblock}, {source.flops_per_row:g}/row,"
                         f" {tree:.4g} in the sums' trees; without them {got / (model - tree) if got else 0:.3f})")
    skipped = sum(r.get("skipped") is not None for r in results)
    lines.append(f"{bad} disagreement(s), {skipped} skipped; {time.time() - t0:.0f} s")
    text = "\n".join(lines)
    print(text)
    (out_dir / "triton_flops_check.txt").write_text(text + "\n")
    (out_dir / "triton_flops_check.json").write_text(json.dumps(
        {"version": 1, "how": how, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
         "triton": triton.__version__, "baseline": base, "results": results}, indent=1) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
