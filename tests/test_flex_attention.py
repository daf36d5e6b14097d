"""The flex_attention templates' work (roofline.model.ops.flex_attention) on the kernels Inductor generated for
`benchmarks/program_kinds.py --kind flex` (causal block mask, 4 x 16 heads x 1024 x 64, bf16) on an H100, as the
capture of 2026-12-06 kept them, and the template launch's bytes and source lookup."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from roofline.kineto.sources import KernelSources
from roofline.model.ops.args import OpInput
from roofline.model.ops.flex_attention import flex_work, read_flex
from roofline.model.ops.triton import model_triton, read_source

ARCHIVE = Path(__file__).parent / "data" / "kineto" / "compiled" / "program-kinds-h100-2026-12-06.tar.gz"
FORWARD = "triton_tem_fused_flex_attention_permute_select_view_1"
BACKWARD = "triton_tem_fused_flex_attention_backward_transpose_view_8"
# ncu's FLOPs of one launch (tensor + CUDA-core add + mul + 2 fma), from flex/flex.ncu.csv of the archive
NCU = {FORWARD: 3.95e10 / 4, BACKWARD: 1.37e11 / 4}


@pytest.fixture(scope="module")
def kernels(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("flex")
    with tarfile.open(ARCHIVE) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith("flex/kernels/") and m.isfile()]
        tar.extractall(out, members=members, filter="data")
    return out / "flex" / "kernels"


def _text(kernels: Path, name: str) -> str:
    """The kernel's own file (the compiled graph's module holds every kernel of the graph too)."""
    return next(t for p in sorted(kernels.glob("*.py")) if f"def {name}(" in (t := p.read_text())
                and t.count("'kernel_name'") == 1)


def test_a_causal_block_mask_runs_the_tiles_on_and_below_the_diagonal(kernels):
    for name, backward in ((FORWARD, False), (BACKWARD, True)):
        t = read_flex(_text(kernels, name))
        assert t is not None and t.backward is backward
        assert (t.batch, t.heads, t.q_len, t.kv_len, t.qk_dim, t.v_dim) == (4, 16, 1024, 1024, 64, 64)
        assert t.pairs == 36 * 128 * 128  # 8 x 9 / 2 of the 8 x 8 tiles of 128 x 128


def test_the_template_flops_are_what_ncu_counted(kernels):
    fwd, bwd = (flex_work(read_flex(_text(kernels, n))) for n in (FORWARD, BACKWARD))
    pairs = 4 * 16 * 36 * 128 * 128
    assert fwd.tensor == pairs * 2 * (64 + 64)  # q k^T and p v
    assert bwd.tensor == pairs * 2 * (4 * 64 + 3 * 64)  # 7 GEMMs over the two passes
    for work, name in ((fwd, FORWARD), (bwd, BACKWARD)):
        assert 0.97 <= (work.tensor + work.cuda) / NCU[name] <= 1.03
        assert 0.01 < work.cuda / work.tensor < 0.03


def test_a_mask_of_the_batch_or_head_counts_every_tile(kernels):
    text = _text(kernels, FORWARD).replace("tmp3 = tmp1 >= tmp2", "tmp3 = (off_z) >= tmp2", 1)
    t = read_flex(text)
    assert t.pairs is None
    assert "upper bound" in flex_work(t).note
    sliding = _text(kernels, FORWARD).replace("tmp3 = tmp1 >= tmp2", "tmp3 = (tmp1 - tmp2) < 128", 1)
    # m - n < 128 holds somewhere in every tile at or above the diagonal and in the one below it
    # m - n < 128 holds somewhere in every tile of the upper triangle, the diagonal and the one below it:
    # 8 x 8 tiles less the 6 x 7 / 2 = 21 further below
    assert read_flex(sliding).pairs == (64 - 21) * 128 * 128


def _forward_inputs() -> list[OpInput]:
    """The forward launch as the profiler recorded it: QKV fused, LSE, MAX, the block mask, the output, and the
    grid (16, 4, 16) as three Scalars."""
    return [OpInput((4096, 3072), "c10::BFloat16", (3072, 1)), OpInput((4, 16, 1024), "float", (16384, 1024, 1)),
            OpInput((4, 16, 1024), "float", (16384, 1024, 1)), OpInput((1, 1, 8), "int", (8, 8, 1)),
            OpInput((1, 1, 8, 8), "int", (64, 64, 8, 1)), OpInput((1, 1, 8), "int", (8, 8, 1)),
            OpInput((1, 1, 8, 8), "int", (64, 64, 8, 1)),
            OpInput((4, 16, 1024, 64), "c10::BFloat16", (1048576, 64, 1024, 1)),
            OpInput(None, "Scalar", None, "8"), OpInput(None, "Scalar", None, "4"), OpInput(None, "Scalar", None, "16")]


def test_a_templates_grid_does_not_bound_its_bytes(kernels):
    """Before, the grid Scalars (8 x 4 x 16 = 512) bounded every buffer: 27 kB where ncu counted 27 MB."""
    nbytes = (4096 * 3072 + 4 * 16 * 1024 * 64) * 2 + 2 * 4 * 16 * 1024 * 4 + 2 * (8 + 64) * 4
    for source in (None, read_source(_text(kernels, FORWARD))):
        work = model_triton(FORWARD, _forward_inputs(), source)
        assert work.bytes == nbytes
        assert work.roof == "bf16_tensor"
    with_source = model_triton(FORWARD, _forward_inputs(), read_source(_text(kernels, FORWARD)))
    names_only = model_triton(FORWARD, _forward_inputs())
    assert "56%" in with_source.note and "upper bound" in names_only.note
    assert names_only.flops == pytest.approx(with_source.flops * 64 / 36, rel=0.02)  # every tile


def test_a_template_source_is_found_by_its_kernel_name_not_in_a_module_of_many(kernels, tmp_path):
    """The profiler records no kernel_file for a template launch; the compiled graph's module names every kernel."""
    (tmp_path / "a_module.py").write_text("".join(f"'kernel_name': 'triton_x_{i}'\ndef triton_x_{i}(a):\n"
                                                  for i in range(2)) + f"'kernel_name': '{FORWARD}'\n")
    (tmp_path / "z_kernel.py").write_text(_text(kernels, FORWARD))
    source = KernelSources([tmp_path]).read(None, FORWARD)
    assert source is not None and source.flex is not None
    assert len(source.args) == 8 + 3  # the signature and the grid the launcher appends
    assert KernelSources([tmp_path]).read(None, "triton_x_0") is None
    assert KernelSources([]).read(None, FORWARD) is None


