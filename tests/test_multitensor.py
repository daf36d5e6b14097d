"""The multi-tensor ops (fused optimizers, GradScaler's unscale, _foreach_*) modelled from their launches' grids
where the trace recorded no list shapes (issue 38). Every expected figure is worked by hand from ATen's constants
(aten/src/ATen/native/cuda/MultiTensorApply.cuh: kChunkSize 65,536 elements a block) and its kernels' loads and
stores (fused_adam_utils.cuh, FusedSgdKernel.cu, fused_adagrad_utils.cuh, AmpKernels.cu, ForeachFunctors.cuh)."""

from __future__ import annotations

import pytest

from roofline.model.ops.aten import model_from_grid, model_op
from roofline.model.ops.args import OpInput
from roofline.model.ops.multitensor import CHUNK_SIZE, grid_elements, parse_kernel

NS = "at::native::(anonymous namespace)::"
EMPTY = OpInput((), "TensorList", None, "")  # a list of 30 or more tensors: Kineto records no shapes
NONE = OpInput((), "", None, "")
SCALE = OpInput((), "float", None, "")  # a 0-dim float tensor: GradScaler's grad_scale or found_inf


def S(value):
    return OpInput((), "Scalar", None, value)


def L(*shapes):
    return OpInput(tuple(tuple(s) for s in shapes), "TensorList", None, "")


def kernel(metadata: str, functor: str) -> str:
    return f"void {NS}multi_tensor_apply_kernel<{NS}{metadata}, {NS}{functor}, float const*, double>(x)"


ADAMW = kernel("FusedOptimizerTensorListMetadata<4>", "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, "
                                                      "false>")


def adamw_args(lists=EMPTY, weight_decay="0.01", grad_scale=SCALE):
    return [lists] * 6 + [S("0.0001"), S("0.9"), S("0.999"), S(weight_decay), S("1e-08"), S("False"), S("False"),
                          grad_scale, SCALE if grad_scale is SCALE else NONE]


def test_aten_constants():
    assert CHUNK_SIZE == 65536  # kChunkSize


def test_kernel_names_in_kinetos_and_ncus_spelling():
    k = parse_kernel(ADAMW)
    assert (k.metadata, k.depth, k.functor, k.dtype, k.fused) == (
        "FusedOptimizerTensorListMetadata", 4, "FusedAdamMathFunctor", "float32", True)
    ncu = ("void native::<unnamed>::multi_tensor_apply_kernel<native::<unnamed>::FusedOptimizerTensorListMetadata<4>,"
           " native::<unnamed>::FusedAdamMathFunctor<c10::BFloat16, 4, 1, 0>, const float *, double>(T1, T2, T3...)")
    assert (parse_kernel(ncu).dtype, parse_kernel(ncu).reads) == ("bfloat16", None)  # 1, 0: Adam's mode, amsgrad
    sub = parse_kernel(kernel("TensorListMetadata<2>", "BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::minus<float>"))
    assert (sub.depth, sub.reads, sub.res) == (2, 2, 0)
    copy = parse_kernel(kernel("TensorListMetadata<2>", "UnaryOpFunctor<long, 2, 1, 1>"))
    assert (copy.dtype, copy.reads, copy.res) == ("int64", 1, 1)
    scalars = parse_kernel(kernel("TensorListScalarListMetadata<float, 3>", "PointwiseOpScalarListFunctor<c10::Half,"
                                                                             " 3, 3, 0>"))
    assert (scalars.depth, scalars.dtype, scalars.reads) == (3, "float16", 3)
    assert parse_kernel("void at::native::vectorized_elementwise_kernel<4, AddFunctor<float>>") is None


def test_grid_elements_are_an_upper_bound_and_the_tensor_count_a_lower_one():
    g = grid_elements([320, 320, 320, 107])
    assert (g.launches, g.blocks, g.upper, g.lower) == (4, 1067, 1067 * 65536, None)
    assert "an upper bound" in g.describe()
    g = grid_elements([320, 320, 320, 107], tensors=52)
    assert g.lower == (1067 - 52) * 65536 + 52 == 66_519_092  # every chunk full but each tensor's last one
    assert grid_elements([]) is None
    assert grid_elements([3], tensors=4).lower is None  # more tensors than blocks: not this op's list


