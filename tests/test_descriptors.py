"""Kernel descriptors: loading, evaluating at defaults and overrides, and every class of bad input refused clearly."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import INVALID_KERNELS, KERNELS, TOY_SPEC
from roofline.errors import InputError
from roofline.load.kernels import KernelCatalog, load_descriptor, parse_overrides
from roofline.model.workload import evaluate, resolve_params

pytestmark = pytest.mark.usefixtures("no_bundled_kernels")


# ---- valid descriptors ----------------------------------------------------------------------------


def test_vector_add_descriptor_loads_and_evaluates() -> None:
    d = load_descriptor(KERNELS / "t_vadd.yaml")
    assert (d.name, d.dtype, d.roof, d.pattern, d.itemsize) == ("t_vadd", "float32", "fp32", "map", 4)
    assert d.stages == () and d.implementation is None
    w = evaluate(d)
    assert w.params == {"n": 2**20}
    assert w.flops == 2**20
    assert w.bytes == 3 * 2**20 * 4
    assert w.access_bytes == 4  # defaults to itemsize
    assert w.launches == 1


def test_access_bytes_and_two_params() -> None:
    w = evaluate(load_descriptor(KERNELS / "t_fma.yaml"))
    assert w.flops == 2 * 2**20 * 1000
    assert w.bytes == 2 * 2**20 * 4
    assert w.access_bytes == 16


def test_stages_are_summed() -> None:
    d = load_descriptor(KERNELS / "t_pipeline.yaml")
    w = evaluate(d)
    assert [s.name for s in w.stages] == ["scale", "bias", "heavy"]
    assert [s.flops for s in w.stages] == [1e6, 1e6, 100e6]
    assert [s.bytes for s in w.stages] == [8e6, 8e6 + 4000, 8e6]
    assert w.flops == 102e6
    assert w.bytes == 24e6 + 4000
    assert w.launches == 3


def test_overrides_replace_defaults_and_may_be_formulas() -> None:
    d = load_descriptor(KERNELS / "t_vadd.yaml")
    overrides = parse_overrides(["n=2**10 + 24"], [d])
    w = evaluate(d, overrides)
    assert w.params == {"n": 1048}
    assert w.bytes == 3 * 1048 * 4


def test_integral_float_parameters_become_ints() -> None:
    d = load_descriptor(KERNELS / "t_vadd.yaml")
    env = resolve_params(d, parse_overrides(["n=1e6"], [d]))
    assert env["n"] == 1_000_000 and isinstance(env["n"], int)


def test_catalog_load_and_select(no_bundled_kernels: Path) -> None:
    catalog = KernelCatalog.load([KERNELS])
    assert sorted(catalog.names) == ["t_dgemv", "t_fma", "t_pipeline", "t_vadd"]
    assert [d.name for d in catalog.select(["t_fma", "t_vadd", "t_fma"])] == ["t_fma", "t_vadd"]
    assert len(catalog.select([])) == 4


# ---- invalid descriptor files: through the loader and through the CLI ------------------------------

INVALID = [
    ("unknown_dtype", "dtype", "unknown dtype 'float33' (did you mean 'float32'?)"),
    ("unknown_roof", "roof", "unknown roof 'fp33' (did you mean 'fp32'?)"),
    ("formula_syntax", "flops", "syntax error in 'n +'"),
    ("unknown_name", "bytes", "unknown name 'nn' (did you mean 'n'?)"),
    ("forbidden_construct", "flops", "is not allowed"),
    ("division_by_zero", "flops", "division by zero"),
    ("negative_bytes", "bytes", "must be ≥ 0"),
    ("flops_and_stages", "stages", "give either stages or flops/bytes, not both"),
]
INVALID_IDS = [case for case, _, _ in INVALID]


def test_every_invalid_descriptor_file_is_covered() -> None:
    files = sorted(p.stem for p in INVALID_KERNELS.glob("*.yaml"))
    assert files == sorted([*INVALID_IDS, "duplicate_t_vadd"])


@pytest.mark.parametrize(("case", "field", "fragment"), INVALID, ids=INVALID_IDS)
def test_loader_refuses_invalid_descriptor(case: str, field: str, fragment: str) -> None:
    path = INVALID_KERNELS / f"{case}.yaml"
    with pytest.raises(InputError) as exc_info:
        load_descriptor(path)
    message = exc_info.value.message
    assert message.startswith(f"{path}: {field}: ")
    assert fragment in message


@pytest.mark.parametrize(("case", "field", "fragment"), INVALID, ids=INVALID_IDS)
def test_cli_refuses_invalid_descriptor(case: str, field: str, fragment: str, run_cli, tmp_path: Path) -> None:
    path = INVALID_KERNELS / f"{case}.yaml"
    out = tmp_path / "out.csv"
    r = run_cli("analyze", "--kernels", path, "--spec", TOY_SPEC, "--format", "csv", "-o", out)
    assert r.code == 2
    assert r.err.startswith(f"error: {path}: {field}: ")
    assert fragment in r.err
    assert "Traceback" not in r.err + r.out
    assert r.out == ""
    assert list(tmp_path.iterdir()) == []


# ---- bad command-line selections -----------------------------------------------------------------

VADD = KERNELS / "t_vadd.yaml"
FMA = KERNELS / "t_fma.yaml"

CLI_CASES = [
    ("unknown-kernel", ["t_vad", "--kernels", VADD], ["no kernel named 't_vad' (did you mean 't_vadd'?)"]),
    ("unknown-spec", ["--kernels", VADD, "--spec", "h100-sxn"], ["no spec named 'h100-sxn' (did you mean 'h100-sxm'?)"]),
    ("param-nobody-has", ["t_vadd", "t_fma", "--kernels", VADD, "--kernels", FMA, "-p", "iter=10"],
     ["-p iter=10: no selected kernel has a parameter 'iter' (did you mean 'iters'?)", "they have: iters, n"]),
    ("param-of-unselected-kernel", ["t_vadd", "--kernels", VADD, "--kernels", FMA, "-p", "iters=10"],
     ["no selected kernel has a parameter 'iters'"]),
    ("param-bad-formula", ["t_vadd", "--kernels", VADD, "-p", "n=2**"], ["-p n=2**: syntax error"]),
    ("param-forbidden", ["t_vadd", "--kernels", VADD, "-p", "n=__import__('os')"], ["-p n=__import__('os')", "not allowed"]),
    ("param-not-a-pair", ["t_vadd", "--kernels", VADD, "-p", "n"], ["-p n: expected NAME=VALUE"]),
    ("param-negative-bytes", ["t_vadd", "--kernels", VADD, "-p", "n=-5"], [f"{VADD}: flops: 'n' gives -5", "must be ≥ 0"]),
    ("param-division-by-zero", ["t_vadd", "--kernels", VADD, "-p", "n=1/0"], ["-p n=1/0: division by zero"]),
    ("duplicate-kernel", ["--kernels", VADD, "--kernels", INVALID_KERNELS / "duplicate_t_vadd.yaml"],
     [f"{INVALID_KERNELS / 'duplicate_t_vadd.yaml'}: name: kernel 't_vadd' is already defined in {VADD}"]),
    ("missing-kernels-path", ["--kernels", KERNELS / "nope.yaml"], ["no such file or folder"]),
    ("only-unsupported-roofs", ["t_dgemv", "--kernels", KERNELS / "t_dgemv.yaml"],
     ["none of the selected kernels can be analysed on toy", "fp64"]),
]


@pytest.mark.parametrize(("argv", "fragments"), [(a, f) for _, a, f in CLI_CASES], ids=[c for c, _, _ in CLI_CASES])
def test_cli_refuses_bad_selection(argv: list[object], fragments: list[str], run_cli, tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    spec = [] if "--spec" in argv else ["--spec", TOY_SPEC]
    r = run_cli("analyze", *argv, *spec, "--format", "json", "-o", out)
    assert r.code == 2, r.err
    assert r.err.startswith("error: ")
    for fragment in fragments:
        assert fragment in r.err
    assert "Traceback" not in r.err + r.out
    assert r.out == ""
    assert not out.exists()


def test_kernels_show_evaluates_overrides(run_cli) -> None:
    r = run_cli("kernels", "--kernels", KERNELS, "show", "t_vadd", "-p", "n=1000")
    assert r.code == 0, r.err
    assert "t_vadd" in r.out and "3 * n * itemsize" in r.out and "12 kB" in r.out


def test_kernels_show_unknown_kernel(run_cli) -> None:
    r = run_cli("kernels", "--kernels", KERNELS, "show", "t_pipelin")
    assert r.code == 2
    assert "did you mean 't_pipeline'?" in r.err


def test_kernels_list(run_cli) -> None:
    r = run_cli("kernels", "--kernels", KERNELS)
    assert r.code == 0, r.err
    for name in ("t_vadd", "t_fma", "t_pipeline", "t_dgemv"):
        assert name in r.out


# ---- a few more loader rules -----------------------------------------------------------------------


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "k.yaml"
    path.write_text(text, encoding="utf-8")
    return path


BASE = VADD.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [
        ("n: 2**20", "itemsize: 4", "params.itemsize: 'itemsize' is set from the dtype"),
        ("name: t_vadd", "name: t vadd", "name: must not contain spaces"),
        ("dtype: float32\n", "", "bytes: uses itemsize, which needs the element type: add a dtype"),
        ("flops: n\n", "flops: n\nfloops: n\n", "floops: unknown key (did you mean 'flops'?)"),
        ("schema_version: 1", "schema_version: 2", "schema_version: is 2, newer"),
        ("flops: n", "flops: m", "flops: unknown name 'm'"),
        ("n: 2**20", "n: 2**20\n  m: k + 1", "params.m: unknown name 'k'"),
    ],
)
def test_loader_rules(tmp_path: Path, old: str, new: str, fragment: str) -> None:
    assert old in BASE
    path = _write(tmp_path, BASE.replace(old, new))
    with pytest.raises(InputError) as exc_info:
        load_descriptor(path)
    assert exc_info.value.message.startswith(f"{path}: ")
    assert fragment in exc_info.value.message


def test_params_may_use_earlier_params(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE.replace("n: 2**20", "rows: 4\n  n: rows * 256"))
    d = load_descriptor(path)
    assert evaluate(d).params == {"rows": 4, "n": 1024}
    # an override of an earlier parameter flows into the later default
    assert evaluate(d, parse_overrides(["rows=8"], [d])).params == {"rows": 8, "n": 2048}
