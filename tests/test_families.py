"""Kernel families: a descriptor names its family module (`family:`) and its test sizes (`test_params:`); the
implementation loader sees the variant's own names over the family's. Every bundled kernel still loads and its
CPU reference path runs."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from roofline.errors import InputError
from roofline.load.kernels import KernelCatalog, load_descriptor
from roofline.measurement.implementation import load_implementation

FAST = ("--min-time", "0", "--min-repeats", "2")

FAMILY = '''\
import numpy as np
INTERFACE = 1
TOLERANCE = {"rtol": 1e-6, "atol": 1e-7}
TEST_PARAMS = {"n": 1003, "m": 3}
def inputs(p, dtype, rng):
    return {"a": rng.uniform(1, 2, p["n"]).astype(dtype), "b": rng.uniform(1, 2, p["n"]).astype(dtype)}
def outputs(p, dtype):
    return {"c": ((p["n"],), dtype)}
def reference(p, a, b):
    return {"c": a.astype(np.float64) + b}
'''


def _descriptor(folder: Path, name: str, *lines: str) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        dtype: float32
        params: {{n: 1000, m: 1}}
        flops: n
        bytes: 3 * n * itemsize
        """) + "".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "_fam.py").write_text(FAMILY, encoding="utf-8")
    return tmp_path


def test_a_family_supplies_inputs_reference_and_tolerance(folder):
    (folder / "v.py").write_text("def numpy(p, ctx):\n    raise AssertionError('not called here')\n")
    d = load_descriptor(_descriptor(folder, "v", "implementation: v.py", "family: _fam.py"))
    assert d.family == (folder / "_fam.py").resolve() and d.implementation == (folder / "v.py").resolve()
    impl = load_implementation(d)
    assert impl.tolerance == {"rtol": 1e-6, "atol": 1e-7}
    assert impl.test_params == {"n": 1003, "m": 3}
    arrays = impl.module.inputs({"n": 5}, "float32", np.random.default_rng(0))
    assert set(arrays) == {"a", "b"} and impl.module.outputs({"n": 5}, "float32") == {"c": ((5,), "float32")}
    assert impl.fn("numpy") is not None and impl.fn("cupy") is None  # the variant's own function, none inherited


def test_a_variant_overrides_one_name_and_keeps_the_rest(folder):
    (folder / "v.py").write_text('TOLERANCE = {"rtol": 1e-3}\ndef reference(p, a, b):\n    return {"c": a - b}\n')
    impl = load_implementation(load_descriptor(_descriptor(folder, "v", "implementation: v.py", "family: _fam.py")))
    assert impl.tolerance == {"rtol": 1e-3}
    one = np.ones(3)
    assert (impl.module.reference({}, one, one)["c"] == 0).all()  # the variant's reference, not the family's sum
    assert impl.module.INTERFACE == 1 and impl.test_params == {"n": 1003, "m": 3}  # the family's


def test_a_family_alone_is_the_implementation_and_measures(run_cli, folder):
    _descriptor(folder, "solo", "family: _fam.py", "test_params: {n: 2**4 + 1}")
    d = load_descriptor(folder / "solo.yaml")
    assert d.implementation == d.family == (folder / "_fam.py").resolve()
    assert load_implementation(d).test_params == {"n": 17, "m": 3}  # the descriptor's, name by name
    r = run_cli("measure", "--backend", "numpy", "--kernels", folder, "solo", "-p", "n=37", *FAST)
    assert r.code == 0, r.err
    assert "solo n=37 m=1: OK" in r.err


def test_the_descriptor_test_params_win_over_the_variant_and_family(folder):
    (folder / "v.py").write_text('TEST_PARAMS = {"n": 7}\n')
    impl = load_implementation(load_descriptor(_descriptor(folder, "v", "implementation: v.py", "family: _fam.py",
                                                           "test_params: {m: 2 * n}")))
    assert impl.test_params == {"n": 7, "m": 2000}  # the variant's dict replaces the family's; m from the descriptor


@pytest.mark.parametrize("line, field, words", [
    ("family: ../outside/_fam.py", "family", "outside the descriptor's folder"),
    ("family: /etc/passwd.py", "family", "must be a file name relative to the descriptor's folder"),
    ("family: _none.py", "family", "expected a .py file next to the descriptor"),
    ("family: _fam.txt", "family", "expected a .py file next to the descriptor"),
    ("test_params: {nn: 5}", "test_params.nn", "unknown parameter 'nn' (did you mean 'n'?)"),
    ("test_params: {n: x + 1}", "test_params.n", "unknown name 'x'"),
    ("test_params: {n: 0 - 5}", "test_params", "cannot be evaluated at them"),
    ("test_params: [5]", "test_params", "expected a mapping"),
])
def test_bad_family_or_test_params_exit_2_naming_file_and_field(run_cli, tmp_path, line, field, words):
    mine, outside = tmp_path / "mine", tmp_path / "outside"
    mine.mkdir()
    outside.mkdir()
    marker = tmp_path / "imported"
    (outside / "_fam.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n" + FAMILY, encoding="utf-8")
    (mine / "_fam.txt").write_text(FAMILY, encoding="utf-8")
    (mine / "_fam.py").write_text(FAMILY, encoding="utf-8")
    lines = [line] if line.startswith("family") else ["family: _fam.py", line]
    path = _descriptor(mine, "k", *lines)
    r = run_cli("measure", "--backend", "numpy", "--kernels", mine, "k", *FAST)
    assert r.code == 2, r.err
    assert "Traceback" not in r.err
    errors = [e for e in r.err.splitlines() if e.startswith("error:")]
    assert len(errors) == 1 and f"{path}: {field}: " in errors[0] and words in errors[0], r.err
    assert not marker.exists()


