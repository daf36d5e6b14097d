"""The op models of roofline.kineto against hand-counted cases: the arithmetic is in each test's comments."""

from __future__ import annotations

import pytest

from roofline.model.ops.args import int_tuple, kernel_dtype, parse_value, stored_elements
from roofline.model.ops.aten import OpInput, OpWork, model_op
from roofline.model.types import ROOF_NAMES


def T(dims, dtype="float", strides=None):
    """A tensor argument."""
    return OpInput(tuple(dims), dtype, tuple(strides) if strides is not None else None, "")


def S(value, kind="Scalar"):
    """A non-tensor argument with its concrete value, as Kineto writes it."""
    return OpInput((), kind, None, value)


def L(*shapes):
    """A TensorList argument."""
    return OpInput(tuple(tuple(s) for s in shapes), "TensorList", None, "")


NONE = OpInput((), "", None, "")  # an absent optional argument


def check(work: OpWork | None, flops, nbytes, roof, op_class, dtype=None):
    assert work is not None
    assert work.op_class == op_class
    assert work.flops == flops
    assert work.bytes == nbytes
    assert work.roof == roof
    assert work.roof is None or work.roof in ROOF_NAMES
    if dtype is not None:
        assert work.dtype == dtype


# ------------------------------------------------------------------------------------------------------------ gemm

def test_mm_with_a_transposed_operand_reads_each_operand_once():
    # A (64, 128), B (128, 32) stored transposed (strides (1, 128)): FLOPs 2*64*32*128 = 524288;
    # bytes (64*128 + 128*32 + 64*32) * 4 = (8192 + 4096 + 2048) * 4 = 57344
    args = [T((64, 128), strides=(128, 1)), T((128, 32), strides=(1, 128))]
    check(model_op("aten::mm", args), 524288.0, 57344.0, "fp32", "gemm", "float32")


def test_float32_gemm_is_tf32_only_where_the_kernel_name_says_so():
    args = [T((64, 128)), T((128, 32))]
    work = model_op("aten::mm", args, ["sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"])
    check(work, 524288.0, 57344.0, "tf32_tensor", "gemm")
    assert "TF32" in work.note
    assert model_op("aten::mm", args, ["cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4"]).roof == "tf32_tensor"
    assert model_op("aten::mm", args, ["ampere_sgemm_128x64_nn"]).roof == "fp32"


def test_addmm_reads_a_broadcast_bias_once_at_its_own_size():
    # bias (32,), A (64, 128), B (128, 32), bf16: FLOPs 2*64*32*128 = 524288;
    # bytes (32 + 8192 + 4096 + 2048 output) * 2 = 14368 * 2 = 28736
    args = [T((32,), "c10::BFloat16"), T((64, 128), "c10::BFloat16"), T((128, 32), "c10::BFloat16"), S("1"), S("1")]
    check(model_op("aten::addmm", args), 524288.0, 28736.0, "bf16_tensor", "gemm", "bfloat16")
    # beta = 0: the bias is never read: 28736 - 32*2 = 28672
    args[3] = S("0")
    assert model_op("aten::addmm", args).bytes == 28672.0


def test_bmm_half():
    # (8, 16, 32) x (8, 32, 64): FLOPs 2*8*16*64*32 = 524288; bytes (4096 + 16384 + 8*16*64) * 2 = 28672 * 2 = 57344
    check(model_op("aten::bmm", [T((8, 16, 32), "c10::Half"), T((8, 32, 64), "c10::Half")]),
          524288.0, 57344.0, "fp16_tensor", "gemm", "float16")


def test_baddbmm_reads_c():
    # C (8, 16, 64) + (8, 16, 32) x (8, 32, 64): FLOPs 524288; bytes (8192 + 4096 + 16384 + 8192) * 2 = 73728
    args = [T((8, 16, 64), "c10::Half"), T((8, 16, 32), "c10::Half"), T((8, 32, 64), "c10::Half"), S("1"), S("1")]
    check(model_op("aten::baddbmm", args), 524288.0, 73728.0, "fp16_tensor", "gemm")


def test_matmul_broadcasts_its_batch_dims():
    # (4, 1, 16, 32) @ (3, 32, 8): batch (4, 3) = 12; FLOPs 2*12*16*8*32 = 98304;
    # output (4, 3, 16, 8) = 1536; bytes (2048 + 768 + 1536) * 4 = 17408
    check(model_op("aten::matmul", [T((4, 1, 16, 32)), T((3, 32, 8))]), 98304.0, 17408.0, "fp32", "gemm")


def test_matmul_with_an_expanded_operand_reads_its_storage_once():
    # A (4, 16, 32) expanded from (16, 32) (stride 0 on the batch): 512 stored elements; B (4, 32, 8): 1024;
    # FLOPs 2*4*16*8*32 = 32768; bytes (512 + 1024 + 4*16*8) * 4 = 2048 * 4 = 8192
    args = [T((4, 16, 32), strides=(0, 32, 1)), T((4, 32, 8))]
    check(model_op("aten::matmul", args), 32768.0, 8192.0, "fp32", "gemm")


def test_matmul_of_a_matrix_and_a_vector():
    # (10, 20) @ (20,): M=10, N=1, K=20: FLOPs 2*10*20 = 400; bytes (200 + 20 + 10) * 4 = 920
    check(model_op("aten::matmul", [T((10, 20)), T((20,))]), 400.0, 920.0, "fp32", "gemm")


def test_linear_reads_the_weight_transposed_and_the_bias():
    # x (2, 10, 64), weight (128, 64), bias (128): M = 20, N = 128, K = 64: FLOPs 2*20*128*64 = 327680;
    # bytes (1280 + 8192 + 128 + 20*128) * 4 = 12160 * 4 = 48640
    args = [T((2, 10, 64)), T((128, 64)), T((128,))]
    check(model_op("aten::linear", args), 327680.0, 48640.0, "fp32", "gemm")
    # without bias: (1280 + 8192 + 2560) * 4 = 48128
    assert model_op("aten::linear", [T((2, 10, 64)), T((128, 64)), NONE]).bytes == 48128.0


