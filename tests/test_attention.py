"""The attention kernels: the float64 reference against a loop written from the definition, the descriptors' model
(AI ≈ S/4 fused, ≈ d/4 materialised; causal halves the work), the parameter checks and launch shapes on the host;
on a GPU (marker `gpu`) every kernel against the reference at awkward sizes, causal and not."""

from __future__ import annotations

import math

import numpy as np
import pytest

from roofline.errors import InputError
from roofline.kernelapi import import_file
from roofline.load.kernels import KernelCatalog
from roofline.model.workload import evaluate

CATALOG = KernelCatalog.load()
AT = import_file(CATALOG.select(["attention_fused"])[0].path.parent / "_attention.py")


def naive_attention(q, k, v, causal):
    """Row by row from the definition, in Python floats: exp(s - max) / sum, keys after the query dropped."""
    heads, S, d = q.shape
    out = np.zeros((heads, S, d))
    for h in range(heads):
        for i in range(S):
            keys = range(i + 1) if causal else range(S)
            s = [float(np.dot(q[h, i].astype(np.float64), k[h, j].astype(np.float64))) / math.sqrt(d) for j in keys]
            m = max(s)
            w = [math.exp(x - m) for x in s]
            out[h, i] = sum(wj * v[h, j].astype(np.float64) for wj, j in zip(w, keys)) / sum(w)
    return out


@pytest.mark.parametrize("causal", [0, 1])
def test_reference_matches_the_definition(causal):
    p = {"S": 13, "d": 8, "batch_heads": 3, "causal": causal}
    x = AT.inputs(p, np.dtype(np.float32), np.random.default_rng(1))
    got = AT.reference(p, **x)["o"]
    assert got.shape == (3, 13, 8) and got.dtype == np.float64
    np.testing.assert_allclose(got, naive_attention(x["q"], x["k"], x["v"], causal), rtol=1e-12, atol=1e-14)


def test_causal_rows_ignore_later_keys():
    p = {"S": 40, "d": 16, "batch_heads": 2, "causal": 1}
    x = AT.inputs(p, np.dtype(np.float32), np.random.default_rng(2))
    before = AT.reference(p, **x)["o"]
    x["k"][:, 30:] += 5.0  # keys and values after row 29 change ...
    x["v"][:, 30:] -= 1.0
    after = AT.reference(p, **x)["o"]
    np.testing.assert_array_equal(before[:, :30], after[:, :30])  # ... rows 0..29 do not
    assert not np.allclose(before[:, 30:], after[:, 30:])
    np.testing.assert_allclose(after[:, 0], x["v"][:, 0])  # row 0 sees key 0 only


def test_inputs_are_random_and_shaped():
    p = {"S": 257, "d": 64, "batch_heads": 2}
    x = AT.inputs(p, np.dtype(np.float32), np.random.default_rng(3))
    assert {n: a.shape for n, a in x.items()} == {n: (2, 257, 64) for n in "qkv"}
    assert all(a.dtype == np.float32 and np.count_nonzero(a) == a.size for a in x.values())
    assert 0.9 < x["q"].std() < 1.1 and np.abs(x["v"]).max() <= 1.0
    assert AT.outputs(p, np.dtype(np.float32)) == {"o": ((2, 257, 64), np.dtype(np.float32))}


def analysed(name, **params):
    from roofline.model.analysis import analyze
    from roofline.model.expr import compile_expr
    from roofline.load.specs import SpecCatalog

    d = CATALOG.select([name])[0]
    work = evaluate(d, {k: compile_expr(str(v)) for k, v in params.items()})
    return analyze(SpecCatalog.bundled().resolve("h200"), work)


def test_fused_model_counts_four_s2d_and_is_compute_bound():
    a = analysed("attention_fused")
    S, d, heads = 4096, 64, 32
    assert a.flops == 4 * S * S * d * heads
    assert a.bytes == 4 * S * d * heads * 4
    assert a.intensity == pytest.approx(S / 4)
    assert a.bound == "compute" and a.launches == 1
    causal = analysed("attention_fused_causal")
    assert causal.flops == 4 * d * heads * S * (S + 1) / 2 and causal.bytes == a.bytes
    bf16 = analysed("attention_fused_bf16")
    assert bf16.roof == "bf16_tensor" and bf16.bytes == a.bytes / 2 and bf16.flops == a.flops
    assert analysed("attention_fused_bf16_causal").flops == causal.flops


def test_causal_descriptors_run_the_same_implementations():
    for name in ("attention_fused", "attention_fused_bf16"):
        plain, causal = CATALOG.select([name, f"{name}_causal"])
        assert plain.implementation == causal.implementation
        assert "causal" not in plain.params and str(causal.params["causal"]) == "1"


