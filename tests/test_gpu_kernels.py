"""Every bundled kernel on a real GPU at awkward sizes (n % 4 != 0, partial blocks and tiles), checked against
its NumPy reference by the same harness `roofline measure` uses. Skipped without CUDA (marker `gpu`)."""

from __future__ import annotations

import pytest

from roofline.kernels import KernelCatalog
from roofline.measure.policy import MeasurePolicy

pytestmark = pytest.mark.gpu

CATALOG = KernelCatalog.load()
RUNNABLE = [d for d in CATALOG.descriptors if d.implementation is not None]
QUICK = MeasurePolicy(min_time=0.0, min_repeats=2, warmup_time=0.0, max_time=0.2, graph_batch_time=2e-4)


@pytest.fixture(scope="module")
def gpu():
    from roofline.measure.backend_cupy import CupyBackend

    return CupyBackend()


def measured(gpu, descriptor, params):
    """The harness's result entry for one kernel at `params` (name -> formula text), its GPU memory released."""
    from roofline.expr import compile_expr
    from roofline.measure.harness import measure_kernel
    from roofline.measure.implementation import load_implementation
    from roofline.workload import evaluate

    work = evaluate(descriptor, {k: compile_expr(str(v)) for k, v in params.items()})
    entry = measure_kernel(descriptor, work, None, load_implementation(descriptor), gpu, QUICK)
    gpu.release()
    return entry


@pytest.mark.parametrize("descriptor", RUNNABLE, ids=lambda d: d.name)
def test_kernel_matches_reference_at_awkward_sizes(gpu, descriptor):
    from roofline.measure.implementation import load_implementation

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
    from roofline.measure.harness import measure_kernel
    from roofline.measure.implementation import load_implementation
    from roofline.kernels import load_descriptor
    from roofline.workload import evaluate

    d = load_descriptor(tmp_path / "wrong.yaml")
    entry = measure_kernel(d, evaluate(d), None, load_implementation(d), gpu, QUICK)
    assert entry["status"] == "FAILED"
    assert "not written" in entry["error"]
    assert entry["time_median"] is None and entry["achieved_bandwidth"] is None