def test_gemm_with_shapes_that_do_not_multiply_is_partial():
    work = model_op("aten::mm", [T((4, 5)), T((6, 7))])
    assert work.op_class == "gemm" and work.flops is None and work.bytes is None
    assert "do not read as mm" in work.note


# ------------------------------------------------------------------------------------------------------------ conv

def conv_args(x, w, bias, stride, padding, dilation, groups, transposed="False", output_padding="[0, 0]"):
    return [x, w, bias, S(stride, "ScalarList"), S(padding, "ScalarList"), S(dilation, "ScalarList"),
            S(transposed), S(output_padding, "ScalarList"), S(groups)]


def test_grouped_dilated_strided_padded_convolution():
    # x (2, 8, 17, 17), w (16, 2, 3, 3), 4 groups (8/4 = 2 channels each), stride 2, padding 2, dilation 2:
    # P = Q = floor((17 + 2*2 - 2*(3-1) - 1) / 2) + 1 = floor(16/2) + 1 = 9
    # FLOPs 2*N*K*P*Q*(C/groups)*R*S = 2*2*16*81*2*9 = 93312
    # bytes (x 2*8*17*17 = 4624 + w 16*2*9 = 288 + bias 16 + out 2*16*9*9 = 2592) * 4 = 7520 * 4 = 30080
    args = conv_args(T((2, 8, 17, 17)), T((16, 2, 3, 3)), T((16,)), "[2, 2]", "[2, 2]", "[2, 2]", "4")
    check(model_op("aten::convolution", args), 93312.0, 30080.0, "fp32", "conv")
    tf32 = model_op("aten::convolution", args, ["sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw"])
    assert tf32.roof == "tf32_tensor"


def test_conv2d_half_pointwise():
    # x (1, 4, 8, 8), w (8, 4, 1, 1): P = Q = 8; FLOPs 2*1*8*64*4*1 = 4096; bytes (256 + 32 + 512) * 2 = 1600
    args = [T((1, 4, 8, 8), "c10::Half"), T((8, 4, 1, 1), "c10::Half"), NONE, S("[1, 1]", "ScalarList"),
            S("[0, 0]", "ScalarList"), S("[1, 1]", "ScalarList"), S("1")]
    check(model_op("aten::conv2d", args), 4096.0, 1600.0, "fp16_tensor", "conv", "float16")


def test_cudnn_convolution_takes_padding_before_stride():
    # cudnn_convolution(self, weight, padding, stride, dilation, groups, ...): x (1, 3, 32, 32), w (6, 3, 5, 5),
    # padding 0, stride 3: P = Q = (32 - 5) // 3 + 1 = 10; FLOPs 2*1*6*100*3*25 = 90000;
    # bytes (3072 + 450 + 600) * 4 = 16488
    args = [T((1, 3, 32, 32)), T((6, 3, 5, 5)), S("[0, 0]", "ScalarList"), S("[3, 3]", "ScalarList"),
            S("[1, 1]", "ScalarList"), S("1"), S("False"), S("False"), S("True")]
    check(model_op("aten::cudnn_convolution", args), 90000.0, 16488.0, "fp32", "conv")


def test_strided_pointwise_convolution_reads_only_the_rows_and_pixels_it_reaches():
    # x (1, 64, 8, 8) float, w (16, 64, 1, 1), stride 2, no padding: output (1, 16, 4, 4);
    # FLOPs 2 * 16 * 16 * 64 = 32768; weight 4096 B, output 256 * 4 = 1024 B
    w = T((16, 64, 1, 1))
    args = lambda x: [x, w, S("[0, 0]"), S("[2, 2]"), S("[1, 1]"), S("1"), S("False"), S("False"), S("True")]  # noqa
    # contiguous NCHW: every other row skipped (a row is 32 B, a sector), but not every other element of a row:
    # the input 16384 B * 4/8 = 8192
    nchw = model_op("aten::cudnn_convolution", args(T((1, 64, 8, 8), strides=(4096, 64, 8, 1))))
    check(nchw, 32768.0, 8192.0 + 4096.0 + 1024.0, "fp32", "conv")
    assert "0.5 of the input" in nchw.note
    # channels-last (a pixel is 64 * 4 = 256 B): every other row and every other pixel: 16384 / 4 = 4096
    nhwc = model_op("aten::cudnn_convolution", args(T((1, 64, 8, 8), strides=(4096, 1, 512, 64))))
    check(nhwc, 32768.0, 4096.0 + 4096.0 + 1024.0, "fp32", "conv")
    # a 3x3 stride-2 window overlaps the next one: the whole input read (16384 + 16 * 64 * 9 * 4 + 1024 B)
    w3 = T((16, 64, 3, 3))
    x = T((1, 64, 8, 8), strides=(4096, 1, 512, 64))
    args3 = [x, w3, S("[1, 1]"), S("[2, 2]"), S("[1, 1]"), S("1"), S("False"), S("False"), S("True")]
    assert model_op("aten::cudnn_convolution", args3).bytes == 16384.0 + 36864.0 + 1024.0


def test_window_cover_counts_the_positions_windows_reach():
    from roofline.model.ops.aten import _window_cover

    assert _window_cover(56, 28, 1, 2, 0, 1) == 28  # 1x1 stride 2: every other position
    assert _window_cover(112, 56, 3, 2, 1, 1) == 112  # 3x3 stride 2 pad 1: overlapping windows cover it all
    assert _window_cover(10, 3, 2, 4, 1, 1) == 5  # windows [-1, 0], [3, 4], [7, 8]: 0, 3, 4, 7, 8
    assert _window_cover(10, 0, 1, 2, 0, 1) == 0