def test_the_delta_kernel_before_the_backward_template_is_a_mul_and_an_add_an_element():
    """Outside the template, flex_attention_backward in a kernel's name is the delta its lowering computes:
    sum(out * grad_out, -1); it counted 0 FLOPs from the name where ncu counted 9.4 M a launch."""
    o = OpInput((4, 16, 1024, 64), "c10::BFloat16", (1048576, 64, 1024, 1))
    inputs = [o, o, OpInput((4, 16, 1024), "float", (16384, 1024, 1)), OpInput(None, "Scalar", None, "65536"),
              OpInput(None, "Scalar", None, "64")]
    work = model_triton("triton_per_fused_flex_attention_backward_transpose_view_7", inputs)
    assert work.flops == 2 * 4 * 16 * 1024 * 64
    assert work.roof == "fp32"


def test_a_mask_of_doubling_temporaries_or_huge_sizes_is_read_quickly_or_not_at_all(kernels):
    """The source is not trusted: 40 tmpK each the sum of the one before twice would be 2^40 evaluations unless
    each is evaluated once; a billion-long sequence is not evaluated pair by pair."""
    import time

    chain = "".join(f"        tmp{i + 10} = tmp{i + 9} + tmp{i + 9}\n" for i in range(40))
    text = _text(kernels, FORWARD).replace("        tmp3 = tmp1 >= tmp2\n",
                                           "        tmp9 = tmp1\n" + chain + "        tmp3 = tmp49 >= tmp2\n", 1)
    start = time.perf_counter()
    t = read_flex(text)
    assert time.perf_counter() - start < 5
    assert t.pairs == 64 * 128 * 128  # m * 2^40 >= n somewhere in every tile
    huge = _text(kernels, FORWARD).replace("Q_LEN = 1024", "Q_LEN = 999999999").replace("KV_LEN = 1024", "KV_LEN = 999999999")
    t = read_flex(huge)
    assert t is not None and t.pairs is None  # every tile: an upper bound