def test_fused_adamw_from_its_grid():
    # 320 + 107 blocks: at most 427 * 65536 = 27,983,872 elements per list. float32, weight decay 0.01 and
    # GradScaler's grad_scale: 13 + 1 + 1 = 15 FLOPs; param, grad, exp_avg, exp_avg_sq loaded and all four stored
    # (the unscaled gradient too): 8 streams * 4 B
    n = 427 * 65536
    work = model_from_grid("aten::_fused_adamw_", adamw_args(), [(ADAMW, (320, 1, 1)), (ADAMW, (107, 1, 1))])
    assert (work.flops, work.bytes, work.roof, work.dtype) == (15.0 * n, 32.0 * n, "fp32", "float32")
    assert work.note.startswith("grid model: 2 launches, 427 blocks") and "an upper bound" in work.note
    # without GradScaler or weight decay: 13 FLOPs, 7 streams (the gradient is not stored)
    plain = model_from_grid("aten::_fused_adamw_", adamw_args(weight_decay="0.", grad_scale=NONE),
                            [(ADAMW, (320, 1, 1)), (ADAMW, (107, 1, 1))])
    assert (plain.flops, plain.bytes) == (13.0 * n, 28.0 * n)


def test_fused_adamw_with_the_tensor_count_states_its_lower_bound():
    work = model_from_grid("aten::_fused_adamw_", adamw_args(), [(ADAMW, (10, 1, 1))], tensors=4,
                           tensors_from="four step counters")
    assert work.bytes == 32.0 * 10 * 65536  # the upper bound is still the figure
    assert f"4 tensors (four step counters): at least {6 * 65536 + 4:,} elements" in work.note


def test_fused_sgd_with_momentum_from_its_grid():
    # bfloat16, momentum 0.9, no weight decay, no GradScaler: buf = m*buf + (1-d)*g (3), p -= lr*buf (2): 5 FLOPs;
    # p, g, buf loaded, p and buf stored: 5 streams * 2 B; 10 blocks: 655,360 elements
    sgd = kernel("TensorListMetadata<3>", "FusedSgdMathFunctor<c10::BFloat16, 3>")
    args = [EMPTY] * 3 + [S("0."), S("0.9"), S("0.01"), S("0."), S("False"), S("False"), S("False"), NONE, NONE]
    work = model_from_grid("aten::_fused_sgd_", args, [(sgd, (10, 1, 1))])
    assert (work.flops, work.bytes, work.dtype) == (5.0 * 655360, 10.0 * 655360, "bfloat16")


def test_fused_adagrad_from_its_grid():
    # float32, no weight decay, no GradScaler: s += g*g (2), sqrt + eps (2), p -= clr*g/denom (3): 7 FLOPs;
    # p, g, s loaded, p and s stored: 5 streams * 4 B; 3 blocks
    adagrad = kernel("FusedOptimizerTensorListMetadata<3>", "FusedAdagradMathFunctor<float>")
    args = [EMPTY] * 4 + [S("0.01"), S("0."), S("0."), S("1e-10"), S("False"), NONE, NONE]
    work = model_from_grid("aten::_fused_adagrad_", args, [(adagrad, (3, 1, 1))])
    assert (work.flops, work.bytes) == (7.0 * 3 * 65536, 20.0 * 3 * 65536)


def test_gradscaler_unscale_from_its_grid():
    # UnaryOpFunctor<c10::Half, 1, 1, 0>: each float16 gradient loaded, multiplied and checked (2 FLOPs), stored
    unscale = kernel("TensorListMetadata<1>", "UnaryOpFunctor<c10::Half, 1, 1, 0>, "
                     "at::native::_amp_foreach_non_finite_check_and_unscale_cuda_(...)")
    work = model_from_grid("aten::_amp_foreach_non_finite_check_and_unscale_", [EMPTY, SCALE, SCALE],
                           [(unscale, (320, 1, 1)), (unscale, (5, 1, 1))])
    n = 325 * 65536
    assert (work.flops, work.bytes, work.dtype) == (2.0 * n, 4.0 * n, "float16")


@pytest.mark.parametrize("op, functor, depth, flops, streams", [
    ("_foreach_mul_", "BinaryOpScalarFunctor<float, 1, 1, 0>", 1, 1, 2),  # x *= c: load x, store x
    ("_foreach_sqrt", "UnaryOpFunctor<float, 2, 1, 1>", 2, 1, 2),  # y = sqrt(x): load x, store y
    ("_foreach_lerp_", "TernaryOpScalarFunctor<float, 2, 2, 0>", 2, 3, 3),  # x += w (y - x): load x, y, store x
    ("_foreach_addcdiv_", "PointwiseOpScalarListFunctor<float, 3, 3, 0>", 3, 3, 4),  # load 3, store 1
    ("_foreach_zero_", "ZeroFunctor<float, 1, 1, 0>", 1, 0, 1),  # store only
])
def test_foreach_ops_from_their_functors(op, functor, depth, flops, streams):
    name = kernel(f"TensorListMetadata<{depth}>", functor)
    work = model_from_grid(f"aten::{op}", [EMPTY] * depth + [S("0.5")], [(name, (2, 1, 1))])
    assert (work.flops, work.bytes) == (float(flops * 2 * 65536), float(streams * 4 * 2 * 65536))