def test_transposed_convolution():
    # conv_transpose2d(input, weight, bias, stride, padding, output_padding, groups, dilation): x (1, 4, 5, 5),
    # w (4, 2, 3, 3), stride 2, padding 1, output_padding 1: out = (5-1)*2 - 2*1 + 1*(3-1) + 1 + 1 = 10, K = 2
    # FLOPs 2 * 1*4*25 (input elements) * 2*9 (weights each meets) = 3600; bytes (100 + 72 + 2*10*10) * 4 = 1488
    args = [T((1, 4, 5, 5)), T((4, 2, 3, 3)), NONE, S("[2, 2]", "ScalarList"), S("[1, 1]", "ScalarList"),
            S("[1, 1]", "ScalarList"), S("1"), S("[1, 1]", "ScalarList")]
    work = model_op("aten::conv_transpose2d", args)
    check(work, 3600.0, 1488.0, "fp32", "conv")
    assert "transposed" in work.note


def test_depthwise_convolution_runs_on_the_cuda_cores():
    # x (1, 8, 6, 6) bf16, w (8, 1, 3, 3), groups 8, padding 1: P = Q = 6; FLOPs 2*1*8*36*1*9 = 5184;
    # bytes (288 + 72 + 288) * 2 = 1296
    args = conv_args(T((1, 8, 6, 6), "c10::BFloat16"), T((8, 1, 3, 3), "c10::BFloat16"), NONE, "[1, 1]", "[1, 1]",
                     "[1, 1]", "8")
    work = model_op("aten::convolution", args)
    check(work, 5184.0, 1296.0, "fp32", "conv")
    assert "depthwise" in work.note


def test_convolution_backward_costs_the_forward_per_gradient():
    # the grouped conv above: forward 93312 FLOPs; grad_input and grad_weight (mask [T, T, F]): 2 * 93312 = 186624
    # bytes: read grad_output 2592, weight 288, input 4624; write grad_input 4624, grad_weight 288:
    # 12416 * 4 = 49664
    args = [T((2, 16, 9, 9)), T((2, 8, 17, 17)), T((16, 2, 3, 3)), S("[16]", "ScalarList"), S("[2, 2]"),
            S("[2, 2]"), S("[2, 2]"), S("False"), S("[0, 0]"), S("4"), S("[True, True, False]", "GenericList")]
    check(model_op("aten::convolution_backward", args), 186624.0, 49664.0, "fp32", "conv")


def test_convolution_without_its_concrete_arguments_is_partial():
    work = model_op("aten::convolution", [T((2, 8, 17, 17)), T((16, 2, 3, 3)), NONE])
    assert work.op_class == "conv" and work.flops is None and "not recorded" in work.note


# ------------------------------------------------------------------------------------------------------------ pool

def test_max_pool_with_indices_as_resnet50_records_it():
    # the ResNet-50 stem on the H200 trace: (64, 64, 112, 112) bf16 channels-last, 3x3, stride 2, padding 1:
    # output (64, 64, 56, 56) = 12845056 elements; input 51380224 * 2 = 102760448 B (overlapping windows read it
    # all), output 12845056 * 2 = 25690112 B, int64 indices 12845056 * 8 = 102760448 B: 231211008 B;
    # FLOPs 9 compares per output element = 115605504
    x = T((64, 64, 112, 112), "c10::BFloat16", (802816, 1, 7168, 64))
    args = [x, S("[3, 3]", "ScalarList"), S("[2, 2]", "ScalarList"), S("[1, 1]", "ScalarList"),
            S("[1, 1]", "ScalarList"), S("False")]
    check(model_op("aten::max_pool2d_with_indices", args), 115605504.0, 231211008.0, "fp32", "pool", "bfloat16")
    # max_pool2d writes no indices: 102760448 + 25690112
    assert model_op("aten::max_pool2d", args).bytes == 128450560.0


def test_avg_pool_with_the_default_stride_and_ceil_mode():
    # (2, 3, 7, 7) float, kernel 2, stride [] (= kernel), ceil_mode: output ceil(6 / 2) + 1 = 4 per side, the last
    # window starting at 6 < 7 + 0 kept: (2, 3, 4, 4) = 96 elements, 4 adds + 1 divide each = 480 FLOPs; input
    # 294 * 4 = 1176 B (the last column and row are reached by the ceil window), output 384 B
    args = [T((2, 3, 7, 7)), S("[2, 2]", "ScalarList"), S("[]", "ScalarList"), S("[0, 0]", "ScalarList"),
            S("True"), S("True"), NONE]
    check(model_op("aten::avg_pool2d", args), 480.0, 1176.0 + 384.0, "fp32", "pool")


def test_max_pool_backward():
    # grad_output (2, 4, 5, 5) float = 200 elements (800 B), indices int64 (1600 B); grad_input (2, 4, 10, 10) written
    # 800 * 4 = 3200 B: 5600 B; one add per grad_output element
    g = T((2, 4, 5, 5))
    args = [g, T((2, 4, 10, 10)), S("[2, 2]"), S("[2, 2]"), S("[0, 0]"), S("[1, 1]"), S("False"),
            T((2, 4, 5, 5), "long int")]
    check(model_op("aten::max_pool2d_with_indices_backward", args), 200.0, 5600.0, "fp32", "pool")


# ------------------------------------------------------------------------------------------------------- attention

QKV = [T((2, 4, 128, 64), "c10::BFloat16")] * 3  # (B, H, L, D)


def test_flash_attention_forward():
    # 4*B*H*Lq*Lk*D = 4*2*4*128*128*64 = 33554432; bytes Q, K, V, O: 4 * 65536 * 2 = 524288
    args = QKV + [S("0."), S("False"), S("False"), NONE]
    check(model_op("aten::_scaled_dot_product_flash_attention", args), 33554432.0, 524288.0, "bf16_tensor",
          "attention", "bfloat16")


