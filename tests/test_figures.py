"""Figures that cannot be right (issue 31): a duplicated YAML key in any input file, a figure outside the plausible
range of its field, and every figure the repository ships held to the same checks as a user's."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import KERNELS
from roofline.load.bundled import bundled_dir
from roofline.load.kernels import load_descriptor
from roofline.load.specs import load_spec
from roofline.model import invariants as inv

REPO = Path(__file__).resolve().parent.parent


# ---- a key written twice is refused in every YAML the tool reads ---------------------------------------------------


def test_a_duplicated_key_in_a_kernel_descriptor_is_refused(run_cli, tmp_path: Path, no_bundled_kernels) -> None:
    path = tmp_path / "k.yaml"
    path.write_text((KERNELS / "t_vadd.yaml").read_text() + "bytes: n * itemsize\n")
    r = run_cli("analyze", "--kernels", path, "--spec", "h100")
    assert r.code == 2
    assert r.err.strip() == f"error: {path}: line 11: duplicate key 'bytes' (first at line 9); YAML would keep only " \
                            "the last value, so remove one"


def test_a_duplicated_key_in_a_gates_file_is_refused(run_cli, tmp_path: Path) -> None:
    gates = tmp_path / "gates.yaml"
    gates.write_text("default:\n  fail_below: 0.7\nkernels:\n  sum: {fail_below: 0.5, fail_below: 0.1}\n")
    r = run_cli("report", REPO / "tests" / "data" / "results" / "h100.json", "--gates", gates)
    assert r.code == 2
    assert f"{gates}: line 4: duplicate key 'fail_below' (first at line 4)" in r.err
    assert "Traceback" not in r.err


def test_the_same_key_in_two_mappings_is_no_duplicate() -> None:
    from roofline.load.inputs import parse_yaml

    assert parse_yaml("a: {x: 1}\nb: {x: 2}\n", "f.yaml") == {"a": {"x": 1}, "b": {"x": 2}}


# ---- plausible ranges --------------------------------------------------------------------------------------------


def _shipped_specs() -> list[Path]:
    return sorted(bundled_dir("specs").glob("*.yaml")) + sorted((REPO / "docs").rglob("*.yaml"))


@pytest.mark.parametrize("path", _shipped_specs(), ids=lambda p: p.name)
def test_every_shipped_spec_sits_inside_every_plausible_range_with_margin(path: Path) -> None:
    """Loading applies the ranges; here each figure must also sit 20 % inside its range, so that the ranges are not
    drawn round the bundled specs and the next generation of GPUs loads too."""
    spec = load_spec(path)
    for field, kind, value in inv._plausible_figures(spec):
        r = inv.PLAUSIBLE[kind]
        assert r.low * 1.2 <= value <= r.high / 1.2, f"{path.name}: {field} = {value} is near the edge of {kind}"


@pytest.mark.parametrize(("kind", "slip"), [("sm_clock", 1.41e12), ("sm_clock", 1.41e6), ("memory_bandwidth", 1555.0),
                                            ("memory_bandwidth", 1.555e15), ("l2_size", 50e12),
                                            ("cuda_core_roof", 19.5e15), ("tensor_roof", 989e18), ("power", 700e3)])
def test_a_unit_slip_falls_outside_its_range(kind: str, slip: float) -> None:
    assert inv.outside(kind, slip) is not None


def test_every_range_is_in_the_readme() -> None:
    """The ranges are documented where the spec format is: each kind's range as the messages print it."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for kind, r in inv.PLAUSIBLE.items():
        low, high = inv.show_plausible(r.low, r.unit), inv.show_plausible(r.high, r.unit)
        assert f"{low} to {high}" in readme, f"README.md does not give the range of {kind}: {low} to {high}"


# ---- what the repository ships passes the checks a user's files get ----------------------------------------------


@pytest.mark.parametrize("path", sorted(bundled_dir("kernels").glob("*.yaml")), ids=lambda p: p.name)
def test_every_bundled_kernel_loads_through_the_one_yaml_reader(path: Path) -> None:
    assert load_descriptor(path).name
