"""The program benchmarks/h200_ncu_tensor.sh runs under ncu: work of known size on each kind of unit, so the
tensor-core and CUDA-core counters can be checked against what was launched.

    ncu --profile-from-start off ... python3 benchmarks/h200_ncu_tensor.py CASES.json > capture.csv

Each case runs twice unprofiled (cuBLAS heuristics, allocation, compilation), then once between
cudaProfilerStart/Stop, bracketed by roofline's marker kernel with grid 2i+1 and 2i+2, the same convention as
`roofline measure --profile ncu` (roofline.ncu.profile.split_by_markers finds case i's launches). CASES.json
receives each case's name, the FLOPs it performs by construction and whether it ran. Prints nothing on stdout.
"""

from __future__ import annotations

import json
import sys
import traceback

import cupy as cp
import torch

MARKER_SOURCE = 'extern "C" __global__ void roofline_ncu_marker(int tag) { }\n'
N_THREADS = 1 << 20  # CUDA-core loops: one element per thread
K = 256  # dependent FMAs per thread

LOOPS = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void hfma2_loop(const __half2* x, __half2* y, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half2 a = x[i];
    const __half2 b = __float2half2_rn(0.5f), c = __float2half2_rn(0.25f);
    for (int j = 0; j < k; ++j) a = __hfma2(a, b, c);
    y[i] = a;
}
extern "C" __global__ void hfma_loop(const __half* x, __half* y, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __half a = x[i];
    const __half b = __float2half_rn(0.5f), c = __float2half_rn(0.25f);
    for (int j = 0; j < k; ++j) a = __hfma(a, b, c);
    y[i] = a;
}
extern "C" __global__ void bf16fma2_loop(const __nv_bfloat162* x, __nv_bfloat162* y, int k) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    __nv_bfloat162 a = x[i];
    const __nv_bfloat162 b = __float2bfloat162_rn(0.5f), c = __float2bfloat162_rn(0.25f);
    for (int j = 0; j < k; ++j) a = __hfma2(a, b, c);
    y[i] = a;
}
"""


def gemm(n: int, dtype: torch.dtype):
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    return (lambda: a @ b), 2 * n**3


def fp8_gemm(n: int):
    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn).t()  # column-major, as _scaled_mm wants
    one = torch.tensor(1.0, device="cuda")
    return (lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)), 2 * n**3


def int8_gemm(n: int):
    a = torch.randint(-8, 8, (n, n), device="cuda", dtype=torch.int8)
    b = torch.randint(-8, 8, (n, n), device="cuda", dtype=torch.int8)
    return (lambda: torch._int_mm(a, b)), 2 * n**3


def elementwise(op: str, n: int, dtype: torch.dtype):
    x, y, z = (torch.rand(n, device="cuda", dtype=dtype) for _ in range(3))
    if op == "mul":
        return (lambda: x * y), n  # one multiply per element
    return (lambda: torch.addcmul(z, x, y)), 2 * n  # z + x*y: one multiply-add per element


def loop(name: str, dtype: object, lanes: int):
    module = cp.RawModule(code=LOOPS, options=("--std=c++17",))
    kernel = module.get_function(name)
    x = cp.random.rand(N_THREADS * lanes, dtype=cp.float32).astype(dtype)
    y = cp.empty_like(x)
    block = 256
    return (lambda: kernel((N_THREADS // block,), (block,), (x, y, cp.int32(K)))), 2 * N_THREADS * K * lanes


def cases():
    yield "bf16_gemm_4096", lambda: gemm(4096, torch.bfloat16)
    yield "fp16_gemm_4096", lambda: gemm(4096, torch.float16)
    yield "bf16_gemm_2048", lambda: gemm(2048, torch.bfloat16)
    yield "fp16_gemm_2048", lambda: gemm(2048, torch.float16)
    yield "tf32_gemm_2048", lambda: gemm(2048, torch.float32)  # allow_tf32 set below
    yield "fp64_gemm_1024", lambda: gemm(1024, torch.float64)
    yield "fp8_gemm_2048", lambda: fp8_gemm(2048)
    yield "int8_gemm_2048", lambda: int8_gemm(2048)
    yield "fp32_mul_2^24", lambda: elementwise("mul", 1 << 24, torch.float32)
    yield "fp32_addcmul_2^24", lambda: elementwise("addcmul", 1 << 24, torch.float32)
    yield "fp16_mul_2^24", lambda: elementwise("mul", 1 << 24, torch.float16)
    yield "hfma2_loop", lambda: loop("hfma2_loop", cp.float16, 2)  # bytes as float16 pairs
    yield "hfma_loop", lambda: loop("hfma_loop", cp.float16, 1)
    yield "bf16fma2_loop", lambda: bf16_loop()


def bf16_loop():
    module = cp.RawModule(code=LOOPS, options=("--std=c++17",))
    kernel = module.get_function("bf16fma2_loop")
    x = cp.asarray(torch.rand(2 * N_THREADS, device="cuda", dtype=torch.bfloat16).view(torch.int16))
    y = cp.empty_like(x)
    return (lambda: kernel((N_THREADS // 256,), (256,), (x, y, cp.int32(K)))), 2 * N_THREADS * K * 2


def main(out_path: str) -> int:
    torch.backends.cuda.matmul.allow_tf32 = True
    marker = cp.RawKernel(MARKER_SOURCE, "roofline_ncu_marker")
    report = []
    for i, (name, make) in enumerate(cases()):
        item = {"index": i, "name": name, "ok": False}
        report.append(item)
        try:
            run, flops = make()
            item["flops"] = flops
            for _ in range(2):
                run()
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
            marker((2 * i + 1,), (1,), (cp.int32(i),))
            run()
            marker((2 * i + 2,), (1,), (cp.int32(i),))
            torch.cuda.synchronize()
            torch.cuda.profiler.stop()
            item["ok"] = True
        except Exception as exc:  # noqa: BLE001 - one case's failure must not lose the others
            item["error"] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc(file=sys.stderr)
        print(f"case {i} {name}: {'ok' if item['ok'] else item['error']}", file=sys.stderr)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"torch": torch.__version__, "cupy": cp.__version__, "cases": report}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