def test_causal_attention_counts_half_the_scores():
    # is_causal=True: 33554432 / 2 = 16777216
    args = QKV + [S("0."), S("True"), S("False"), NONE]
    work = model_op("aten::_scaled_dot_product_flash_attention", args)
    check(work, 16777216.0, 524288.0, "bf16_tensor", "attention")
    assert "causal" in work.note
    # not recorded, but the kernel says so
    args = QKV + [S(""), S(""), S(""), NONE]
    work = model_op("aten::_scaled_dot_product_flash_attention", args, ["fmha_sm90_fwd_causal_kernel"])
    assert work.flops == 16777216.0 and "kernel name" in work.note


def test_flash_attention_backward_is_two_and_a_half_forwards():
    # causal forward 16777216 * 2.5 = 41943040; bytes dO, Q, K, V, O read, dQ, dK, dV written: 8 * 65536 * 2 = 1048576
    g = T((2, 4, 128, 64), "c10::BFloat16")
    args = [g] + QKV + [g, T((2, 4, 128), "float"), NONE, NONE, S("128"), S("128"), S("0."), S("True")]
    work = model_op("aten::_scaled_dot_product_flash_attention_backward", args)
    assert work.flops == 41943040.0
    # the logsumexp (2*4*128 floats) is not among the bytes the model counts
    assert work.bytes == 1048576.0
    assert "2.5x" in work.note


def test_flash_attention_forward_with_grouped_kv_heads_in_blhd_layout():
    # _flash_attention_forward: q (B=2, Lq=128, H=8, D=64), k, v (2, Lk=256, 2 heads, 64):
    # FLOPs 4*2*8*128*256*64 = 64 * 32768 * 64 = 134217728; bytes (131072 + 65536 + 65536 + 131072 output) * 2 = 786432
    q = T((2, 128, 8, 64), "c10::Half")
    kv = T((2, 256, 2, 64), "c10::Half")
    args = [q, kv, kv, NONE, NONE, S("128"), S("256"), S("0."), S("False"), S("False")]
    check(model_op("aten::_flash_attention_forward", args), 134217728.0, 786432.0, "fp16_tensor", "attention")


def test_cudnn_attention_forward_as_torch_2_11_records_it():
    # _cudnn_attention_forward(q, k, v, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, compute_log_sumexp,
    # dropout_p, is_causal, return_debug_mask, scale), as on the H200 training trace: (B=4, H=16, L=1024, D=64) bf16,
    # causal: 4*4*16*1024*1024*64 / 2 = 8589934592; bytes Q, K, V, O: 4 * 4194304 * 2 = 33554432
    q = T((4, 16, 1024, 64), "c10::BFloat16", (1048576, 64, 1024, 1))
    kv = T((4, 16, 1024, 64), "c10::BFloat16", (1048576, 65536, 64, 1))
    args = [q, kv, kv, NONE, NONE, NONE, S("1024"), S("1024"), S("True"), S("0."), S("True"), S("False"),
            S("0.125")]
    work = model_op("aten::_cudnn_attention_forward", args, ["cudnn_generated_fort_native_sdpa_sm90_flash_fprop"])
    check(work, 8589934592.0, 33554432.0, "bf16_tensor", "attention", "bfloat16")
    assert "causal" in work.note
    # not causal (index 10 False): twice the FLOPs, the same bytes
    args[10] = S("False")
    assert model_op("aten::_cudnn_attention_forward", args).flops == 2 * 8589934592.0


def test_cudnn_attention_backward_as_torch_2_11_records_it():
    # _cudnn_attention_backward(grad_out, q, k, v, out, logsumexp, philox_seed, philox_offset, attn_bias,
    # cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, scale): causal forward 8589934592 * 2.5 =
    # 21474836480; dO, Q, K, V, O read and dQ, dK, dV written: 8 * 8388608 = 67108864
    x = T((4, 16, 1024, 64), "c10::BFloat16")
    args = [x, x, x, x, x, T((4, 16, 1024, 1)), T((), "long int"), T((), "long int"), NONE, NONE, NONE,
            S("1024"), S("1024"), S("0."), S("True"), S("0.125")]
    work = model_op("aten::_cudnn_attention_backward", args)
    check(work, 21474836480.0, 67108864.0, "bf16_tensor", "attention")


def test_sdpa_reads_its_mask_and_names_the_kernel():
    # float32 (1, 2, 16, 8) each, mask (16, 16): FLOPs 4*1*2*16*16*8 = 16384; bytes (4*256 + 256) * 4 = 5120
    x = T((1, 2, 16, 8))
    work = model_op("aten::scaled_dot_product_attention", [x, x, x, T((16, 16)), S("0."), S("False")],
                    ["fmha_cutlassF_f32_aligned_64x64_rf_sm80"])
    check(work, 16384.0, 5120.0, "fp32", "attention")
    assert "memory-efficient kernel" in work.note


# ----------------------------------------------------------------------------------------------------- elementwise

def test_broadcast_add_counts_the_broadcast_input_once():
    # (4, 8) + (8,): output 32 elements, 1 FLOP each; bytes (32 + 8 + 32) * 4 = 288
    check(model_op("aten::add", [T((4, 8)), T((8,)), S("1")]), 32.0, 288.0, "fp32", "elementwise")


def test_in_place_mul_writes_the_first_input_back():
    # (4, 8) *= (1, 8), bf16: 32 FLOPs; bytes (32 + 8) * 2 read + 32 * 2 written = 144
    work = model_op("aten::mul_", [T((4, 8), "c10::BFloat16"), T((1, 8), "c10::BFloat16")])
    check(work, 32.0, 144.0, "fp32", "elementwise", "bfloat16")
    assert "in place" in work.note


def test_gelu_counts_are_stated():
    # erf form: 5 FLOPs per element; tanh form: 9. 1000 half elements: bytes 2000 + 2000 = 4000
    erf = model_op("aten::gelu", [T((1000,), "c10::Half"), S("none")])
    check(erf, 5000.0, 4000.0, "fp32", "elementwise")
    assert "5 FLOPs per element" in erf.note
    assert model_op("aten::gelu", [T((1000,), "c10::Half"), S("tanh")]).flops == 9000.0
    # silu: x * sigmoid(x) = 5 per element
    assert model_op("aten::silu", [T((10,))]).flops == 50.0