def test_step_counters_count_one_element_a_block():
    # 52 one-element float32 step tensors, one block each: add_ loads and stores each (8 B); sub_ also reads
    # found_inf, the one tensor repeated through its second list, once (4 B)
    add = kernel("TensorListMetadata<1>", "BinaryOpScalarFunctor<float, 1, 1, 0>, std::plus<float>")
    sub = kernel("TensorListMetadata<2>", "BinaryOpListAlphaFunctor<float, 2, 2, 0>, std::minus<float>")
    a = model_from_grid("aten::_foreach_add_", [EMPTY, S("1")], [(add, (52, 1, 1))], step_counter=True)
    s = model_from_grid("aten::_foreach_sub_", [EMPTY, EMPTY, S("1")], [(sub, (52, 1, 1))], step_counter=True)
    assert (a.flops, a.bytes, s.bytes) == (52.0, 416.0, 420.0)
    assert a.note.startswith("step-counter model") and "52 tensors" in a.note
    # the same launch read as a list of unknown tensors: the chunk bound, 52 * 65536 elements
    assert model_from_grid("aten::_foreach_add_", [EMPTY, S("1")], [(add, (52, 1, 1))]).bytes == 8.0 * 52 * 65536


def test_no_grid_model_without_a_multi_tensor_launch_or_a_known_op():
    assert model_from_grid("aten::_fused_adamw_", adamw_args(), [("nvjet_tst_128x64", (4, 1, 1))]) is None
    assert model_from_grid("aten::_fused_adamw_", adamw_args(), [(ADAMW, None)]) is None
    assert model_from_grid("aten::mm", [], [(ADAMW, (4, 1, 1))]) is None
    odd = [EMPTY, S("x"), S("[1, 'a']"), OpInput((), "weird", None, "")] * 4
    for name in ("_fused_adam_", "_fused_sgd_", "_fused_adagrad_", "_foreach_norm", "_foreach_pow_"):
        work = model_from_grid(f"aten::{name}", odd, [(ADAMW, (1, 1, 1))])
        assert work is None or work.bytes is not None


def test_the_shape_model_and_the_grid_model_agree_on_whole_chunks():
    """Tensors of whole chunks (768 x 768 = 9 chunks, 1024 x 1024 = 16): the grid's bound is exact, so the shape
    model (the recorded shapes) and the grid model give the same figures; the shape model says it is one."""
    shapes = [(768, 768), (1024, 1024)]
    shaped = model_op("aten::_fused_adamw_", adamw_args(L(*shapes)), [ADAMW])
    grid = model_from_grid("aten::_fused_adamw_", adamw_args(), [(ADAMW, (25, 1, 1))])
    assert (shaped.flops, shaped.bytes) == (grid.flops, grid.bytes) == (15.0 * 25 * 65536, 32.0 * 25 * 65536)
    assert "shape model: 2 tensors" in shaped.note and "grid model" not in shaped.note


def test_an_element_type_the_kernel_does_not_name_leaves_the_bytes_out():
    odd = kernel("TensorListMetadata<1>", "UnaryOpFunctor<c10::Float8_e8m0fnu, 1, 1, 0>")
    work = model_from_grid("aten::_foreach_neg_", [EMPTY], [(odd, (4, 1, 1))])
    assert work.bytes is None and "no element type in the kernel's template arguments" in work.note


@pytest.mark.parametrize("metadata, functor", [
    ("TensorListMetadata<1>", "BinaryOpScalarFunctor<float, 1, 99999999999999999999, 0>"),  # 10^15x its ceiling
    ("TensorListMetadata<1>", "BinaryOpScalarFunctor<float, 1, 0, 0>"),  # reads no list: half the bytes
    ("TensorListMetadata<2>", "UnaryOpFunctor<float, 2, 1, 7>"),  # stores into a list it was not handed
    ("TensorListMetadata<0>", "UnaryOpFunctor<float, 0, 1, 0>"),
    ("TensorListMetadata<9>", "UnaryOpFunctor<float, 9, 1, 0>"),
    ("TensorListMetadata<" + "9" * 5000 + ">", "UnaryOpFunctor<float, 1, 1, 0>"),  # int() refuses 4300 digits
])
def test_a_kernel_name_no_aten_build_spells_is_not_read_as_a_multi_tensor_kernel(metadata, functor):
    """The grid model multiplies the elements by the lists a name says each block reads: a name outside ATen's
    depths (1-5) or a functor reading or storing outside its lists is not read (no grid model from it)."""
    assert parse_kernel(kernel(metadata, functor)) is None
