"""`roofline import torch` on the three traces captured on the H200 on 2026-12-01 (torch 2.11.0+cu130,
transformers 5.17.0, torchvision 0.26.0; benchmarks/trace_check_capture.sh): GPT-2 small forward (BF16, SDPA),
ResNet-50 forward (BF16 autocast, channels-last, batch 64) and a 2-layer Llama training step. The FLOPs below are
counted by hand from the models' architectures, not read back from the importer; docs/measurements/
h200-trace-vs-ncu.md has the same traces against Nsight Compute's counters."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from roofline.cli import cli
from roofline.kineto.document import import_traces

DATA = Path(__file__).parent / "data" / "kineto"
TOKENS = 4 * 1024  # batch 4 x 1024 tokens in both transformer programs


@pytest.fixture(scope="module")
def docs() -> dict[str, dict]:
    return {name: import_traces([DATA / f"h200-{name}.json.gz"], group_by="op")[0]
            for name in ("gpt2", "resnet50", "train")}


def flops_by_op(doc: dict) -> dict[str, float]:
    out: dict[str, float] = {}
    for k in doc["kernels"]:
        out[k["op"]] = out.get(k["op"], 0.0) + k["flops"]
    return out


@pytest.mark.parametrize("name, events, kernels", [("gpt2", 259, 235), ("resnet50", 296, 230),
                                                   ("train", 341, 309)])
def test_every_gpu_event_is_imported_and_almost_all_has_a_model(docs, name, events, kernels) -> None:
    doc = docs[name]
    assert doc["source"]["launches"] == events  # kernels, copies and fills (ncu saw the same `kernels` launches)
    assert sum(1 for k in doc["kernels"] if k["kineto"]["kind"] == "kernel") + len(doc["unmodelled"]) == kernels
    # on the capture day's code 4.4-5.1 % of GPU time had no model (cuDNN attention, max pooling, nll_loss_backward)
    assert doc["program"]["unmodelled_share"] == 0.0
    assert not doc["unmodelled"]


def test_gpt2_gemm_and_attention_flops_are_the_hand_counted_ones(docs) -> None:
    flops = flops_by_op(docs["gpt2"])
    # 12 layers of c_attn (768 -> 2304), attention c_proj (768 -> 768), MLP c_fc (768 -> 3072), c_proj (3072 -> 768)
    # as addmm: 2 * 4096 * 768 * (2304 + 768 + 3072 + 3072) per layer
    assert flops["aten::addmm"] == 12 * 2 * TOKENS * 768 * (2304 + 768 + 3072 + 3072) == 695_784_701_952
    assert flops["aten::mm"] == 2 * TOKENS * 768 * 50257  # the tied LM head
    # cuDNN SDPA, causal: 4 * B * H * L * L * D / 2 per layer, B 4, H 12, L 1024, D 64
    assert flops["aten::_cudnn_attention_forward"] == pytest.approx(12 * 4 * 4 * 12 * 1024 * 1024 * 64 / 2)
    groups = {g["name"] for g in docs["gpt2"]["groups"]}
    assert {"aten::mm", "aten::addmm", "aten::_cudnn_attention_forward", "aten::native_layer_norm", "aten::mul",
            "aten::add", "aten::pow", "aten::tanh", "aten::cat", "aten::gather", "aten::arange"} == groups
    # the key/value cat's tensor list records no dtype (the kernel name says OpaqueType<2>): bytes, not float32
    assert {k["dtype"] for k in docs["gpt2"]["kernels"] if k["op"] == "aten::cat"} == {"bytes"}
    attention = [k for k in docs["gpt2"]["kernels"] if k["op"] == "aten::_cudnn_attention_forward"]
    assert {k["roof"] for k in attention if k["kineto"]["kind"] == "kernel"} == {"bf16_tensor"}


def resnet50_conv_flops(batch: int = 64) -> int:
    """2 * N * K * P * Q * C * R * S summed over ResNet-50's convolutions (torchvision v1.5: the stride on the 3x3
    of each stage's first bottleneck; its 1x1 downsample strided too)."""
    def conv(c: int, k: int, r: int, out: int) -> int:
        return 2 * batch * k * out * out * c * r * r

    total = conv(3, 64, 7, 112)  # the stem
    c, size = 64, 56
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        out = size // stride
        for b in range(blocks):
            total += conv(c, width, 1, size if b == 0 else out)  # 1x1 reduce, at the input's size
            total += conv(width, width, 3, out)  # 3x3 (strided in the first block)
            total += conv(width, 4 * width, 1, out)  # 1x1 expand
            if b == 0:
                total += conv(c, 4 * width, 1, out)  # the downsample shortcut
            c = 4 * width
        size = out
    return total


def test_resnet50_convolution_pooling_and_fc_flops(docs) -> None:
    flops = flops_by_op(docs["resnet50"])
    assert resnet50_conv_flops() == 523_153_440_768  # 4.09 GMAC per image, the figure ResNet-50 is known by
    assert flops["aten::cudnn_convolution"] == pytest.approx(resnet50_conv_flops(), rel=1e-12)
    assert flops["aten::addmm"] == 2 * 64 * 2048 * 1000  # the classifier
    assert flops["aten::max_pool2d_with_indices"] == 64 * 64 * 56 * 56 * 9  # 3x3 compares per output