def test_where_broadcasts_a_condition_and_a_zero_dim_tensor():
    # where(cond (16, 1) bool, a (16, 16) float, b () float): output (16, 16) float, 256 FLOPs;
    # bytes 16 + 1024 + 4 + 1024 = 2068
    args = [T((16, 1), "bool"), T((16, 16)), T((), "float")]
    check(model_op("aten::where", args), 256.0, 2068.0, "fp32", "elementwise", "float32")


def test_comparison_writes_bool():
    # (10,) > (10,) float: bytes 40 + 40 + 10 = 90
    assert model_op("aten::gt", [T((10,)), T((10,))]).bytes == 90.0


def test_an_expanded_input_is_read_at_its_stored_size():
    # (64, 64) expanded from (64,) (stride 0 on rows): 64 stored; + (64, 64): bytes (64 + 4096 + 4096) * 4 = 33024
    work = model_op("aten::add", [T((64, 64), strides=(0, 1)), T((64, 64)), S("1")])
    assert work.bytes == 33024.0 and work.flops == 4096.0


def test_integer_elementwise_has_no_floating_point_work():
    work = model_op("aten::add", [T((8,), "long int"), T((8,), "long int"), S("1")])
    check(work, 0.0, 192.0, None, "elementwise", "int64")  # (64 + 64 + 64) B


# ------------------------------------------------------------------------------------------------------ reductions

def test_sum_over_one_dim():
    # (32, 128) summed over dim 1: 4096 FLOPs; bytes (4096 + 32) * 4 = 16512
    check(model_op("aten::sum", [T((32, 128)), S("[1]", "ScalarList"), S("False"), NONE]),
          4096.0, 16512.0, "fp32", "reduction")


def test_mean_of_everything():
    # mean(self, dtype=None) of (8, 8) half: 64 FLOPs; bytes 64*2 + 1*2 = 130
    check(model_op("aten::mean", [T((8, 8), "c10::Half"), NONE]), 64.0, 130.0, "fp32", "reduction")


def test_var_counts_four_flops_per_element():
    # var over the last dim of (4, 10): 4 * 40 = 160 FLOPs; bytes (40 + 4) * 4 = 176
    work = model_op("aten::var", [T((4, 10)), S("[-1]", "ScalarList"), S("1"), S("True")])
    check(work, 160.0, 176.0, "fp32", "reduction")


def test_max_over_a_dim_writes_values_and_indices():
    # max.dim of (6, 5) over dim 1: values 6 floats, indices 6 int64: bytes 120 + 24 + 48 = 192
    check(model_op("aten::max", [T((6, 5)), S("1"), S("False")]), 30.0, 192.0, "fp32", "reduction")
    # max(self, other) is the elementwise maximum: (6, 5) twice in, once out: 3 * 120 = 360
    check(model_op("aten::max", [T((6, 5)), T((6, 5))]), 30.0, 360.0, "fp32", "elementwise")


# ---------------------------------------------------------------------------------------------------------- norms

def test_native_layer_norm_bf16():
    # (4, 16, 64) over the last 64: 64 rows; 8 FLOPs per element: 8 * 4096 = 32768;
    # bytes read (4096 + 64 + 64) * 2 = 8448, write output 4096 * 2 = 8192, mean and rstd 2 * 64 * 4 = 512: 17152
    args = [T((4, 16, 64), "c10::BFloat16"), S("[64]", "ScalarList"), T((64,), "c10::BFloat16"),
            T((64,), "c10::BFloat16"), S("1e-05")]
    work = model_op("aten::native_layer_norm", args)
    check(work, 32768.0, 17152.0, "fp32", "norm", "bfloat16")
    assert "8 FLOPs per element" in work.note


def test_fused_rms_norm():
    # (8, 32) float over 32: 4 FLOPs per element: 1024; bytes (256 + 32 + 256) * 4 + rstd 8 * 4 = 2208
    args = [T((8, 32)), S("[32]", "ScalarList"), T((32,)), S("1e-06")]
    check(model_op("aten::_fused_rms_norm", args), 1024.0, 2208.0, "fp32", "norm")


def test_batch_norm_training_and_evaluation():
    # x (2, 3, 4, 4) = 96 elements, C = 3; weight, bias, running mean, running var (3,)
    x, c = T((2, 3, 4, 4)), T((3,))
    # evaluation: 2 FLOPs per element = 192; bytes (96 + 4*3 + 96) * 4 = 816
    evaluation = [x, c, c, c, c, S("False"), S("0.1"), S("1e-05"), S("True")]
    check(model_op("aten::batch_norm", evaluation), 192.0, 816.0, "fp32", "norm")
    # training: 5 per element = 480; bytes (96 + 12) * 4 read + 96 * 4 out + saved mean, invstd 2*3*4
    # + running mean, var written back 2*3*4 = 432 + 384 + 24 + 24 = 864
    training = [x, c, c, c, c, S("True"), S("0.1"), S("1e-05")]
    work = model_op("aten::native_batch_norm", training)
    check(work, 480.0, 864.0, "fp32", "norm")
    assert "training" in work.note


def test_native_group_norm():
    # (2, 8, 4, 4) = 256 elements, 4 groups; 8 FLOPs per element = 2048;
    # bytes (256 + 8 + 8) * 4 + 256 * 4 + mean and rstd 2 * (2*4) * 4 = 1088 + 1024 + 64 = 2176
    args = [T((2, 8, 4, 4)), T((8,)), T((8,)), S("2"), S("8"), S("16"), S("4"), S("1e-05")]
    check(model_op("aten::native_group_norm", args), 2048.0, 2176.0, "fp32", "norm")


