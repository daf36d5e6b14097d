"""`values:` in a kernel descriptor: the only values a parameter may take (gemv's batch: gemv.cu has kernels for
1, 2, 4, 8, 16 only). A size outside them is refused with the inputs (exit 2, kernel and parameter named), before
anything runs, instead of a ValueError at launch."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.load.kernels import KernelCatalog, load_descriptor
from roofline.model.expr import compile_expr
from roofline.model.workload import evaluate
from roofline.sizes.request import sweep_request

BASE = """schema_version: 1
name: t_batched
dtype: float32
params: {n: 1024, batch: 4}
flops: 2 * batch * n
bytes: (n + batch) * itemsize
"""


def _desc(tmp_path: Path, extra: str) -> Path:
    p = tmp_path / "t_batched.yaml"
    p.write_text(BASE + extra, encoding="utf-8")
    return p


def test_a_value_in_the_list_evaluates_and_one_outside_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    d = load_descriptor(_desc(tmp_path, "values: {batch: [1, 2, 4, 8, 16]}\n"))
    assert d.values == {"batch": (1.0, 2.0, 4.0, 8.0, 16.0)}
    assert evaluate(d, {"batch": compile_expr("8")}).params["batch"] == 8
    with pytest.raises(InputError) as exc:
        evaluate(d, {"batch": compile_expr("32")})
    msg = str(exc.value)
    assert "t_batched.yaml" in msg and "values.batch" in msg and "batch=32" in msg and "1, 2, 4, 8, 16" in msg


def test_a_sweep_over_a_missing_value_is_refused_before_it_runs(tmp_path: Path) -> None:
    d = load_descriptor(_desc(tmp_path, "values: {batch: [1, 2, 4, 8, 16]}\n"))
    assert sweep_request(d, "batch", "1..16:2", []).sizes == (1, 2, 4, 8, 16)
    with pytest.raises(InputError) as exc:
        sweep_request(d, "batch", "1..64:2", [])
    msg = str(exc.value)
    assert "--sizes" in msg and "t_batched" in msg and "batch=32, 64" in msg and "values.batch" in msg


@pytest.mark.parametrize("extra, field", [
    ("values: {rows: [1]}\n", "values.rows"),  # not a parameter
    ("values: {batch: []}\n", "values.batch"),  # empty
    ("values: {batch: [one]}\n", "values.batch"),  # not numbers
    ("values: {batch: [1, 2]}\n", "values.batch"),  # the default (4) itself is not allowed
])
def test_a_bad_values_block_is_refused_when_the_file_loads(tmp_path: Path, extra: str, field: str) -> None:
    with pytest.raises(InputError) as exc:
        load_descriptor(_desc(tmp_path, extra))
    assert field in str(exc.value)


def test_the_bundled_gemv_kernels_declare_the_batches_gemv_cu_has() -> None:
    import importlib.util

    catalog = KernelCatalog.load()
    spec = importlib.util.spec_from_file_location("_gemv", Path(catalog.select(["gemv_batch16"])[0].family))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name in ("gemv_batch1", "gemv_batch16"):
        assert catalog.select([name])[0].values["batch"] == tuple(float(b) for b in sorted(module.KERNELS))


def test_the_command_line_exits_2_naming_kernel_and_parameter(run_cli) -> None:
    result = run_cli("sweep", "gemv_batch16", "--over", "batch", "--sizes", "1..64:2", "-p", "n=4096",
                     "--predict", "--spec", "h200-sxm")
    assert result.code == 2 and "gemv_batch16" in result.err and "batch=32" in result.err
    assert "Traceback" not in result.err