def test_materialized_model_is_three_launches_at_about_d_over_4():
    a = analysed("attention_materialized")
    assert a.launches == 3 and [s.name for s in a.stages] == ["scores", "softmax", "weighted_sum"]
    assert a.intensity == pytest.approx(64 / 4, rel=0.02)
    assert analysed("attention_materialized", d=32).intensity == pytest.approx(32 / 4, rel=0.04)
    fused = analysed("attention_fused")
    assert a.bytes > 60 * fused.bytes  # the lesson: the same attention moves 65 times the bytes


@pytest.mark.parametrize(("params", "field"), [({"d": 32}, "params.d"), ({"causal": 2}, "params.causal"),
                                               ({"S": 0}, "params")])
def test_unsupported_params_name_the_descriptor_and_field(params, field):
    p = {"S": 64, "d": 64, "batch_heads": 2, "causal": 0, **params}
    with pytest.raises(InputError, match=rf"attention_fused\.yaml: {field}"):
        AT.check_params(p, "kernels/attention_fused.yaml")


class FakeKernel:
    """Stands in for a cupy RawKernel: records the launch configuration."""

    def __init__(self):
        self.calls, self.max_dynamic_shared_size_bytes = [], 0

    def __call__(self, grid, block, args, shared_mem=0):
        self.calls.append((grid, block, args, shared_mem))


class FakeModule:
    def __init__(self):
        self.kernel = FakeKernel()

    def get_function(self, name):
        assert name in ("attn_fwd_f32", "attn_fwd_bf16")
        return self.kernel


@pytest.mark.parametrize("d", [64, 128])
def test_launchers_cover_every_row_and_fit_shared_memory(d):
    p = {"S": 1001, "d": d, "batch_heads": 3, "causal": 1}
    for launcher, rows, threads in [(AT.f32_launcher, 128, 256), (AT.bf16_launcher, 128, 128 if d == 64 else 256)]:
        module = FakeModule()
        launcher(module, p)("q", "k", "v", "o")
        grid, block, args, smem = module.kernel.calls[0]
        assert grid == (math.ceil(1001 / rows), 3) and block == (threads,)
        assert args[4] == 1001 and args[6] == 1
        assert float(args[5]) == pytest.approx(1 / math.sqrt(d) / math.log(2))
        assert smem <= 227 * 1024
    assert AT.f32_options(64) == ("-DHEAD_DIM=64", "-DF32_MIN_BLOCKS=2")
    assert AT.bf16_options(128) == ("-DHEAD_DIM=128", "-DBF_WARPS=8", "-DBF_MT=1")


def test_numpy_backend_measures_the_fused_descriptor(run_cli, tmp_path):
    out = tmp_path / "r.json"
    r = run_cli("measure", "--backend", "numpy", "attention_fused_causal", "-p", "S=96", "-p", "batch_heads=2",
                "--min-time", "0", "-o", out)
    assert r.code == 0, r.err
    import json

    entry = json.loads(out.read_text())["kernels"][0]
    assert entry["status"] == "OK" and entry["flops"] == 4 * 64 * 2 * 96 * 97 / 2


# ---- on a GPU -------------------------------------------------------------------------------------------------


def gpu_measure(name, params):
    """The harness's result for one kernel; params["causal"] = 1 selects the kernel's _causal descriptor."""
    if params.pop("causal", 0):
        name += "_causal"
    from roofline.model.expr import compile_expr
    from roofline.measurement.backend_cupy import CupyBackend
    from roofline.measurement.harness import measure_kernel
    from roofline.measurement.implementation import load_implementation
    from roofline.measurement.policy import MeasurePolicy

    backend = CupyBackend()
    quick = MeasurePolicy(min_time=0.0, min_repeats=2, warmup_time=0.0, max_time=0.2, graph_batch_time=2e-4)
    d = CATALOG.select([name])[0]
    work = evaluate(d, {k: compile_expr(str(v)) for k, v in params.items()})
    entry = measure_kernel(d, work, None, load_implementation(d), backend, quick)
    backend.release()
    return entry


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["attention_fused", "attention_fused_bf16"])
@pytest.mark.parametrize("S", [1, 63, 129, 1001])
@pytest.mark.parametrize("causal", [0, 1])
def test_fused_kernels_match_at_awkward_sizes(name, S, causal):
    """S = 1 and 63: one partial key tile; 129: one row past a query block; 1001: partial tiles and blocks."""
    entry = gpu_measure(name, {"S": S, "d": 64, "batch_heads": 2, "causal": causal})
    assert entry["status"] == "OK", entry["error"]


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["attention_fused", "attention_fused_bf16"])
def test_fused_kernels_match_at_d128(name):
    entry = gpu_measure(name, {"S": 300, "d": 128, "batch_heads": 2, "causal": 1})
    assert entry["status"] == "OK", entry["error"]


@pytest.mark.gpu
@pytest.mark.parametrize("S", [64, 1001])
def test_materialized_matches(S):
    entry = gpu_measure("attention_materialized", {"S": S, "d": 64, "batch_heads": 2})
    assert entry["status"] == "OK", entry["error"]