def test_native_layer_norm_backward():
    # (4, 64): dx 10 + dw 2 + db 1 = 13 per element: 3328 FLOPs; read g 256, x 256, mean 4, rstd 4, w 64 = 584;
    # write dx 256, dw 64, db 64 = 384; (584 + 384) * 4 = 3872
    args = [T((4, 64)), T((4, 64)), S("[64]", "ScalarList"), T((4, 1)), T((4, 1)), T((64,)), T((64,)),
            S("[True, True, True]", "GenericList")]
    check(model_op("aten::native_layer_norm_backward", args), 3328.0, 3872.0, "fp32", "norm")


def test_native_batch_norm_backward():
    # x (2, 3, 4, 4): dx 9 + dw 2 + db 1 = 12 per element: 1152 FLOPs; read g 96, x 96, w 3, save_mean 3,
    # save_invstd 3 = 201; write dx 96, dw 3, db 3 = 102: (201 + 102) * 4 = 1212
    x, c = T((2, 3, 4, 4)), T((3,))
    args = [x, x, c, c, c, c, c, S("True"), S("1e-05"), S("[True, True, True]", "GenericList")]
    check(model_op("aten::native_batch_norm_backward", args), 1152.0, 1212.0, "fp32", "norm")


# -------------------------------------------------------------------------------------------------------- softmax

def test_softmax_half_to_float_writes_float32():
    # (8, 128) half: 5 FLOPs per element = 5120; bytes 1024 * 2 in + 1024 * 4 out = 6144
    work = model_op("aten::_softmax", [T((8, 128), "c10::Half"), S("-1"), S("True")])
    check(work, 5120.0, 6144.0, "fp32", "softmax", "float16")


def test_log_softmax_with_a_dtype_argument():
    # log_softmax(self bf16 (4, 10), dim, dtype=6 float32): 5 * 40 = 200; bytes 80 + 160 = 240
    check(model_op("aten::log_softmax", [T((4, 10), "c10::BFloat16"), S("1"), S("6")]), 200.0, 240.0, "fp32",
          "softmax")


def test_softmax_backward_data():
    # (8, 128) float: 4 FLOPs per element = 4096; bytes g, y read, grad_input written: 3 * 4096 = 12288
    args = [T((8, 128)), T((8, 128)), S("-1"), S("6")]
    check(model_op("aten::_softmax_backward_data", args), 4096.0, 12288.0, "fp32", "softmax")


# ------------------------------------------------------------------------------------------------------ embedding

def test_embedding_reads_only_the_gathered_rows():
    # weight (50000, 768) float, indices (4, 128) int64: 512 rows * 768 = 393216 elements gathered and written:
    # bytes 393216 * 4 * 2 + 512 * 8 = 3145728 + 4096 = 3149824; no FLOPs
    args = [T((50000, 768)), T((4, 128), "long int"), S("-1"), S("False"), S("False")]
    check(model_op("aten::embedding", args), 0.0, 3149824.0, None, "embedding")


def test_embedding_dense_backward_writes_only_the_touched_rows():
    # grad (4, 128, 768) float = 393216, indices (4, 128) int64, num_weights 50000: at most 512 rows touched:
    # bytes 393216 * 4 + 512 * 8 + 512 * 768 * 4 = 1572864 + 4096 + 1572864 = 3149824; 393216 adds. The zeros of the
    # other 49488 rows are the nested fill_'s (on the H200 trace: a fill_ kernel of 32000 x 1024 inside the op)
    args = [T((4, 128, 768)), T((4, 128), "long int"), S("50000"), S("-1"), S("False")]
    work = model_op("aten::embedding_dense_backward", args)
    check(work, 393216.0, 3149824.0, "fp32", "embedding")
    assert "fill_" in work.note
    # fewer rows than indices: num_weights 100 bounds the rows written: 100 * 768 * 4 = 307200
    args = [T((4, 128, 768)), T((4, 128), "long int"), S("100"), S("-1"), S("False")]
    assert model_op("aten::embedding_dense_backward", args).bytes == 1572864.0 + 4096.0 + 307200.0


# ----------------------------------------------------------------------------------------------------------- copy

def test_to_copy_casts():
    # 1024 floats read (4096 B), 1024 bf16 written (2048 B): 6144
    work = model_op("aten::_to_copy", [T((1024,)), S("15"), NONE, NONE, NONE, S("False"), NONE])
    check(work, 0.0, 6144.0, None, "copy", "float32")
    assert "cast float32 to bfloat16" in work.note


def test_copy_into_a_bf16_tensor_from_a_transposed_float_one():
    # src (32, 32) float, strides (1, 32): 4096 B read; dst (32, 32) bf16: 2048 B written
    work = model_op("aten::copy_", [T((32, 32), "c10::BFloat16"), T((32, 32), strides=(1, 32)), S("False")])
    check(work, 0.0, 6144.0, None, "copy")


def test_cat_takes_its_element_size_from_the_kernel_name():
    # (2, 3) and (4, 3): 18 elements read and written: 2 * 18 * 4 = 144
    args = [L((2, 3), (4, 3)), S("0")]
    kernel = "at::native::CatArrayBatchedCopy_aligned16_contig<at::native::OpaqueType<4u>, unsigned int, 2, 128, 1>"
    check(model_op("aten::cat", args, [kernel]), 0.0, 144.0, None, "copy")
    blind = model_op("aten::cat", args)
    assert blind.bytes is None and "not recorded" in blind.note


def test_fill_writes_only():
    check(model_op("aten::fill_", [T((100,), "c10::Half"), S("0")]), 0.0, 200.0, None, "copy")
    check(model_op("aten::zero_", [T((10, 10))]), 0.0, 400.0, None, "copy")