def test_resnet50_strided_pointwise_convolutions_read_a_quarter_of_their_input(docs) -> None:
    notes = [k["model"]["note"] for k in docs["resnet50"]["kernels"]
             if k["op"] == "aten::cudnn_convolution" and k["kineto"]["kind"] == "kernel"]
    # the three 1x1 stride-2 downsample convolutions of stages 2-4 (channels-last: pixels 512 B and more apart)
    assert sum("read 0.25 of the input" in n for n in notes) == 3


def test_train_flops_forward_and_backward(docs) -> None:
    flops = flops_by_op(docs["train"])
    # per layer q, k, v, o (1024 -> 1024) and gate, up (1024 -> 2816), down (2816 -> 1024); the LM head
    # (1024 -> 32000); every one three times (forward, input gradient, weight gradient)
    forward = 2 * TOKENS * (2 * (4 * 1024 * 1024 + 3 * 1024 * 2816) + 1024 * 32000)
    assert flops["aten::mm"] == 3 * forward == 1_436_666_560_512
    causal = 4 * 4 * 16 * 1024 * 1024 * 64 / 2  # B 4, H 16, L 1024, D 64 per layer
    assert flops["aten::_cudnn_attention_forward"] == pytest.approx(2 * causal)
    assert flops["aten::_cudnn_attention_backward"] == pytest.approx(2 * 2.5 * causal)
    # AdamW over the 2-layer model's parameters: 13 + 1 (decoupled weight decay) FLOPs per element
    params = 32000 * 1024 + 2 * (4 * 1024 * 1024 + 3 * 1024 * 2816 + 2 * 1024) + 1024 + 1024 * 32000
    assert flops["aten::_fused_adamw_"] == pytest.approx(14 * params)


def test_recorded_list_shapes_win_over_the_grid_model(docs) -> None:
    """The Llama step's 21 parameters are under the profiler's 30-tensor limit, so their shapes are in the trace:
    the fused AdamW is modelled from them (91,231,232 elements, bfloat16, 7 streams: no GradScaler), not from its
    launches' 1,397 blocks (the grid model's bound, 91,553,792), and each entry says which model it is."""
    params = 32000 * 1024 + 2 * (4 * 1024 * 1024 + 3 * 1024 * 2816 + 2 * 1024) + 1024 + 1024 * 32000
    assert params == 91_231_232
    adam = [k for k in docs["train"]["kernels"] if k["op"] == "aten::_fused_adamw_"]
    assert sum(k["kineto"]["grid"][0] for k in adam) == 1397  # one block per 65,536-element chunk
    assert sum(k["bytes"] for k in adam) == pytest.approx(7 * 2 * params)
    assert all("shape model: 21 tensors" in k["model"]["note"] and "grid model" not in k["model"]["note"]
               for k in adam)
    counter = [k for k in docs["train"]["kernels"] if k["op"] == "aten::_foreach_add_"]
    assert counter and all("shape model" in k["model"]["note"] for k in counter)


def test_train_backward_ops_do_not_count_the_zero_fill_of_their_nested_fill(docs) -> None:
    doc = docs["train"]
    nll = next(k for k in doc["kernels"] if k["op"] == "aten::nll_loss_backward")
    assert nll["bytes"] == 4 + 4096 * 8 + 4 + 4096 * 32  # grad, targets, total_weight; one sector per row
    fill = [k for k in doc["kernels"] if k["op"] == "aten::fill_" and k["bytes"] == 4096 * 32000 * 4]
    assert len(fill) == 1  # the zeros of the logits' gradient: the fill_ inside nll_loss_backward


def test_kernels_over_the_dram_roof_say_their_inputs_came_from_the_l2(docs) -> None:
    for doc in docs.values():
        for k in doc["kernels"]:
            warned = any(w["code"] == "l2-reuse" for w in k["warnings"])
            assert warned == (k["bound"] == "memory" and k["fraction_of_ceiling"] > 1 and k["kineto"]["kind"] ==
                              "kernel"), k["name"]
    # ResNet-50's in-place ReLU right after batch norm reads what batch norm just wrote (25.7 MB fits in the L2)
    relu = [k for k in docs["resnet50"]["kernels"] if k["op"] == "aten::clamp_min_"]
    assert any(any(w["code"] == "l2-reuse" for w in k["warnings"]) for k in relu)


def test_cudnn_helper_kernels_take_no_matrix_flops(docs) -> None:
    # the backward's dO.O pre-pass and dQ conversion, and the stem's channel padding, beside the matrix kernels
    for doc, op in ((docs["train"], "aten::_cudnn_attention_backward"), (docs["resnet50"], "aten::cudnn_convolution")):
        kernels = [k for k in doc["kernels"] if k["op"] == op and k["kineto"]["kind"] == "kernel"]
        helpers = [k for k in kernels if "fusion" in k["kernel_name"] or "Padding" in k["kernel_name"]]
        assert helpers and all(k["flops"] == 0 and k["bound"] == "memory" for k in helpers)


def test_the_cli_imports_a_real_trace(tmp_path) -> None:
    out = tmp_path / "gpt2.json"
    result = CliRunner().invoke(cli, ["import", "torch", str(DATA / "h200-gpt2.json.gz"), "--group-by", "op",
                                      "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and "aten::_cudnn_attention_forward" in result.output
