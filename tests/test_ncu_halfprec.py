"""BF16 or FP16 (issue 21 §5): ncu's half-precision CUDA-core counters count HFMA2 and HFMA2.BF16 alike, so `import
ncu` and `profile` labelled BF16 programs float16. The kernel's name (and, failing that, its NVTX ranges) tells them
apart; where nothing does, the label says so."""

from __future__ import annotations

import pytest

from roofline.ncu.halfprec import AMBIGUOUS, half_kind, roof_text
from roofline.ncu.importer import import_csv
from roofline.ncu.metrics import flop_metric, tensor_metric
from conftest import NCU

BF16_ADD = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>, "
            "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
            "at::detail::Array<char*, 3>)")
FP16_ADD = BF16_ADD.replace("c10::BFloat16", "c10::Half")
BF16_GEMM = ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
             "kernel__5x_cublas")
FP16_GEMM = "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn"
FLASH_BF16 = ("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, "
              "Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t>>, false, true, false, false, true, true, "
              "false>(Flash_fwd_params)")


@pytest.mark.parametrize(("name", "kind"), [
    (BF16_ADD, "bf16"), (FP16_ADD, "fp16"), (BF16_GEMM, "bf16"), (FP16_GEMM, "fp16"), (FLASH_BF16, "bf16"),
    (FLASH_BF16.replace("bfloat16_t", "half_t"), "fp16"),
    ("sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_"
     "cublas", "fp16"),
    ("ampere_bf16_s16816gemm_bf16_128x64_ldg8_f2f_stages_64x4_tn", "bf16"),
    ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "bf16"),
    ("nvjet_sm90_hsh_256x128_64x4_1x2_h_bz_coopA_NNT", "fp16"),
    ("void scale<__nv_bfloat16>(__nv_bfloat16 *, float)", "bf16"), ("void scale<__half>(__half *, float)", "fp16"),
    ("void scale<half>(half *, int)", "fp16"), ("volta_h884gemm_64x64_ldg8_nn", "fp16"),
    ("void at::native::max_pool_forward_nhwc<c10::BFloat16, int>(const T1 *, int)", "bf16"),
    ("triton_poi_fused_add_bfloat16_0", "bf16"), ("bf16fma2_loop", "bf16"),
    ("hfma2_loop", None), ("rotate_half_kernel", None), ("ampere_sgemm_128x64_nn", None),
    ("sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n", None), ("nvjet_sm90_sss_64x8", None),
    ("convert_fp16_to_bf16", None),  # both: nothing decided
])
def test_the_kernel_name_tells_bf16_from_fp16(name: str, kind: str | None) -> None:
    half = half_kind(name)
    assert half.kind == kind, half
    assert half.dtype == {"bf16": "bfloat16", "fp16": "float16", None: AMBIGUOUS}[kind]


def test_nvtx_ranges_decide_where_the_name_does_not() -> None:
    half = half_kind("hfma2_loop", ["step 3", "attention_bf16", "softmax"])
    assert half.kind == "bf16" and half.evidence == "the NVTX range 'attention_bf16' says 'bf16'"
    assert half_kind("hfma2_loop", ["model_fp16", "attention_bf16"]).kind == "bf16"  # the innermost that says
    assert half_kind(FP16_ADD, ["attention_bf16"]).kind == "fp16"  # the kernel's own name first
    assert half_kind("convert", ["model_bf16", "cast fp16 to bf16"]).kind is None  # a range that names both stops


def test_the_roof_is_labelled_honestly_where_nothing_tells() -> None:
    assert roof_text("fp16", AMBIGUOUS) == "fp16/bf16?" and roof_text("fp16", "float16") == "fp16"
    assert roof_text("bf16_tensor", AMBIGUOUS) == "bf16_tensor"  # tensor work is told apart by its counters


# ---- through import ncu ----------------------------------------------------------------------------------------

H = [flop_metric("fp16", op) for op in ("add", "mul", "fma")]
F = [flop_metric("fp32", op) for op in ("add", "mul", "fma")]
T = [tensor_metric("fp16"), tensor_metric("bf16", "fp32")]
NVTX = "thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg"
HEADER = ["ID", "Process ID", "Process Name", "Host Name", NVTX, "Kernel Name", "Context", "Stream", "Block Size",
          "Grid Size", "Device", "CC", "device__attribute_display_name", "dram__bytes_read.sum",
          "dram__bytes_write.sum", "gpu__time_duration.sum", *H, *F, *T]


def quoted(cells: list[object]) -> str:
    return ",".join('"' + str(c).replace('"', '""') + '"' for c in cells)


def row(launch: int, name: str, hfma: int, ffma: int = 0, fp16_tensor: int = 0, bf16_tensor: int = 0,
        nvtx: str = "", time_ns: int = 100_000) -> str:
    return quoted([launch, "1", "python3", "host", nvtx, name, "1", "7", "(128, 1, 1)", "(64, 1, 1)", "0", "9.0",
                   "NVIDIA H200", 4_000_000, 2_000_000, time_ns, 0, 0, hfma, 0, 0, ffma, fp16_tensor, bf16_tensor])