def test_arange_writes_its_elements():
    # arange.start_out(0, 1024, 1, out=int64 (0,)), as on the H200 traces: 1024 * 8 = 8192 B written
    args = [S("0"), S("1024"), S("1"), T((0,), "long int")]
    check(model_op("aten::arange", args), 0.0, 8192.0, None, "copy", "int64")
    # arange.start_step(1.5, 4, 0.5, dtype=float32 (code 6), layout, device, pin_memory): ceil(2.5 / 0.5) = 5
    # floats = 20 B
    args = [S("1.5"), S("4"), S("0.5"), S("6"), NONE, NONE, NONE]
    check(model_op("aten::arange", args), 0.0, 20.0, None, "copy", "float32")
    # arange(4096, dtype=int64 (code 4), layout 0, ...), as the training trace records it: 32768 B
    check(model_op("aten::arange", [S("4096"), S("4"), S("0"), NONE, NONE]), 0.0, 32768.0, None, "copy", "int64")
    # arange(1024) without a dtype: integers, int64
    assert model_op("aten::arange", [S("1024"), NONE, NONE, NONE, S("False")]).bytes == 8192.0
    assert model_op("aten::arange", [S("0"), S("10"), S("1")]).bytes is None  # three arguments: no overload


# ---------------------------------------------------------------------------------------------------------- index

def test_index_select_gathers_rows():
    # (1000, 64) float, dim 0, index (10,) int64: 640 elements gathered, written: 640*4*2 + 80 = 5200
    check(model_op("aten::index_select", [T((1000, 64)), S("0"), T((10,), "long int")]), 0.0, 5200.0, None, "index")


def test_gather():
    # (8, 100) float along dim 1 with index (8, 5): 40 gathered, written: 40*4*2 + 40*8 = 640
    check(model_op("aten::gather", [T((8, 100)), S("1"), T((8, 5), "long int"), S("False")]), 0.0, 640.0, None,
          "index")


def test_advanced_index():
    # (10, 4)[idx (5,)]: 5 * 4 = 20 elements gathered and written, 5 int64 indices: 80 + 40 + 80 = 200
    args = [T((10, 4)), OpInput(((5,),), "GenericList", None, "")]
    check(model_op("aten::index", args), 0.0, 200.0, None, "index")


def test_scatter_add_in_place():
    # self (10, 4) float, dim 0, index (3, 4) int64, src (3, 4) float: read index 96 + src 48 + the 12 targets 48,
    # write 48: 240 B; 12 adds
    args = [T((10, 4)), S("0"), T((3, 4), "long int"), T((3, 4))]
    check(model_op("aten::scatter_add_", args), 12.0, 240.0, "fp32", "index")


# ----------------------------------------------------------------------------------------------------------- loss

def test_nll_loss_forward_gathers_one_sector_per_row():
    # (16, 1000) float log-probabilities, target (16,) int64, mean: 16 rows, one 32-byte sector each = 512;
    # target 128; output and total_weight 2 * 4 = 8: 648 B; 16 FLOPs
    args = [T((16, 1000)), T((16,), "long int"), NONE, S("1"), S("-100")]
    check(model_op("aten::nll_loss_forward", args), 16.0, 648.0, "fp32", "loss")


def test_nll_loss_backward_writes_one_sector_per_row():
    # grad_output () 4 + target 128 + total_weight () 4 read; one element of each of the 16 rows written, a 32-byte
    # sector each: 512; 648 B. The zeros of grad_input (16, 1000) are the nested zero_/fill_'s (on the H200 trace the
    # dense write put this op at 11.6x the DRAM roof)
    args = [T((), "float"), T((16, 1000)), T((16,), "long int"), NONE, S("1"), S("-100"), T((), "float")]
    work = model_op("aten::nll_loss_backward", args)
    check(work, 16.0, 648.0, "fp32", "loss")
    assert "fill_" in work.note


def test_cross_entropy_loss_as_one_pass():
    # (16, 1000): log_softmax 5 * 16000 + 16 = 80016 FLOPs; bytes 64000 + 128 + 4 = 64132
    args = [T((16, 1000)), T((16,), "long int"), NONE, S("1"), S("-100"), S("0.")]
    check(model_op("aten::cross_entropy_loss", args), 80016.0, 64132.0, "fp32", "loss")


# ------------------------------------------------------------------------------------------------------ optimizer

ADAM_KERNEL = ("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)"
               "::FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float,"
               " 4, (at::native::ADAM_MODE)1, false>, double, double, double, double, double, double, bool, double*,"
               " double*>")


def adam_args(params, weight_decay="0.01"):
    return [L(*params)] * 4 + [L(), L(*[()] * len(params)), S("0.001"), S("0.9"), S("0.999"), S(weight_decay),
                               S("1e-08"), S("False"), S("False"), NONE, NONE]


def test_fused_adamw():
    # params (1024, 1024) and (1024,): 1049600 elements; 13 FLOPs + 1 for the decoupled weight decay = 14 each:
    # 14694400; bytes 7 streams * 1049600 * 4 = 29388800
    work = model_op("aten::_fused_adamw_", adam_args([(1024, 1024), (1024,)]), [ADAM_KERNEL])
    check(work, 14694400.0, 29388800.0, "fp32", "optimizer", "float32")
    assert "14 FLOPs, 4 element reads and 3 element writes per element" in work.note
    assert "shape model: 2 tensors, 1,049,600 elements" in work.note


def test_fused_adam_without_a_kernel_name_has_no_bytes():
    # no weight decay: 13 FLOPs * 100 = 1300; the element dtype is unknown
    work = model_op("aten::_fused_adam_", adam_args([(100,)], weight_decay="0."))
    assert work.flops == 1300.0 and work.bytes is None and "not recorded" in work.note


def test_foreach_add_of_two_lists():
    # self [(10,), (20,)] += other [(10,), (20,)], bf16: 30 FLOPs; read 60, write 30 elements: 90 * 2 = 180
    kernel = ("multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListAlphaFunctor<c10::BFloat16, 2, 2, 0>,"
              " std::plus<float>, float>")
    args = [L((10,), (20,)), L((10,), (20,)), S("1")]
    check(model_op("aten::_foreach_add_", args, [kernel]), 30.0, 180.0, "fp32", "optimizer", "bfloat16")


