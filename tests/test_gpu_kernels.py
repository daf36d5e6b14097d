"""Every bundled kernel on a real GPU at awkward sizes (n % 4 != 0, partial blocks and tiles), checked against
its NumPy reference by the same harness `roofline measure` uses. Skipped without CUDA (marker `gpu`)."""

from __future__ import annotations

import pytest

from roofline.load.kernels import KernelCatalog
from roofline.measurement.policy import MeasurePolicy

pytestmark = pytest.mark.gpu

CATALOG = KernelCatalog.load()
RUNNABLE = [d for d in CATALOG.descriptors if d.implementation is not None]
QUICK = MeasurePolicy(min_time=0.0, min_repeats=2, warmup_time=0.0, max_time=0.2, graph_batch_time=2e-4)


@pytest.fixture(scope="module")
def gpu():
    from roofline.measurement.backend_cupy import CupyBackend

    return CupyBackend()


def measured(gpu, descriptor, params):
    """The harness's result entry for one kernel at `params` (name -> formula text), its GPU memory released."""
    from roofline.model.expr import compile_expr
    from roofline.measurement.harness import measure_kernel
    from roofline.measurement.implementation import load_implementation
    from roofline.model.workload import evaluate

    work = evaluate(descriptor, {k: compile_expr(str(v)) for k, v in params.items()})
    entry = measure_kernel(descriptor, work, None, load_implementation(descriptor), gpu, QUICK)
    gpu.release()
    return entry


@pytest.mark.parametrize("descriptor", RUNNABLE, ids=lambda d: d.name)
def test_kernel_matches_reference_at_awkward_sizes(gpu, descriptor):
    from roofline.measurement.implementation import load_implementation

    impl = load_implementation(descriptor)
    assert impl.test_params, f"{impl.path} should give TEST_PARAMS with awkward sizes"
    entry = measured(gpu, descriptor, impl.test_params)
    assert entry["status"] == "OK", entry["error"]
    assert entry["verified"] is True
    assert entry["time_median"] > 0


@pytest.mark.parametrize("name", ["stencil5_reuse", "conv3x3_reuse"])
@pytest.mark.parametrize("n", [1000, 1028, 257, 4, 3])
def test_the_streaming_stencils_match_at_both_widths(gpu, name, n):
    """n % 4 == 0 takes the four-columns-per-thread kernel, anything else the one-column kernel; 1028 leaves a
    partial warp of columns and a partial band of rows, 4 and 3 are smaller than one band."""
    entry = measured(gpu, CATALOG.select([name])[0], {"n": n})
    assert entry["status"] == "OK", entry["error"]


@pytest.mark.parametrize("name", ["softmax_fused", "layernorm_fused"])
@pytest.mark.parametrize("rows,cols", [(257, 1000), (3, 4), (5, 8188), (2, 32768), (2, 32772), (7, 1001)])
def test_the_row_kernels_match_in_registers_and_in_shared_memory(gpu, name, rows, cols):
    """cols % 4 == 0 up to 32,768 floats keeps the row in registers (1000 leaves most of the last float4 slots
    empty, 8188 is not a multiple of the block, 4 is one float4 for a whole block); 32,772 is too long for the
    registers and 1001 not float4-aligned: both take the shared-memory kernel."""
    entry = measured(gpu, CATALOG.select([name])[0], {"rows": rows, "cols": cols})
    assert entry["status"] == "OK", entry["error"]


@pytest.mark.parametrize("n", [1000, 257, 16, 4099])
def test_the_tensor_core_gemv_matches_at_partial_tiles(gpu, n):
    """Batch 16 on the tensor cores (3xTF32): n = 16 is less than one block of rows, 257 and 4099 leave partial
    row tiles and K steps (4099: odd, scalar loads), 1000 is float4-aligned but not a multiple of the 16-k step."""
    entry = measured(gpu, CATALOG.select(["gemv_batch16"])[0], {"n": n, "batch": 16})
    assert entry["status"] == "OK", entry["error"]


def test_wrong_kernel_is_failed_and_not_timed(gpu, tmp_path):
    (tmp_path / "wrong.yaml").write_text(
        "name: wrong_add\ndescription: c = a + b, but the kernel skips the last element\npattern: map\n"
        "dtype: float32\nparams: {n: 1000003}\nflops: n\nbytes: 3 * n * itemsize\nimplementation: wrong.py\n"
    )
    (tmp_path / "wrong.py").write_text(
        "import numpy as np\nINTERFACE = 1\n"
        "def inputs(p, dtype, rng):\n    return {'a': rng.uniform(-1, 1, p['n']).astype(dtype), 'b': rng.uniform(-1, 1, p['n']).astype(dtype)}\n"
        "def outputs(p, dtype):\n    return {'c': ((p['n'],), dtype)}\n"
        "def reference(p, a, b):\n    return {'c': a + b}\n"
        "def cupy(p, ctx):\n"
        "    k = ctx.cupy.ElementwiseKernel('raw float32 a, raw float32 b', 'raw float32 c',\n"
        "        'if (i < _ind.size() - 1) c[i] = a[i] + b[i]', 'wrong_add')\n"
        "    def run(a, b, c):\n        k(a, b, c, size=p['n'])\n    return run\n"
    )
    from roofline.measurement.harness import measure_kernel
    from roofline.measurement.implementation import load_implementation
    from roofline.load.kernels import load_descriptor
    from roofline.model.workload import evaluate

    d = load_descriptor(tmp_path / "wrong.yaml")
    entry = measure_kernel(d, evaluate(d), None, load_implementation(d), gpu, QUICK)
    assert entry["status"] == "FAILED"
    assert "not written" in entry["error"]
    assert entry["time_median"] is None and entry["achieved_bandwidth"] is None