def capture(tmp_path, *rows: str):
    units = [""] * 13 + ["byte", "byte", "nsecond"] + ["inst"] * 6 + ["", ""]
    path = tmp_path / "half.csv"
    path.write_text("\n".join([quoted(HEADER), quoted(units), *rows]) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def half_csv(tmp_path):
    """Half-precision CUDA-core work (HFMA counts) under names that say BF16, FP16 or neither; and GEMMs whose
    tensor counters decide, with a half-precision epilogue."""
    gemm = 2 * 1024**3
    return capture(
        tmp_path,
        row(0, BF16_ADD, 10**9), row(1, FP16_ADD, 10**9), row(2, "hfma2_loop", 10**9),
        row(3, BF16_GEMM, 10**6, bf16_tensor=gemm), row(4, FP16_GEMM, 10**6, fp16_tensor=gemm),
        row(5, FLASH_BF16, 10**6, ffma=10**6, bf16_tensor=gemm),
        row(6, "hfma2_loop", 10**9, nvtx='1  "<default domain>:attention_bf16:none:none:none:none:none:none"'),
    )


def test_import_puts_bf16_work_under_bf16(half_csv) -> None:
    doc, notes = import_csv(half_csv, "h200")
    k = {e["params"]["launch"]: e for e in doc["kernels"]}
    assert (k[0]["roof"], k[0]["dtype"]) == ("bf16", "bfloat16")  # was ('fp16', 'float16')
    assert k[0]["half_precision"] == {"dtype": "bfloat16", "from": "the kernel name says 'BFloat16'"}
    assert [p["work"] for p in k[0]["work"]] == ["bf16"]
    assert k[0]["counters"]["work"]["bf16"] == 2e9 and "fp16" not in k[0]["counters"]["work"]
    assert (k[1]["roof"], k[1]["dtype"]) == ("fp16", "float16")
    assert (k[3]["roof"], k[3]["dtype"]) == ("bf16_tensor", "bfloat16")
    assert {p["work"] for p in k[3]["work"]} == {"bf16_tensor", "bf16"}  # the epilogue's half work is BF16 too
    assert {p["work"] for p in k[4]["work"]} == {"fp16_tensor", "fp16"} and k[4]["dtype"] == "float16"
    assert (k[5]["roof"], k[5]["dtype"]) == ("bf16_tensor", "bfloat16")
    assert (k[6]["roof"], k[6]["dtype"]) == ("bf16", "bfloat16")  # the NVTX range said
    assert not any(w["code"] == "precision-ambiguous" for e in doc["kernels"] if e["dtype"] != AMBIGUOUS
                   for w in e["warnings"])
    assert any("1 launch did FP16 or BF16 work" in n for n in notes)


def test_where_nothing_tells_the_work_stays_under_fp16_and_says_so(half_csv) -> None:
    doc, _ = import_csv(half_csv, "h200")
    loop = next(e for e in doc["kernels"] if e["params"]["launch"] == 2)
    assert (loop["roof"], loop["dtype"]) == ("fp16", "float16/bfloat16")
    (w,) = [w for w in loop["warnings"] if w["code"] == "precision-ambiguous"]
    assert "the spec gives FP16 and BF16 the same rate, so the fraction of ceiling holds either way" in w["text"]
    doc, _ = import_csv(half_csv, "a100-sxm4-80gb")  # CUDA-core FP16 78 TFLOP/s, BF16 39 TFLOP/s
    loop = next(e for e in doc["kernels"] if e["params"]["launch"] == 2)
    (w,) = [w for w in loop["warnings"] if w["code"] == "precision-ambiguous"]
    assert "were it BF16, its roof would be bf16 (39 TFLOP/s) rather than fp16 (78 TFLOP/s)" in w["text"]
    bf16 = next(e for e in doc["kernels"] if e["params"]["launch"] == 0)
    assert bf16["roof"] == "bf16" and bf16["peak_flops"] == 39e12  # half the FP16 rate: the label moves the roof


def test_the_dtype_is_the_works_not_the_roof_it_fell_back_to(half_csv) -> None:
    """h200-nvl has no CUDA-core FP16/BF16 roof: the work is timed at the spec's fastest roof (an upper bound), and
    its dtype was that roof's (float8) before."""
    doc, _ = import_csv(half_csv, "h200-nvl")
    k = {e["params"]["launch"]: e for e in doc["kernels"]}
    assert k[0]["dtype"] == "bfloat16" and k[1]["dtype"] == "float16" and k[2]["dtype"] == AMBIGUOUS


def test_tables_show_the_ambiguous_roof(run_cli, half_csv) -> None:
    code, stdout, err = run_cli("import", "ncu", half_csv, "--spec", "h200")
    assert code in (0, None), err
    assert "fp16/bf16?" in stdout and "labelled 'float16/bfloat16'" in err
    code, stdout, err = run_cli("import", "ncu", half_csv, "--spec", "h200", "--group-by", "kernel")
    assert code in (0, None) and "fp16/bf16?" in stdout, err


def test_a_real_bf16_program_is_not_labelled_float16() -> None:
    """ResNet-50 under BF16 autocast on the H200: the max-pool kernel's name says c10::BFloat16."""
    doc, _ = import_csv(NCU / "h200_resnet50_profile.csv")
    pool = next(k for k in doc["kernels"] if "max_pool_forward_nhwc<c10::BFloat16" in k["kernel_name"])
    assert (pool["roof"], pool["dtype"]) == ("bf16", "bfloat16")
    assert {k["dtype"] for k in doc["kernels"]} == {"float32", "bfloat16", AMBIGUOUS}  # no plain float16 left