def test_foreach_addcdiv_and_sqrt():
    kernel = "multi_tensor_apply_kernel<TensorListMetadata<3>, PointwiseOpScalarListFunctor<float, 3, 3, 0>>"
    # addcdiv_(self, t1, t2, scalars), 30 elements each: 3 FLOPs each = 90; read 90, write 30: 120 * 4 = 480
    lists = [L((10,), (20,))] * 3
    check(model_op("aten::_foreach_addcdiv_", lists + [S("[0.1, 0.1]", "ScalarList")], [kernel]), 90.0, 480.0,
          "fp32", "optimizer")
    # sqrt (out of place) of [(10,)]: 10 FLOPs, 10 read + 10 written: 80 B
    check(model_op("aten::_foreach_sqrt", [L((10,))], [kernel]), 10.0, 80.0, "fp32", "optimizer")


def test_fused_sgd_with_momentum():
    # 1000 elements, momentum 0.9, no weight decay: 5 FLOPs, 5 streams: 5000 FLOPs, 5 * 1000 * 4 = 20000 B
    args = [L((1000,)), L((1000,)), L((1000,)), S("0."), S("0.9"), S("0.1"), S("0."), S("False"), S("False"),
            S("False"), NONE, NONE]
    kernel = "multi_tensor_apply_kernel<FusedSgdMathFunctor<float, 3>>"
    check(model_op("aten::_fused_sgd_", args, [kernel]), 5000.0, 20000.0, "fp32", "optimizer")


# ---------------------------------------------------------------------------------------------------- the contract

def test_unknown_and_foreign_ops_have_no_model():
    assert model_op("aten::frobnicate", [T((4,))]) is None
    assert model_op("torchvision::nms", [T((4, 4)), T((4,)), S("0.5")]) is None
    assert model_op("ProfilerStep#3", []) is None


def test_missing_shapes_give_the_class_and_say_so():
    work = model_op("aten::mm", [NONE, NONE])
    assert work == OpWork(None, None, None, None, "gemm", "operand shapes not recorded")
    assert model_op("aten::layer_norm", []).note == "input shape not recorded"


def test_an_unknown_dtype_leaves_bytes_out_and_says_so():
    work = model_op("aten::add", [T((8,), "c10::Float8_e8m0fnu"), T((8,), "c10::Float8_e8m0fnu"), S("1")])
    assert work.bytes is None and "unknown dtype 'c10::Float8_e8m0fnu'" in work.note


# ------------------------------------------------------------------------------------------------- reading inputs

@pytest.mark.parametrize("text, value", [("1", 1), ("False", False), ("[1, 1]", [1, 1]), ("", None), ("1e-05", 1e-05),
                                          ("tanh", "tanh"), ("-inf", "-inf"), (3, 3)])
def test_concrete_values(text, value):
    assert parse_value(text) == value


def test_int_tuple_repeats_a_single_value():
    assert int_tuple(2, 2) == (2, 2)
    assert int_tuple([3], 3) == (3, 3, 3)
    assert int_tuple([1, 2], 2) == (1, 2)
    assert int_tuple([1, 2], 3) is None
    assert int_tuple(True, 2) is None


def test_stored_elements_count_an_expanded_dim_once():
    assert stored_elements((4, 16, 32), (0, 32, 1)) == 512
    assert stored_elements((4, 16, 32), None) == 2048
    assert stored_elements((4, 16), (1,)) == 64  # strides that do not match the shape: all elements


def test_kernel_dtype():
    assert kernel_dtype([ADAM_KERNEL]) == ("float32", 4)
    assert kernel_dtype(["elementwise_kernel<128, 4, c10::BFloat16, float>"]) == ("bfloat16", 2)
    assert kernel_dtype(["CatArrayBatchedCopy<OpaqueType<2u>, unsigned int, 2, 128, 1>"]) == (None, 2)
    assert kernel_dtype(["nvjet_tst_128x64"]) == (None, None)


def test_a_forward_convolution_needs_no_output_padding():
    # the pointwise conv of test_conv2d_half_pointwise through aten::convolution with output_padding not recorded
    args = conv_args(T((1, 4, 8, 8), "c10::Half"), T((8, 4, 1, 1), "c10::Half"), NONE, "[1, 1]", "[0, 0]", "[1, 1]",
                     "1", output_padding="")
    check(model_op("aten::convolution", args), 4096.0, 1600.0, "fp16_tensor", "conv")


def test_no_model_raises_on_odd_arguments():
    """Trace data is not trusted: zero sizes, wrong ranks, garbage values and nested lists give a partial or a
    result, never an exception."""
    from roofline.model.ops.aten import _MODELS

    odd = [
        [],
        [NONE] * 16,
        [T((0, 0)), T((0,)), S("0")] + [S("[0, 0]")] * 12,
        [T((3,)), T((5, 7, 2)), S("x"), S("[1, 'a']"), S("True")] + [T((2, 2, 2, 2, 2))] * 10,
        [L((2, 3)), L(), S("-1"), S("[[1]]")] * 4,
        [T((1, 1, 1, 1), "weird"), T((1, 1, 1, 1)), T((1,), "bool")] * 5,
    ]
    for name in list(_MODELS) + ["_foreach_mul_", "relu_", "gelu", "where"]:
        for args in odd:
            work = model_op(f"aten::{name}", args, ["causal_tf32_OpaqueType<0u>"])
            assert work is None or isinstance(work, OpWork)
    x, w = T((2, 8, 17, 17)), T((16, 2, 3, 3))
    for stride, padding, dilation in (("[0, 0]", "[0, 0]", "[1, 1]"), ("[1, 1]", "[-1, 0]", "[1, 1]"),
                                      ("[1, 1]", "[0, 0]", "[0, 1]")):
        work = model_op("aten::convolution", conv_args(x, w, NONE, stride, padding, dilation, "4"))
        assert work.flops is None and "impossible" in work.note
