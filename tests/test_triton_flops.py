"""Issue 38 §3: an Inductor kernel's FLOPs counted as the GPU executes them (roofline/model/ops/triton_flops.py), one
operation at a time on small synthetic kernel bodies. The table's values are checked on a GPU by
benchmarks/triton_flops_check.py; these tests check that each operation of a body is charged its table entry,
where it runs (per point or per row), and only when the GPU runs it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roofline.model.ops.triton import read_source
from roofline.model.ops.triton_flops import OPS

DOCS = Path(__file__).resolve().parents[1] / "docs" / "torch-trace.md"


def pointwise(*lines: str, dtype: str = "fp32", out: str = "fp32") -> str:
    body = "\n".join(f"    {line}" for line in lines)
    return f"""
triton_meta={{'signature': {{'in_ptr0': '*{dtype}', 'in_ptr1': '*fp32', 'out_ptr0': '*{out}', 'xnumel': 'i32',
             'XBLOCK': 'constexpr'}}}}
@triton.jit
def triton_poi_fused_op_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xnumel = 1024
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), None){'.to(tl.float32)' if dtype != 'fp32' else ''}
    tmp1 = tl.load(in_ptr1 + (x0), None)
{body}
    tl.store(out_ptr0 + (x0), tmp9, None)
"""


@pytest.mark.parametrize("expr, entry", [
    ("tmp0 + tmp1", "+"), ("tmp0 - tmp1", "-"), ("tmp0 * tmp1", "*"), ("-tmp0", "neg"), ("(tmp0 / tmp1)", "/"),
    ("triton.language.div_rn(tmp0, tmp1)", "div_rn"),
    ("libdevice.exp(tmp0)", "libdevice.exp"), ("tl_math.exp(tmp0)", "tl_math.exp"),
    ("libdevice.exp2(tmp0)", "libdevice.exp2"), ("tl_math.log(tmp0)", "tl_math.log"),
    ("libdevice.log2(tmp0)", "libdevice.log2"), ("libdevice.tanh(tmp0)", "libdevice.tanh"),
    ("libdevice.erf(tmp0)", "libdevice.erf"), ("tl_math.sin(tmp0)", "tl_math.sin"),
    ("tl_math.cos(tmp0)", "tl_math.cos"), ("libdevice.rsqrt(tmp0)", "libdevice.rsqrt"),
    ("tl.sqrt_rn(tmp0)", "tl.sqrt_rn"), ("tl.sigmoid(tmp0)", "tl.sigmoid"), ("libdevice.pow(tmp0, tmp1)",
                                                                             "libdevice.pow"),
    ("tl_math.abs(tmp0)", "tl_math.abs"), ("triton_helpers.maximum(tmp0, tmp1)", "triton_helpers.maximum"),
    ("triton_helpers.minimum(tmp0, tmp1)", "triton_helpers.minimum"), ("tl.where(tmp0 > tmp1, tmp0, tmp1)",
                                                                       "tl.where"),
])
def test_each_operation_costs_its_table_entry(expr, entry):
    """One operation, then the result stored: the body costs exactly the table's FLOPs for it (the old count gave
    every math call one FLOP and max/min one too)."""
    source = read_source(pointwise(f"tmp9 = {expr}"))
    assert source is not None
    assert source.flops_per_point == OPS[entry].flops
    assert source.unknown_calls == ()


def test_transcendentals_cost_their_fma_sequences_and_mufu_alone_costs_nothing():
    """The convention's consequences a user sees: CUDA's expf (libdevice.exp, Inductor's default) runs a
    Cody-Waite reduction around MUFU.EX2, the fast path one FMUL; rsqrt and exp2 are MUFU alone, which ncu does
    not count as FLOPs; sqrt_rn is a Newton step; a compare-and-select is no FLOP."""
    assert OPS["libdevice.exp"].flops > OPS["tl_math.exp"].flops >= 1
    assert OPS["libdevice.rsqrt"].flops == OPS["libdevice.exp2"].flops == OPS["tl.sqrt"].flops == 0
    assert OPS["tl.sqrt_rn"].flops > 1 and OPS["div_rn"].flops > OPS["/"].flops
    assert OPS["triton_helpers.maximum"].flops == OPS["tl.where"].flops == 0


def test_silu_as_inductor_writes_it():
    """x / (1 + exp(-x)) * g: the negation folds (0), libdevice.exp, the add, the division, the product."""
    source = read_source(pointwise("tmp2 = -tmp0", "tmp3 = libdevice.exp(tmp2)", "tmp4 = tl.full([1], 1.0, tl.float32)",
                                   "tmp5 = tmp3 + tmp4", "tmp6 = (tmp0 / tmp5)", "tmp9 = tmp6 * tmp1"))
    assert source.flops_per_point == OPS["libdevice.exp"].flops + 3


def test_index_arithmetic_and_comparisons_are_not_flops():
    """Integer work on the iteration index (a causal mask, a gather's offsets) is no floating-point work."""
    source = read_source(pointwise("tmp2 = x0", "tmp3 = tmp2 + 5", "tmp4 = tl.full([1], 50257, tl.int64)",
                                   "tmp5 = tmp3 < tmp4", "tmp6 = tmp2 // 7", "tmp9 = tl.where(tmp5, tmp0, tmp1)"))
    assert source.flops_per_point == 0


def test_a_multiplication_by_one_folds_away():
    source = read_source(pointwise("tmp2 = tl.full([1], 1.0, tl.float32)", "tmp9 = tmp0 * tmp2"))
    assert source.flops_per_point == 0


@pytest.mark.parametrize("dtype, cast", [("fp16", OPS["cast_fp16_fp32"].flops), ("bf16", 0)])
def test_a_half_precision_load_costs_its_conversion_only_when_it_runs(dtype, cast):
    """fp16 -> fp32 is HADD2.F32, which ncu counts; bf16 -> fp32 a shift. A value converted and only stored back
    in its own dtype costs nothing (fptrunc(fpext(x)) folds); stored as float32 it is converted (ncu counted one
    half add per element of Inductor's fp16 -> fp32 `_to_copy` on an H100)."""
    assert read_source(pointwise("tmp9 = tmp0.to(tl.float32)", dtype=dtype, out=dtype)).flops_per_point == 0
    assert read_source(pointwise("tmp9 = tmp0.to(tl.float32)", dtype=dtype)).flops_per_point == cast
    used = read_source(pointwise("tmp2 = tmp0.to(tl.float32)", "tmp3 = tmp2 * tmp1", "tmp9 = tmp2 + tmp3",
                                 dtype=dtype))
    assert used.flops_per_point == cast + 2  # converted once, used twice


def test_an_unknown_math_call_is_one_flop_and_named():
    source = read_source(pointwise("tmp9 = libdevice.lgamma(tmp0)"))
    assert source.flops_per_point == 1
    assert source.unknown_calls == ("libdevice.lgamma",)


ONLINE_SOFTMAX = '''
triton_meta={'signature': {'in_ptr0': '*bf16', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'r0_numel': 'i32',
             'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'}}
@triton.jit
def triton_red_fused__log_softmax_prepare_softmax_online_0(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr, R0_BLOCK : tl.constexpr):
    xnumel = 4096
    r0_numel = 32000
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    _tmp3_max = tl.full([XBLOCK, R0_BLOCK], float('-inf'), tl.float32)
    _tmp3_sum = tl.zeros([XBLOCK, R0_BLOCK], tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (r0_1 + 32000*x0), r0_mask, other=0.0).to(tl.float32)
        tmp2 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])

        _tmp3_max_next, _tmp3_sum_next = triton_helpers.online_softmax_combine(
            _tmp3_max, _tmp3_sum, tmp2, False
        )

        _tmp3_max = tl.where(r0_mask, _tmp3_max_next, _tmp3_max)
        _tmp3_sum = tl.where(r0_mask, _tmp3_sum_next, _tmp3_sum)

    tmp3, tmp4 = triton_helpers.online_softmax_reduce(
        _tmp3_max, _tmp3_sum, 1, False)
    tmp3 = tmp3[:, None]
    tmp4 = tmp4[:, None]
    tmp5 = tl_math.log(tmp4)
    tl.store(out_ptr0 + (x0), tmp5, None)
'''


def test_a_statement_over_several_lines_is_counted():
    """Inductor writes the online-softmax combine over three lines; read line by line it was lost (0 FLOPs for the
    cross-entropy's statistics pass over the logits, the largest Triton kernel of a training step)."""
    from roofline.model.ops.triton_flops import REDUCTIONS
    source = read_source(ONLINE_SOFTMAX)
    assert source.flops_per_point == REDUCTIONS["online_softmax_combine"]
    # the accumulators' final reduction and the log, once a row
    assert source.flops_per_row == REDUCTIONS["online_softmax_reduce"] + OPS["tl_math.log"].flops


PERSISTENT = '''
triton_meta={'signature': {'in_ptr0': '*fp32', 'in_ptr1': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32',
             'r0_numel': 'i32', 'XBLOCK': 'constexpr'}}
@triton.jit
def triton_per_fused_native_layer_norm_0(in_ptr0, in_ptr1, out_ptr0, xnumel, r0_numel, XBLOCK : tl.constexpr):
    xnumel = 64
    r0_numel = 768
    R0_BLOCK: tl.constexpr = 1024
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 768*x0), r0_mask, other=0.0)
    tmp1 = tl.load(in_ptr1 + (x0), None)
    tmp2 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp4 = tl.where(r0_mask, tmp2, 0)
    tmp5 = tl.sum(tmp4, 1)[:, None].to(tl.float32)
    tmp6 = tl.full([1, 1], 768.0, tl.float32)
    tmp7 = (tmp5 / tmp6)
    tmp8 = tmp7 * tmp1
    tmp9 = tmp0 - tmp7
    tmp10 = tmp9 * tmp9
    tl.store(out_ptr0 + (r0_1 + 768*x0), tmp10, r0_mask)
    tl.store(out_ptr0 + (x0), tmp8, None)
'''


def test_a_persistent_reduction_keeps_per_element_work_per_element_after_its_sum():
    """After a tl.sum, work on the row's statistics is once a row, but work on the row's elements is still once an
    element (the old count put everything after the first sum per row: a layer-norm backward at a third of its
    FLOPs); the arithmetic runs on all R0_BLOCK lanes, the masked ones too."""
    from roofline.model.ops.triton import model_triton
    from roofline.model.ops.args import OpInput

    source = read_source(PERSISTENT)
    assert source.flops_per_point == 1 + 2  # the sum's add; x - mean, its square
    assert source.flops_per_row == 2  # the mean's division, the product with the row's load
    assert source.r_block == 1024
    inputs = [OpInput((64, 768), "float", (768, 1), ""), OpInput((64,), "float", (1,), ""),
              OpInput((64, 768), "float", (768, 1), ""), OpInput((), "Scalar", None, "64"),
              OpInput((), "Scalar", None, "768")]
    work = model_triton("triton_per_fused_native_layer_norm_0", inputs, source)
    assert work.flops == 3 * 64 * 1024 + 2 * 64


def test_the_docs_table_says_what_the_counter_charges():
    """docs/torch-trace.md carries the table of counted FLOPs per operation: each entry of OPS with its value."""
    text = DOCS.read_text()
    for name, cost in OPS.items():
        row = re.search(rf"^\| `{re.escape(name)}` \| (\S+) \|", text, re.MULTILINE)
        assert row is not None, f"{name} missing from the docs table"
        assert float(row.group(1)) == cost.flops, name


def test_a_source_too_deep_for_the_parser_counts_nothing_for_that_line_not_a_traceback():
    """200,000 unary minuses overflow CPython's parser stack with MemoryError (not RecursionError): a kernel file
    is user input, and read_source raised out of `import torch --triton-source`."""
    text = pointwise("tmp8 = " + "-" * 200_000 + "tmp0", "tmp9 = tmp0 + tmp1")
    source = read_source(text)
    assert source is not None and source.flops_per_point == 1.0  # the add; the unparsable line counts nothing