def test_a_family_linked_from_outside_is_refused_before_import(run_cli, tmp_path):
    mine, outside = tmp_path / "mine", tmp_path / "outside"
    mine.mkdir()
    outside.mkdir()
    marker = tmp_path / "imported"
    (outside / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n", encoding="utf-8")
    (mine / "_fam.py").symlink_to(outside / "evil.py")
    path = _descriptor(mine, "k", "family: _fam.py")
    r = run_cli("kernels", "--kernels", mine)
    assert r.code == 2 and f"{path}: family: " in r.err and "outside the descriptor's folder" in r.err
    assert not marker.exists()


def test_test_params_and_family_need_what_they_serve(tmp_path):
    with pytest.raises(InputError, match="test_params: only a kernel with an implementation or family"):
        load_descriptor(_descriptor(tmp_path, "k", "test_params: {n: 5}"))
    path = tmp_path / "nodtype.yaml"
    path.write_text("name: nodtype\nflops: 1\nbytes: 1\nfamily: _x.py\n", encoding="utf-8")
    with pytest.raises(InputError, match="dtype: is required when the kernel has an implementation"):
        load_descriptor(path)


def test_a_family_without_the_interface_names_both_files(folder):
    (folder / "_bare.py").write_text("def inputs(p, dtype, rng):\n    return {}\n")
    (folder / "v.py").write_text("")
    d = load_descriptor(_descriptor(folder, "v", "implementation: v.py", "family: _bare.py"))
    with pytest.raises(InputError, match=r"v\.py \(with its family _bare\.py\): INTERFACE: expected INTERFACE = 1"):
        load_implementation(d)


# ---- the bundled catalogue ----------------------------------------------------------------------------------

BUNDLED = [d for d in KernelCatalog.load().descriptors if d.implementation is not None]


@pytest.mark.parametrize("d", BUNDLED, ids=lambda d: d.name)
def test_every_bundled_kernel_loads_with_test_sizes_and_a_gpu_launcher(d):
    impl = load_implementation(d)
    assert impl.test_params and set(impl.test_params) <= set(d.params), impl.test_params
    assert impl.fn("cupy") is not None
    assert impl.module.INTERFACE == 1


def test_the_gemv_and_library_variants_need_no_file_of_their_own():
    by_name = {d.name: d for d in BUNDLED}
    for name, batch in (("gemv_batch1", 1), ("gemv_batch16", 16)):
        assert by_name[name].implementation.name == "_gemv.py"
        assert load_implementation(by_name[name]).test_params["batch"] == batch
    assert by_name["matmul_library"].implementation.name == "_matmul.py"
    assert load_implementation(by_name["matmul_library_fp16"]).tolerance["rtol"] == 2e-3  # its only own name
    assert load_implementation(by_name["matmul_library"]).tolerance["rtol"] == 1e-4


# Tiny, awkward sizes (rows and cols not multiples of 4, n odd) so the NumPy references run in a moment.
TINY = [
    ("layernorm_fused", ("rows=9", "cols=13")),
    ("layernorm_3pass", ("rows=9", "cols=13")),
    ("softmax_fused", ("rows=9", "cols=13")),
    ("gemv_batch1", ("n=33",)),
    ("gemv_batch16", ("n=33",)),
    ("matmul_library", ("n=33",)),
    ("matmul_library_fp16", ("n=33",)),
    ("stencil5_naive", ("n=33",)),
    ("conv3x3_reuse", ("n=33",)),
    ("bias_add_relu_fused", ("rows=9", "cols=13")),
    ("fma_relu", ("n=101",)),
    ("vector_add_float4", ("n=101",)),
    ("fma_peak_fp64", ("blocks=2", "threads=32", "iters=100")),
]


@pytest.mark.parametrize("name, params", TINY, ids=[t[0] for t in TINY])
def test_the_cpu_reference_path_of_family_kernels(run_cli, tmp_path, name, params):
    out = tmp_path / "r.json"
    r = run_cli("measure", "--backend", "numpy", name, *(a for p in params for a in ("-p", p)), "-o", out, *FAST)
    assert r.code == 0, r.err
    (kernel,) = json.loads(out.read_text())["kernels"]
    assert (kernel["name"], kernel["status"], kernel["verified"]) == (name, "OK", True)