def test_on_the_machine_that_ran_it_a_templates_source_is_found_in_the_inductor_cache(kernels, tmp_path):
    """`profile --with torch` reads the trace where the program ran: the other launches' recorded paths name the
    Inductor cache (CACHE/xy/cHASH.py), and the templates' sources are looked up there by kernel name."""
    import gzip
    import json

    from roofline.kineto.document import build_document
    from roofline.kineto.reader import read_trace
    from roofline.load.specs import SpecCatalog

    cache = tmp_path / "cache"
    for f in kernels.glob("c*.py"):
        (cache / f.name[1:3]).mkdir(parents=True, exist_ok=True)
        (cache / f.name[1:3] / f.name).write_text(f.read_text())
    with tarfile.open(ARCHIVE) as tar:
        raw = tar.extractfile("flex/flex.trace.json.gz").read()
    text = gzip.decompress(raw).decode().replace("/tmp/kinds/inductor-flex/", f"{cache}/")
    trace = tmp_path / "flex.trace.json"
    trace.write_text(text)
    assert json.loads(text)["traceEvents"]
    machine = SpecCatalog.bundled().resolve("h100-sxm")
    doc, _ = build_document([read_trace(trace)], machine, machine.name)
    tem = {k["name"]: k for k in doc["kernels"] if k["name"].startswith("triton_tem_fused_flex_attention")}
    assert tem[FORWARD]["flops"] == pytest.approx(NCU[FORWARD], rel=0.01)
    assert tem[BACKWARD]["flops"] == pytest.approx(NCU[BACKWARD], rel=0.01)
    assert "mask_mod read from the source" in tem[FORWARD]["model"]["note"]


def _mask_in_child(kernels: Path, mask: str) -> str:
    """read_flex on the forward template with its mask_mod replaced, in a child bounded to 2 GB and 60 s."""
    import subprocess
    import sys

    text = _text(kernels, FORWARD).replace("        tmp3 = tmp1 >= tmp2\n", mask, 1)
    source = kernels.parent / "mutated.py"
    source.write_text(text)
    code = ("import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30));"
            "from roofline.model.ops.flex_attention import read_flex;"
            "t = read_flex(open(sys.argv[1]).read()); print(t.pairs)")
    done = subprocess.run([sys.executable, "-c", code, str(source)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_a_mask_constant_beyond_int64_is_not_evaluated_in_unbounded_integers(kernels):
    """A constant past int64 made NumPy hold Python ints (30 squarings of 10^22: a hang) or uint64 (m + 2^64-1
    read as a float, every tile 'read from the source'); Triton has no such integers, so the mask is not read."""
    squares = "".join(f"        tmp{i + 11} = tmp{i + 10} * tmp{i + 10}\n" for i in range(30))
    assert _mask_in_child(kernels, "        tmp10 = 99999999999999999999999\n" + squares
                          + "        tmp3 = (tmp1 + tmp40) >= tmp2\n") == "None"
    assert _mask_in_child(kernels, "        tmp0 = 18446744073709551615\n        tmp3 = (tmp1 + tmp0) >= tmp2\n") == "None"


def test_a_mask_of_thousands_of_full_size_temporaries_is_not_held_in_memory(kernels):
    """3,000 temporaries each a (query, key) array of a chunk: 6 GB held at once before; past the node bound the
    mask is not read (every tile counted, said as an upper bound)."""
    leaves = "".join(f"        tmp{i + 1100} = tmp1 + tmp2 + {i}\n" for i in range(1001))
    tree = "".join(f"        tmp{i + 100} = tmp{2 * i + 101} + tmp{2 * i + 102}\n" for i in range(1000))
    assert _mask_in_child(kernels, tree + leaves + "        tmp3 = tmp100 >= tmp2\n") == "None"
    assert _mask_in_child(kernels, "        tmp3 = tmp1 >= tmp2\n") == str(64 * 128 * 128 * 36 // 64)
